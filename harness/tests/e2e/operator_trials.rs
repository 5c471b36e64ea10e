//! Operator-lane trials: `operator::<version>::<case>`, one per case for each Cilium version in
//! `LAYOUT_GATE_OPERATOR_CILIUM` (comma-separated; `all` for every pin; default: the versions
//! file's default), each version on its own local control plane shared by its trials (see
//! `lanes::operator::suite`). Beside them, per version, trials proving the answers are Cilium's
//! own: the operator binary is the pin's, and the CiliumEnvoyConfig it wrote carries what
//! layout-gate's model never writes.
//!
//! A control plane that is not built fails its trials with the command that builds it. Only where
//! Go itself is missing are they ignored, with the reason printed once;
//! `LAYOUT_GATE_REQUIRE_OPERATOR=1` turns that into failures (CI sets it).

use std::path::PathBuf;
use std::sync::Arc;

use layout_gate::lanes::operator::binaries;
use layout_gate::lanes::operator::suite::Suite;
use libtest_mimic::{Failed, Trial};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn evidence_root() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_EVIDENCE_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/layout-gate-evidence"))
}

fn cases_dir() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_CASES").map(PathBuf::from).unwrap_or_else(|| repo().join("cases"))
}

/// The versions the trials run at.
fn versions() -> Result<Vec<Option<String>>, String> {
    match std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").ok().filter(|v| !v.trim().is_empty()) {
        None => Ok(vec![None]),
        Some(v) if v.trim() == "all" => {
            let pins = layout_gate::versions::Pins::load_default()
                .map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
            Ok(pins.versions().iter().map(|v| Some(v.to_string())).collect())
        }
        Some(v) => Ok(v.split(',').map(|s| Some(s.trim().to_string())).collect()),
    }
}

pub fn trials() -> Vec<Trial> {
    let versions = match versions() {
        Ok(v) => v,
        Err(e) => return vec![Trial::test("operator::setup", move || Err(Failed::from(e)))],
    };
    versions.into_iter().flat_map(|v| version_trials(v.as_deref())).collect()
}

fn version_trials(version: Option<&str>) -> Vec<Trial> {
    let suite = match Suite::prepare(&cases_dir(), &evidence_root(), version) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            let name = format!("operator::{}::setup", version.unwrap_or("default"));
            return vec![Trial::test(name, move || Err(Failed::from(e)))];
        }
    };
    let version = suite.setup.version.to_string();
    let require = std::env::var("LAYOUT_GATE_REQUIRE_OPERATOR").is_ok_and(|v| v == "1");
    let missing = suite.prerequisites().err();
    let ignored = missing.as_ref().is_some_and(|m| m.no_go) && !require;
    if let Some(m) = &missing
        && ignored
    {
        eprintln!("operator::{version}:: trials ignored (set LAYOUT_GATE_REQUIRE_OPERATOR=1 to fail instead):\n{}", m.reason);
    }
    let gate = move |missing: &Option<layout_gate::lanes::operator::suite::Missing>| match missing {
        Some(m) => Err(Failed::from(m.reason.clone())),
        None => Ok(()),
    };
    let mut out = Vec::new();
    {
        let (s, m) = (Arc::clone(&suite), missing.clone());
        out.push(
            Trial::test(format!("operator::{version}::proof::the_operator_binary_is_the_pin"), move || {
                gate(&m)?;
                binary_is_the_pin(&s).map_err(Failed::from)
            })
            .with_ignored_flag(ignored),
        );
    }
    {
        let (s, m) = (Arc::clone(&suite), missing.clone());
        out.push(
            Trial::test(format!("operator::{version}::proof::the_cec_is_ciliums_own"), move || {
                gate(&m)?;
                cec_is_ciliums_own(&s).map_err(Failed::from)
            })
            .with_ignored_flag(ignored),
        );
    }
    for name in suite.case_names() {
        let (s, m) = (Arc::clone(&suite), missing.clone());
        out.push(
            Trial::test(format!("operator::{version}::{name}"), move || {
                gate(&m)?;
                s.run_case(&name).map_err(Failed::from)
            })
            .with_ignored_flag(ignored),
        );
    }
    out
}

/// The binary that answers is the one built from the pin's tag: `--version` names the pin and
/// the tag's commit, and its record names the Cilium module at the pin.
fn binary_is_the_pin(s: &Suite) -> Result<(), String> {
    let bins = binaries::find(&s.setup.pins, &s.setup.version)?;
    let out = std::process::Command::new(&bins.operator.path)
        .arg("--version")
        .output()
        .map_err(|e| format!("running {}: {e}", bins.operator.path.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let want = format!("Cilium-Operator {} ", s.setup.version);
    if !text.contains(&want) {
        return Err(format!("{} --version says {text:?}, not {want:?}", bins.operator.path.display()));
    }
    let commit = bins.operator.build.commit.clone().unwrap_or_default();
    if commit.len() < 10 || !text.contains(&commit[..10]) {
        return Err(format!("--version {text:?} does not name the tag's commit {commit}"));
    }
    let module = format!("github.com/cilium/cilium v{}", s.setup.version);
    if format!("{} {}", bins.operator.build.module, bins.operator.build.module_version) != module {
        return Err(format!(
            "the operator was built from {} {}, not {module}",
            bins.operator.build.module, bins.operator.build.module_version
        ));
    }
    Ok(())
}

/// A case's CiliumEnvoyConfig, as the operator wrote it, carries what layout-gate's model never
/// writes into its Envoy configuration (Cilium's HTTP filter chain and TCP keep-alive socket
/// options), so the answers cannot be the model's.
fn cec_is_ciliums_own(s: &Suite) -> Result<(), String> {
    let case =
        s.case_names().into_iter().find(|n| n == "dns01-default").ok_or("the catalogue has no dns01-default case at this version")?;
    let ev = s.run_case_evidence(&case)?;
    let cec = ev.recording.as_ref().and_then(|r| r.cec.as_ref()).ok_or("the case recorded no CiliumEnvoyConfig")?;
    let text = cec.to_string();
    let model_sources = [
        include_str!("../../src/lanes/model/serve.rs"),
        include_str!("../../src/lanes/model/translate.rs"),
        include_str!("../../src/envoy/listener.rs"),
        include_str!("../../src/envoy/bootstrap.rs"),
    ]
    .concat();
    for mark in ["envoy.filters.http.grpc_web", "TCP keep-alive"] {
        if !text.contains(mark) {
            return Err(format!("the CiliumEnvoyConfig lacks {mark:?}: {}", text.chars().take(400).collect::<String>()));
        }
        if model_sources.contains(mark) {
            return Err(format!("the model writes {mark:?} too, so it proves nothing"));
        }
    }
    Ok(())
}
