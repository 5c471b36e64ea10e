//! `cli::check::*`: `check` as a reviewer runs it (issue #17 items 2, 3, 4 and 6): why a
//! listener is conflicted in the table and the Markdown, `--compare` of two layouts on a real
//! Envoy, and the flags' refusals. Output goes into pipes, so it carries no ANSI codes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("LAYOUT_GATE_PROGRESS");
    c
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check").join(name)
}

const OLD: &str = "cozystack-dns01-app-namespaces.yaml";
const NEW: &str = "cozystack-dns01-option1-app-namespaces.yaml";

fn check(args: &[&str], paths: &[PathBuf]) -> Result<(Output, String), String> {
    let out =
        bin().arg("check").arg("--versions-file").arg(data("versions.yaml")).args(args).args(paths).output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if stdout.contains('\u{1b}') || String::from_utf8_lossy(&out.stderr).contains('\u{1b}') {
        return Err("ANSI escape codes in a pipe".into());
    }
    Ok((out, stdout))
}

fn want_all(text: &str, wants: &[&str]) -> Result<(), String> {
    let missing: Vec<&&str> = wants.iter().filter(|w| !text.contains(**w)).collect();
    if missing.is_empty() { Ok(()) } else { Err(format!("missing {missing:?} in:\n{text}")) }
}

/// The table and the Markdown say why each conflicted listener is so: the pair, where the
/// hostnames meet, Cilium's message, the rule, the upstream function, the cases without it;
/// and the verdict names the cause once.
pub fn why_in_table_and_markdown() -> Result<(), String> {
    let (out, table) = check(&["--no-envoy", "--wide"], &[data(OLD)])?;
    if out.status.code() != Some(1) {
        return Err(format!("exit {:?}, want 1 (the layout conflicts)", out.status.code()));
    }
    want_all(
        &table,
        &[
            "Why (the model's rule for each conflicted or refused listener, and the upstream code it mirrors):\n",
            "  1.19.6 and 1.19.7:\n    listener https conflicts with tls-api, tls-vm-exportproxy and tls-cdi-uploadproxy on port 443: Conflicted ProtocolConflict",
            "hostnames: https *.example.org meets api.example.org (tls-api)",
            "Cilium: \"Listener conflicts with listener \\\"tls-cdi-uploadproxy\\\": same port 443 has overlapping HTTPS and TLS passthrough hostnames.\"",
            "rule: protocol-conflict [>=1.19.6; source]",
            "upstream: samePortCrossProtocolConflictedListeners in operator/pkg/gateway-api/gateway_reconcile.go at cilium v1.19.6",
            "a layout without it: cases/dns01-recommended-option1, cases/passthrough-second-port-split, cases/http01-after-withdrawal",
            "    because: listener https conflicts with",
            "    because: rule conflicted-dropped [>=1.20.0]",
        ],
    )?;
    let (_, md) = check(&["--no-envoy", "--format", "markdown"], &[data(OLD)])?;
    want_all(
        &md,
        &[
            "**Why listeners are conflicted or refused**",
            "- listener https conflicts with tls-api, tls-vm-exportproxy and tls-cdi-uploadproxy on port 443: Conflicted ProtocolConflict",
            "  - upstream: conflictsWithinSource in operator/pkg/gateway-api/gateway\\_reconcile.go at cilium v1.20.1",
            "  - because: listener https conflicts with",
        ],
    )
}

/// `check --compare OLD -- NEW` on a real Envoy: the name the old wildcard answered and the new
/// layout claims nowhere resets now, and so does a `--sni` extra; exit 1. A layout against
/// itself changes nothing and exits 0.
pub fn compare_shows_what_the_new_layout_takes_away() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let (out, table) = check(&["--wide", "--sni", "other.example.org", "--compare"], &[data(OLD), "--".into(), data(NEW)])?;
    if out.status.code() != Some(1) {
        return Err(format!("exit {:?}, want 1\n{table}\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr)));
    }
    want_all(
        &table,
        &[
            "MODEL PREDICTION: layout-gate's model of Cilium, its answers observed on a real local Envoy",
            "plus --sni other.example.org",
            "443   www.example.org                     Secret tenant-root-gateway-tls -> nothing (reset)",
            "443   api.example.org                     = backend default/kubernetes",
            // Plain HTTP to :80: the catch-all redirect answers every name alike on both sides.
            "80    http://www.example.org              = 301 to https://www.example.org:443/",
            "  1.19.5:\n    takes away: on 80 and 443: www.example.org and other.example.org (was Secret tenant-root-gateway-tls) stop answering (reset)",
            "  1.19.6 and 1.19.7:\n    takes away: on 80 and 443: www.example.org and other.example.org (was Secret tenant-root-gateway-tls) stop answering (reset)\n    no longer: listener https conflicts with tls-api",
            "gives: on 80 and 443: api.example.org answer with backend default/kubernetes",
        ],
    )?;
    let (out, json) = check(&["--format", "json", "--compare"], &[data(OLD), "--".into(), data(OLD)])?;
    let v: serde_json::Value = serde_json::from_str(&json).map_err(|e| format!("{e}\n{json}"))?;
    if out.status.code() != Some(0) || v["differs"] != false || v["schema"] != "layout-gate-check-compare" {
        return Err(format!("a layout against itself: exit {:?}\n{json}", out.status.code()));
    }
    Ok(())
}

/// Paths after `--` without `--compare`, `--compare` without them, standard input on both
/// sides, and a `--sni` that is no DNS name are refused with exit 2 and a message that says what to do.
pub fn compare_and_sni_refusals() -> Result<(), String> {
    let cases: [(&[&str], Vec<PathBuf>, &str); 4] = [
        (&["--no-envoy", "--compare"], vec!["-".into(), "--".into(), "-".into()], "not both"),
        (&["--no-envoy"], vec![data(OLD), "--".into(), data(NEW)], "add --compare (check --compare OLD... -- NEW...)"),
        (&["--no-envoy", "--compare"], vec![data(OLD)], "--compare"),
        (&["--no-envoy", "--sni", "not a name"], vec![data(OLD)], "--sni \"not a name\""),
    ];
    for (args, paths, want) in cases {
        let (out, _) = check(args, &paths)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) || !stderr.contains(want) || stderr.contains("panicked") {
            return Err(format!("{args:?}: exit {:?}, stderr {stderr}", out.status.code()));
        }
    }
    Ok(())
}
