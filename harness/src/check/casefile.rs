//! A derivation written as a case folder: `case.yaml` and `manifests.yaml`. `check` loads the
//! same two texts from memory with the case loader (`case::load_text`), so what `check` runs
//! and what `case new` writes are the same case.

use std::path::Path;

use super::answer::Reply;
use super::derive::{CertSource, Derived, MatrixKey};

pub const MANIFESTS: &str = "manifests.yaml";

/// The first line of the derived manifests file, above the derived documents.
const MANIFEST_HEADER: &str = "# Rendered manifests as `layout-gate check` read them, with the case's placeholders put in.\n";
/// How many lines [`MANIFEST_HEADER`] takes: a line of the file is this many more than the
/// same line of [`Derived::manifests`].
pub const MANIFEST_HEADER_LINES: u64 = 1;

/// What one Envoy listener must look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvoyWant {
    Chains(usize),
    /// A stable part of Envoy's refusal.
    Error(String),
    Absent,
}

/// Condition type -> expectation text.
pub type Conds = Vec<(String, String)>;
/// route -> parent -> conditions.
pub type RouteConds = Vec<(String, Vec<(String, Conds)>)>;

/// One expectation group: the model's prediction for a version range.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    pub range: String,
    pub gateway: Vec<(String, String)>,
    pub listeners: Vec<(String, Vec<(String, String)>)>,
    /// route -> parent -> conditions.
    pub routes: RouteConds,
    pub probes: Vec<(MatrixKey, Reply)>,
    pub envoy: Vec<(String, EnvoyWant)>,
    /// `Kind/name` -> what the API server's message says: objects it refuses.
    pub refused: Vec<(String, String)>,
}

impl Group {
    /// The same expectations, ignoring the range (to merge versions that agree).
    pub fn same_as(&self, other: &Group) -> bool {
        Group { range: String::new(), ..self.clone() } == Group { range: String::new(), ..other.clone() }
    }
}

/// A YAML scalar: bare when it cannot be misread, else double-quoted (JSON quoting is YAML).
fn q(s: &str) -> String {
    let bare = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && s.as_bytes()[0].is_ascii_alphabetic()
        && !matches!(s.to_ascii_lowercase().as_str(), "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n");
    if bare { s.to_string() } else { serde_json::to_string(s).unwrap_or_default() }
}

fn conds(cs: &[(String, String)]) -> String {
    let parts: Vec<String> = cs.iter().map(|(t, w)| format!("{}: {}", q(t), serde_json::to_string(w).unwrap_or_default())).collect();
    format!("{{{}}}", parts.join(", "))
}

fn probe_line(d: &Derived, key: &MatrixKey, reply: &Reply) -> String {
    if key.plain {
        return plain_probe_line(d, key, reply);
    }
    let target = match &key.sni {
        Some(s) => format!("sni: {}", serde_json::to_string(&d.templated(s.as_str())).unwrap_or_default()),
        None => "no_sni: true".into(),
    };
    let answer = match reply {
        Reply::Certificate { cert } => format!("answers: {cert}"),
        Reply::Nothing { how, alert: Some(a) } => format!("answers: nothing, how: {}, alert: {}", how.as_str(), q(a)),
        Reply::Nothing { how, alert: None } => format!("answers: nothing, how: {}", how.as_str()),
        // Not expressible as an expectation; the nearest honest statement is "not nothing".
        Reply::Unknown { .. } => "answers: nothing".into(),
        // Never the answer to a handshake (a plain HTTP probe's only).
        Reply::Http { .. } => return String::new(),
        // Never written: the caller leaves out what was not observed.
        Reply::LocalError => return String::new(),
    };
    format!("      - {{port: {}, {target}, {answer}}}\n", key.port)
}

/// A plain HTTP probe: its status and the backend that answered (a case does not speak of a
/// redirect's `Location`), or how nothing answered.
fn plain_probe_line(d: &Derived, key: &MatrixKey, reply: &Reply) -> String {
    let Some(host) = &key.sni else { return String::new() };
    let answer = match reply {
        Reply::Http { status, backend: Some(b), .. } if d.backends.keys().any(|x| x.as_str() == b) => {
            format!("status: {status}, served_by: {}", q(b))
        }
        Reply::Http { status, .. } => format!("status: {status}"),
        Reply::Nothing { how, .. } => format!("answers: nothing, how: {}", how.as_str()),
        // Never the answer to a plain request; not written.
        Reply::Certificate { .. } | Reply::Unknown { .. } | Reply::LocalError => return String::new(),
    };
    format!(
        "      - {{port: {}, plain: true, host: {}, {answer}}}\n",
        key.port,
        serde_json::to_string(&d.templated(host.as_str())).unwrap_or_default()
    )
}

/// `case.yaml` for `d` with `groups`. `provenance_note` is written into every group.
pub fn case_yaml(d: &Derived, header: &str, summary: &str, groups: &[Group], provenance_note: &str) -> String {
    let mut out = String::new();
    for l in header.lines() {
        out.push_str(&format!("# {l}\n"));
    }
    out.push_str(&format!("summary: {}\n", serde_json::to_string(summary).unwrap_or_default()));
    out.push_str(&format!("apex: {}\n", q(&d.apex)));
    out.push_str(&format!("gateway: {}\n", q(&d.gateway)));
    if !d.certs.is_empty() {
        out.push_str("certificates:\n");
        for c in &d.certs {
            let names: Vec<String> = c.dns_names.iter().map(|n| serde_json::to_string(&d.templated(n)).unwrap_or_default()).collect();
            out.push_str(&format!("  {}: [{}]   # {}\n", c.name, names.join(", "), c.label()));
        }
        // A certificate standing in for a Secret in another namespace lives in that namespace.
        let suffix_of: std::collections::BTreeMap<&str, &str> = d.namespaces.iter().map(|(s, n)| (n.as_str(), s.as_str())).collect();
        let elsewhere: Vec<String> = d
            .certs
            .iter()
            .filter_map(|c| match &c.source {
                CertSource::Secret { namespace: Some(ns), .. } => {
                    suffix_of.get(ns.as_str()).map(|suffix| format!("  {}: {suffix}\n", c.name))
                }
                _ => None,
            })
            .collect();
        if !elsewhere.is_empty() {
            out.push_str("certificate_namespaces:\n");
            out.push_str(&elsewhere.concat());
        }
    }
    if !d.backends.is_empty() {
        out.push_str("backends:\n");
        let suffix_of: std::collections::BTreeMap<&str, &str> = d.namespaces.iter().map(|(s, n)| (n.as_str(), s.as_str())).collect();
        for (b, cert) in &d.backends {
            let mut fields = Vec::new();
            if let Some(c) = cert {
                fields.push(format!("tls: {c}"));
            }
            if let Some(suffix) = d.backend_namespaces.get(b).and_then(|n| suffix_of.get(n.as_str())) {
                fields.push(format!("namespace_suffix: {suffix}"));
            }
            out.push_str(&format!("  {b}: {{{}}}\n", fields.join(", ")));
        }
    }
    out.push_str(&format!("manifests: [{MANIFESTS}]\n"));
    if groups.is_empty() {
        out.push_str("expect: []\n");
        return out;
    }
    out.push_str("expect:\n");
    for g in groups {
        out.push_str(&format!("  - cilium: {}\n", serde_json::to_string(&g.range).unwrap_or_default()));
        out.push_str("    provenance: inferred\n");
        out.push_str(&format!("    note: {}\n", serde_json::to_string(provenance_note).unwrap_or_default()));
        if !g.gateway.is_empty() {
            out.push_str(&format!("    gateway: {}\n", conds(&g.gateway)));
        }
        if !g.listeners.is_empty() {
            out.push_str("    listeners:\n");
            for (l, cs) in &g.listeners {
                out.push_str(&format!("      {}: {}\n", q(l), conds(cs)));
            }
        }
        if !g.routes.is_empty() {
            out.push_str("    routes:\n");
            for (r, parents) in &g.routes {
                out.push_str(&format!("      {}:\n", q(r)));
                for (p, cs) in parents {
                    out.push_str(&format!("        {}: {}\n", q(p), conds(cs)));
                }
            }
        }
        if !g.probes.is_empty() {
            out.push_str("    probes:\n");
            for (k, r) in &g.probes {
                out.push_str(&probe_line(d, k, r));
            }
        }
        if !g.refused.is_empty() {
            out.push_str("    refused:\n");
            for (o, why) in &g.refused {
                out.push_str(&format!(
                    "      {}: {}\n",
                    serde_json::to_string(o).unwrap_or_default(),
                    serde_json::to_string(why).unwrap_or_default()
                ));
            }
        }
        if !g.envoy.is_empty() {
            out.push_str("    envoy:\n");
            for (l, want) in &g.envoy {
                let w = match want {
                    EnvoyWant::Chains(n) => format!("{{filter_chains: {n}}}"),
                    EnvoyWant::Error(e) => format!("{{error_contains: {}}}", serde_json::to_string(e).unwrap_or_default()),
                    EnvoyWant::Absent => "{absent: true}".into(),
                };
                out.push_str(&format!("      {}: {w}\n", q(l)));
            }
        }
    }
    out
}

/// The text of [`MANIFESTS`] for `d`: the derived documents under [`MANIFEST_HEADER`].
pub fn manifests_text(d: &Derived) -> String {
    format!("{MANIFEST_HEADER}{}", d.manifests)
}

/// Writes `case.yaml` and the manifests into `dir` (which must not exist yet), atomically: the
/// files go into a hidden sibling folder that is renamed into place.
pub fn write_case_dir(dir: &Path, case_yaml: &str, d: &Derived) -> std::io::Result<()> {
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let tmp = crate::scratch::Scratch::new_in(parent, crate::scratch::CASE, "")?;
    std::fs::write(tmp.path().join(crate::case::walk::CASE_FILE), case_yaml)?;
    std::fs::write(tmp.path().join(MANIFESTS), manifests_text(d))?;
    let staged = tmp.keep();
    // Never over anything (an empty folder, a link): see `crate::output::dest`.
    if let Err(e) = crate::output::dest::place_new_dir(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(std::io::Error::other(e.to_string()));
    }
    Ok(())
}
