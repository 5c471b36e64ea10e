//! `live::...`: `check --live` against a real API server. The operator lane's control plane
//! (kube-apiserver + etcd + Cilium's own operator at `VERSION`) stands in for a platform's
//! cluster: a layout is applied to it, Cilium's operator writes the Gateway's statuses (and LB
//! IPAM its address), and `check --live` reads it back read-only. When the control plane is not
//! built the trial fails naming the command that builds it, as the operator trials do.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use layout_gate::lanes::cluster::driver::{Driver, ObjRef, Selection};
use layout_gate::lanes::cluster::live::LiveDriver;
use layout_gate::lanes::operator::control_plane::ControlPlane;
use serde_json::{Value, json};
const VERSION: &str = "1.19.6";
const NS: &str = "lg-live-trial";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn b64(s: &str) -> String {
    // The standard alphabet, padded: what the API server expects in Secret data.
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The layout: a terminate listener with a real certificate, a plain HTTP listener, a listener
/// whose Secret holds only a key, an HTTPRoute to a Service.
fn layout() -> Vec<Value> {
    let ck = rcgen::generate_simple_self_signed(vec!["*.live.example".to_string()]).expect("a certificate");
    let crt = ck.cert.pem();
    let key = ck.signing_key.serialize_pem();
    vec![
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":NS}}),
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"wild-tls","namespace":NS},"type":"kubernetes.io/tls",
            "data":{"tls.crt":b64(&crt),"tls.key":b64(&key)}}),
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"key-only","namespace":NS},"type":"Opaque",
            "data":{"tls.key":b64(&key)}}),
        json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":NS},
            "spec":{"ports":[{"name":"http","port":80,"targetPort":8080}],"selector":{"app":"web"}}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"gw","namespace":NS},
            "spec":{"gatewayClassName":"cilium","listeners":[
                {"name":"https","port":443,"protocol":"HTTPS","hostname":"*.live.example",
                 "tls":{"mode":"Terminate","certificateRefs":[{"name":"wild-tls"}]}},
                {"name":"keyonly","port":443,"protocol":"HTTPS","hostname":"k.other.example",
                 "tls":{"mode":"Terminate","certificateRefs":[{"name":"key-only"}]}},
                {"name":"http","port":80,"protocol":"HTTP","hostname":"*.live.example"}]}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"web","namespace":NS},
            "spec":{"parentRefs":[{"name":"gw"}],"hostnames":["www.live.example"],
                "rules":[{"backendRefs":[{"name":"web","port":80}]}]}}),
        // What a real cluster has: the agent's DaemonSet, whose image names the running version.
        json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"cilium","namespace":"kube-system"},
            "spec":{"selector":{"matchLabels":{"k8s-app":"cilium"}},"template":{"metadata":{"labels":{"k8s-app":"cilium"}},
                "spec":{"containers":[{"name":"cilium-agent","image":format!("quay.io/cilium/cilium:v{VERSION}")}]}}}}),
    ]
}

fn run(args: &[&str], extra: &[&Path]) -> Result<(Option<i32>, String, String), String> {
    run_env(args, extra, &[])
}

fn run_env(args: &[&str], extra: &[&Path], env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), String> {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(repo()).env_remove("LAYOUT_GATE_PROGRESS").args(args).args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().map_err(|e| e.to_string())?;
    Ok((out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string()))
}

/// `check --live` as a user runs it, on a blocking thread (the trial's runtime keeps the
/// driver): `args` after `check --live --context C --kubeconfig K --versions-file V`.
async fn check_live(kubeconfig: &Path, context: &str, args: &[&str]) -> Result<(Option<i32>, String, String), String> {
    let versions = repo().join("kind-config/versions.yaml");
    let mut all: Vec<String> = ["check", "--live", "--context", context].iter().map(|s| s.to_string()).collect();
    all.extend(args.iter().map(|s| s.to_string()));
    let k = kubeconfig.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = all.iter().map(String::as_str).collect();
        run(&a, &[Path::new("--kubeconfig"), &k, Path::new("--versions-file"), &versions])
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The control plane at VERSION with `objects` applied, once Cilium's operator has written a
/// status for every listener of Gateway `NS/gw` (bounded). The plane stops when dropped.
async fn plane_with(ns: &str, objects: &[Value], listeners: usize) -> Result<(LiveDriver, ControlPlane, PathBuf), String> {
    use layout_gate::lanes::operator::session;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    if let Some(why) = layout_gate::check::operator::not_runnable(&pins, &v) {
        return Err(why);
    }
    let settings = layout_gate::run::Settings::from_env(&layout_gate::lanes::operator::known_settings());
    let setup = session::setup(&pins, v, "trial".into(), &[], &settings).map_err(|e| e.to_string())?;
    let mut d = LiveDriver::new(layout_gate::progress::Progress::quiet(), setup.timeouts);
    let mut st = layout_gate::lanes::cluster::session::Gathered::default();
    let (cp, _) = session::bring_up(&mut d, &setup, "live-trial", &mut st).await.map_err(|e| format!("control plane: {e}"))?;
    d.apply(objects, None).await.map_err(|e| e.to_string())?;
    let gw = ObjRef::new("gateway.networking.k8s.io/v1", "Gateway", Some(ns), "gw");
    let mut seen = Value::Null;
    for _ in 0..120 {
        seen = d.get(&gw).await.map_err(|e| e.to_string())?.unwrap_or_default();
        let written = seen.pointer("/status/listeners").and_then(Value::as_array).is_some_and(|l| l.len() == listeners);
        if written && seen.pointer("/status/addresses/0/value").is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    if seen.pointer("/status/listeners").is_none() {
        return Err(format!("Cilium's operator wrote no listener status: {seen:#}"));
    }
    let kubeconfig = cp.kube.kubeconfig.clone().ok_or("the control plane has no kubeconfig")?;
    Ok((d, cp, kubeconfig))
}

/// Every object's resourceVersion in `ns` of the kinds `check --live` reads, and the cilium
/// DaemonSet's: equal before and after a run means the run wrote none of them.
async fn versions_of(d: &mut LiveDriver, ns: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let kinds = [
        ("gateway.networking.k8s.io/v1", "Gateway", Some(ns)),
        ("gateway.networking.k8s.io/v1", "HTTPRoute", Some(ns)),
        ("v1", "Service", Some(ns)),
        ("v1", "Secret", Some(ns)),
        ("v1", "Namespace", None),
        ("apps/v1", "DaemonSet", Some("kube-system")),
    ];
    for (api, kind, n) in kinds {
        for o in d.list(&Selection::all(api, kind, n)).await.map_err(|e| e.to_string())? {
            let name =
                format!("{kind} {}/{}", o["metadata"]["namespace"].as_str().unwrap_or(""), o["metadata"]["name"].as_str().unwrap_or(""));
            out.push((name, o["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string()));
        }
    }
    out.sort();
    Ok(out)
}

/// [`versions_of`] once Cilium's operator has stopped writing: the same reading over a quiet
/// window of 3 s, within 60 s. The "nothing was written" check compares a reading before
/// `check --live` with one after; taken while the operator still settled the statuses (a route's
/// status can come seconds after the Gateway's listeners), the operator's own writes showed as
/// the run's (seen in CI: the Gateway's and the HTTPRoute's resourceVersion moved).
async fn settled_versions(d: &mut LiveDriver, ns: &str) -> Result<Vec<(String, String)>, String> {
    let quiet = Duration::from_secs(3);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = versions_of(d, ns).await?;
    let mut since = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = versions_of(d, ns).await?;
        if now != last {
            last = now;
            since = tokio::time::Instant::now();
        } else if since.elapsed() >= quiet {
            return Ok(last);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("Cilium's operator kept writing for 60 s; last reading {last:?}"));
        }
    }
}

/// The same objects as `check --live` gives `check`, as a manifest file `dir/layout.json` (a
/// List, as `kubectl get -o json` prints): without the DaemonSet (not a kind `check` reads) and
/// without the Secret that holds only a key, which `--live` gives as missing because Cilium
/// refuses a Secret without `tls.crt` (`check` on manifests reads only that a Secret exists).
fn as_manifests(objects: &[Value], dir: &Path) -> Result<PathBuf, String> {
    let manifests = dir.join("layout.json");
    let list = json!({"apiVersion":"v1","kind":"List","items": objects.iter()
        .filter(|o| o["kind"] != "DaemonSet" && o["metadata"]["name"] != "key-only").collect::<Vec<_>>()});
    std::fs::write(&manifests, list.to_string()).map_err(|e| e.to_string())?;
    Ok(manifests)
}

/// What must be equal between `check --live` and `check` on the same objects: per Gateway and
/// version, the statuses, routes, answers, and the verdicts against the baseline.
fn answers(j: &Value) -> Value {
    let gws: Vec<Value> = j["gateways"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let versions: Vec<Value> = g["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| json!([v["version"], v["gateway"], v["listeners"], v["routes"], v["answers"], v["http"], v["error"]]))
                .collect();
            json!({"gateway": format!("{}/{}", g["namespace"], g["name"]), "versions": versions, "verdicts": g["verdicts"]})
        })
        .collect();
    json!({"baseline": j["baseline"], "gateways": gws})
}

/// `check --live` on the operator lane's control plane gives the per-version answers `check`
/// gives on the same objects as manifests; it says the Secret that holds only a key, never
/// prints a key, reads the running version from the DaemonSet, compares the cluster's statuses
/// (written by Cilium's operator) with the prediction at it, keeps its reading as `live.json`
/// (which `report` refuses as run evidence), and writes nothing to the cluster: every object's
/// resourceVersion is unchanged, and a user holding only the read-only ClusterRole of the docs
/// runs it (a write would be a 403).
pub fn live_equals_manifests() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let objects = layout();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let manifests = as_manifests(&objects, work.path())?;
    let evidence = work.path().join("evidence");
    let ev = evidence.display().to_string();
    rt.block_on(async {
        let (mut d, cp, kubeconfig) = plane_with(NS, &objects, 3).await?;
        let context = cp.kube.context.clone();
        let before = settled_versions(&mut d, NS).await?;
        let (code, out, err) = check_live(
            &kubeconfig,
            &context,
            &["--namespace", NS, "--cilium", VERSION, "--no-envoy", "--format", "json", "--evidence-dir", &ev],
        )
        .await?;
        let restricted = restricted_runs(&mut d, &kubeconfig, &context, work.path()).await;
        let after = versions_of(&mut d, NS).await?;
        drop(cp);
        restricted?;
        if before != after {
            return Err(format!("check --live changed the cluster:\nbefore {before:?}\nafter {after:?}"));
        }
        let live: Value = serde_json::from_str(&out).map_err(|e| format!("check --live: not JSON ({e}); exit {code:?}\n{err}"))?;
        let versions = repo().join("kind-config/versions.yaml");
        let (mcode, mout, merr) = run(
            &["check", "--complete", "--cilium", VERSION, "--baseline", VERSION, "--no-envoy", "--format", "json"],
            &[Path::new("--versions-file"), &versions, &manifests],
        )?;
        let manifest: Value = serde_json::from_str(&mout).map_err(|e| format!("check: not JSON ({e}); exit {mcode:?}\n{merr}"))?;
        if answers(&live) != answers(&manifest) {
            return Err(format!("check --live and check disagree:\nlive {:#}\nmanifests {:#}\n{err}", answers(&live), answers(&manifest)));
        }
        let l = &live["live"];
        if l["lane"] != "live" || l["running"]["version"] != VERSION || !l["running"]["source"].as_str().unwrap_or("").contains("DaemonSet")
        {
            return Err(format!("the live block: {l:#}"));
        }
        if !l["server_digest"].as_str().is_some_and(|s| s.starts_with("sha256:")) {
            return Err(format!("no server digest: {l:#}"));
        }
        if !err.contains(&format!("Secret {NS}/key-only holds no tls.crt (only a key)")) {
            return Err(format!("the key-only Secret is not said:\n{err}"));
        }
        if out.contains("PRIVATE KEY") || err.contains("PRIVATE KEY") || out.contains(&b64("-----BEGIN PRIVATE KEY-----")[..20]) {
            return Err("a private key was printed".into());
        }
        // Every disagreement the output reports is said with its field.
        let dis: Vec<&Value> = l["disagreements"].as_array().into_iter().flatten().collect();
        for x in &dis {
            if x["field"].as_str().is_none_or(|f| !f.starts_with("status") && !f.starts_with("answer at ") && !f.starts_with("address ")) {
                return Err(format!("a disagreement without its field: {x:#}"));
            }
        }
        // Today's statuses, written by Cilium's operator at the version it runs, are the model's
        // prediction there (the model is held to the operator at 1.19.6): no false alarm.
        let status: Vec<&&Value> = dis.iter().filter(|x| x["field"].as_str().is_some_and(|f| f.starts_with("status"))).collect();
        if !status.is_empty() {
            return Err(format!("the operator's statuses at {VERSION} said as disagreeing with the model at {VERSION}: {status:#?}"));
        }
        // The control plane's Gateway address (from its LB IPAM pool, on loopback) is served by
        // no Envoy: nothing answers there, so no answer is the prediction, and each is said at
        // that address. (The pool was once kind's network, which this machine routes away: the
        // probes left the machine; `local_only::no_probe_left_the_machine` now fails on that.)
        let addresses = l["gateways"][0]["addresses"].as_array().map_or(0, Vec::len);
        let probed: Vec<&&Value> =
            dis.iter().filter(|x| x["field"].as_str().is_some_and(|f| f.starts_with("answer at ") || f.starts_with("address "))).collect();
        if addresses == 0 || probed.is_empty() || probed.iter().any(|x| x["cluster"] == x["predicted"]) {
            return Err(format!("want the Gateway's address probed and every answer said as not the prediction: {l:#}"));
        }
        if code != Some(1) {
            return Err(format!("disagreements exit 1, got {code:?}\n{err}"));
        }
        reading_kept(&evidence, &live, &err)?;
        eprintln!("live trial: {} disagreement(s): {:#}", dis.len(), l["disagreements"]);
        Ok(())
    })
}

/// `check --live --lane operator`: the prediction from Cilium's own operator at the running
/// version (a control plane of its own, beside the one standing for the cluster: its own ports,
/// etcd and LB IPAM), with the per-version answers `check --lane operator` gives on the same
/// objects as manifests, every version said as the operator's, and no status disagreement (the
/// cluster's statuses are that operator's at that version).
pub fn lane_operator_answers_equal_check_lane_operator() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let objects = layout();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let manifests = as_manifests(&objects, work.path())?;
    let (code, out, err) = rt.block_on(async {
        let (_d, cp, kubeconfig) = plane_with(NS, &objects, 3).await?;
        let context = cp.kube.context.clone();
        let r = check_live(
            &kubeconfig,
            &context,
            &["--lane", "operator", "--namespace", NS, "--cilium", VERSION, "--no-probe", "--format", "json"],
        )
        .await;
        drop(cp);
        r
    })?;
    let live: Value =
        serde_json::from_str(&out).map_err(|e| format!("check --live --lane operator: not JSON ({e}); exit {code:?}\n{err}"))?;
    let versions = repo().join("kind-config/versions.yaml");
    let (mcode, mout, merr) = run(
        &["check", "--lane", "operator", "--complete", "--cilium", VERSION, "--baseline", VERSION, "--format", "json"],
        &[Path::new("--versions-file"), &versions, &manifests],
    )?;
    let manifest: Value =
        serde_json::from_str(&mout).map_err(|e| format!("check --lane operator: not JSON ({e}); exit {mcode:?}\n{merr}"))?;
    for (what, j, e) in [("check --live --lane operator", &live, &err), ("check --lane operator", &manifest, &merr)] {
        let by: Vec<&Value> = j["gateways"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["versions"].as_array().into_iter().flatten())
            .map(|v| &v["answered_by"])
            .collect();
        if by.is_empty() || by.iter().any(|b| *b != "operator") || j["answered_by"] != "operator" {
            return Err(format!("{what}: every version answered by Cilium's operator, got {by:?}\n{e}"));
        }
    }
    // Not an empty comparison: the operator's data plane answered probes at the version.
    if answers(&live)["gateways"][0]["versions"][0][4].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("check --live --lane operator gave no answers: {:#}", answers(&live)));
    }
    if answers(&live) != answers(&manifest) {
        return Err(format!(
            "check --live --lane operator and check --lane operator disagree:\nlive {:#}\nmanifests {:#}\n{err}",
            answers(&live),
            answers(&manifest)
        ));
    }
    let dis: Vec<&Value> = live["live"]["disagreements"].as_array().into_iter().flatten().collect();
    if !dis.is_empty() || code == Some(2) {
        return Err(format!("the cluster's statuses are the operator's at {VERSION}, yet: exit {code:?} {dis:#?}\n{err}"));
    }
    eprintln!(
        "check --live --lane operator: {} Gateway(s), the same answers as check --lane operator",
        live["gateways"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}

/// The reading `--evidence-dir` kept: one run folder holding `live.json`, `lane: live`, the
/// cluster and the disagreements `--format json` printed, sealed; `report` names it and
/// merges nothing from it.
fn reading_kept(evidence: &Path, printed: &Value, err: &str) -> Result<(), String> {
    let runs: Vec<PathBuf> = std::fs::read_dir(evidence).map_err(|e| e.to_string())?.flatten().map(|e| e.path()).collect();
    let [folder] = &runs[..] else { return Err(format!("want one run folder in {}: {runs:?}", evidence.display())) };
    if !folder.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains(&format!("-live-{VERSION}-"))) {
        return Err(format!("the run folder's name: {}", folder.display()));
    }
    let file = folder.join("live.json");
    if !err.contains(&file.display().to_string()) {
        return Err(format!("where the reading is kept is not said:\n{err}"));
    }
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let p = &printed["live"];
    for k in ["lane", "context", "cluster", "server_digest", "running", "disagreements"] {
        if kept[k] != p[k] {
            return Err(format!("live.json {k}: {} (printed {})", kept[k], p[k]));
        }
    }
    if kept["gate_evidence"] != false || kept["check"]["gateways"] != printed["gateways"] {
        return Err(format!("live.json: gate_evidence {} and its check block", kept["gate_evidence"]));
    }
    if !kept["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")) {
        return Err("live.json is not sealed with its digest".into());
    }
    let (code, out, rerr) = run(&["report", "--json"], &[evidence])?;
    let r: Value = serde_json::from_str(&out).map_err(|e| format!("report: not JSON ({e}); exit {code:?}\n{rerr}"))?;
    let said = rerr.contains("a check --live reading of a cluster (lane: live), not run evidence")
        && rerr.contains("never gate evidence")
        && rerr.contains(&format!("running Cilium {VERSION}"));
    if code != Some(1) || !said || r["runs"].as_array().is_some_and(|a| !a.is_empty()) {
        return Err(format!("report on a live reading: want exit 1, the reading named and no run; got {code:?}\n{rerr}\n{r:#}"));
    }
    eprintln!("report on the reading: {}", rerr.lines().next().unwrap_or(""));
    Ok(())
}

/// A kubeconfig of the control plane's admin impersonating `user`: the API server's RBAC
/// (`--authorization-mode=RBAC`) then decides as it would for that user.
fn as_user(kubeconfig: &Path, user: &str, dir: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(kubeconfig).map_err(|e| e.to_string())?;
    let p = dir.join(format!("{user}.kubeconfig"));
    std::fs::write(&p, text.replacen("contexts:\n", &format!("    as: {user}\ncontexts:\n"), 1)).map_err(|e| e.to_string())?;
    Ok(p)
}

fn binding(user: &str, role: &str) -> Value {
    json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":user},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":role},
        "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":user}]})
}

/// The repository's read-only ClusterRole is enough for `check --live`; a role without
/// httproutes is a 403 said with the verb, the resource and the namespace.
async fn restricted_runs(d: &mut LiveDriver, kubeconfig: &Path, context: &str, dir: &Path) -> Result<(), String> {
    let role_text = std::fs::read_to_string(repo().join("kind-config/live-readonly-clusterrole.yaml")).map_err(|e| e.to_string())?;
    let role: Value = serde_saphyr::from_str(&role_text).map_err(|e| e.to_string())?;
    let mut partial = role.clone();
    partial["metadata"]["name"] = json!("lg-live-partial");
    partial["rules"][0]["resources"] = json!(["gateways"]);
    d.apply(&[role, partial, binding("lg-reader", "layout-gate-live-readonly"), binding("lg-partial", "lg-live-partial")], None)
        .await
        .map_err(|e| e.to_string())?;
    for (user, want_ok) in [("lg-reader", true), ("lg-partial", false)] {
        let k = as_user(kubeconfig, user, dir)?;
        let (code, out, err) =
            check_live(&k, context, &["--namespace", NS, "--cilium", VERSION, "--no-envoy", "--no-probe", "--format", "json"]).await?;
        match want_ok {
            true if code == Some(2) || !out.contains("\"live\"") => {
                return Err(format!("the read-only ClusterRole is not enough: exit {code:?}\n{err}"));
            }
            false => {
                let want = format!("cannot list httproutes.gateway.networking.k8s.io in namespace {NS}");
                if code != Some(2) || !err.contains(&want) || !err.contains("(grant it, e.g. with the read-only ClusterRole of the docs)") {
                    return Err(format!("a missing permission: want exit 2 and {want:?}, got {code:?}\n{err}"));
                }
                eprintln!("a user without list on httproutes sees: {}", err.trim());
            }
            true => {}
        }
    }
    Ok(())
}

const DRIFT_NS: &str = "lg-live-drift";
/// The Gateway addresses of the drift trial: loopback addresses LB IPAM hands out from pools of
/// the trial's, one per Gateway Service (see [`drift_pools`]), so the probes of `check --live`
/// reach what this trial serves there.
/// Chosen per process (127.66.X.Y and 127.67.X.Y from its id), so two runs side by side on
/// one machine do not take each other's addresses.
fn loopback(second: u8) -> Ipv4Addr {
    let pid = std::process::id();
    Ipv4Addr::new(127, second, (pid >> 8) as u8, (pid % 253 + 1) as u8)
}
fn served() -> Ipv4Addr {
    loopback(66)
}
fn silent() -> Ipv4Addr {
    loopback(67)
}

/// A cluster whose agents still run 1.19.5 while Cilium's operator already runs 1.19.6 (an
/// upgrade half done: the operator's Deployment rolls before the agents' DaemonSet): the
/// running version `check --live` reads is 1.19.5, the statuses are 1.19.6's.
fn drift_layout(crt: &str, key: &str) -> Vec<Value> {
    let ns = DRIFT_NS;
    let svc = |name: &str, port: u16| {
        json!({"apiVersion":"v1","kind":"Service","metadata":{"name":name,"namespace":ns},
            "spec":{"ports":[{"name":"p","port":port,"targetPort":8080}],"selector":{"app":name}}})
    };
    let gateway = |name: &str, listeners: Value| {
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":name,"namespace":ns},
            "spec":{"gatewayClassName":"cilium","listeners":listeners}})
    };
    vec![
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":ns}}),
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"wild-tls","namespace":ns},"type":"kubernetes.io/tls",
            "data":{"tls.crt":b64(crt),"tls.key":b64(key)}}),
        svc("web", 80),
        svc("api", 443),
        // HTTPS and TLS on one port: Cilium 1.19.6 marks both listeners ProtocolConflict, 1.19.5 does not.
        gateway(
            "gw",
            json!([
            {"name":"https","port":8443,"protocol":"HTTPS","hostname":"*.drift.example",
             "tls":{"mode":"Terminate","certificateRefs":[{"name":"wild-tls"}]}},
            {"name":"tls-api","port":8443,"protocol":"TLS","hostname":"api.drift.example","tls":{"mode":"Passthrough"}},
            {"name":"http","port":8080,"protocol":"HTTP","hostname":"*.drift.example"}]),
        ),
        gateway("far", json!([{"name":"http","port":8080,"protocol":"HTTP","hostname":"far.drift.example"}])),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"web","namespace":ns},
            "spec":{"parentRefs":[{"name":"gw"}],"hostnames":["www.drift.example"],"rules":[{"backendRefs":[{"name":"web","port":80}]}]}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"far","namespace":ns},
            "spec":{"parentRefs":[{"name":"far"}],"hostnames":["far.drift.example"],"rules":[{"backendRefs":[{"name":"web","port":80}]}]}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1alpha2","kind":"TLSRoute","metadata":{"name":"api","namespace":ns},
            "spec":{"parentRefs":[{"name":"gw","sectionName":"tls-api"}],"hostnames":["api.drift.example"],
                "rules":[{"backendRefs":[{"name":"api","port":443}]}]}}),
        json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"cilium","namespace":"kube-system"},
            "spec":{"selector":{"matchLabels":{"k8s-app":"cilium"}},"template":{"metadata":{"labels":{"k8s-app":"cilium"}},
                "spec":{"containers":[{"name":"cilium-agent","image":"quay.io/cilium/cilium:v1.19.5"}]}}}}),
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cilium-operator","namespace":"kube-system"},
            "spec":{"selector":{"matchLabels":{"name":"cilium-operator"}},"template":{"metadata":{"labels":{"name":"cilium-operator"}},
                "spec":{"containers":[{"name":"cilium-operator","image":format!("quay.io/cilium/operator-generic:v{VERSION}")}]}}}}),
    ]
}

/// LB IPAM's pools for the drift trial: the lane's own pool (`layout-gate`, 172.18.0.0/16)
/// leaves the trial's namespace out, and each Gateway's Service has a pool of one loopback
/// address (LB IPAM's `io.kubernetes.service.*` selector labels, `operator/pkg/lbipam/
/// service_store.go` at cilium v1.19.6). (`spec.addresses` would ask for an address too, but
/// `check` refuses a Gateway field the model does not read.)
fn drift_pools() -> Vec<Value> {
    let pool = |name: &str, blocks: Value, selector: Value| {
        json!({"apiVersion":"cilium.io/v2","kind":"CiliumLoadBalancerIPPool","metadata":{"name":name},
            "spec":{"blocks":blocks,"serviceSelector":{"matchExpressions":selector}}})
    };
    let one = |name: &str, ip: Ipv4Addr, service: &str| {
        pool(
            name,
            json!([{"start": ip.to_string(), "stop": ip.to_string()}]),
            json!([{"key":"io.kubernetes.service.namespace","operator":"In","values":[DRIFT_NS]},
                   {"key":"io.kubernetes.service.name","operator":"In","values":[service]}]),
        )
    };
    vec![
        pool(
            "layout-gate",
            json!([{"cidr": layout_gate::lanes::operator::control_plane::POOL_BLOCK}]),
            json!([{"key":"io.kubernetes.service.namespace","operator":"NotIn","values":[DRIFT_NS]}]),
        ),
        one("lg-live-served", served(), "cilium-gateway-gw"),
        one("lg-live-silent", silent(), "cilium-gateway-far"),
    ]
}

/// What answers at the Gateways' addresses here, standing for the cluster's data path. At
/// `served()`: the operator lane's own data plane ([`plane::serve_gateway`]), the
/// CiliumEnvoyConfig Cilium's operator wrote for Gateway `gw` through the emulated agent step on
/// a real Envoy listening on that address and the Gateway Service's ports, with in-process
/// backends standing for Services `web` (HTTP) and `api` (TLS). At `silent()`: a socket that
/// takes connections and never answers (a black-holed address). Stopped when dropped.
struct DataPath {
    served: layout_gate::lanes::operator::plane::ServedGateway,
    _web: layout_gate::backends::HttpBackend,
    _api: layout_gate::backends::TlsBackend,
    _silent: std::net::TcpListener,
}

/// [`data_path`] once Cilium's operator has written both routes into the Gateway's
/// CiliumEnvoyConfig (a data path started on an earlier one answers 404 for a route it lacks)
/// and synced the Gateway's Secret to its secrets namespace (one started before never serves
/// it), bounded.
async fn serve_when_synced(d: &mut LiveDriver) -> Result<DataPath, String> {
    let cec = ObjRef::new("cilium.io/v2", "CiliumEnvoyConfig", Some(DRIFT_NS), "cilium-gateway-gw");
    let mut last = String::new();
    for _ in 0..40 {
        let text = d.get(&cec).await.map_err(|e| e.to_string())?.map(|c| c["spec"].to_string()).unwrap_or_default();
        if !text.contains("www.drift.example") || !text.contains("api.drift.example") {
            last = format!("the CiliumEnvoyConfig routes neither yet: {text}");
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        match data_path(d).await {
            Ok(p) if !p.served.notes.iter().any(|n| n.contains("not in the secrets namespace")) => return Ok(p),
            Ok(p) => last = format!("{:?}", p.served.notes),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("the Gateway's data path never came up whole: {last}"))
}

async fn data_path(d: &mut LiveDriver) -> Result<DataPath, String> {
    use layout_gate::backends::{HttpBackend, TlsBackend};
    use layout_gate::lanes::operator::plane;
    use layout_gate::types::BackendName;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let name = |n: &str| BackendName::new(n).map_err(|e| e.to_string());
    let web = HttpBackend::start(name("web")?).map_err(|e| e.to_string())?;
    let ck = rcgen::generate_simple_self_signed(vec!["api.drift.example".to_string()]).map_err(|e| e.to_string())?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(ck.cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der())),
        )
        .map_err(|e| e.to_string())?;
    let api = TlsBackend::start(name("api")?, Arc::new(config)).map_err(|e| e.to_string())?;
    let backends = [((DRIFT_NS.to_string(), "web".to_string()), web.addr()), ((DRIFT_NS.to_string(), "api".to_string()), api.addr())];
    let served = plane::serve_gateway(
        d,
        DRIFT_NS,
        "gw",
        served().into(),
        backends.into_iter().collect(),
        Duration::from_secs(30),
        layout_gate::lanes::operator::agent::AgentChecks::default(),
    )
    .await
    .map_err(|e| format!("serving Gateway {DRIFT_NS}/gw on the lane's data plane: {e}"))?;
    let quiet = silent();
    let silent = std::net::TcpListener::bind(SocketAddr::from((quiet, 8080))).map_err(|e| format!("binding {quiet}:8080: {e}"))?;
    Ok(DataPath { served, _web: web, _api: api, _silent: silent })
}

/// The cluster and the prediction disagree, each said as a user sees it: the statuses Cilium's
/// operator 1.19.6 wrote against the prediction at the 1.19.5 the agents' DaemonSet runs (the
/// field named); at the served Gateway address (the operator lane's agent step on a real Envoy,
/// [`data_path`]) an answer that is not the predicted one (the Secret rotated after the data
/// path took its certificate: Envoy still presents the old one) beside one that is (HTTP through
/// the CEC's route to the backend); an address that takes connections and never answers, said
/// once, bounded by the probe's budget; and the bump to 1.19.6 predicted against the running
/// 1.19.5.
pub fn the_cluster_and_the_prediction_disagree() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let ck = rcgen::generate_simple_self_signed(vec!["*.drift.example".to_string()]).map_err(|e| e.to_string())?;
    let objects: Vec<Value> = drift_pools().into_iter().chain(drift_layout(&ck.cert.pem(), &ck.signing_key.serialize_pem())).collect();
    let (served, silent) = (served(), silent());
    rt.block_on(async {
        let (mut d, cp, kubeconfig) = plane_with(DRIFT_NS, &objects, 3).await?;
        let far = ObjRef::new("gateway.networking.k8s.io/v1", "Gateway", Some(DRIFT_NS), "far");
        let mut addresses = (Value::Null, Value::Null);
        for _ in 0..60 {
            let gw = d.get(&ObjRef::new("gateway.networking.k8s.io/v1", "Gateway", Some(DRIFT_NS), "gw")).await.map_err(|e| e.to_string())?;
            let f = d.get(&far).await.map_err(|e| e.to_string())?;
            addresses = (
                gw.and_then(|g| g.pointer("/status/addresses").cloned()).unwrap_or_default(),
                f.and_then(|g| g.pointer("/status/addresses").cloned()).unwrap_or_default(),
            );
            if addresses.0.to_string().contains(&served.to_string()) && addresses.1.to_string().contains(&silent.to_string()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        if !addresses.0.to_string().contains(&served.to_string()) || !addresses.1.to_string().contains(&silent.to_string()) {
            return Err(format!("LB IPAM did not give the Gateways the addresses they ask for: gw {} far {}", addresses.0, addresses.1));
        }
        let path = serve_when_synced(&mut d).await?;
        eprintln!("the data path: listening {:?}; notes {:#?}", path.served.bound, path.served.notes);
        let on = |port: u16| path.served.bound.values().flatten().any(|a| *a == SocketAddr::from((served, port)));
        if !on(8443) || !on(8080) {
            return Err(format!("Envoy does not listen on {served}:8443 and :8080: {:?}", path.served.bound));
        }
        // The Secret rotates after the data path took its certificate (the agents have not
        // picked it up yet): the cluster reads the new certificate, Envoy presents the old one.
        let rotated = rcgen::generate_simple_self_signed(vec!["*.drift.example".to_string()]).map_err(|e| e.to_string())?;
        let secret = drift_layout(&rotated.cert.pem(), &rotated.signing_key.serialize_pem())
            .into_iter()
            .find(|o| o["kind"] == "Secret")
            .ok_or("no Secret in the layout")?;
        d.apply(&[secret], None).await.map_err(|e| e.to_string())?;
        let context = cp.kube.context.clone();
        let args = ["--namespace", DRIFT_NS, "--cilium", "1.19.5", "--cilium", VERSION, "--no-envoy"];
        let json_args: Vec<&str> = args.iter().copied().chain(["--format", "json"]).collect();
        let (code, out, err) = check_live(&kubeconfig, &context, &json_args).await?;
        let (tcode, table, terr) = check_live(&kubeconfig, &context, &args).await?;
        drop(path);
        drop(cp);
        eprintln!("check --live as a user sees it (exit {tcode:?}):\n{table}{terr}");
        let j: Value = serde_json::from_str(&out).map_err(|e| format!("check --live: not JSON ({e}); exit {code:?}\n{err}"))?;
        let l = &j["live"];
        let dis: Vec<&Value> = l["disagreements"].as_array().into_iter().flatten().collect();
        let field = |f: &str| dis.iter().copied().filter(|x| x["field"] == f).collect::<Vec<_>>();
        let why = || format!("{:#}\n{err}", l["disagreements"]);
        if l["running"]["version"] != "1.19.5" || !l["running"]["source"].as_str().unwrap_or("").contains("DaemonSet kube-system/cilium") {
            return Err(format!("the running version is the DaemonSet's: {:#}", l["running"]));
        }
        // The TLSRoute is read (Gateway API 1.4 serves it at v1alpha3 only, not at the group's
        // preferred v1): its passthrough backend answers api.drift.example, not the wildcard.
        let gw = j["gateways"].as_array().into_iter().flatten().find(|g| g["name"] == "gw").ok_or("no Gateway gw in the output")?;
        let routes: Vec<&Value> = gw["versions"][0]["routes"].as_array().into_iter().flatten().map(|r| &r["route"]).collect();
        if !routes.iter().any(|r| r.as_str().is_some_and(|n| n.ends_with("api"))) {
            return Err(format!("the TLSRoute api was not read: {gw:#}"));
        }
        // Today, the statuses: Cilium's operator (1.19.6) says ProtocolConflict where 1.19.5
        // states no Conflicted condition at all, and Accepted False where 1.19.5 accepts.
        let conflicted = field("status.listeners[https].conditions[Conflicted]");
        let accepted = field("status.listeners[https].conditions[Accepted]");
        if !conflicted.iter().any(|x| x["cluster"] == "True/ProtocolConflict" && x["predicted"] == "nothing")
            || !accepted.iter().any(|x| x["cluster"] == "False/Invalid" && x["predicted"] == "True/Accepted")
        {
            return Err(format!("the drifted status is not said with its field: {}", why()));
        }
        let line = format!(
            "today: the model and your cluster disagree: Gateway {DRIFT_NS}/gw status.listeners[https].conditions[Conflicted]: the model says nothing, your cluster says True/ProtocolConflict"
        );
        if !table.contains(&line) {
            return Err(format!("the table does not say {line:?}:\n{table}"));
        }
        // Today, the answers at the served address, from Envoy serving the operator's CEC: the
        // plain HTTP request routed by the CEC's route to Service web's backend, as predicted;
        // the wildcard's old certificate where the prediction (reading the rotated Secret) says
        // Secret wild-tls's.
        let at = |k: &str| format!("answer at {served} {k}");
        if !field(&at("http://www.drift.example on 8080")).is_empty() {
            return Err(format!("the HTTP answer through the CEC's route is the predicted one, yet said as a disagreement: {}", why()));
        }
        let www = field(&at("www.drift.example on 8443"));
        if !www.iter().any(|x| {
            x["predicted"] == "a certificate: Secret wild-tls"
                && x["cluster"].as_str().is_some_and(|c| c.starts_with("a certificate: not a referenced Secret's"))
        }) {
            return Err(format!("the stale certificate is not said as differing from the prediction: {}", why()));
        }
        let line = format!(
            "today: the model and your cluster disagree: Gateway {DRIFT_NS}/gw answer at {served} www.drift.example on 8443: the model says a certificate: Secret wild-tls, your cluster says a certificate: not a referenced Secret's"
        );
        if !table.contains(&line) {
            return Err(format!("the table does not say {line:?}:\n{table}"));
        }
        // The address that never answers: once, bounded by the probe budget.
        let once = field(&format!("address {silent}"));
        if once.len() != 1 || !once[0]["cluster"].as_str().is_some_and(|c| c.contains("not reachable from here")) {
            return Err(format!("the silent address is not said once: {}", why()));
        }
        let line = format!("today: the model and your cluster disagree: Gateway {DRIFT_NS}/far address {silent}: the model says answers to ");
        if !table.contains(&line) {
            return Err(format!("the table does not say {line:?}:\n{table}"));
        }
        if dis.iter().any(|x| x["field"].as_str().is_some_and(|f| f.starts_with(&format!("answer at {silent}")))) {
            return Err(format!("the silent address is said per probe: {}", why()));
        }
        // The bump: 1.19.6 against the running 1.19.5, as `check` gives it.
        let bump = gw["verdicts"].as_array().into_iter().flatten().find(|v| v["version"] == VERSION).ok_or("no verdict at 1.19.6")?;
        if j["baseline"] != "1.19.5" || bump["baseline"] != "1.19.5" || !bump["verdict"].as_str().is_some_and(|v| v.contains("regression")) {
            return Err(format!("the bump against the running version: baseline {} verdict {bump:#}", j["baseline"]));
        }
        if code != Some(1) || tcode != Some(1) {
            return Err(format!("disagreements exit 1: json {code:?}, table {tcode:?}\n{err}"));
        }
        Ok(())
    })
}

/// Bad input is located and bounded, before any cluster is reached: a kubeconfig that does not
/// parse (file, line, column), an unknown context (the contexts there are), a cluster that
/// takes the connection and never answers (within LAYOUT_GATE_API_REQUEST_TIMEOUT, naming the
/// server).
pub fn bad_input_is_located_and_bounded() -> Result<(), String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = silent.local_addr().map_err(|e| e.to_string())?.port();
    let good = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}\ncontexts:\n- name: a\n  context: {{cluster: c, user: u}}\n- name: b\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
    );
    let write = |name: &str, text: &str| {
        let p = work.path().join(name);
        std::fs::write(&p, text).map(|_| p).map_err(|e| e.to_string())
    };
    let broken = write("broken", "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: [x\n")?;
    let fine = write("fine", &good)?;
    let cases: [(&str, &Path, &[&str], String); 3] = [
        ("a kubeconfig that does not parse", &broken, &[], format!("{}:", broken.display())),
        ("an unknown context", &fine, &["--context", "prod"], "--context: no context \"prod\" (contexts: a, b)".into()),
        (
            "a cluster that does not answer",
            &fine,
            &[],
            format!("the API server of context a (https://127.0.0.1:{port}/) did not answer within 1s (LAYOUT_GATE_API_REQUEST_TIMEOUT)"),
        ),
    ];
    for (what, kubeconfig, extra, want) in cases {
        let mut args = vec!["check", "--live", "--no-envoy"];
        args.extend_from_slice(extra);
        let (code, out, err) = run_env(&args, &[Path::new("--kubeconfig"), kubeconfig], &[("LAYOUT_GATE_API_REQUEST_TIMEOUT", "1")])?;
        // Said once, by layout-gate: not again by the Kubernetes client's own log.
        if code != Some(2) || !err.contains(&want) || !out.is_empty() || err.contains("kube_client") {
            return Err(format!("{what}: want exit 2 and {want:?}; got {code:?}\n{out}{err}"));
        }
        eprintln!("{what}: {}", err.trim());
    }
    // The line of the parse error is where the flow sequence is left open, or just after.
    let (_, _, err) = run_env(&["check", "--live", "--no-envoy"], &[Path::new("--kubeconfig"), &broken], &[])?;
    let line = err.split(&format!("{}:", broken.display())).nth(1).and_then(|r| r.split(':').next()).and_then(|n| n.parse::<u32>().ok());
    if !line.is_some_and(|n| (3..=5).contains(&n)) {
        return Err(format!("the parse error is not located by line: {err}"));
    }
    drop(silent);
    Ok(())
}
