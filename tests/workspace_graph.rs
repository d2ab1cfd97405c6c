//! The workspace graph: programs, units, scopes and features from manifests and Cargo.lock.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use velaris::surface::cfg::CfgEnv;
use velaris::surface::model::Scope;
use velaris::workspace::{
    BUILD_SCRIPT_DEP, Graph, PackageId, ResolveOptions, Unit, UnitKind, Workspace, WorkspaceError,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/workspaces")
        .join(name)
}

/// Published (normalized) manifests of the registry packages of the `multi` fixture.
fn registry_manifest(id: &PackageId) -> Result<String, String> {
    let body = match id.name.as_str() {
        "common" => {
            r#"
[features]
default = ["std"]
std = []
fastpath = []
slowpath = []
from-tool = []
from-build = []
"#
        }
        "buildhelper" => {
            r#"
[dependencies.common]
version = "1"
features = ["from-build"]
"#
        }
        "deep" => "[dependencies]\ndeeper = \"1\"\n",
        "deeper" => "[package.metadata]\n[dependencies]\nleaf = \"1\"\n",
        "real-name" => "[dependencies]\nleaf = \"1.0\"\n",
        "maybe" => "[features]\nfeat = []\n",
        "procdep" => "[features]\ndefault = [\"std\"]\nstd = []\n",
        "leaf" | "opt" | "winonly" | "devonly" => "",
        _ => return Err(format!("{} is not in the test registry", id.name)),
    };
    let extra = if id.name == "deeper" {
        "links = \"deeper\"\nbuild = \"build.rs\"\n"
    } else {
        ""
    };
    Ok(format!(
        "[package]\nedition = \"2018\"\nname = \"{}\"\nversion = \"{}\"\n{extra}{body}",
        id.name, id.version
    ))
}

fn linux(key: &str) -> bool {
    CfgEnv::for_target("x86_64-unknown-linux-gnu", &BTreeSet::new())
        .unwrap()
        .matches_target_key(key)
}

fn windows(key: &str) -> bool {
    key == "cfg(windows)" || key == "x86_64-pc-windows-msvc"
}

fn multi(target: &dyn Fn(&str) -> bool) -> (Workspace, Graph) {
    let ws = Workspace::load(&fixture("multi")).unwrap();
    let g = ws.resolve(target, &registry_manifest).unwrap();
    (ws, g)
}

/// The units of a package, in graph order.
fn units_of<'g>(g: &'g Graph, name: &str) -> Vec<&'g Unit> {
    g.units.iter().filter(|u| u.package.name == name).collect()
}

fn one<'g>(g: &'g Graph, name: &str, kind: UnitKind, scope: Scope) -> (usize, &'g Unit) {
    let found: Vec<(usize, &Unit)> = g
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.package.name == name && u.kind == kind && u.scope == scope)
        .collect();
    assert_eq!(found.len(), 1, "{name} {kind:?} {scope:?}: {found:#?}");
    found[0]
}

fn reachable_names(g: &Graph, program: &str) -> BTreeSet<String> {
    let p = g
        .program(program)
        .unwrap_or_else(|| panic!("no program {program}"));
    g.reachable(p)
        .into_iter()
        .map(|(u, _)| g.units[u].package.name.clone())
        .collect()
}

fn feats(u: &Unit) -> Vec<&str> {
    u.features.iter().map(String::as_str).collect()
}

#[test]
fn programs_of_two_members_bins_and_required_features() {
    let (ws, g) = multi(&linux);
    let members: Vec<&str> = ws.members().map(|m| m.id.name.as_str()).collect();
    assert_eq!(
        members,
        ["app", "macros", "shared", "tool"],
        "glob members, `exclude` honoured"
    );
    // Every artifact is a program: binaries, the shared and static libraries a library is
    // built as, and a member that ships only its library (a proc macro too).
    let programs: Vec<(&str, &str, &str)> = g
        .programs
        .iter()
        .map(|p| (p.package.name.as_str(), p.name.as_str(), p.kind.as_str()))
        .collect();
    assert_eq!(
        programs,
        [
            ("app", "app", "bin"),
            ("macros", "proc-macro:macros", "proc-macro"),
            ("shared", "cdylib:shared_lib", "cdylib"),
            ("shared", "staticlib:shared_lib", "staticlib"),
            ("tool", "listed", "bin"),
            ("tool", "alpha", "bin"),
            ("tool", "beta", "bin")
        ]
    );
    let roots: Vec<&str> = g
        .programs
        .iter()
        .map(|p| g.units[p.unit].root.as_str())
        .collect();
    assert_eq!(
        roots,
        [
            "src/main.rs",
            "src/lib.rs",
            "src/lib.rs",
            "src/lib.rs",
            "tools/listed.rs",
            "src/bin/alpha.rs",
            "src/bin/beta/main.rs"
        ]
    );
    assert!(
        g.programs
            .iter()
            .all(|p| g.units[p.unit].kind == if p.kind == velaris::surface::ProgramKind::Bin { UnitKind::Bin } else if p.kind == velaris::surface::ProgramKind::ProcMacro { UnitKind::ProcMacro } else { UnitKind::Lib })
    );
    // `special` needs a feature nothing enables.
    assert_eq!(g.skipped.len(), 1);
    assert_eq!(
        (g.skipped[0].name.as_str(), g.skipped[0].missing.clone()),
        ("special", vec!["special".to_string()])
    );
    // A bin depends on its package's lib under the lib's name.
    let alpha = &g.units[g.program("alpha").unwrap().unit];
    assert!(
        alpha
            .deps
            .iter()
            .any(|(n, d)| n == "tool" && g.units[*d].kind == UnitKind::Lib)
    );
    assert_eq!(g.warnings, Vec::<String>::new());
}

#[test]
fn build_script_and_its_build_dependency_are_build_scope() {
    let (_, g) = multi(&linux);
    let app = &g.units[g.program("app").unwrap().unit];
    assert_eq!(app.scope, Scope::Runtime);
    let (bs_idx, bs) = one(&g, "app", UnitKind::BuildScript, Scope::Build);
    assert_eq!(
        (bs.root.as_str(), bs.crate_name.as_str()),
        ("build.rs", "build_script_build")
    );
    assert!(app.deps.contains(&(BUILD_SCRIPT_DEP.to_string(), bs_idx)));
    let helper: Vec<&str> = bs.deps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(helper, ["buildhelper"]);
    let (_, bh) = one(&g, "buildhelper", UnitKind::Lib, Scope::Build);
    // Everything under a build dependency is built for the host.
    let common_host = &g.units[bh.deps[0].1];
    assert_eq!(
        (common_host.package.name.as_str(), common_host.scope),
        ("common", Scope::Build)
    );
    assert!(reachable_names(&g, "app").contains("buildhelper"));
    // A registry package's build script, named by `build`, with its `links`.
    let (_, deeper_bs) = one(&g, "deeper", UnitKind::BuildScript, Scope::Build);
    assert_eq!(deeper_bs.links.as_deref(), Some("deeper"));
    assert!(deeper_bs.package_dir.is_none());
}

#[test]
fn proc_macro_dependency_is_build_scope_with_its_deps() {
    let (_, g) = multi(&linux);
    let (m_idx, m) = one(&g, "macros", UnitKind::ProcMacro, Scope::Build);
    let (_, procdep) = one(&g, "procdep", UnitKind::Lib, Scope::Build);
    assert_eq!(feats(procdep), ["default", "std"]);
    assert_eq!(
        units_of(&g, "procdep").len(),
        1,
        "no runtime unit for a proc-macro's dependency"
    );
    assert_eq!(
        m.deps.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["procdep"]
    );
    let tool_lib = one(&g, "tool", UnitKind::Lib, Scope::Runtime).1;
    assert!(tool_lib.deps.contains(&("macros".to_string(), m_idx)));
    assert!(m.package_dir.as_ref().unwrap().ends_with("crates/macros"));
}

#[test]
fn dev_dependencies_never_appear() {
    let (_, g) = multi(&linux);
    assert!(units_of(&g, "devonly").is_empty());
}

#[test]
fn target_specific_dependency_follows_the_target() {
    let (_, g) = multi(&linux);
    assert!(!reachable_names(&g, "app").contains("winonly"));
    let (_, g) = multi(&windows);
    assert!(reachable_names(&g, "app").contains("winonly"));
}

/// Every locked package without a unit says why, naming the declaration not taken.
#[test]
fn packages_not_built_carry_the_reason() {
    let why = |g: &Graph, name: &str| {
        g.not_built
            .iter()
            .find(|n| n.package.name == name)
            .map(|n| (n.reason.to_string(), n.from.as_ref().map(|f| f.name.clone()).unwrap_or_default()))
    };
    let (_, g) = multi(&linux);
    assert_eq!(why(&g, "winonly"), Some(("cfg(windows)".to_string(), "app".to_string())));
    assert_eq!(why(&g, "opt"), Some(("optional, feature off".to_string(), "app".to_string())));
    assert_eq!(why(&g, "devonly").map(|w| w.0), Some("dev-dependency only".to_string()));
    assert!(why(&g, "common").is_none(), "built packages are not listed");
    for n in &g.not_built {
        assert!(units_of(&g, &n.package.name).is_empty(), "{} is listed but built", n.package.name);
    }
    let (_, g) = multi(&windows);
    assert_eq!(why(&g, "winonly"), None);
}

/// A pending package is a leaf: what only it needs is not reached until its manifest is known.
#[test]
fn pending_packages_are_leaves() {
    let ws = Workspace::load(&fixture("multi")).unwrap();
    let pending = |id: &PackageId| id.name == "deep";
    let opts = ResolveOptions {
        target_matches: &linux,
        host_matches: None,
        manifest_of: &|id: &PackageId| if id.name == "deep" { Err("not yet".into()) } else { registry_manifest(id) },
        has_file: None,
        pending: Some(&pending),
        lockfile_led: false,
    };
    let g = ws.resolve_with(&opts).unwrap();
    assert_eq!(g.pending.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["deep"]);
    let deep = units_of(&g, "deep");
    assert!(!deep.is_empty() && deep.iter().all(|u| u.deps.is_empty()), "{deep:?}");
    assert!(units_of(&g, "deeper").is_empty(), "only deep needs deeper");
    assert!(!units_of(&multi(&linux).1, "deeper").is_empty());
    let full = multi(&linux).1;
    assert!(full.pending.is_empty());
}

#[test]
fn optional_dependencies_and_weak_features() {
    let (_, g) = multi(&linux);
    // app: `opt` only with feature `extra` (not default); `maybe?/feat` does not enable `maybe`.
    let app_reach = reachable_names(&g, "app");
    assert!(!app_reach.contains("opt"));
    assert!(!app_reach.contains("maybe"));
    assert!(units_of(&g, "opt").is_empty());
    let app_bin = &g.units[g.program("app").unwrap().unit];
    assert_eq!(feats(app_bin), ["default"]);
    // tool: `dep:leaf` enables leaf; the implicit feature `maybe` enables maybe, and the weak
    // `maybe?/feat` then applies.
    let tool = one(&g, "tool", UnitKind::Lib, Scope::Runtime).1;
    assert_eq!(feats(tool), ["default", "maybe", "with-leaf"]);
    let names: BTreeSet<&str> = tool.deps.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains("leaf") && names.contains("maybe"),
        "{names:?}"
    );
    let (_, maybe) = one(&g, "maybe", UnitKind::Lib, Scope::Runtime);
    assert_eq!(feats(maybe), ["feat"]);
}

#[test]
fn default_features_off_everywhere_and_separate_host_features() {
    let (_, g) = multi(&linux);
    // Runtime: every edge to `common` says `default-features = false` (through the workspace).
    let (_, rt) = one(&g, "common", UnitKind::Lib, Scope::Runtime);
    assert_eq!(feats(rt), ["fastpath", "from-tool", "slowpath"]);
    // Build: buildhelper keeps the defaults; resolved apart from the runtime copy.
    let (_, host) = one(&g, "common", UnitKind::Lib, Scope::Build);
    assert_eq!(feats(host), ["default", "from-build", "std"]);
}

#[test]
fn features_unify_across_members() {
    let (_, g) = multi(&linux);
    // app asks `shared/fast`, tool asks `shared/slow`: one unit with both, for both programs.
    let (shared_idx, shared) = one(&g, "shared", UnitKind::Lib, Scope::Runtime);
    assert_eq!(feats(shared), ["fast", "slow"]);
    for prog in ["app", "alpha"] {
        let p = g.program(prog).unwrap();
        assert!(
            g.reachable(p).iter().any(|(u, _)| *u == shared_idx),
            "{prog}"
        );
    }
}

#[test]
fn extern_names_come_from_renames_and_lib_names() {
    let (_, g) = multi(&linux);
    let app = &g.units[g.program("app").unwrap().unit];
    let by_name = |n: &str| {
        app.deps
            .iter()
            .find(|(x, _)| x == n)
            .map(|(_, d)| &g.units[*d])
    };
    assert_eq!(
        by_name("short_name").unwrap().package.name,
        "real-name",
        "package = \"real-name\""
    );
    assert_eq!(
        by_name("shared_lib").unwrap().package.name,
        "shared",
        "[lib] name"
    );
    assert_eq!(by_name("shared_lib").unwrap().crate_name, "shared_lib");
    assert!(by_name("real_name").is_none());
}

#[test]
fn workspace_inheritance() {
    let (ws, g) = multi(&linux);
    let shared = ws.members().find(|m| m.id.name == "shared").unwrap();
    assert_eq!(shared.id.version, "0.3.0");
    assert_eq!(shared.manifest.edition, "2021");
    let app = ws.members().find(|m| m.id.name == "app").unwrap();
    let d = app
        .manifest
        .deps
        .iter()
        .find(|d| d.name_in_toml == "shared")
        .unwrap();
    assert_eq!(d.features, ["fast"]);
    assert!(
        d.path.as_ref().unwrap().ends_with("crates/shared"),
        "path relative to the workspace root"
    );
    let c = ws
        .members()
        .find(|m| m.id.name == "tool")
        .unwrap()
        .manifest
        .deps
        .iter()
        .find(|d| d.name_in_toml == "common")
        .cloned();
    let c = c.unwrap();
    assert!(!c.default_features);
    assert_eq!(c.features, ["from-tool"]);
    assert_eq!(c.version_req.as_deref(), Some("1"));
    assert_eq!(
        one(&g, "app", UnitKind::Bin, Scope::Runtime)
            .1
            .package
            .version,
        "0.3.0"
    );
}

#[test]
fn reachable_gives_shortest_paths() {
    let (_, g) = multi(&linux);
    let p = g.program("app").unwrap();
    let reach = g.reachable(p);
    assert_eq!(reach[0], (p.unit, vec![p.unit]));
    let path_names = |name: &str| -> Vec<String> {
        let (_, path) = reach
            .iter()
            .find(|(u, _)| g.units[*u].package.name == name && g.units[*u].kind == UnitKind::Lib)
            .unwrap();
        path.iter()
            .map(|&u| g.units[u].package.name.clone())
            .collect()
    };
    // leaf: app → deep → deeper → leaf, and app → real-name → leaf.
    assert_eq!(path_names("leaf"), ["app", "real-name", "leaf"]);
    assert_eq!(path_names("deeper"), ["app", "deep", "deeper"]);
    // Deterministic.
    assert_eq!(g.reachable(p), multi(&linux).1.reachable(p));
}

#[test]
fn git_package_is_kept_with_its_error() {
    let (ws, g) = multi(&linux);
    let gd = units_of(&g, "gitdep");
    assert_eq!(gd.len(), 1);
    let u = gd[0];
    assert!(
        u.package
            .source
            .as_deref()
            .unwrap()
            .starts_with("git+https://example.com/gitdep#0123")
    );
    assert!(u.package.checksum.is_none());
    assert!(
        u.error
            .as_deref()
            .unwrap()
            .contains("not in the test registry"),
        "{:?}",
        u.error
    );
    assert!(reachable_names(&g, "app").contains("gitdep"));
    // Registry packages carry the lockfile checksum.
    let leaf = ws
        .lock_packages()
        .iter()
        .find(|p| p.name == "leaf")
        .unwrap();
    assert_eq!(leaf.checksum.as_ref().map(String::len), Some(64));
    assert_eq!(
        ws.links_of(&units_of(&g, "deeper")[0].package).as_deref(),
        Some("deeper")
    );
}

#[test]
fn has_file_finds_implicit_build_scripts() {
    let ws = Workspace::load(&fixture("multi")).unwrap();
    let has_file =
        |id: &PackageId, rel: &str| (id.name == "leaf" && rel == "build.rs") || rel == "src/lib.rs";
    let opts = ResolveOptions {
        target_matches: &linux,
        host_matches: Some(&windows),
        manifest_of: &registry_manifest,
        has_file: Some(&has_file),
        pending: None,
        lockfile_led: false,
    };
    let g = ws.resolve_with(&opts).unwrap();
    assert_eq!(
        one(&g, "leaf", UnitKind::BuildScript, Scope::Build).1.root,
        "build.rs"
    );
}

#[test]
fn path_dependency_outside_the_workspace() {
    let ws = Workspace::load(&fixture("outer/ws")).unwrap();
    let g = ws
        .resolve(&linux, &|id| Err(format!("{id} is not on disk")))
        .unwrap();
    // Only the member's bin is a program; the path package's own main.rs is not.
    assert_eq!(
        g.programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["outer-app"]
    );
    let (_, ext) = one(&g, "ext", UnitKind::Lib, Scope::Runtime);
    assert_eq!(
        ext.package.version, "2.0.0",
        "inherited from its own workspace"
    );
    assert!(
        ext.package_dir
            .as_ref()
            .unwrap()
            .ends_with("lib-ws/crates/ext")
    );
    assert!(ext.error.is_none());
    let (_, bs) = one(&g, "ext", UnitKind::BuildScript, Scope::Build);
    assert_eq!(bs.links.as_deref(), Some("ext"));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
fn never_runs_what_cargo_config_names() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("hostile");
    copy_dir(&fixture("hostile"), &root);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join("tools/evil.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let config = std::fs::read_to_string(root.join(".cargo/config.toml")).unwrap();
    assert!(config.contains("rustc-wrapper") && config.contains("rustc ="));
    let ws = Workspace::load(&root).unwrap();
    let g = ws
        .resolve(&linux, &|id| Err(format!("{id}: no registry")))
        .unwrap();
    // A single-package root: its path dependency is not a member, its bin not a program.
    assert_eq!(
        g.programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["hostile"]
    );
    let (_, bs) = one(&g, "helper", UnitKind::BuildScript, Scope::Build);
    assert_eq!(bs.root, "build.rs");
    assert!(
        !root.join("MARKER-something-ran").exists(),
        "something was executed"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(!leftovers.iter().any(|n| n == "target"), "{leftovers:?}");
}

#[test]
fn missing_lockfile_names_generate_lockfile() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("outer"), tmp.path());
    let ws_root = tmp.path().join("ws");
    std::fs::remove_file(ws_root.join("Cargo.lock")).unwrap();
    let e = Workspace::load(&ws_root).unwrap_err();
    assert!(matches!(e, WorkspaceError::MissingLockfile { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("cargo generate-lockfile") && msg.contains("Cargo.lock"),
        "{msg}"
    );
    assert!(msg.starts_with("no lockfile"), "{msg}");
}

#[test]
fn toml_syntax_error_names_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("multi"), tmp.path());
    let bad = tmp.path().join("crates/shared/Cargo.toml");
    std::fs::write(&bad, "[package]\nname = \"shared\"\nversion = = \"1\"\n").unwrap();
    let msg = Workspace::load(tmp.path()).unwrap_err().to_string();
    let expected = format!("{}:3:", bad.display());
    assert!(msg.starts_with(&expected), "{msg}");
    assert!(msg.contains("invalid toml"), "{msg}");
}

#[test]
fn stale_lockfile_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("multi"), tmp.path());
    let lock = std::fs::read_to_string(tmp.path().join("Cargo.lock")).unwrap();
    // `deep` is a required dependency of app.
    std::fs::write(
        tmp.path().join("Cargo.lock"),
        lock.replace(" \"deep\",\n", ""),
    )
    .unwrap();
    let ws = Workspace::load(tmp.path()).unwrap();
    let e = ws.resolve(&linux, &registry_manifest).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("out of date") && msg.contains("\"deep\""),
        "{msg}"
    );
}
