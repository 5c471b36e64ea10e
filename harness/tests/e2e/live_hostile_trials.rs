//! `check --live` against a cluster that is broken or lies (issue #36): a fake API server of
//! the library's (`live::fake_api`, plain HTTP on 127.0.0.1) in this process, the binary run
//! against it as a user runs it. No control plane and no Envoy: `--no-envoy --no-probe`.
//!
//! * No key is ever printed: a Secret whose `tls.crt` does not decode, and one that does, each
//!   with a recognisable `tls.key`, at every log level; the key is in no output and no evidence.
//! * Every read is bounded: a list that never ends is refused at the response limit, named,
//!   long before the request wait.
//! * What the cluster says cannot drive the terminal: control characters in a Gateway's name,
//!   the agent's image and a status's reason reach no output raw; in a manifest's Gateway name
//!   they are the input's error at its file, line and field.
//! * An unpinned running version is not a baseline: refused, unless `--assume-like` names one,
//!   and then every output says so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use layout_gate::live::fake_api::{FakeApi, Reply, Routes};
use serde_json::{Value, json};

const KEY: &str = "LAYOUT-GATE-E2E-PRIVATE-KEY-81d2";

fn b64(bytes: &[u8]) -> Value {
    serde_json::to_value(k8s_openapi::ByteString(bytes.to_vec())).unwrap_or_default()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary, as a user runs it: exit code, stdout, stderr (bytes kept as read).
fn run(args: &[&str], env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), String> {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(repo()).env_remove("LAYOUT_GATE_PROGRESS").env_remove("LAYOUT_GATE_LOG").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().map_err(|e| e.to_string())?;
    Ok((out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// A Gateway in `shop` with one HTTPS listener on the Secret `tls`, and its status.
fn gateway(name: &str, reason: &str) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": name, "namespace": "shop"},
        "spec": {"gatewayClassName": "cilium", "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS",
            "hostname": "a.example.test", "tls": {"mode": "Terminate", "certificateRefs": [{"name": "tls"}]}}]},
        "status": {"conditions": [{"type": "Accepted", "status": "True", "reason": reason, "message": reason}]}})
}

fn agent(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "cilium", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "cilium-agent", "image": image}]}}}})
}

fn secret(crt: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "shop"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": crt, "tls.key": b64(KEY.as_bytes())}})
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
}

/// A real certificate for `a.example.test`, as `tls.crt` holds it.
fn good_crt() -> Result<Value, String> {
    let c = rcgen::generate_simple_self_signed(vec!["a.example.test".to_string()]).map_err(|e| e.to_string())?;
    Ok(b64(c.cert.pem().as_bytes()))
}

/// `check --live --no-envoy` against `api` (its kubeconfig written into `work`), with `args` after it.
fn check_live(api: &FakeApi, work: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), String> {
    check_live_with(api, work, &[&["--no-envoy"], args].concat(), env)
}

/// `check --live` against `api`, with `args` after it.
fn check_live_with(api: &FakeApi, work: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), String> {
    let kc = work.join("kubeconfig");
    std::fs::write(&kc, api.kubeconfig()).map_err(|e| e.to_string())?;
    let versions = repo().join("kind-config/versions.yaml");
    let mut all = vec!["check", "--live", "--no-probe", "--kubeconfig"];
    let (kc, versions) = (kc.display().to_string(), versions.display().to_string());
    all.push(&kc);
    all.extend(["--versions-file", versions.as_str()]);
    all.extend_from_slice(args);
    run(&all, env)
}

/// Every file under `dir`, read whole (the evidence a run wrote).
fn files_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&files_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()));
        }
    }
    out
}

fn shows_key(text: &str) -> bool {
    let encoded = b64(KEY.as_bytes());
    text.contains(KEY) || encoded.as_str().is_some_and(|k| text.contains(k))
}

pub fn no_key_is_printed() -> Result<(), String> {
    let objects = |crt: Value| vec![namespace(), gateway("gw", "Accepted"), secret(crt), agent("quay.io/cilium/cilium:v1.19.6")];
    for (what, crt, exit) in [("undecodable", json!("%%% not base64 %%%"), &[2][..]), ("decodable", good_crt()?, &[0, 1][..])] {
        let api = FakeApi::start(Routes::cluster(&objects(crt))).map_err(|e| e.to_string())?;
        for level in [None, Some("debug"), Some("trace")] {
            let work = tempfile::tempdir().map_err(|e| e.to_string())?;
            let evidence = work.path().join("evidence");
            let env: Vec<(&str, &str)> = level.map(|l| ("LAYOUT_GATE_LOG", l)).into_iter().collect();
            let (code, out, err) = check_live(&api, work.path(), &["--evidence-dir", &evidence.display().to_string()], &env)?;
            let written = files_text(&evidence);
            if !code.is_some_and(|c| exit.contains(&c)) {
                return Err(format!("{what} tls.crt, LAYOUT_GATE_LOG={level:?}: exit {code:?}, want {exit:?}\n{out}{err}"));
            }
            if shows_key(&out) || shows_key(&err) || shows_key(&written) {
                return Err(format!(
                    "{what} tls.crt, LAYOUT_GATE_LOG={level:?}: the Secret's key was printed or written\n{out}{err}{written}"
                ));
            }
            if what == "undecodable"
                && !err.contains("cannot get secrets in namespace shop: tls: the answer is not the object asked for (at line 1 column")
            {
                return Err(format!("{what}: the refusal does not name the Secret and where it stopped parsing: {err}"));
            }
            if what == "decodable" && (written.is_empty() || !written.contains("a.example.test")) {
                return Err(format!("{what}: no reading was written to {}: {err}", evidence.display()));
            }
            if level == Some("trace") && !err.contains("/api/v1/namespaces/shop/secrets/tls") {
                return Err(format!("{what}: the trace log did not show the request, so it proved nothing: {err}"));
            }
        }
    }
    Ok(())
}

pub fn an_endless_list_is_refused_named() -> Result<(), String> {
    let routes = Routes::cluster(&[namespace(), agent("quay.io/cilium/cilium:v1.19.6")])
        .with("/apis/gateway.networking.k8s.io/v1/httproutes", Reply::Endless(r#"{"kind":"HTTPRouteList","items":["#.into()));
    let api = FakeApi::start(routes).map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let env = [("LAYOUT_GATE_MAX_API_RESPONSE_BYTES", "2097152"), ("LAYOUT_GATE_API_REQUEST_TIMEOUT", "60")];
    let (code, out, err) = check_live(&api, work.path(), &[], &env)?;
    let took = started.elapsed();
    let want = "the list of HTTPRoutes in all namespaces is larger than 2 MiB; set LAYOUT_GATE_MAX_API_RESPONSE_BYTES to raise the limit";
    if code != Some(2) || !err.contains(want) || !out.is_empty() {
        return Err(format!("want exit 2 and {want:?}; got {code:?} after {took:?}\n{out}{err}"));
    }
    // The error arrived, not the request wait: the body was not read on to its (missing) end.
    if took > Duration::from_secs(30) {
        return Err(format!("the refusal took {took:?}: the reading went on past the limit"));
    }
    let sent = api.sent();
    eprintln!("an endless list: refused after {took:?}, the server had sent {sent} bytes");
    if sent > 64 << 20 {
        return Err(format!("the server sent {sent} bytes before the client hung up: the reading did not stop at the limit"));
    }
    let (code, _, err) = run(&["check", "--live", "--kubeconfig", "/dev/null"], &[("LAYOUT_GATE_MAX_API_RESPONSE_BYTES", "lots")])?;
    if code != Some(2) || !err.contains("LAYOUT_GATE_MAX_API_RESPONSE_BYTES=\"lots\" is not a positive number of bytes") {
        return Err(format!("a bad limit: {code:?} {err}"));
    }
    Ok(())
}

fn raw_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

pub fn what_the_cluster_says_cannot_drive_the_terminal() -> Result<(), String> {
    const OSC: &str = "\u{1b}]0;pwned\u{7}";
    const CLEAR: &str = "\u{1b}[2J\u{1b}[H";
    let crt = good_crt()?;
    // A Gateway named with an OSC title sequence: refused as the API server would, escaped.
    let named = vec![namespace(), gateway(&format!("gw{OSC}"), "Accepted"), secret(crt.clone()), agent("quay.io/cilium/cilium:v1.19.6")];
    // A clean name, and a screen clear in the agent's image and in the status's reason.
    let said = vec![
        namespace(),
        gateway("gw", &format!("Accepted{CLEAR}")),
        secret(crt),
        agent(&format!("quay.io/cilium/cilium:v1.19.6@sha256:{CLEAR}")),
    ];
    let unversioned = vec![namespace(), gateway("gw", "Accepted"), agent(&format!("quay.io/cilium/cilium:{CLEAR}"))];
    for (what, objects, formats) in [
        ("a Gateway name", named, &["table"][..]),
        ("an image and a reason", said, &["table", "markdown"][..]),
        ("an image without a version", unversioned, &["table"][..]),
    ] {
        let api = FakeApi::start(Routes::cluster(&objects)).map_err(|e| e.to_string())?;
        for format in formats {
            let work = tempfile::tempdir().map_err(|e| e.to_string())?;
            let (code, out, err) = check_live(&api, work.path(), &["--format", format], &[])?;
            if code.is_none() || raw_control(&out) || raw_control(&err) {
                return Err(format!("{what} ({format}): a control character reached the terminal raw (exit {code:?}):\n{out:?}\n{err:?}"));
            }
            if !(out.contains("\\u{1b}") || err.contains("\\u{1b}")) {
                return Err(format!("{what} ({format}): the escaped sequence is not shown at all:\n{out}{err}"));
            }
            if err.contains("a layout-gate bug") {
                return Err(format!("{what}: said as a bug: {err}"));
            }
            let located = "fake:Gateway/shop/gw\\u{1b}]0;pwned\\u{7}:1:1: metadata.name: Gateway shop/gw\\u{1b}]0;pwned\\u{7}: ";
            if what == "a Gateway name"
                && (code != Some(2) || !err.contains(located) || !err.contains("is not a valid Kubernetes object name"))
            {
                return Err(format!(
                    "{what}: want exit 2 and the Gateway located by the cluster's place and its field; got {code:?}\n{err}"
                ));
            }
        }
    }
    // In a manifest: the input's file, line and field, not "derived case.yaml:3".
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let manifest = work.path().join("gw.yaml");
    std::fs::write(
        &manifest,
        "# a Gateway\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: \"gw\\u001b]0;pwned\\u0007\", namespace: shop}\nspec:\n  gatewayClassName: cilium\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n",
    )
    .map_err(|e| e.to_string())?;
    let m = manifest.display().to_string();
    let (code, out, err) = run(&["check", "--no-envoy", "--cilium", "1.19.6", &m], &[])?;
    let want = format!(
        "{m}:2:1: metadata.name: Gateway shop/gw\\u{{1b}}]0;pwned\\u{{7}}: \"gw\\u{{1b}}]0;pwned\\u{{7}}\" is not a valid Kubernetes object name"
    );
    if code != Some(2) || !err.contains(&want) || raw_control(&err) || err.contains("a layout-gate bug") {
        return Err(format!("check FILE: want exit 2 and {want:?}; got {code:?}\n{out}{err:?}"));
    }
    Ok(())
}

pub fn an_unpinned_running_version_is_refused() -> Result<(), String> {
    let objects = vec![namespace(), gateway("gw", "Accepted"), secret(good_crt()?), agent("quay.io/cilium/cilium:v9.9.9")];
    let api = FakeApi::start(Routes::cluster(&objects)).map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (code, out, err) = check_live(&api, work.path(), &[], &[])?;
    let want = "the cluster runs Cilium 9.9.9 (DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v9.9.9), not pinned, which the model has not been checked at";
    if code != Some(2) || !err.contains(want) || !err.contains("--assume-like VERSION") || !out.is_empty() {
        return Err(format!("want exit 2 and {want:?}; got {code:?}\n{out}{err}"));
    }
    let said = "9.9.9: the model has not been checked at it; predicted with 1.19.6's behaviour (--assume-like 1.19.6)";
    for format in ["table", "json"] {
        let (code, out, err) = check_live(&api, work.path(), &["--assume-like", "1.19.6", "--format", format], &[])?;
        let json_says = format == "json" && out.contains("\"assumed_like\": \"1.19.6\"");
        let table_says = format == "table"
            && out.contains(&format!("ASSUMED: {said}"))
            && out.contains("running: Cilium 9.9.9 (DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v9.9.9), predicted with 1.19.6's behaviour (--assume-like 1.19.6)");
        if !matches!(code, Some(0 | 1)) || !(json_says || table_says) || !err.contains(said) {
            return Err(format!("--assume-like 1.19.6 ({format}): want an answer that says so; got {code:?}\n{out}{err}"));
        }
    }
    let (code, _, err) = check_live(&api, work.path(), &["--assume-like", "9.9.8"], &[])?;
    if code != Some(2) || !err.contains("--assume-like 9.9.8: the model has not been checked at 9.9.8 either") {
        return Err(format!("--assume-like an unchecked version: {code:?} {err}"));
    }
    // Cilium's own operator answers each version: one that is not pinned has none here. (Its
    // data plane is a real Envoy, so this one needs Envoy found; nothing is started.)
    let (code, _, err) = check_live_with(&api, work.path(), &["--lane", "operator"], &[])?;
    let want = "the cluster runs Cilium 9.9.9 (DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v9.9.9), which is not pinned: --lane operator has no operator of it to answer with";
    if code != Some(2) || !err.contains(want) {
        return Err(format!("--lane operator: want exit 2 and {want:?}; got {code:?} {err}"));
    }
    Ok(())
}
