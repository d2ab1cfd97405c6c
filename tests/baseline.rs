//! The capability baseline: parse, check, bless, fmt, atomic writes and the renderings, on
//! surfaces built by hand.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/world.rs"]
mod world;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use velaris::baseline::{self, Baseline, BaselineError, CheckOutcome, Subject, bless, check, parse, render};
use velaris::surface::{Capability, CrateSurface, Finding, ProgramSurface, Scope, Surface};

use Capability::*;

const TARGET: &str = "x86_64-unknown-linux-gnu";
const FIXTURE: &str = include_str!("../fixtures/baselines/reviewed.capabilities");

fn finding(capability: Capability, file: &str, line: u32, path: &str) -> Finding {
    Finding { capability, scope: Scope::Runtime, file: file.into(), line, column: 5, path: path.into(), chain: Vec::new(), expanded_from: None, through_trait: false }
}

fn krate(name: &str, version: &str, via: &[&str], findings: Vec<Finding>) -> CrateSurface {
    CrateSurface {
        name: name.into(),
        version: version.into(),
        capabilities: findings.iter().map(|f| f.capability).collect(),
        findings: findings.into(),
        via: via.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// A crate with one finding per capability.
fn uses(name: &str, via: &[&str], caps: &[Capability]) -> CrateSurface {
    let findings =
        caps.iter().enumerate().map(|(i, &c)| finding(c, "src/lib.rs", 10 + i as u32, "std::thing")).collect();
    krate(name, "1.0.0", via, findings)
}

fn program(name: &str, package: &str, crates: Vec<CrateSurface>) -> ProgramSurface {
    let mut crates = crates;
    crates.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    ProgramSurface {
        name: name.into(),
        package: package.into(),
        capabilities: crates
            .iter()
            .flat_map(|c| c.findings.iter().filter(|f| f.counts_for_program()).map(|f| f.capability))
            .collect(),
        crates,
        reached_from_program: Vec::new(),
        calls: Default::default(),
        ..Default::default()
    }
}

fn surface(programs: Vec<ProgramSurface>) -> Surface {
    Surface { target: TARGET.into(), programs }
}

fn caps(list: &[Capability]) -> BTreeSet<Capability> {
    list.iter().copied().collect()
}

fn parsed(text: &str) -> Baseline {
    match parse(text, "velaris.capabilities") {
        Ok(b) => b,
        Err(e) => panic!("{e}\n---\n{text}"),
    }
}

fn outcome(text: &str, s: &Surface) -> CheckOutcome {
    check(&parsed(text), s)
}

/// The velaris CLI: its own code reads files, reqwest connects.
fn cli() -> Surface {
    surface(vec![program(
        "velaris",
        "velaris",
        vec![uses("velaris", &["velaris"], &[FsRead]), uses("reqwest", &["velaris", "reqwest"], &[NetConnect])],
    )])
}

const CLI_BASELINE: &str = r#"version = 1
target = "x86_64-unknown-linux-gnu"

[program.velaris]
package = "velaris"
capabilities = ["fs.read", "net.connect"]

[crate.reqwest]
capabilities = ["net.connect"]

[crate.velaris]
capabilities = ["fs.read"]
"#;

// ---------------------------------------------------------------------------------------------
// check

#[test]
fn holds() {
    let o = outcome(CLI_BASELINE, &cli());
    assert!(o.holds, "{o:?}");
    assert!(o.widened.is_empty() && o.narrowed.is_empty());
    assert!(!o.stale());
    assert!(o.target_mismatch.is_none());
}

#[test]
fn blessed_surface_holds() {
    let s = cli();
    let o = outcome(&bless(None, &s), &s);
    assert!(o.holds && !o.stale(), "{o:?}");
}

#[test]
fn widened_program_carries_its_findings() {
    let mut s = cli();
    s.programs[0] = program(
        "velaris",
        "velaris",
        vec![
            krate(
                "velaris",
                "0.1.0",
                &["velaris"],
                vec![
                    finding(FsRead, "src/main.rs", 3, "std::fs::read"),
                    finding(FsWrite, "src/cache.rs", 42, "std::fs::write"),
                ],
            ),
            uses("reqwest", &["velaris", "reqwest"], &[NetConnect]),
        ],
    );
    let o = outcome(CLI_BASELINE, &s);
    assert!(!o.holds);
    let subjects: Vec<&Subject> = o.widened.iter().map(|w| &w.subject).collect();
    assert_eq!(subjects, [&Subject::Program("velaris".into()), &Subject::Crate("velaris".into())]);
    let w = &o.widened[0];
    assert_eq!(w.capabilities, caps(&[FsWrite]));
    assert!(!w.new_subject);
    assert_eq!(w.at.map(|a| (a.line, a.column)), Some((4, 10)));
    assert_eq!(w.findings.len(), 1);
    let e = &w.findings[0];
    assert_eq!((e.crate_name.as_str(), e.version.as_str()), ("velaris", "0.1.0"));
    assert_eq!(
        (e.finding.file.as_str(), e.finding.line, e.finding.path.as_str()),
        ("src/cache.rs", 42, "std::fs::write")
    );
    assert_eq!(e.via, ["velaris"]);
}

#[test]
fn new_dependency_widens_its_crate_grant_even_when_the_program_holds() {
    let mut s = cli();
    s.programs[0] = program(
        "velaris",
        "velaris",
        vec![
            uses("velaris", &["velaris"], &[FsRead]),
            uses("reqwest", &["velaris", "reqwest"], &[NetConnect]),
            uses("hyper", &["velaris", "reqwest", "hyper"], &[NetConnect]),
        ],
    );
    let o = outcome(CLI_BASELINE, &s);
    assert!(!o.holds);
    assert_eq!(o.widened.len(), 1, "{:?}", o.widened);
    let w = &o.widened[0];
    assert_eq!(w.subject, Subject::Crate("hyper".into()));
    assert!(w.new_subject);
    assert_eq!(w.capabilities, caps(&[NetConnect]));
    assert_eq!(w.findings[0].via, ["velaris", "reqwest", "hyper"]);
}

#[test]
fn known_crate_with_a_new_capability_widens() {
    let mut s = cli();
    s.programs[0].crates[0] = uses("reqwest", &["velaris", "reqwest"], &[NetConnect, Unsafe]);
    s.programs[0] = program("velaris", "velaris", s.programs[0].crates.clone());
    let o = outcome(CLI_BASELINE, &s);
    let crate_w: Vec<_> = o.widened.iter().filter(|w| matches!(w.subject, Subject::Crate(_))).collect();
    assert_eq!(crate_w.len(), 1);
    assert_eq!(crate_w[0].capabilities, caps(&[Unsafe]));
    assert!(!crate_w[0].new_subject);
}

#[test]
fn new_program_with_capabilities_is_widened_without_is_not() {
    let mut s = cli();
    s.programs.push(program("agent", "velaris", vec![uses("velaris", &["velaris"], &[FsRead])]));
    s.programs.push(program("hello", "hello", vec![]));
    let o = outcome(CLI_BASELINE, &s);
    assert_eq!(o.widened.len(), 1, "{:?}", o.widened);
    assert_eq!(o.widened[0].subject, Subject::Program("agent".into()));
    assert!(o.widened[0].new_subject);
    assert_eq!(o.widened[0].at, None);
    assert!(o.narrowed.is_empty());
}

#[test]
fn narrowed_unused_capability_and_gone_crate() {
    let text = CLI_BASELINE.replace(r#"["fs.read", "net.connect"]"#, r#"["fs.read", "fs.write", "net.connect"]"#)
        + "\n[crate.openssl]\ncapabilities = [\"ffi\"]\n";
    let o = outcome(&text, &cli());
    assert!(o.holds, "narrowing never fails the gate by itself");
    assert!(o.stale());
    assert_eq!(o.narrowed.len(), 2, "{:?}", o.narrowed);
    let unused = &o.narrowed[0];
    assert_eq!(unused.subject, Subject::Program("velaris".into()));
    assert_eq!(unused.capabilities, caps(&[FsWrite]));
    assert!(!unused.gone);
    assert_eq!(unused.at.map(|a| (a.line, a.column)), Some((6, 28)));
    let gone = &o.narrowed[1];
    assert_eq!(gone.subject, Subject::Crate("openssl".into()));
    assert!(gone.gone);
    assert_eq!(gone.capabilities, caps(&[Ffi]));
    let human = render::human(&o, false);
    assert!(human.contains("`velaris bless` narrows the grant"), "{human}");
    assert!(human.contains("`velaris bless` removes its entry"), "{human}");
    assert!(render::markdown(&o).contains("`velaris bless`"));
}

#[test]
fn gone_program_is_stale() {
    let text = CLI_BASELINE.to_string() + "\n[program.old]\ncapabilities = []\n";
    let o = outcome(&text, &cli());
    assert!(o.holds && o.stale());
    assert_eq!(o.narrowed[0].subject, Subject::Program("old".into()));
    assert!(o.narrowed[0].gone);
}

#[test]
fn unanalyzed_is_a_widening() {
    let mut s = cli();
    let c = krate(
        "weird",
        "0.3.0",
        &["velaris", "weird"],
        vec![finding(Unanalyzed, "src/gen.rs", 1, "parse error: expected item")],
    );
    s.programs[0].crates.push(c.clone());
    s.programs[0] = program("velaris", "velaris", s.programs[0].crates.clone());
    let o = outcome(CLI_BASELINE, &s);
    assert!(!o.holds);
    assert_eq!(o.widened.len(), 2);
    assert!(o.widened.iter().all(|w| w.capabilities == caps(&[Unanalyzed])));
    assert_eq!(o.widened[0].findings[0].finding.path, "parse error: expected item");

    // Unreadable build-time code widens its crate's grant; the program's run-time grant is
    // not about what its dependencies do while building.
    let mut s = cli();
    let mut c = c;
    std::sync::Arc::make_mut(&mut c.findings)[0].scope = Scope::Build;
    s.programs[0].crates.push(c);
    s.programs[0] = program("velaris", "velaris", s.programs[0].crates.clone());
    let o = outcome(CLI_BASELINE, &s);
    assert!(!o.holds);
    assert_eq!(o.widened.len(), 1);
    assert_eq!(o.widened[0].subject, Subject::Crate("weird".into()));
}

#[test]
fn one_grant_covers_every_version_of_a_crate() {
    let s = surface(vec![
        program(
            "a",
            "a",
            vec![krate("rand", "0.7.3", &["a", "rand"], vec![finding(FsRead, "src/os.rs", 1, "std::fs::File::open")])],
        ),
        program(
            "b",
            "b",
            vec![
                krate("rand", "0.8.5", &["b", "rand"], vec![finding(Unsafe, "src/rng.rs", 9, "unsafe block")]),
                krate(
                    "rand",
                    "0.7.3",
                    &["b", "x", "rand"],
                    vec![finding(FsRead, "src/os.rs", 1, "std::fs::File::open")],
                ),
            ],
        ),
    ]);
    let text = bless(None, &s);
    assert_eq!(text.matches("[crate.rand]").count(), 1, "{text}");
    let b = parsed(&text);
    assert_eq!(b.crates["rand"].capabilities, caps(&[FsRead, Unsafe]));
    assert!(check(&b, &s).holds);
    // Without the grant, the widening lists each finding once, with the shortest path to it.
    let without =
        parsed(&text.replace("[crate.rand]\ncapabilities = [\n    \"fs.read\",\n", "[crate.rand]\ncapabilities = [\n"));
    let o = check(&without, &s);
    let w = o.widened.iter().find(|w| w.subject == Subject::Crate("rand".into())).unwrap();
    assert_eq!(w.findings.len(), 1, "{:?}", w.findings);
    assert_eq!(w.findings[0].version, "0.7.3");
    assert_eq!(w.findings[0].via, ["a", "rand"]);
}

#[test]
fn other_target_is_stale_not_a_failure() {
    let text = CLI_BASELINE.replace(TARGET, "aarch64-apple-darwin");
    let o = outcome(&text, &cli());
    assert!(o.holds && o.stale());
    let t = o.target_mismatch.as_ref().unwrap();
    assert_eq!((t.granted.as_str(), t.analysed.as_str()), ("aarch64-apple-darwin", TARGET));
    assert!(render::human(&o, false).contains("aarch64-apple-darwin"));
}

// ---------------------------------------------------------------------------------------------
// bless and fmt

/// The fixture's world after a change: `velaris` stops writing and starts reading the
/// environment, `old-tool` is gone, `agent` is new, reqwest lost its unsafe code, libc is new.
fn changed() -> Surface {
    surface(vec![
        program(
            "velaris",
            "velaris",
            vec![
                uses("velaris", &["velaris"], &[FsRead, EnvRead]),
                uses("reqwest", &["velaris", "reqwest"], &[NetConnect]),
                uses("ring", &["velaris", "reqwest", "ring"], &[Unsafe, Asm, BuildScript, BuildNative]),
            ],
        ),
        program("agent", "velaris", vec![uses("libc", &["velaris", "libc"], &[Ffi])]),
    ])
}

#[test]
fn bless_keeps_reasons_and_comments_of_what_remains() {
    let text = bless(Some(FIXTURE), &changed());
    insta::assert_snapshot!("blessed_fixture", text);
    for kept in [
        "# velaris.capabilities: reviewed grants. Widen only by a reviewed change.",
        "# Owners: @platform-security",
        "# the CI runners' target",
        "# The CLI itself.",
        "[program.velaris] # reviewed 2024-05-02",
        "\"fs.read\", # reads Cargo.lock and sources",
        "    # downloads .crate files\n    \"net.connect\",",
        "reason = \"fetches and unpacks crates\"",
        "[crate.reqwest] # the http client",
        "# per-capability reasons\n[crate.reqwest.reasons]",
        "\"net.connect\" = \"http client\" # obviously",
        "reason = \"crypto primitives\"",
        "# End of file: keep the grants minimal.",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    for dropped in ["# the cache directory", "old-tool", "# A helper binary", "vendored code", "\"fs.write\""] {
        assert!(!text.contains(dropped), "kept {dropped:?}:\n{text}");
    }
    let b = parsed(&text);
    assert!(check(&b, &changed()).holds);
    assert!(!check(&b, &changed()).stale());
    assert_eq!(b.programs["agent"].package.as_deref(), Some("velaris"));
    assert_eq!(b.crates["libc"].capabilities, caps(&[Ffi]));
    assert_eq!(b.crates["reqwest"].reasons.len(), 1);
}

#[test]
fn bless_is_byte_identical_when_nothing_changed() {
    let s = changed();
    let once = bless(Some(FIXTURE), &s);
    assert_eq!(bless(Some(&once), &s), once);
    let fresh = bless(None, &s);
    assert!(fresh.starts_with("# velaris.capabilities"), "{fresh}");
    assert_eq!(bless(Some(&fresh), &s), fresh);
    assert_eq!(baseline::fmt(&fresh, "f").unwrap(), fresh);
}

#[test]
fn fresh_bless_snapshot() {
    insta::assert_snapshot!("fresh", bless(None, &cli()));
}

#[test]
fn bless_over_text_that_is_not_toml_starts_fresh() {
    assert_eq!(bless(Some("version = = 1"), &cli()), bless(None, &cli()));
}

#[test]
fn fmt_sorts_and_is_idempotent() {
    let once = baseline::fmt(FIXTURE, "fixture").unwrap();
    insta::assert_snapshot!("formatted_fixture", once);
    assert_eq!(baseline::fmt(&once, "fixture").unwrap(), once);
    assert_eq!(parsed(&once), parsed(FIXTURE));
    // Entries by name, capabilities in canonical order.
    let order: Vec<usize> = ["[program.old-tool]", "[program.velaris]", "[crate.reqwest]", "[crate.ring]"]
        .iter()
        .map(|h| once.find(h).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{once}");
    let ring = &once[once.find("[crate.ring]").unwrap()..];
    let pos = |c: &str| ring.find(&format!("\"{c}\"")).unwrap();
    assert!(
        pos("unsafe") < pos("asm") && pos("asm") < pos("build.script") && pos("build.script") < pos("build.native")
    );
    for comment in FIXTURE.lines().filter_map(|l| l.find('#').map(|i| l[i..].trim_end())) {
        assert!(once.contains(comment), "lost {comment:?}:\n{once}");
    }
}

#[test]
fn fmt_of_an_unsorted_file() {
    let text = "[crate.b]\ncapabilities = [\"unsafe\", \"fs.read\"]\n[crate.a]\ncapabilities=[]\n"
        .to_string()
        .replace("[crate.b]", "version = 1\n[crate.b]");
    assert_eq!(
        baseline::fmt(&text, "f").unwrap(),
        "version = 1\n\n[crate.a]\ncapabilities = []\n\n[crate.b]\ncapabilities = [\n    \"fs.read\",\n    \"unsafe\",\n]\n"
    );
}

#[test]
fn fmt_refuses_an_invalid_file() {
    let e = baseline::fmt("version = 1\n[crate.a]\ncapabilities = [\"fs.exec\"]\n", "f").unwrap_err();
    assert_eq!(e.problems.len(), 1);
}

#[test]
fn other_shapes_of_the_same_grants_are_read() {
    let text = r#"version = 1
[program]
velaris = { package = "velaris", capabilities = ["fs.read"], reasons = { "fs.read" = "config" } }
[crate]
reqwest.capabilities = ["net.connect"] # dotted
"#;
    let b = parsed(text);
    assert_eq!(b.programs["velaris"].reasons[&FsRead], "config");
    assert_eq!(b.crates["reqwest"].capabilities, caps(&[NetConnect]));
    let f = baseline::fmt(text, "f").unwrap();
    assert_eq!(parsed(&f), b);
    assert!(f.contains("[program.velaris.reasons]\n\"fs.read\" = \"config\"\n"), "{f}");
    assert!(f.contains("# dotted"), "{f}");
}

#[test]
fn crlf_files_are_read_and_written_with_lf() {
    let text = CLI_BASELINE.replace("[crate.reqwest]", "# http\n[crate.reqwest] # client").replace('\n', "\r\n");
    let f = baseline::fmt(&text, "f").unwrap();
    assert!(!f.contains('\r'), "{f:?}");
    assert!(f.contains("# http\n[crate.reqwest] # client\n"), "{f}");
    assert_eq!(parsed(&f), parsed(&text));
    assert_eq!(bless(Some(&text), &cli()), bless(Some(&f), &cli()));
}

#[test]
fn section_comments_stay_on_their_header() {
    let text = "version = 1\n\n# Programs we ship.\n[program] # all of them\n\n[program.b]\ncapabilities = []\n";
    let s = surface(vec![program("a", "a", vec![]), program("b", "b", vec![])]);
    let blessed = bless(Some(text), &s);
    assert!(
        blessed.contains("\n\n# Programs we ship.\n[program] # all of them\n\n[program.a]\npackage = \"a\"\ncapabilities = []\n\n[program.b]\n"),
        "{blessed}"
    );
    assert_eq!(bless(Some(&blessed), &s), blessed);
}

#[test]
fn comments_of_a_dropped_entry_go_with_it_and_the_next_keeps_its_own() {
    let text = "# head\nversion = 1\n\n# about a\n[crate.a] # a!\ncapabilities = [\"ffi\"]\n\n# about b\n[crate.b]\ncapabilities = [\"unsafe\"]\n";
    let s = surface(vec![program("p", "p", vec![uses("b", &["p", "b"], &[Unsafe])])]);
    let blessed = bless(Some(text), &s);
    assert!(!blessed.contains("about a") && !blessed.contains("a!"), "{blessed}");
    assert!(blessed.starts_with("# head\nversion = 1\n"), "{blessed}");
    assert!(blessed.contains("# about b\n[crate.b]\n"), "{blessed}");
}

// ---------------------------------------------------------------------------------------------
// API pins

/// The app's own crate: writes a file and runs git.
fn app_surface(extra: Vec<Finding>) -> Surface {
    let mut findings = vec![
        finding(FsWrite, "src/main.rs", 3, "std::fs::write"),
        finding(ProcessSpawn, "src/main.rs", 4, "std::process::Command::new"),
    ];
    findings.extend(extra);
    surface(vec![program("app", "app", vec![krate("app", "0.1.0", &["app"], findings)])])
}

fn pin_app() -> baseline::BlessOptions {
    baseline::BlessOptions { pin_apis: BTreeSet::from(["app".to_string()]) }
}

#[test]
fn bless_pin_apis_writes_the_apis_each_capability_uses_and_check_holds() {
    let s = app_surface(vec![]);
    let text = baseline::bless_with(None, &s, &pin_app());
    assert!(
        text.contains("[crate.app.apis]\n\"fs.write\" = [\n    \"std::fs::write\",\n]\n\"process.spawn\" = [\n    \"std::process::Command::new\",\n]\n"),
        "{text}"
    );
    assert!(!text.contains("[program.app.apis]"), "pins are per crate: {text}");
    let b = parsed(&text);
    assert_eq!(b.crates["app"].apis[&FsWrite], BTreeSet::from(["std::fs::write".to_string()]));
    let o = check(&b, &s);
    assert!(o.holds && !o.stale(), "{o:?}");
    // Canonical and stable: fmt and another bless change nothing; a plain bless keeps pinning.
    assert_eq!(baseline::fmt(&text, "f").unwrap(), text);
    assert_eq!(bless(Some(&text), &s), text);
}

#[test]
fn a_new_api_for_a_pinned_capability_widens_and_names_the_api() {
    let s = app_surface(vec![]);
    let text = baseline::bless_with(None, &s, &pin_app());
    // The pull request: `std::fs::remove_dir_all("/home")`, under the fs.write already granted.
    let changed = app_surface(vec![finding(FsWrite, "src/main.rs", 9, "std::fs::remove_dir_all")]);
    let o = check(&parsed(&text), &changed);
    assert!(!o.holds, "{o:?}");
    assert_eq!(o.widened.len(), 1, "the program grant still holds: {o:?}");
    let w = &o.widened[0];
    assert_eq!(w.subject, Subject::Crate("app".into()));
    assert!(w.capabilities.is_empty());
    assert_eq!(w.apis[&FsWrite], BTreeSet::from(["std::fs::remove_dir_all".to_string()]));
    assert_eq!(w.findings.len(), 1, "only the finding behind the new API: {:?}", w.findings);
    assert_eq!(w.findings[0].finding.line, 9);
    assert_eq!(velaris::gate::widened(&o), vec!["crate app: fs.write via std::fs::remove_dir_all".to_string()]);
    let human = strip_ansi(&render::human(&o, true));
    assert!(human.contains("error: crate `app` uses APIs velaris.capabilities does not grant: fs.write via std::fs::remove_dir_all"), "{human}");
    assert!(human.contains("src/main.rs:9:5  std::fs::remove_dir_all"), "{human}");
    let v: serde_json::Value = serde_json::from_str(&render::json(&o)).unwrap();
    assert_eq!(v["widened"][0]["apis"], serde_json::json!({"fs.write": ["std::fs::remove_dir_all"]}));
    assert!(render::markdown(&o).contains("`fs.write` via `std::fs::remove_dir_all`"));
    // The negative twin: without pins the same change holds (the grant is per kind).
    assert!(check(&parsed(&bless(None, &s)), &changed).holds);
    // A pinned API no longer used is stale, not a failure.
    let fewer = surface(vec![program("app", "app", vec![krate("app", "0.1.0", &["app"], vec![finding(FsWrite, "src/main.rs", 3, "std::fs::write")])])]);
    let o = check(&parsed(&text), &fewer);
    assert!(o.holds && o.stale());
    assert!(o.narrowed.iter().any(|n| n.subject == Subject::Crate("app".into()) && n.capabilities == caps(&[ProcessSpawn])));
}

#[test]
fn pins_are_checked_when_parsed() {
    let problems = |t: &str| match parse(t, "velaris.capabilities") {
        Ok(_) => Vec::new(),
        Err(e) => e.problems.into_iter().map(|p| (p.line, p.message)).collect::<Vec<_>>(),
    };
    let head = "version = 1\n[crate.app]\ncapabilities = [\"fs.write\", \"unanalyzed\"]\n[crate.app.apis]\n";
    assert!(problems(&format!("{head}\"fs.write\" = [\"std::fs::write\"]\n")).is_empty());
    let p = problems(&format!("{head}\"net.connect\" = [\"std::net::TcpStream::connect\"]\n"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].1.contains("APIs for `net.connect`, which crate `app` is not granted"), "{p:?}");
    let p = problems(&format!("{head}\"fs.write\" = [\"std::fs::write\", \"std::fs::write\", \"\", 3]\n"));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p.iter().all(|(line, _)| *line == 5), "{p:?}");
    let p = problems(&format!("{head}unanalyzed = [\"parse error\"]\n"));
    assert!(p[0].1.contains("`unanalyzed` cannot be pinned"), "{p:?}");
    let p = problems("version = 1\n[program.app]\ncapabilities = [\"fs.write\"]\napis = { \"fs.write\" = [\"std::fs::write\"] }\n");
    assert!(p[0].1.contains("API pins are per crate"), "{p:?}");
    let p = problems(&format!("{head}\"fs.wrote\" = []\n"));
    assert!(p[0].1.contains("unknown capability `fs.wrote`"), "{p:?}");
}

#[test]
fn bless_keeps_the_comments_of_pinned_apis_and_drops_those_no_longer_used() {
    let s = app_surface(vec![]);
    let text = baseline::bless_with(None, &s, &pin_app())
        .replace("    \"std::fs::write\",\n", "    # the report file\n    \"std::fs::write\", # reviewed\n")
        .replace("    \"std::process::Command::new\",\n", "    # git only\n    \"std::process::Command::new\",\n    \"std::process::Command::spawn\",\n");
    let blessed = bless(Some(&text), &s);
    assert!(blessed.contains("    # the report file\n    \"std::fs::write\", # reviewed\n"), "{blessed}");
    assert!(blessed.contains("    # git only\n    \"std::process::Command::new\",\n]"), "{blessed}");
    assert!(!blessed.contains("Command::spawn"), "{blessed}");
}

#[test]
fn a_change_that_adds_or_unpins_apis_adds_grants() {
    let s = app_surface(vec![]);
    let old = parsed(&baseline::bless_with(None, &s, &pin_app()));
    let more = app_surface(vec![finding(FsWrite, "src/main.rs", 9, "std::fs::remove_dir_all")]);
    let new = parsed(&baseline::bless_with(None, &more, &pin_app()));
    let added = baseline::additions(Some(&old), &new);
    assert_eq!(velaris::gate::baseline_widened(&added), vec!["crate app: fs.write via std::fs::remove_dir_all".to_string()]);
    let unpinned = parsed(&bless(None, &more));
    assert_eq!(
        velaris::gate::baseline_widened(&baseline::additions(Some(&old), &unpinned)),
        vec!["crate app: fs.write via any API, process.spawn via any API".to_string()]
    );
}

// ---------------------------------------------------------------------------------------------
// --strict, and the uses a change adds

#[test]
fn strict_says_what_failed() {
    let text = CLI_BASELINE.replace(r#"["fs.read", "net.connect"]"#, r#"["fs.read", "fs.write", "net.connect"]"#);
    let o = outcome(&text, &cli());
    assert!(o.holds && o.stale());
    let lenient = strip_ansi(&render::human(&o, false));
    assert!(lenient.ends_with("holds: the code uses nothing velaris.capabilities does not grant (the file is stale: run `velaris bless` to narrow it)\n"), "{lenient}");
    let view = render::View { strict: true, ..render::View::default() };
    let strict = strip_ansi(&render::human_with(&o, &view));
    let last = strict.lines().last().unwrap();
    assert_eq!(
        last,
        "failed: --strict and velaris.capabilities is stale (program `velaris` no longer uses fs.write): run `velaris bless` to narrow it, and commit it"
    );
    assert!(!strict.contains("holds:"), "{strict}");
    assert!(!render::passes(&o, &view) && render::passes(&o, &render::View::default()));
    let v: serde_json::Value = serde_json::from_str(&render::json_with(&o, &view)).unwrap();
    assert_eq!((v["holds"].as_bool(), v["stale"].as_bool(), v["strict"].as_bool(), v["passed"].as_bool()), (Some(true), Some(true), Some(true), Some(false)));
    assert!(render::markdown_with(&o, &view).starts_with("### ❌ Capabilities: velaris.capabilities is stale (`--strict`)"));
}

#[test]
fn new_uses_are_rendered_in_every_format_escaped() {
    let f = Finding { chain: vec![], ..finding(ProcessSpawn, "src/\u{1b}[2Jmain.rs", 4, "std::process::Command::new") };
    let u = velaris::uses::Use {
        krate: "app".into(),
        version: "0.1.0".into(),
        finding: f,
        item: Some("main".into()),
        source: Some("let _ = Command::new(\"curl @octocat\").status();".into()),
    };
    let nu = velaris::uses::NewUses { since: "main".into(), uses: vec![u], note: None };
    let o = outcome(CLI_BASELINE, &cli());
    let view = render::View { new_uses: Some(&nu), ..render::View::default() };
    let human = strip_ansi(&render::human_with(&o, &view));
    assert!(human.contains("new uses: 1 capability use the members add since main"), "{human}");
    assert!(human.contains("process.spawn  app 0.1.0  src/\\u{1b}[2Jmain.rs:4:5 in main  std::process::Command::new"), "{human}");
    assert!(!human.contains('\u{1b}'));
    assert!(human.ends_with("holds: the code uses nothing velaris.capabilities does not grant\n"), "the verdict stays last: {human}");
    let md = render::markdown_with(&o, &view);
    assert!(md.contains("#### New capability uses"), "{md}");
    assert!(md.contains("(in `main`)") && md.contains("`let _ = Command::new(\"curl @octocat\").status();`"), "{md}");
    let v: serde_json::Value = serde_json::from_str(&render::json_with(&o, &view)).unwrap();
    assert_eq!(v["new_uses"]["since"], "main");
    assert_eq!(v["new_uses"]["uses"][0]["path"], "std::process::Command::new");
    assert_eq!(v["new_uses"]["uses"][0]["item"], "main");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&render::json(&o)).unwrap()["new_uses"], serde_json::Value::Null);
}

// ---------------------------------------------------------------------------------------------
// the commands, as a user runs them

fn git_in(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .args(["-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

const APP_MAIN: &str = "fn main() {\n    store::save();\n    let _ = std::process::Command::new(\"git\").status();\n}\n";

/// A workspace whose program calls a registry crate that writes files, and runs git; committed.
fn app_world() -> world::World {
    let store = world::Pkg::new(
        "store",
        "1.0.0",
        &[("Cargo.toml", "[package]\nname = \"store\"\nversion = \"1.0.0\"\nedition = \"2021\"\n"), ("src/lib.rs", "pub fn save() {\n    let _ = std::fs::write(\"state\", b\"x\");\n}\n")],
        &[],
    );
    let app = world::Pkg::new(
        "app",
        "0.1.0",
        &[("Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nstore = \"1\"\n"), ("src/main.rs", APP_MAIN)],
        &["store"],
    );
    let w = world::World::new(vec![store], vec![app]);
    git_in(w.ws.path(), &["init", "-q"]);
    w
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn pins_new_uses_strict_and_explain_from_the_command_line() {
    let w = app_world();
    let o = w.run(&["bless", "--pin-apis"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = fs::read_to_string(w.ws.path().join("velaris.capabilities")).unwrap();
    assert!(text.contains("[crate.app.apis]") && !text.contains("[crate.store.apis]"), "members only: {text}");
    git_in(w.ws.path(), &["add", "-A"]);
    git_in(w.ws.path(), &["commit", "-qm", "base"]);

    // Holds, granted and pinned: nothing new since HEAD.
    let o = w.run(&["check", "--base", "HEAD"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("note: the workspace's members use nothing new since HEAD"), "{}", stdout(&o));

    // The change: curl through the pinned API, and `remove_dir_all` under the granted fs.write.
    world::write(
        w.ws.path(),
        "app/src/main.rs",
        "fn main() {\n    store::save();\n    let _ = std::process::Command::new(\"git\").status();\n    let _ = std::process::Command::new(\"curl\").status();\n    let _ = std::fs::remove_dir_all(\"/home\");\n}\n",
    );
    let o = w.run(&["check", "--base", "HEAD"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("error: crate `app` uses APIs velaris.capabilities does not grant: fs.write via std::fs::remove_dir_all"), "{out}");
    assert!(out.contains("new uses: 3 capability uses the members add since HEAD"), "{out}");
    assert!(out.contains("  process.spawn  app 0.1.0  src/main.rs:4:13 in main  std::process::Command::new\n        4 | let _ = std::process::Command::new(\"curl\").status();"), "{out}");
    assert!(!out.contains(":3:13 in main  std::process::Command::new"), "git was there before: {out}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&w.run(&["check", "--base", "HEAD", "--format", "json"]))).unwrap();
    assert_eq!((v["passed"].as_bool(), v["new_uses"]["uses"].as_array().map(Vec::len)), (Some(false), Some(3)), "{v}");
    let o = w.run(&["check", "--base", "no-such-revision"]);
    assert_eq!(o.status.code(), Some(2));

    // explain takes a crate, and a name that is both says how to ask for the other.
    let o = w.run(&["explain", "--crate", "store", "fs.write"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("crate store has fs.write (1 finding in 1 version):"), "{}", stdout(&o));
    assert!(stdout(&o).contains("  src/lib.rs:2:13  std::fs::write  [runtime]\n      2 |     let _ = std::fs::write(\"state\", b\"x\");"), "{}", stdout(&o));
    let o = w.run(&["explain", "store", "fs.write"]);
    assert!(stdout(&o).starts_with("crate store has fs.write"), "not a program: the crate: {}", stdout(&o));
    let o = w.run(&["explain", "app", "process.spawn"]);
    assert!(stdout(&o).starts_with("program app has process.spawn") && stdout(&o).contains("`velaris explain --crate app process.spawn` explains the crate"), "{}", stdout(&o));
    let o = w.run(&["explain", "nope", "fs.write"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no program or crate \"nope\""), "{}", String::from_utf8_lossy(&o.stderr));

    // --strict: a narrower program fails only with it, and says why.
    world::write(w.ws.path(), "app/src/main.rs", "fn main() {\n    store::save();\n}\n");
    let o = w.run(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = w.run(&["check", "--strict"]);
    assert_eq!(o.status.code(), Some(1));
    let last = stdout(&o).lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("failed: --strict and velaris.capabilities is stale (program `app` no longer uses process.spawn"), "{last}");
}

// ---------------------------------------------------------------------------------------------
// errors

fn problems(text: &str) -> Vec<(usize, usize, String)> {
    match parse(text, "b.capabilities") {
        Ok(_) => panic!("parsed:\n{text}"),
        Err(e) => e.problems.into_iter().map(|p| (p.line, p.column, p.message)).collect(),
    }
}

fn one(text: &str) -> (usize, usize, String) {
    let mut p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    p.remove(0)
}

#[test]
fn unknown_capability_lists_the_valid_ones() {
    let (l, c, m) = one("version = 1\n[program.a]\ncapabilities = [\"fs.read\", \"fs.exec\"]\n");
    assert_eq!((l, c), (3, 28));
    assert!(m.starts_with("unknown capability `fs.exec`; valid capabilities: fs.read, fs.write, "), "{m}");
    assert!(m.ends_with("unanalyzed"), "{m}");
}

#[test]
fn unknown_keys() {
    let (l, c, m) = one("version = 1\ntargets = \"x\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "unknown key `targets`; expected `version`, `target`, `program` or `crate`");
    let (l, c, m) = one("version = 1\n[crate.a]\ncapabilities = []\npackage = \"a\"\n");
    assert_eq!((l, c), (4, 1));
    assert!(m.contains("unknown key `package` in crate `a`"), "{m}");
    let p = problems("version = 1\n\n[program.a]\n  capabilites = []\n");
    assert_eq!((p[0].0, p[0].1), (3, 10), "{p:?}");
    assert!(p[0].2.contains("has no `capabilities`"), "{p:?}");
    assert_eq!((p[1].0, p[1].1), (4, 3), "{p:?}");
    assert!(p[1].2.starts_with("unknown key `capabilites` in program `a`"), "{p:?}");
}

#[test]
fn wrong_types() {
    let p = problems(
        "version = \"1\"\ntarget = 3\n[program.a]\ncapabilities = \"fs.read\"\n[crate.b]\ncapabilities = [1]\nreason = true\n",
    );
    let at: Vec<(usize, usize)> = p.iter().map(|p| (p.0, p.1)).collect();
    assert_eq!(at, [(1, 11), (2, 10), (4, 16), (6, 17), (7, 10)], "{p:?}");
    assert_eq!(p[0].2, "`version` must be an integer, found string");
    assert_eq!(p[2].2, "`capabilities` of program `a` must be an array of capability names, found string");
    assert!(p[3].2.contains("found integer"), "{}", p[3].2);
    let (l, c, m) = one("version = 1\nprogram = []\n");
    assert_eq!((l, c), (2, 11));
    assert!(m.contains("must be a table"), "{m}");
}

#[test]
fn duplicates() {
    let (l, c, m) = one("version = 1\n[program.a]\ncapabilities = [\"unsafe\", \"fs.read\", \"unsafe\"]\n");
    assert_eq!((l, c), (3, 38));
    assert_eq!(m, "`unsafe` is listed twice in the capabilities of program `a` (first at 3:17)");
    let (l, c, m) = one("version = 1\n[program.a]\ncapabilities = []\n\n[program.a]\ncapabilities = []\n");
    assert_eq!((l, c), (5, 10));
    assert!(m.starts_with("duplicate table `[program.a]`"), "{m}");
    let (l, c, m) = one("version = 1\n[crate.a]\ncapabilities = []\ncapabilities = [\"ffi\"]\n");
    assert_eq!((l, c), (4, 1));
    assert!(m.starts_with("duplicate key `capabilities`"), "{m}");
}

#[test]
fn version_missing_or_unsupported() {
    let (l, c, m) = one("[program.a]\ncapabilities = []\n");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("missing `version = 1`"), "{m}");
    let (l, c, m) = one("# header\nversion = 2\n");
    assert_eq!((l, c), (2, 11));
    assert_eq!(m, "unsupported baseline version 2; this velaris reads version 1");
}

#[test]
fn reasons_must_name_granted_capabilities() {
    let (l, c, m) = one(
        "version = 1\n[crate.a]\ncapabilities = [\"ffi\"]\n[crate.a.reasons]\nffi = \"bindings\"\nunsafe = \"x\"\n",
    );
    assert_eq!((l, c), (6, 1));
    assert_eq!(m, "a reason for `unsafe`, which crate `a` is not granted");
    let (l, c, _) = one("version = 1\n[crate.a]\ncapabilities = []\nreasons = { \"fs.exec\" = \"x\" }\n");
    assert_eq!((l, c), (4, 13));
}

#[test]
fn syntax_error_has_its_place() {
    let (l, c, _) = one("version = 1\n[program.a]\ncapabilities = [\"fs.read\"\nreason = \"x\"\n");
    assert_eq!(l, 4, "{c}");
}

#[test]
fn every_problem_at_once_in_file_order() {
    let text = r#"version = 1
[program.a]
capabilities = ["fs.red", "fs.read", "fs.read"]
colour = "blue"

[program.a]
reason = "again"

[crate.b]
capabilities = ["ffi", 7]
reasons = { "unsafe" = "x" }
"#;
    let err: BaselineError = parse(text, "velaris.capabilities").unwrap_err();
    let at: Vec<(usize, usize)> = err.problems.iter().map(|p| (p.line, p.column)).collect();
    assert_eq!(at, [(3, 17), (3, 38), (4, 1), (6, 10), (10, 24)], "{err}");
    let shown = err.to_string();
    assert!(shown.starts_with("velaris.capabilities:3:17: unknown capability `fs.red`"), "{shown}");
    assert_eq!(shown.lines().count(), 5, "{shown}");
    assert!(shown.lines().all(|l| l.starts_with("velaris.capabilities:")), "{shown}");
}

/// Characters a reviewer cannot see, or that turn text around, never reach the file raw.
fn invisible(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| c != '\n' && velaris::text::escape::is_dangerous(c))
        .collect()
}

#[test]
fn fmt_and_bless_keep_invisible_characters_escaped() {
    let text = concat!(
        "version = 1\n",
        "# a comment with a raw \u{202e}override and a zero\u{200b}width space\n",
        "[crate.reqwest]\n",
        "capabilities = ['net.connect']\n",
        "reason = \"safe \\u202e\\u0007 really\"\n",
        "[crate.reqwest.reasons]\n",
        "'net.connect' = 'an http client, \"fine\"'\n",
        "[crate.\"evil\\u202e\"]\n",
        "capabilities = []\n",
        "reason = \"tab\\there, newline\\nthere\"\n",
    );
    let before = parsed(text);
    let f = baseline::fmt(text, "velaris.capabilities").unwrap();
    assert!(invisible(&f).is_empty(), "{:?}\n{f}", invisible(&f));
    assert!(f.contains(r#"reason = "safe \u202E\u0007 really""#), "{f}");
    assert!(f.contains(r#"[crate."evil\u202E"]"#), "{f}");
    assert!(f.contains(r#"reason = "tab\there, newline\nthere""#), "{f}");
    assert!(f.contains(r"# a comment with a raw \u{202e}override and a zero\u{200b}width space"), "{f}");
    // Basic strings only, as docs/baseline-format.md says.
    assert!(f.contains(r#""net.connect" = "an http client, \"fine\"""#), "{f}");
    assert!(!f.lines().any(|l| !l.trim_start().starts_with('#') && l.contains('\'')), "{f}");
    assert_eq!(parsed(&f), before, "same grants and reasons");
    assert_eq!(baseline::fmt(&f, "velaris.capabilities").unwrap(), f, "idempotent");

    let mut s = cli();
    s.programs[0].crates.push(uses("evil\u{202e}", &["velaris", "evil\u{202e}"], &[Ffi]));
    let b = bless(Some(text), &s);
    assert!(invisible(&b).is_empty(), "{:?}\n{b}", invisible(&b));
    assert!(b.contains(r#"reason = "safe \u202E\u0007 really""#), "{b}");
}

// ---------------------------------------------------------------------------------------------
// atomic write

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn write_atomic_replaces_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("velaris.capabilities");
    baseline::write_atomic(&path, "version = 1\n").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "version = 1\n");
    assert_ne!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "not a temp file's mode");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    baseline::write_atomic(&path, "version = 1\n# two\n").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "version = 1\n# two\n");
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(entries(dir.path()), ["velaris.capabilities"]);
}

#[test]
fn write_atomic_refuses_a_read_only_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("velaris.capabilities");
    fs::write(&path, "old\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let e = baseline::write_atomic(&path, "new\n").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("read-only"), "{e}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(entries(dir.path()), ["velaris.capabilities"]);
}

#[test]
fn write_atomic_failed_rename_leaves_everything_as_it_was() {
    // Renaming a file onto a non-empty directory fails, even for root.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("velaris.capabilities");
    fs::create_dir(&path).unwrap();
    fs::write(path.join("keep"), "old\n").unwrap();
    fs::write(dir.path().join("other"), "x").unwrap();
    assert!(baseline::write_atomic(&path, "new\n").is_err());
    assert_eq!(fs::read_to_string(path.join("keep")).unwrap(), "old\n");
    assert_eq!(entries(dir.path()), ["other", "velaris.capabilities"], "no temporary file left");
}

#[test]
fn write_atomic_into_an_impossible_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    fs::write(&file, "x").unwrap();
    assert!(baseline::write_atomic(&file.join("velaris.capabilities"), "new\n").is_err());
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
    assert_eq!(entries(dir.path()), ["plain"]);
}

#[test]
fn write_atomic_through_a_symlink_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.capabilities");
    fs::write(&real, "old\n").unwrap();
    let link = dir.path().join("velaris.capabilities");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    baseline::write_atomic(&link, "new\n").unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(&real).unwrap(), "new\n");
}

// ---------------------------------------------------------------------------------------------
// renderings

fn widened_outcome() -> CheckOutcome {
    let mut s = cli();
    let mut evil = krate(
        "evil",
        "6.6.6",
        &["velaris", "evil"],
        vec![
            finding(NetConnect, "src/\u{1b}[2Jx|<b>.rs", 7, "std::net::TcpStream::connect"),
            finding(NetConnect, "src/b.rs", 8, "std::net::TcpStream::connect"),
            finding(ProcessSpawn, "src/c.rs", 9, "std::process::Command::spawn"),
        ],
    );
    std::sync::Arc::make_mut(&mut evil.findings)[1].scope = Scope::Build;
    s.programs[0].crates.push(evil);
    s.programs[0] = program("velaris", "velaris", s.programs[0].crates.clone());
    let text = CLI_BASELINE.replace(
        "[crate.velaris]\ncapabilities = [\"fs.read\"]",
        "[crate.velaris]\ncapabilities = [\"fs.read\", \"ffi\"]",
    );
    outcome(&text, &s)
}

#[test]
fn human_output() {
    let o = widened_outcome();
    let plain = strip_ansi(&render::human(&o, false));
    insta::assert_snapshot!("human", plain);
    assert!(plain.contains("new crate `evil`"), "{plain}");
    assert!(plain.contains("\\u{1b}[2J"), "escaped: {plain}");
    assert!(!plain.contains('\u{1b}'));
    // The hint names a command that exists, for this crate and capability.
    assert!(plain.contains("and 1 more (`velaris explain --crate evil net.connect` lists them)"), "{plain}");
    let explained = strip_ansi(&render::human(&o, true));
    assert!(explained.contains("via velaris -> evil"), "{explained}");
    assert!(explained.contains("src/b.rs:8:5  std::net::TcpStream::connect (build time)"), "{explained}");
    let ok = strip_ansi(&render::human(&outcome(CLI_BASELINE, &cli()), false));
    assert_eq!(ok, "holds: the code uses nothing velaris.capabilities does not grant\n");
}

/// Remove the ANSI styles the terminal rendering writes (anstream does the same for a pipe).
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn markdown_output() {
    let md = render::markdown(&widened_outcome());
    insta::assert_snapshot!("markdown", md);
    assert!(md.contains(r"src/\\u\{1b\}\[2Jx\|&lt;b&gt;.rs"), "{md}");
    assert!(!md.contains("<b>"));
    assert!(render::markdown(&outcome(CLI_BASELINE, &cli())).starts_with("### ✅"));
}

#[test]
fn json_output() {
    let o = widened_outcome();
    let v: serde_json::Value = serde_json::from_str(&render::json(&o)).unwrap();
    assert_eq!(v["schema"], "velaris/check/v1");
    assert_eq!(v["holds"], false);
    assert_eq!(v["stale"], true);
    let w = &v["widened"];
    assert_eq!(w[0]["program"], "velaris");
    assert!(w[0].get("crate").is_none());
    assert_eq!(w[1]["crate"], "evil");
    assert_eq!(w[1]["new"], true);
    assert_eq!(w[0]["capabilities"], serde_json::json!(["process.spawn"]));
    assert_eq!(w[0]["new"], false);
    assert_eq!(w[1]["capabilities"], serde_json::json!(["net.connect", "process.spawn"]));
    assert_eq!(w[1]["findings"][0]["file"], "src/\u{1b}[2Jx|<b>.rs");
    let f = &w[1]["findings"][1];
    assert_eq!(f["crate"], "evil");
    assert_eq!(f["version"], "6.6.6");
    assert_eq!(f["capability"], "net.connect");
    assert_eq!(f["scope"], "build");
    assert_eq!(f["file"], "src/b.rs");
    assert_eq!(f["line"], 8);
    assert_eq!(f["column"], 5);
    assert_eq!(f["path"], "std::net::TcpStream::connect");
    assert_eq!(f["via"], serde_json::json!(["velaris", "evil"]));
    assert_eq!(v["narrowed"], serde_json::json!([{"crate": "velaris", "capabilities": ["ffi"], "gone": false}]));
    assert_eq!(v["target_mismatch"], serde_json::Value::Null);
}

// ---------------------------------------------------------------------------------------------
// properties

mod properties {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::select;

    const PROGRAMS: &[&str] = &["velaris", "a.b", "with space", "ünï", "x-y_z", "bin", "quote\"d"];
    const CRATES: &[&str] = &["reqwest", "ring", "libc", "serde", "tokio", "a-b", "z_z"];

    fn capability() -> impl Strategy<Value = Capability> {
        select(Capability::ALL.to_vec())
    }

    fn a_crate() -> impl Strategy<Value = CrateSurface> {
        (select(CRATES), select(&["1.0.0", "0.2.3"][..]), prop::collection::vec(capability(), 0..5)).prop_map(
            |(name, version, caps)| {
                let findings =
                    caps.iter().enumerate().map(|(i, &c)| finding(c, "src/lib.rs", i as u32 + 1, "p")).collect();
                krate(name, version, &["root", name], findings)
            },
        )
    }

    fn a_surface() -> impl Strategy<Value = Surface> {
        prop::collection::btree_map(
            select(PROGRAMS),
            (select(&["velaris", "tools"][..]), prop::collection::vec(a_crate(), 0..4)),
            0..4,
        )
        .prop_map(|programs| {
            surface(programs.into_iter().map(|(name, (package, crates))| program(name, package, crates)).collect())
        })
    }

    /// A tiny deterministic generator for layout choices.
    struct Dice(u64);
    impl Dice {
        fn roll(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        fn coin(&mut self) -> bool {
            self.roll(2) == 0
        }
        fn shuffle<T>(&mut self, v: &mut [T]) {
            for i in (1..v.len()).rev() {
                v.swap(i, self.roll(i as u64 + 1) as usize);
            }
        }
    }

    fn key(s: &str) -> String {
        toml_edit::Key::new(s).display_repr().into_owned()
    }

    /// A valid baseline written the way a person might: any order, inline or multi-line lists,
    /// comments everywhere a comment can attach to something.
    fn messy(s: &Surface, seed: u64) -> String {
        let mut d = Dice(seed | 1);
        let b = velaris::baseline::parse(&bless(None, s), "x").unwrap();
        let mut n = 0;
        let mut comment = |d: &mut Dice, out: &mut String, above: bool| {
            if d.roll(3) == 0 {
                n += 1;
                if above {
                    out.push_str(&format!("{}# note {n}\n", if d.coin() { "\n" } else { "" }));
                } else {
                    out.push_str(&format!(" # inline {n}"));
                }
            }
        };
        let mut out = String::new();
        comment(&mut d, &mut out, true);
        let mut root = vec!["version = 1".to_string(), format!("target = \"{}\"", s.target)];
        d.shuffle(&mut root);
        for line in root {
            comment(&mut d, &mut out, true);
            out.push_str(&line);
            comment(&mut d, &mut out, false);
            out.push('\n');
        }
        let mut entries: Vec<(&str, &String, &velaris::baseline::Grant)> = b
            .programs
            .iter()
            .map(|(k, g)| ("program", k, g))
            .chain(b.crates.iter().map(|(k, g)| ("crate", k, g)))
            .collect();
        d.shuffle(&mut entries);
        for (kind, name, g) in entries {
            out.push('\n');
            comment(&mut d, &mut out, true);
            out.push_str(&format!("[{kind}.{}]", key(name)));
            comment(&mut d, &mut out, false);
            out.push('\n');
            let mut caps: Vec<Capability> = g.capabilities.iter().copied().collect();
            d.shuffle(&mut caps);
            let mut list = String::new();
            comment(&mut d, &mut list, true);
            if d.coin() {
                let items: Vec<String> = caps.iter().map(|c| format!("\"{c}\"")).collect();
                list.push_str(&format!("capabilities = [{}]", items.join(", ")));
            } else {
                list.push_str("capabilities = [");
                comment(&mut d, &mut list, false);
                list.push('\n');
                for c in &caps {
                    comment(&mut d, &mut list, true);
                    list.push_str(&format!("  \"{c}\","));
                    comment(&mut d, &mut list, false);
                    list.push('\n');
                }
                comment(&mut d, &mut list, true);
                list.push(']');
            }
            comment(&mut d, &mut list, false);
            list.push('\n');
            let mut keys = vec![list];
            if let Some(p) = &g.package {
                keys.push(format!("package = \"{p}\"\n"));
            }
            if d.coin() {
                keys.push(format!("reason = {}\n", toml_edit::Value::from(format!("why {name}"))));
            }
            d.shuffle(&mut keys);
            for k in keys {
                out.push_str(&k);
            }
            let reasons: Vec<Capability> = caps.iter().copied().filter(|_| d.coin()).collect();
            if !reasons.is_empty() {
                if d.coin() {
                    let items: Vec<String> =
                        reasons.iter().map(|c| format!("{} = \"because\"", key(c.as_str()))).collect();
                    out.push_str(&format!("reasons = {{ {} }}\n", items.join(", ")));
                } else {
                    comment(&mut d, &mut out, true);
                    out.push_str(&format!("[{kind}.{}.reasons]\n", key(name)));
                    for c in reasons {
                        comment(&mut d, &mut out, true);
                        out.push_str(&format!("{} = \"because {c}\"", key(c.as_str())));
                        comment(&mut d, &mut out, false);
                        out.push('\n');
                    }
                }
            }
        }
        if d.coin() {
            out.push_str("\n# the end\n");
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn bless_parse_bless_is_a_fixed_point(s in a_surface()) {
            let once = bless(None, &s);
            let b = parse(&once, "x").map_err(|e| TestCaseError::fail(format!("{e}\n{once}")))?;
            prop_assert!(check(&b, &s).holds);
            prop_assert!(!check(&b, &s).stale());
            prop_assert_eq!(bless(Some(&once), &s), once.clone());
            prop_assert_eq!(baseline::fmt(&once, "x").unwrap(), once);
        }

        #[test]
        fn pinned_bless_is_a_fixed_point_that_holds(s in a_surface()) {
            let all: BTreeSet<String> = s.programs.iter().flat_map(|p| p.crates.iter().map(|c| c.name.clone())).collect();
            let opts = baseline::BlessOptions { pin_apis: all };
            let once = baseline::bless_with(None, &s, &opts);
            let b = parse(&once, "x").map_err(|e| TestCaseError::fail(format!("{e}\n{once}")))?;
            let o = check(&b, &s);
            prop_assert!(o.holds && !o.stale(), "{:?}\n{}", o, once);
            prop_assert_eq!(bless(Some(&once), &s), once.clone());
            prop_assert_eq!(baseline::fmt(&once, "x").unwrap(), once);
        }

        #[test]
        fn fmt_keeps_meaning_and_comments(s in a_surface(), seed in any::<u64>()) {
            let text = messy(&s, seed);
            let before = parse(&text, "x").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let f = baseline::fmt(&text, "x").unwrap();
            let after = parse(&f, "x").map_err(|e| TestCaseError::fail(format!("{e}\n{f}")))?;
            prop_assert_eq!(&after, &before, "{}\n---\n{}", text, f);
            prop_assert_eq!(baseline::fmt(&f, "x").unwrap(), f.clone());
            for c in text.lines().filter_map(|l| l.find("# ").map(|i| &l[i..])) {
                prop_assert!(f.contains(c), "lost {:?}\n{}\n---\n{}", c, text, f);
            }
            // Blessing the same surface over the messy file keeps every comment too.
            let blessed = bless(Some(&text), &s);
            prop_assert_eq!(bless(Some(&blessed), &s), blessed.clone());
            for c in text.lines().filter_map(|l| l.find("# ").map(|i| &l[i..])) {
                prop_assert!(blessed.contains(c), "bless lost {:?}\n{}\n---\n{}", c, text, blessed);
            }
        }
    }
}
