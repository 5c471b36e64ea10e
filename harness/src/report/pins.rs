//! `layout-gate versions`: the pinned versions of kind-config/versions.yaml as text for people
//! and as JSON for the nightly workflow's matrix, optionally narrowed to a chosen subset.

use std::fmt::Write;

use serde::Serialize;

use crate::versions::{CiliumPin, NodeImage, Pins, Tested};

#[derive(Serialize)]
struct Doc<'a> {
    default: String,
    kind: Kind<'a>,
    helm: Helm<'a>,
    echo_image: &'a str,
    cilium: Vec<Cilium<'a>>,
    /// The versions selected (all pinned ones unless narrowed).
    matrix: Vec<String>,
    /// The nightly matrix: one job per selected version, with what its job name and summary
    /// say about the cluster.
    jobs: Vec<Job<'a>>,
}

#[derive(Serialize)]
struct Kind<'a> {
    version: &'a str,
    release_notes: &'a str,
    /// Every node image the release notes publish for this kind version.
    images: Vec<&'a str>,
}

#[derive(Serialize)]
struct Node<'a> {
    image: &'a str,
    /// The Kubernetes release the image is (`1.35.8`).
    kubernetes: String,
    /// Whether the Cilium line is known to be e2e tested on this Kubernetes minor; false means
    /// untested/unknown.
    tested: bool,
    /// The known tested minors (empty when unknown).
    tested_minors: Vec<String>,
    /// Where the tested list is published, or why it is unknown.
    source: &'a str,
    /// The pairing in one sentence, as evidence and the dry run say it.
    pairing: String,
}

#[derive(Serialize)]
struct Job<'a> {
    cilium: String,
    node_image: &'a str,
    /// For the job name: `k8s 1.35.8 (tested by Cilium 1.19)` or `... (UNTESTED/UNKNOWN ...)`.
    label: String,
    pairing: String,
}

#[derive(Serialize)]
struct Helm<'a> {
    version: &'a str,
    repo: &'a str,
}

#[derive(Serialize)]
struct Cilium<'a> {
    version: String,
    chart: &'a str,
    gateway_api: Bundle<'a>,
    node: Node<'a>,
}

#[derive(Serialize)]
struct Bundle<'a> {
    key: &'a str,
    version: &'a str,
    channel: &'a str,
    url: &'a str,
}

/// The pinned versions named in `only` (comma-separated; blank means all), in pinned order.
/// A name that is not pinned is an error listing the pinned ones, never a smaller matrix.
pub fn select<'a>(pins: &'a Pins, only: &str) -> Result<Vec<&'a CiliumPin>, String> {
    let wanted: Vec<&str> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if wanted.is_empty() {
        return Ok(pins.cilium.iter().collect());
    }
    let mut picked = Vec::new();
    for w in wanted {
        let pin = pins.pick(w)?;
        if !picked.iter().any(|p: &&CiliumPin| p.version == pin.version) {
            picked.push(pin);
        }
    }
    picked.sort_by(|a, b| a.version.cmp(&b.version));
    Ok(picked)
}

pub fn json(pins: &Pins, selected: &[&CiliumPin]) -> String {
    let doc = Doc {
        default: pins.default.to_string(),
        kind: Kind {
            version: &pins.kind.version,
            release_notes: &pins.kind.release_notes,
            images: pins.kind.images.iter().map(NodeImage::as_str).collect(),
        },
        helm: Helm { version: &pins.helm.version, repo: &pins.helm.repo },
        echo_image: &pins.echo_image,
        cilium: pins
            .cilium
            .iter()
            .map(|c| Cilium {
                version: c.version.to_string(),
                chart: &c.chart,
                gateway_api: Bundle {
                    key: &c.gateway_api.key,
                    version: &c.gateway_api.version,
                    channel: &c.gateway_api.channel,
                    url: &c.gateway_api.url,
                },
                node: node(c),
            })
            .collect(),
        matrix: selected.iter().map(|c| c.version.to_string()).collect(),
        jobs: selected
            .iter()
            .map(|c| Job {
                cilium: c.version.to_string(),
                node_image: c.node.image().as_str(),
                label: c.node.label(),
                pairing: c.node.pairing(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string(&doc).unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
    s.push('\n');
    s
}

fn node(c: &CiliumPin) -> Node<'_> {
    let (tested_minors, source) = match c.node.tested() {
        Tested::Known { minors, source } => (minors.iter().map(ToString::to_string).collect(), source.as_str()),
        Tested::Unknown { why } => (Vec::new(), why.as_str()),
    };
    Node {
        image: c.node.image().as_str(),
        kubernetes: c.node.image().kubernetes().to_string(),
        tested: c.node.is_tested_pairing(),
        tested_minors,
        source,
        pairing: c.node.pairing(),
    }
}

pub fn text(pins: &Pins, selected: &[&CiliumPin]) -> String {
    let mut s = String::new();
    // Relative to where the command runs when the file is below it: the same text on every machine.
    let cwd = std::env::current_dir().unwrap_or_default();
    let _ = writeln!(s, "pinned in {}", pins.file.strip_prefix(&cwd).unwrap_or(&pins.file).display());
    let _ = writeln!(s, "default     {}", pins.default);
    let _ = writeln!(s, "kind        {} (node images: {})", pins.kind.version, pins.kind.release_notes);
    let _ = writeln!(s, "helm        {} (repo {})", pins.helm.version, pins.helm.repo);
    let _ = writeln!(s, "echo image  {}", pins.echo_image);
    let mut rows = vec![vec!["CILIUM".to_string(), "CHART".to_string(), "gateway-api CRDs".to_string(), "KUBERNETES".to_string()]];
    for c in selected {
        let mark = if c.version == pins.default { " (default)" } else { "" };
        rows.push(vec![
            format!("{}{mark}", c.version),
            c.chart.clone(),
            format!("{} {} ({})", c.gateway_api.version, c.gateway_api.channel, c.gateway_api.key),
            c.node.label(),
        ]);
    }
    s.push('\n');
    s.push_str(&crate::table::render(&rows));
    s.push('\n');
    for c in selected {
        let _ = writeln!(s, "{}  node image {}", c.version, c.node.image());
        let _ = writeln!(s, "{}  {}", " ".repeat(c.version.to_string().len()), c.node.pairing());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pins() -> Pins {
        Pins::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::versions::VERSIONS_FILE))
            .unwrap_or_else(|p| panic!("{p:#?}"))
    }

    #[test]
    fn selection_is_all_by_default_and_checked_otherwise() {
        let p = pins();
        assert_eq!(select(&p, "").unwrap().len(), p.cilium.len());
        assert_eq!(select(&p, " , ").unwrap().len(), p.cilium.len());
        let two: Vec<String> = select(&p, "1.19.7, 1.19.5,1.19.7").unwrap().iter().map(|c| c.version.to_string()).collect();
        assert_eq!(two, ["1.19.5", "1.19.7"]);
        let e = select(&p, "1.19.5,1.18.0").unwrap_err();
        assert!(e.contains("1.18.0 is not pinned") && e.contains("pinned: 1.19.5"), "{e}");
    }

    #[test]
    fn json_carries_the_matrix_and_every_pin() {
        let p = pins();
        let sel = select(&p, "1.19.6").unwrap();
        let v: serde_json::Value = serde_json::from_str(&json(&p, &sel)).unwrap();
        assert_eq!(v["matrix"], serde_json::json!(["1.19.6"]));
        assert_eq!(v["cilium"].as_array().unwrap().len(), p.cilium.len());
        assert_eq!(v["kind"]["version"], p.kind.version.as_str());
        assert_eq!(v["helm"]["version"], p.helm.version.as_str());
        assert!(text(&p, &sel).contains("1.19.6"));
    }

    #[test]
    fn every_version_names_its_node_image_and_whether_the_pairing_is_tested() {
        let p = pins();
        let sel = select(&p, "").unwrap();
        let v: serde_json::Value = serde_json::from_str(&json(&p, &sel)).unwrap();
        assert_eq!(v["kind"]["images"].as_array().unwrap().len(), p.kind.images.len());
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), sel.len());
        for (c, (j, entry)) in sel.iter().zip(jobs.iter().zip(v["cilium"].as_array().unwrap())) {
            assert_eq!(j["cilium"], c.version.to_string());
            assert_eq!(j["node_image"], c.node.image().as_str());
            assert_eq!(entry["node"]["image"], c.node.image().as_str());
            // Both lines' tested lists are known and every pin runs Kubernetes 1.35.
            let untested = !c.node.is_tested_pairing();
            assert!(!untested, "{}", c.version);
            assert_eq!(entry["node"]["tested"], !untested, "{}", c.version);
            for said in [&j["label"], &j["pairing"], &entry["node"]["pairing"]] {
                assert_eq!(said.as_str().unwrap().contains("UNTESTED/UNKNOWN"), untested, "{}: {said}", c.version);
            }
        }
        let t = text(&p, &sel);
        assert!(!t.contains("UNTESTED/UNKNOWN"), "{t}");
        assert!(t.contains("k8s 1.35.8 (tested by Cilium 1.20)"), "{t}");
        assert!(t.contains("k8s 1.35.8 (tested by Cilium 1.19)"), "{t}");
    }
}
