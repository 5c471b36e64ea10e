//! Kind-lane trials: `kind::<version>::<case>`, one per case for the Cilium version in
//! `LAYOUT_GATE_CILIUM` (default: kind-config/versions.yaml), all on one shared cluster created
//! by the first trial that runs and deleted after the last (see `lanes::kind::suite`).
//!
//! Without docker or podman, kind, helm or curl (or where the kind network is unreachable),
//! the trials are listed as ignored and the reason is printed once. `LAYOUT_GATE_REQUIRE_KIND=1`
//! turns that into failures, for CI lanes that must not pass vacuously.
//!
//! Beside them, offline trials that need no cluster and always run: `kind::replay::<run>`
//! replays each hand-made recording under `harness/tests/data/replay/` through the binary, and
//! `kind::dry_run::<case>` shows the lane's dry run for a case with several Gateways.

use std::path::PathBuf;
use std::process::Command;
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
    let mut out = offline_trials();
    out.extend(cluster_trials());
    out
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(repo()).env_remove("LAYOUT_GATE_CILIUM");
    c
}

/// Replays and dry runs: the kind lane's offline half, on every machine.
fn offline_trials() -> Vec<Trial> {
    let replays = repo().join("harness/tests/data/replay");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&replays)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("evidence.json").is_file()).collect())
        .unwrap_or_default();
    runs.sort();
    let mut out: Vec<Trial> = runs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Trial::test(format!("kind::replay::{name}"), move || replay_agrees(&dir).map_err(Failed::from))
        })
        .collect();
    if out.is_empty() {
        out.push(Trial::test("kind::replay::recordings", move || {
            Err(Failed::from(format!("no recorded run under {}", replays.display())))
        }));
    }
    out.push(Trial::test("kind::dry_run::two_gateways", || dry_run_two_gateways().map_err(Failed::from)));
    out.push(Trial::test("kind::dry_run::stepped", || dry_run_stepped().map_err(Failed::from)));
    out
}

/// `layout-gate replay DIR` exits 0 and says every case agrees with its recorded verdicts.
fn replay_agrees(dir: &std::path::Path) -> Result<(), String> {
    let out = bin().arg("replay").arg(dir).output().map_err(|e| format!("running layout-gate replay: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "layout-gate replay {} exited {}:\n{stdout}{}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let cases = stdout.lines().filter(|l| l.contains("verdict(s) re-derived")).count();
    let agreeing = stdout.lines().filter(|l| l.contains("agrees with the recorded verdicts")).count();
    if cases == 0 || cases != agreeing {
        return Err(format!("expected every replayed case to agree:\n{stdout}"));
    }
    Ok(())
}

/// The dry run of the lane's two-Gateway fixture: both Gateways and the ListenerSet watched,
/// each Gateway's address waited for and probed, each Gateway's CEC read.
fn dry_run_two_gateways() -> Result<(), String> {
    let out = bin()
        .args([
            "run",
            "--lane",
            "kind",
            "--dry-run",
            "--cilium",
            "1.20.1",
            "--cases",
            "harness/tests/data/kind/cases",
            "--case",
            "two-gateways",
        ])
        .output()
        .map_err(|e| format!("running layout-gate run --dry-run: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("the dry run exited {}:\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let ns = "lg-two-gateways-dryrun";
    for needle in [
        format!(
            "Gateway in {ns} where metadata.name=gw; Gateway in {ns} where metadata.name=second; ListenerSet in {ns} where metadata.name=extra"
        ),
        format!("wait for Gateways {ns}/gw, {ns}/second have IP addresses"),
        "probe <Gateway second address>:443: TLS handshake, SNI www.example.test".to_string(),
        "probe <Gateway gw address>:8080: plain HTTP GET /, Host alt.example.test".to_string(),
        format!("get CiliumEnvoyConfig {ns}/cilium-gateway-second"),
        format!("cilium-dbg envoy admin config listeners -n {ns}/cilium-gateway-.*"),
    ] {
        if !text.contains(&needle) {
            return Err(format!("the dry run lacks {needle:?}:\n{text}"));
        }
    }
    Ok(())
}

/// The dry run of the lane's stepped fixture (a case applied in three steps): each step's
/// manifests applied or deleted after the step before it was probed, each step probed again.
fn dry_run_stepped() -> Result<(), String> {
    let out = bin()
        .args(["run", "--lane", "kind", "--dry-run", "--cilium", "1.20.1", "--cases", "harness/tests/data/kind/cases", "--case", "stepped"])
        .output()
        .map_err(|e| format!("running layout-gate run --dry-run: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("the dry run exited {}:\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let ns = "lg-stepped-dryrun";
    let order = [
        "## case stepped: probes".to_string(),
        "## case stepped step 2: manifests".to_string(),
        "# stepped step 2/route-api-again.yaml".to_string(),
        "## case stepped step 2: probes".to_string(),
        "## case stepped step 3: manifests".to_string(),
        format!("delete TLSRoute {ns}/api-again"),
        "## case stepped step 3: probes".to_string(),
        format!("delete Namespace {ns}"),
    ];
    let mut from = 0;
    for needle in &order {
        match text[from..].find(needle.as_str()) {
            Some(at) => from += at + needle.len(),
            None => return Err(format!("the dry run lacks {needle:?} after the steps before it:\n{text}")),
        }
    }
    Ok(())
}

fn cluster_trials() -> Vec<Trial> {
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
