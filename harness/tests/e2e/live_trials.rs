//! `live::...`: `check --live` against a real API server. The operator lane's control plane
//! (kube-apiserver + etcd + Cilium's own operator at `VERSION`) stands in for a platform's
//! cluster: a layout is applied to it, Cilium's operator writes the Gateway's statuses, and
//! `check --live` reads it back read-only. When the control plane is not built the trial fails
//! naming the command that builds it, as the operator trials do.

use std::path::{Path, PathBuf};
use std::process::Command;

use layout_gate::lanes::cluster::driver::{Driver, ObjRef};
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
    let out = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(repo())
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(args)
        .args(extra)
        .output()
        .map_err(|e| e.to_string())?;
    Ok((out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string()))
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
/// prints a key, reads the running version from the DaemonSet, and compares the cluster's
/// statuses (written by Cilium's operator) with the prediction at it.
pub fn live_equals_manifests() -> Result<(), String> {
    use layout_gate::lanes::operator::session;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    if let Some(why) = layout_gate::check::operator::not_runnable(&pins, &v) {
        return Err(why);
    }
    let settings = layout_gate::run::Settings::from_env(&layout_gate::lanes::operator::known_settings());
    let setup = session::setup(&pins, v, "trial".into(), &[], &settings)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let objects = layout();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let manifests = work.path().join("layout.json");
    // The same objects as `check --live` gives `check`, as a manifest file (a List, as `kubectl
    // get -o json` prints): without the DaemonSet (not a kind `check` reads) and without the
    // Secret that holds only a key, which `--live` gives as missing because Cilium refuses a
    // Secret without `tls.crt` (`check` on manifests reads only that a Secret exists).
    let list = json!({"apiVersion":"v1","kind":"List","items": objects.iter()
        .filter(|o| o["kind"] != "DaemonSet" && o["metadata"]["name"] != "key-only").collect::<Vec<_>>()});
    std::fs::write(&manifests, list.to_string()).map_err(|e| e.to_string())?;
    rt.block_on(async {
        let mut d = layout_gate::lanes::cluster::live::LiveDriver::new(layout_gate::progress::Progress::quiet(), setup.timeouts);
        let mut st = layout_gate::lanes::cluster::session::Gathered::default();
        let (cp, _) = session::bring_up(&mut d, &setup, "live-trial", &mut st).await.map_err(|e| format!("control plane: {e}"))?;
        d.apply(&objects, None).await.map_err(|e| e.to_string())?;
        // Cilium's operator writes the listeners' statuses: wait for them (bounded).
        let gw = ObjRef::new("gateway.networking.k8s.io/v1", "Gateway", Some(NS), "gw");
        let mut seen = Value::Null;
        for _ in 0..120 {
            seen = d.get(&gw).await.map_err(|e| e.to_string())?.unwrap_or_default();
            if seen.pointer("/status/listeners").and_then(Value::as_array).is_some_and(|l| l.len() == 3) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        if seen.pointer("/status/listeners").is_none() {
            return Err(format!("Cilium's operator wrote no listener status: {seen:#}"));
        }
        let kubeconfig = cp.kube.kubeconfig.clone().ok_or("the control plane has no kubeconfig")?;
        let context = cp.kube.context.clone();
        let versions = repo().join("kind-config/versions.yaml");
        let k = kubeconfig.clone();
        let (code, out, err) = tokio::task::spawn_blocking(move || {
            run(
                &["check", "--live", "--context", &context, "--namespace", NS, "--cilium", VERSION, "--no-envoy", "--format", "json"],
                &[Path::new("--kubeconfig"), &k, Path::new("--versions-file"), &versions],
            )
        })
        .await
        .map_err(|e| e.to_string())??;
        let restricted = restricted_runs(&mut d, &kubeconfig, &cp.kube.context, work.path()).await;
        drop(cp);
        restricted?;
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
            if x["field"].as_str().is_none_or(|f| !f.starts_with("status") && !f.starts_with("answer at ")) {
                return Err(format!("a disagreement without its field: {x:#}"));
            }
        }
        // The control plane's Gateway address (its LB IPAM pool) is served by no Envoy: nothing
        // answers there, or whatever this machine routes it to (an egress proxy presenting its
        // own certificate). Either way it is not the predicted answer, and each predicted answer
        // is said as a disagreement at that address.
        let addresses = l["gateways"][0]["addresses"].as_array().map_or(0, Vec::len);
        let probed: Vec<&&Value> = dis.iter().filter(|x| x["field"].as_str().is_some_and(|f| f.starts_with("answer at "))).collect();
        let predicted_certs = probed.iter().filter(|x| x["predicted"] == "a certificate: Secret wild-tls").count();
        if addresses == 0 || predicted_certs == 0 || probed.iter().any(|x| x["cluster"] == x["predicted"]) {
            return Err(format!("want the Gateway's address probed and every answer said as not the prediction: {l:#}"));
        }
        if code != Some(1) {
            return Err(format!("disagreements exit 1, got {code:?}\n{err}"));
        }
        eprintln!("live trial: {} disagreement(s): {:#}", l["disagreements"].as_array().map_or(0, Vec::len), l["disagreements"]);
        Ok(())
    })
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
async fn restricted_runs(
    d: &mut layout_gate::lanes::cluster::live::LiveDriver,
    kubeconfig: &Path,
    context: &str,
    dir: &Path,
) -> Result<(), String> {
    let role_text = std::fs::read_to_string(repo().join("kind-config/live-readonly-clusterrole.yaml")).map_err(|e| e.to_string())?;
    let role: Value = serde_saphyr::from_str(&role_text).map_err(|e| e.to_string())?;
    let mut partial = role.clone();
    partial["metadata"]["name"] = json!("lg-live-partial");
    partial["rules"][0]["resources"] = json!(["gateways"]);
    d.apply(&[role, partial, binding("lg-reader", "layout-gate-live-readonly"), binding("lg-partial", "lg-live-partial")], None)
        .await
        .map_err(|e| e.to_string())?;
    let versions = repo().join("kind-config/versions.yaml");
    for (user, want_ok) in [("lg-reader", true), ("lg-partial", false)] {
        let k = as_user(kubeconfig, user, dir)?;
        let (context, versions) = (context.to_string(), versions.clone());
        let (code, out, err) = tokio::task::spawn_blocking(move || {
            run(
                &[
                    "check",
                    "--live",
                    "--context",
                    &context,
                    "--namespace",
                    NS,
                    "--cilium",
                    VERSION,
                    "--no-envoy",
                    "--no-probe",
                    "--format",
                    "json",
                ],
                &[Path::new("--kubeconfig"), &k, Path::new("--versions-file"), &versions],
            )
        })
        .await
        .map_err(|e| e.to_string())??;
        match want_ok {
            true if code == Some(2) || !out.contains("\"live\"") => {
                return Err(format!("the read-only ClusterRole is not enough: exit {code:?}\n{err}"));
            }
            false => {
                let want = format!("cannot list httproutes.gateway.networking.k8s.io in namespace {NS}");
                if code != Some(2) || !err.contains(&want) {
                    return Err(format!("a missing permission: want exit 2 and {want:?}, got {code:?}\n{err}"));
                }
            }
            true => {}
        }
    }
    Ok(())
}
