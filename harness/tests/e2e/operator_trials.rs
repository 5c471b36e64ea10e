//! Operator-lane trials: `operator::<version>::<case>`, one per case for each Cilium version in
//! `LAYOUT_GATE_OPERATOR_CILIUM` (comma-separated; `all` for every pin; default: the versions
//! file's default), each version on its own local control plane shared by its trials (see
//! `lanes::operator::suite`). Beside them, per version, trials proving the answers are Cilium's
//! own: the operator binary is the pin's, the CiliumEnvoyConfig it wrote carries what
//! layout-gate's model never writes, and the Cilium CRDs the lane installed before it started are
//! the ones it registers, labelled as it labels them, so it left them alone.
//!
//! A control plane that is not built (Go missing included) is one failing trial,
//! `operator::<version>::control_plane`, naming the command that builds it. A version whose
//! operator the Go module proxy cannot build (`binaries::blocked`) is left out of `all`, said on
//! stderr with the modules refused; named explicitly, it fails.

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
            // Every pin whose operator can be built from the Go module proxy; the others are
            // named, with the modules the proxy refuses (asked by name, they fail).
            let mut out = Vec::new();
            for v in pins.versions() {
                match layout_gate::lanes::operator::binaries::blocked(&pins, &v) {
                    Some(refused) => {
                        eprintln!("operator trials: {}", layout_gate::lanes::operator::binaries::blocked_message(&v, &refused))
                    }
                    None => out.push(Some(v.to_string())),
                }
            }
            Ok(out)
        }
        Some(v) => Ok(v.split(',').map(|s| Some(s.trim().to_string())).collect()),
    }
}

pub fn trials() -> Vec<Trial> {
    let versions = match versions() {
        Ok(v) => v,
        Err(e) => return vec![Trial::test("operator::setup", move || Err(Failed::from(e)))],
    };
    let mut out = vec![Trial::test("operator::unserved_module_is_named", unserved_module_is_named)];
    out.extend(versions.into_iter().flat_map(|v| version_trials(v.as_deref())));
    out
}

/// A pin whose operator the Go module proxy cannot build (the 1.20 line needs two modules it
/// refuses) is refused by the build script and by `run --lane operator`, each naming the exact
/// modules, before anything is built or started, and the run records no verdict.
fn unserved_module_is_named() -> Result<(), Failed> {
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let Some((v, refused)) = pins.versions().into_iter().find_map(|v| binaries::blocked(&pins, &v).map(|r| (v, r))) else {
        // Nothing pinned is blocked: the script's own refusal is then untestable here.
        return Ok(());
    };
    if refused.is_empty() || !refused.iter().all(|m| m.contains('@')) {
        return Err(format!("kind-config/control-plane/cilium-operator/v{v}/blocked names no module@version: {refused:?}").into());
    }
    let out = std::process::Command::new(repo().join("scripts/install-control-plane.sh"))
        .arg(v.to_string())
        .env("LAYOUT_GATE_CONTROL_PLANE_DIR", tempfile::tempdir().map_err(|e| e.to_string())?.path())
        .output()
        .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    for m in &refused {
        let path = m.split(' ').next().unwrap_or(m);
        if out.status.success() || !err.contains(path) {
            return Err(format!("install-control-plane.sh {v}: {}; stderr does not name {path}:\n{err}", out.status).into());
        }
    }
    if err.contains("go build") {
        return Err(format!("install-control-plane.sh {v} started building before refusing:\n{err}").into());
    }
    let evidence = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .args(["run", "--lane", "operator", "--cilium", &v.to_string(), "--case", "dns01-default", "--evidence-dir"])
        .arg(evidence.path())
        .current_dir(repo())
        .output()
        .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    let path = refused[0].split(' ').next().unwrap_or_default();
    if out.status.success() || out.status.code() == Some(101) || !err.contains(path) {
        return Err(format!("run --lane operator --cilium {v}: {}; stderr does not name {path}:\n{err}", out.status).into());
    }
    for e in std::fs::read_dir(evidence.path()).map_err(|e| e.to_string())?.flatten() {
        let text = std::fs::read_to_string(e.path().join("evidence.json")).unwrap_or_default();
        if !text.contains("\"not_run\"") || text.contains("\"outcome\"") {
            return Err(format!("the blocked run's evidence carries a verdict or no not-run reason: {text}").into());
        }
    }
    Ok(())
}

fn version_trials(version: Option<&str>) -> Vec<Trial> {
    let suite = match Suite::prepare(&cases_dir(), &evidence_root(), version) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            let name = format!("operator::{}::setup", version.unwrap_or("default"));
            let e = e.to_string();
            return vec![Trial::test(name, move || Err(Failed::from(e)))];
        }
    };
    let version = suite.setup.version.to_string();
    // A control plane that is not built here is one failing trial naming the command that
    // builds it (Go missing included), not a trial per case failing the same way, and never an
    // ignored one: only the kind trials without a container engine may be ignored.
    if let Err(m) = suite.prerequisites() {
        return vec![Trial::test(format!("operator::{version}::control_plane"), move || Err(Failed::from(m.reason)))];
    }
    let mut out = Vec::new();
    {
        let s = Arc::clone(&suite);
        out.push(Trial::test(format!("operator::{version}::proof::the_operator_binary_is_the_pin"), move || {
            binary_is_the_pin(&s).map_err(Failed::from)
        }));
    }
    {
        let s = Arc::clone(&suite);
        out.push(Trial::test(format!("operator::{version}::proof::the_cec_is_ciliums_own"), move || {
            cec_is_ciliums_own(&s).map_err(Failed::from)
        }));
    }
    {
        let s = Arc::clone(&suite);
        out.push(Trial::test(format!("operator::{version}::proof::ciliums_crds_preinstalled_and_left_alone"), move || {
            crds_left_alone(&s).map_err(Failed::from)
        }));
    }
    for name in suite.case_names() {
        let s = Arc::clone(&suite);
        out.push(Trial::test(format!("operator::{version}::{name}"), move || s.run_case(&name).map_err(Failed::from)));
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

/// The lane created Cilium's CRDs before the operator started (not the operator: its log has no
/// "Creating CRD" and no "Updating CRD" line, and says each one is installed and up to date),
/// and each carries the schema-version label key and value read here from the module at the
/// tag (`pkg/k8s/apis/cilium.io/register.go`), as the API server holds it.
fn crds_left_alone(s: &Suite) -> Result<(), String> {
    use layout_gate::lanes::cluster::driver::{Driver, ObjRef};
    s.start()?;
    let (names, log, kube) = s.cilium_crds().ok_or("the control plane is not up")?;
    if names.is_empty() {
        return Err("no Cilium CRD was pre-installed: the operator created them all itself".into());
    }
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    for bad in ["msg=\"Creating CRD (CustomResourceDefinition)...\"", "msg=\"Updating CRD (CustomResourceDefinition)...\""] {
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(bad)).collect();
        if !lines.is_empty() {
            return Err(format!("cilium-operator's log has {bad}:\n{}", lines.join("\n")));
        }
    }
    for n in &names {
        let said = "msg=\"CRD (CustomResourceDefinition) is installed and up-to-date\"";
        let field = format!("name={n}");
        if !text.lines().any(|l| l.contains(said) && l.split_whitespace().any(|t| t == field)) {
            return Err(format!("cilium-operator's log never says {n} is installed and up-to-date"));
        }
    }
    // The label, read from the module here, not by the lane's reader.
    let bins = binaries::find(&s.setup.pins, &s.setup.version)?;
    let chart = bins.operator.build.chart_dir.clone().ok_or("the operator's build.json names no chart folder")?;
    let register = chart.join("../../../pkg/k8s/apis/cilium.io/register.go");
    let go = std::fs::read_to_string(&register).map_err(|e| format!("{}: {e}", register.display()))?;
    let constant = |name: &str| {
        go.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name} = \"")).and_then(|r| r.strip_suffix('"')).map(str::to_string))
            .ok_or(format!("{}: no {name}", register.display()))
    };
    let (key, value) = (constant("CustomResourceDefinitionSchemaVersionKey")?, constant("CustomResourceDefinitionSchemaVersion")?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut d = layout_gate::lanes::cluster::live::LiveDriver::new(
            layout_gate::lanes::cluster::progress::Progress::from_env(),
            s.setup.timeouts,
        );
        d.connect(&kube, s.setup.timeouts.api_ready).await.map_err(|e| e.to_string())?;
        for n in &names {
            let crd = d
                .get(&ObjRef::new("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, n))
                .await
                .map_err(|e| e.to_string())?
                .ok_or(format!("CRD {n} is not in the API server"))?;
            let got = crd.pointer("/metadata/labels").and_then(|l| l.get(&key)).and_then(|v| v.as_str());
            if got != Some(value.as_str()) {
                return Err(format!("CRD {n}: label {key} is {got:?}, the module at the tag says {value:?}"));
            }
        }
        Ok(())
    })
}
