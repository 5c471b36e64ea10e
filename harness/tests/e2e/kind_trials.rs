//! Kind-lane trials: `kind::<version>::<case>`, one per case for the Cilium version in
//! `LAYOUT_GATE_CILIUM` (default: kind-config/versions.yaml), all on one shared cluster created
//! by the first trial that runs and deleted after the last (see `lanes::kind::suite`).
//!
//! Without docker or podman, kind, helm or curl (or where the kind network is unreachable),
//! the trials are listed as ignored and the reason is printed once. `LAYOUT_GATE_REQUIRE_KIND=1`
//! turns that into failures, for CI lanes that must not pass vacuously.

use std::path::PathBuf;
use std::sync::Arc;

use layout_gate::lanes::kind::suite::Suite;
use libtest_mimic::{Failed, Trial};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn evidence_root() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_EVIDENCE_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/layout-gate-evidence"))
}

/// `LAYOUT_GATE_CASES` names another folder of cases (e.g. one case while working on it).
fn cases_dir() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_CASES").map(PathBuf::from).unwrap_or_else(|| repo().join("cases"))
}

pub fn trials() -> Vec<Trial> {
    let suite = match Suite::prepare(&cases_dir(), &evidence_root()) {
        Ok(s) => Arc::new(s),
        // The suite cannot even be described (a broken versions file or case): one failing
        // trial says so rather than silently listing nothing.
        Err(e) => return vec![Trial::test("kind::setup", move || Err(Failed::from(e)))],
    };
    let version = suite.setup.version.to_string();
    let require = std::env::var("LAYOUT_GATE_REQUIRE_KIND").is_ok_and(|v| v == "1");
    let missing = suite.prerequisites().err();
    if let Some(reason) = &missing
        && !require
    {
        eprintln!("kind::{version}:: trials ignored (set LAYOUT_GATE_REQUIRE_KIND=1 to fail instead):\n{reason}");
    }
    suite
        .case_names()
        .into_iter()
        .map(|name| {
            let s = Arc::clone(&suite);
            let missing = missing.clone();
            let ignored = missing.is_some() && !require;
            Trial::test(format!("kind::{version}::{name}"), move || match missing {
                Some(reason) => Err(Failed::from(reason)),
                None => s.run_case(&name).map_err(Failed::from),
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
