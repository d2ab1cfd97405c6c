//! Source analysis: any bytes as a crate's root file are analyzed or reported `unanalyzed`,
//! on an analysis thread (a smaller one than velaris uses, so that the guard's estimate is
//! tested with less room), never crashing; the guard's estimate never panics on any bytes.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use velaris::surface::analyze::{CrateInput, analyze};
use velaris::surface::cfg::CfgEnv;
use velaris::surface::guard;
use velaris::surface::rules::Rules;
use velaris::surface::Scope;

fn cfg() -> &'static CfgEnv {
    static CFG: OnceLock<CfgEnv> = OnceLock::new();
    CFG.get_or_init(|| CfgEnv::for_target("x86_64-unknown-linux-gnu", &BTreeSet::new()).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let _ = guard::estimate(data);
    let files: BTreeMap<String, Vec<u8>> = [("src/lib.rs".to_string(), data.to_vec())].into();
    let deps = BTreeMap::new();
    let input = CrateInput {
        crate_name: "fuzz",
        files: &files,
        root: "src/lib.rs",
        cfg: cfg(),
        scope: Scope::Runtime,
        deps: &deps,
        rules: Rules::builtin(),
    };
    let found = guard::parallel_map_with_stack(&[()], 1, 32 * 1024 * 1024, |_| analyze(&input));
    assert_eq!(found.len(), 1);
});
