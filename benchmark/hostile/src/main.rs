//! Worst-case measurements of velaris on hostile or huge input (see benchmark/README.md):
//!
//! - `baseline N`: parse, check, fmt and bless of a baseline with N entries, in seconds (JSON).
//! - `nesting-table [DEPTH]`: for every nesting shape, the least thread stack on which the
//!   analysis of that shape DEPTH levels deep (default 2000) completes, found by running
//!   `nesting-run` in child processes, next to the guard's estimate (JSON lines).
//! - `nesting-run SHAPE DEPTH STACK`: analyze one shape on a thread of STACK bytes, without
//!   the guard's limit; exits 0 when it completes (a stack overflow aborts it).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use velaris::baseline;
use velaris::surface::analyze::{CrateInput, analyze};
use velaris::surface::cfg::CfgEnv;
use velaris::surface::guard;
use velaris::surface::rules::Rules;
use velaris::surface::{Capability, CrateSurface, Finding, ProgramSurface, Scope, Surface};

#[path = "../../../tests/support/nesting.rs"]
mod nesting;

/// A surface with `n` entries: `n / 100` programs, each compiling 99 crates of its own.
fn surface(n: usize) -> Surface {
    let programs = (n / 100).max(1);
    let per = n / programs - 1;
    let caps = Capability::ALL;
    let mut out = Vec::with_capacity(programs);
    for p in 0..programs {
        let mut crates = Vec::with_capacity(per);
        for c in 0..per {
            let name = format!("crate-{p:05}-{c:03}");
            let mut findings = Vec::new();
            for k in 0..(1 + (p + c) % 3) {
                findings.push(Finding {
                    capability: caps[(p * 7 + c * 3 + k) % caps.len()],
                    scope: Scope::Runtime,
                    file: "src/lib.rs".into(),
                    line: 1 + k as u32,
                    column: 1,
                    path: "std::fs::write".into(),
                });
            }
            findings.sort();
            let capabilities: BTreeSet<Capability> = findings.iter().map(|f| f.capability).collect();
            crates.push(CrateSurface {
                name: name.clone(),
                version: "1.0.0".into(),
                capabilities,
                findings,
                via: vec![format!("prog-{p:05}"), name],
            });
        }
        let capabilities = crates.iter().flat_map(|c| c.capabilities.iter().copied()).collect();
        out.push(ProgramSurface { name: format!("prog-{p:05}"), package: format!("prog-{p:05}"), capabilities, crates });
    }
    Surface { target: "x86_64-unknown-linux-gnu".into(), programs: out }
}

/// The canonical text, reversed entry order and a comment on every entry: what `fmt` sorts.
fn messy(text: &str) -> String {
    let mut blocks: Vec<&str> = text.split("\n\n[").collect();
    let head = blocks.remove(0);
    blocks.reverse();
    let mut out = String::from(head);
    for (i, b) in blocks.iter().enumerate() {
        out.push_str(&format!("\n\n# reviewed {i}\n["));
        out.push_str(b.trim_end_matches('\n'));
    }
    out.push('\n');
    out
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("baseline") => {
            let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
            let s = surface(n);
            let (text, t_bless_fresh) = time(|| baseline::bless(None, &s));
            let entries = text.matches("\n[program.").count() + text.matches("\n[crate.").count();
            let (parsed, t_parse) = time(|| baseline::parse(&text, "b").expect("valid"));
            let (outcome, t_check) = time(|| baseline::check(&parsed, &s));
            assert!(outcome.holds);
            let (f, t_fmt) = time(|| baseline::fmt(&text, "b").expect("valid"));
            assert_eq!(f, text);
            let m = messy(&text);
            let (f2, t_fmt_messy) = time(|| baseline::fmt(&m, "b").expect("valid"));
            assert!(f2.len() > text.len());
            let (b, t_bless) = time(|| baseline::bless(Some(&m), &s));
            assert_eq!(b, f2);
            println!(
                "{{\"entries\": {entries}, \"bytes\": {}, \"bless_fresh_s\": {t_bless_fresh:.3}, \"parse_s\": {t_parse:.3}, \"check_s\": {t_check:.3}, \"fmt_canonical_s\": {t_fmt:.3}, \"fmt_messy_s\": {t_fmt_messy:.3}, \"bless_messy_s\": {t_bless:.3}}}",
                text.len()
            );
        }
        Some("nesting-run") => {
            let shape = args[2].clone();
            let depth: usize = args[3].parse().expect("depth");
            let stack: usize = args[4].parse().expect("stack");
            let src = nesting::source(&shape, depth);
            let found = std::thread::Builder::new()
                .stack_size(stack)
                .spawn(move || {
                    let files: BTreeMap<String, Vec<u8>> = [("src/lib.rs".to_string(), src.into_bytes())].into();
                    let cfg = CfgEnv::for_target("x86_64-unknown-linux-gnu", &BTreeSet::new()).unwrap();
                    let deps = BTreeMap::new();
                    let input = CrateInput {
                        crate_name: "deep",
                        files: &files,
                        root: "src/lib.rs",
                        cfg: &cfg,
                        scope: Scope::Runtime,
                        deps: &deps,
                        rules: Rules::builtin(),
                    };
                    analyze(&input).findings.iter().filter(|f| f.capability == Capability::Unanalyzed).count()
                })
                .unwrap()
                .join()
                .unwrap();
            // A parse error would measure nothing: the shape must be analyzed.
            std::process::exit(if found == 0 { 0 } else { 3 });
        }
        Some("nesting-table") => {
            let depth: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
            let me = std::env::current_exe().unwrap();
            let runs = |shape: &str, stack: usize| {
                std::process::Command::new(&me)
                    .args(["nesting-run", shape, &depth.to_string(), &stack.to_string()])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            for shape in nesting::SHAPES.iter().map(|s| s.0).chain(nesting::MORE.iter().copied()) {
                let (mut lo, mut hi) = (16 * 1024usize, 1usize << 32);
                if !runs(shape, hi) {
                    println!("{{\"shape\": \"{shape}\", \"depth\": {depth}, \"error\": \"not analyzed on 4 GiB\"}}");
                    continue;
                }
                while hi - lo > hi / 50 {
                    let mid = lo + (hi - lo) / 2;
                    if runs(shape, mid) { hi = mid } else { lo = mid }
                }
                let estimate = guard::estimate(nesting::source(shape, depth).as_bytes()).0;
                println!(
                    "{{\"shape\": \"{shape}\", \"depth\": {depth}, \"stack_bytes\": {hi}, \"bytes_per_level\": {}, \"estimate_bytes\": {estimate}, \"estimate_over_stack\": {:.2}}}",
                    hi / depth,
                    estimate as f64 / hi as f64
                );
            }
        }
        _ => {
            eprintln!("usage: velaris-hostile-bench baseline N | nesting-table [DEPTH] | nesting-run SHAPE DEPTH STACK");
            std::process::exit(2);
        }
    }
}
