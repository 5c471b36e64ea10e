//! The rendered JSON is pinned by golden files, and the same shapes are checked by the real
//! Envoy's `--mode validate` (a golden file only says "unchanged"; Envoy says "valid").

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

const BLESS_VAR: &str = "LAYOUT_GATE_BLESS";

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/envoy-bootstrap")
}

/// Compares `value`'s pretty JSON with `harness/tests/data/envoy-bootstrap/<name>`;
/// `LAYOUT_GATE_BLESS=1` rewrites the file instead.
fn assert_golden(name: &str, value: &Value) {
    let mut actual = serde_json::to_string_pretty(value).unwrap();
    actual.push('\n');
    let path = golden_dir().join(name);
    if std::env::var(BLESS_VAR).is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("golden file {} unreadable ({e}); run with {BLESS_VAR}=1 to create it", path.display())
    });
    if expected != actual {
        panic!(
            "rendered JSON differs from {} (- golden, + rendered); if the change is intended, rerun with {BLESS_VAR}=1\n{}",
            path.display(),
            line_diff(&expected, &actual)
        );
    }
}

/// A line diff with 2 lines of context: LCS over lines (golden files are a few hundred lines).
fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Deletions first, so a changed line reads "- old" then "+ new".
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| ops[k.saturating_sub(2)..(k + 3).min(ops.len())].iter().any(|(c, _)| *c != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("   ...\n");
                skipped = false;
            }
            out.push_str(&format!(" {c} {line}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

fn static_bootstrap(certs: &CertPaths, ports: &Ports) -> Bootstrap {
    Bootstrap::static_listeners(
        AdminSpec::default(),
        vec![representative_listener(ports, certs, true)],
        representative_clusters(ports),
    )
}

fn lds_bootstrap(lds_dir: &Path, ports: &Ports) -> Bootstrap {
    Bootstrap::file_lds(AdminSpec::default(), lds_dir, representative_clusters(ports))
}

#[test]
fn golden_static_bootstrap() {
    assert_golden("static-bootstrap.json", &static_bootstrap(&CertPaths::Placeholder, &Ports::fixed()).to_json());
}

#[test]
fn golden_lds_bootstrap_and_response() {
    let ports = Ports::fixed();
    assert_golden("lds-bootstrap.json", &lds_bootstrap(Path::new("/LDS_DIR"), &ports).to_json());
    // The Cilium-like form: no default chain.
    let listener = representative_listener(&ports, &CertPaths::Placeholder, false);
    assert_golden("lds-response.json", &lds_discovery_response("1", &[listener]));
}

#[test]
fn line_diff_shows_changes_with_context() {
    let d = line_diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nX\ne\nf\ng\n");
    assert_eq!(d, "   ...\n   b\n   c\n - d\n + X\n   e\n   f\n");
}

#[test]
fn rendering_is_cilium_shaped() {
    let l = representative_listener(&Ports::fixed(), &CertPaths::Placeholder, false).to_resource();
    assert_eq!(l["@type"], "type.googleapis.com/envoy.config.listener.v3.Listener");
    assert_eq!(l["listener_filters"][0]["name"], "envoy.filters.listener.tls_inspector");
    let chains = l["filter_chains"].as_array().unwrap();
    // Cilium leaves chains unnamed.
    assert!(chains.iter().all(|c| c.get("name").is_none()));
    assert_eq!(chains[0]["filter_chain_match"]["transport_protocol"], "tls");
    assert_eq!(chains[2]["filter_chain_match"]["transport_protocol"], "raw_buffer");
    assert_eq!(l["additional_addresses"][0]["address"]["socket_address"]["port_value"], 10080);
    assert!(l.get("default_filter_chain").is_none());
}

#[test]
fn validate_accepts_static_and_lds_configs() {
    let envoy = envoy();
    let certs = certs();
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::fixed();

    let path = write_bootstrap(tmp.path(), &static_bootstrap(&CertPaths::Real(&certs), &ports));
    if let Err(e) = validate_with(&envoy, &path) {
        panic!("static bootstrap refused: {e}");
    }

    let lds = LdsDir::create(&tmp.path().join("lds")).unwrap();
    lds.push("1", &[representative_listener(&ports, &CertPaths::Real(&certs), false)]).unwrap();
    let lds_boot = tmp.path().join("lds-bootstrap.json");
    lds_bootstrap(lds.path(), &ports).write(&lds_boot).unwrap();
    if let Err(e) = validate_with(&envoy, &lds_boot) {
        panic!("LDS bootstrap refused: {e}");
    }
}

#[test]
fn validate_rejects_duplicate_chains_with_envoys_words() {
    let envoy = envoy();
    let tmp = tempfile::tempdir().unwrap();
    let boot = Bootstrap::static_listeners(
        AdminSpec::default(),
        vec![duplicate_listener("127.0.0.1:10444".parse().unwrap())],
        representative_clusters(&Ports::fixed()),
    );
    let path = write_bootstrap(tmp.path(), &boot);
    let err = validate_with(&envoy, &path).expect_err("duplicate matchers must be refused");
    let text = err.envoy_text().unwrap_or_default().to_string();
    assert!(
        text.contains("error adding listener '127.0.0.1:10444': filter chain '' has the same matching rules defined as ''"),
        "{err}"
    );
    assert!(err.to_string().contains("--mode validate"), "{err}");
}
