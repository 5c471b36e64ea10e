//! Checks that catch a case that would fail for a reason of its own making, or could never pass:
//! a condition type no implementation sets, an alert name that does not exist, two probes of
//! one port and name that want different answers, a hostname that is not a DNS name, folders
//! that look like cases but are skipped. Each problem carries the real file, line and column.
//! Kept apart from `load.rs` so the loader stays one pass over the format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_saphyr::Location;

use super::load::{CASE_FILE, Problem};
use super::manifests::{Object, ROUTE_KINDS};
use super::raw::{RawCase, RawConditions, RawProbe, S};
use super::template;
use crate::types::DnsName;

/// Condition types the Gateway API defines for Gateways, listeners and route parents
/// (gateway-api `apis/v1`: `GatewayConditionType`, `ListenerConditionType`,
/// `RouteConditionType`; `Ready` and `Scheduled` are reserved/deprecated but still named).
pub const GATEWAY_API_CONDITIONS: &[&str] = &[
    "Accepted",
    "Programmed",
    "Ready",
    "Scheduled",
    "ResolvedRefs",
    "Conflicted",
    "OverlappingTLSConfig",
    "PartiallyInvalid",
    "AttachedListenerSets",
    "SupportedVersion",
];

fn at(file: &Path, loc: &Location, field: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem { file: file.to_path_buf(), line: loc.line(), column: loc.column(), field: field.into(), message: message.into() }
}

/// Every rule over `case.yaml` itself.
pub(super) fn check_case(raw: &RawCase, file: &Path, apex: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let allowed: BTreeSet<&str> =
        GATEWAY_API_CONDITIONS.iter().copied().chain(raw.extension_conditions.iter().map(|c| c.value.as_str())).collect();
    for (gi, g) in raw.expect.value.iter().enumerate() {
        let gf = format!("expect[{gi}]");
        let g = &g.value;
        let mut condition_maps: Vec<(String, &RawConditions)> = Vec::new();
        if let Some(c) = &g.gateway {
            condition_maps.push((format!("{gf}.gateway"), &c.value));
        }
        for (l, c) in &g.listeners {
            condition_maps.push((format!("{gf}.listeners.{l}"), &c.value));
        }
        for (r, parents) in &g.routes {
            for (p, c) in &parents.value {
                condition_maps.push((format!("{gf}.routes.{r}.{p}"), &c.value));
            }
        }
        for (field, map) in condition_maps {
            for (ty, want) in map {
                // Shape errors (not CamelCase) are the loader's; here only the vocabulary.
                let camel = ty.starts_with(|c: char| c.is_ascii_uppercase()) && ty.bytes().all(|b| b.is_ascii_alphanumeric());
                if camel && !allowed.contains(ty.as_str()) {
                    out.push(at(
                        file,
                        &want.referenced,
                        format!("{field}.{ty}"),
                        format!(
                            "{ty:?} is not a Gateway API condition type ({}); list an extension's own types under extension_conditions:",
                            GATEWAY_API_CONDITIONS.join(", ")
                        ),
                    ));
                }
            }
        }
        out.extend(probe_rules(&g.probes, file, &gf, apex));
    }
    out
}

/// The identity of a probe as the harness runs it: port, plain or TLS, and the name sent.
/// What makes two probes the same probe: the Gateway (in a case with several), the port,
/// plain or TLS, the name, and the request path (default `/`).
type ProbeIdentity = (Option<String>, i64, bool, Option<String>, String);

fn probe_identity(p: &RawProbe, apex: &str) -> ProbeIdentity {
    let name = if p.plain { p.host.as_ref() } else { p.sni.as_ref() };
    (
        p.gateway.as_ref().map(|g| g.value.clone()),
        p.port.value,
        p.plain,
        name.map(|n| template::render_apex(&n.value, apex).to_ascii_lowercase()),
        p.path.as_ref().map_or_else(|| "/".to_string(), |x| x.value.clone()),
    )
}

/// What a probe wants, as text to compare (answer, how, alert, status, served_by).
fn probe_want(p: &RawProbe) -> String {
    let v = |o: &Option<S<String>>| o.as_ref().map(|s| s.value.clone()).unwrap_or_default();
    format!("{}|{}|{}|{}|{}", v(&p.answers), v(&p.how), v(&p.alert), p.status.as_ref().map(|s| s.value).unwrap_or(0), v(&p.served_by))
}

fn probe_rules(probes: &[S<RawProbe>], file: &Path, gf: &str, apex: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<ProbeIdentity, (usize, String)> = BTreeMap::new();
    for (pi, p) in probes.iter().enumerate() {
        let pf = format!("{gf}.probes[{pi}]");
        if let Some(a) = &p.value.alert
            && !crate::types::TLS_ALERTS.iter().any(|(_, n)| *n == a.value)
        {
            out.push(at(
                file,
                &a.referenced,
                format!("{pf}.alert"),
                format!("{:?} is not a TLS alert name (RFC 8446 / IANA, e.g. unrecognized_name, handshake_failure)", a.value),
            ));
        }
        let id = probe_identity(&p.value, apex);
        let want = probe_want(&p.value);
        match seen.get(&id) {
            Some((first, w)) if *w != want => out.push(at(
                file,
                &p.referenced,
                pf,
                format!("probes[{first}] probes the same Gateway, port, name and path but expects something else; both can never hold"),
            )),
            Some(_) => {}
            None => {
                seen.insert(id, (pi, want));
            }
        }
    }
    out
}

/// Where `needle` first appears at or after `line` (1-based) of `text`: the real line and column
/// of a manifest value, since objects carry only the line of their document.
fn locate(text: &str, line: u64, needle: &str) -> (u64, u64) {
    for (i, l) in text.lines().enumerate().skip(line.saturating_sub(1) as usize) {
        if let Some(c) = l.find(needle) {
            return (i as u64 + 1, l[..c].chars().count() as u64 + 1);
        }
    }
    (line, 1)
}

/// Hostnames in the manifests (listener hostnames, route hostnames) that are not DNS names.
/// `texts` are the rendered manifest texts by file, to locate each value.
pub(crate) fn check_manifest_hostnames(objects: &[Object], texts: &BTreeMap<PathBuf, String>) -> Vec<Problem> {
    let mut out = Vec::new();
    for o in objects {
        let mut names: Vec<(String, &str)> = Vec::new();
        if o.kind == "Gateway" {
            for (i, l) in o.value.pointer("/spec/listeners").and_then(Value::as_array).into_iter().flatten().enumerate() {
                if let Some(h) = l.get("hostname").and_then(Value::as_str) {
                    names.push((format!("spec.listeners[{i}].hostname"), h));
                }
            }
        } else if ROUTE_KINDS.contains(&o.kind.as_str()) {
            for (i, h) in o.value.pointer("/spec/hostnames").and_then(Value::as_array).into_iter().flatten().enumerate() {
                if let Some(h) = h.as_str() {
                    names.push((format!("spec.hostnames[{i}]"), h));
                }
            }
        }
        for (field, h) in names {
            if let Err(e) = DnsName::new(h.to_string()) {
                let (line, column) = texts.get(&o.file).map(|t| locate(t, o.line, h)).unwrap_or((o.line, 1));
                out.push(Problem {
                    file: o.file.clone(),
                    line,
                    column,
                    field: format!("{} {}: {field}", o.kind, o.name),
                    message: format!("{h:?} is not a valid hostname: {}", e.0),
                });
            }
        }
    }
    out
}

/// Folders below `root` that look like cases but are not run: a `case.yml` (the loader reads
/// only `case.yaml`), or a case folder where [`super::load::discover`] does not look: inside
/// another case's folder, or deeper than one group (`cases/<group>/<case>`, as `cases/cilium/`).
pub fn skipped_case_folders(root: &Path) -> Vec<Problem> {
    let mut out = Vec::new();
    let problem = |file: PathBuf, message: String| Problem { file, line: 0, column: 0, field: "cases".into(), message };
    let found: std::collections::BTreeSet<PathBuf> = super::load::discover(root).unwrap_or_default().into_iter().collect();
    // Bounded: three levels below the root are enough to catch a case one level too deep.
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut seen = Vec::new();
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            // A symlinked folder is not followed: it could loop.
            if p.is_dir() && !p.is_symlink() {
                seen.push(p.clone());
                if depth < 2 {
                    stack.push((p, depth + 1));
                }
            }
        }
    }
    seen.sort();
    for d in seen {
        for alt in ["case.yml", "Case.yaml", "case.YAML"] {
            if d.join(alt).is_file() && !d.join(CASE_FILE).is_file() {
                out.push(problem(d.join(alt), format!("skipped: the case file must be named {CASE_FILE}")));
            }
        }
        if d.join(CASE_FILE).is_file() && !found.contains(&d) {
            out.push(problem(
                d.join(CASE_FILE),
                format!(
                    "skipped: cases are the folders directly below {}, or one group folder below it (like cases/cilium/<case>); move it up a level",
                    root.display()
                ),
            ));
        }
    }
    out
}

/// Expectation groups whose `cilium:` range matches none of `versions` (the pinned ones): such
/// a group is never judged, so what it says is never checked.
pub fn ranges_matching_no_version(cases: &[super::Case], versions: &[super::CiliumVersion]) -> Vec<Problem> {
    let mut out = Vec::new();
    let pinned: Vec<String> = versions.iter().map(ToString::to_string).collect();
    for c in cases {
        let text = crate::input::read_text(&c.file, crate::input::CASE_FILE).unwrap_or_default();
        for (gi, g) in c.groups.iter().enumerate() {
            if !versions.iter().any(|v| g.range.matches(v)) {
                let (line, column) = locate(&text, g.line, "cilium");
                out.push(Problem {
                    file: c.file.clone(),
                    line,
                    column,
                    field: format!("expect[{gi}].cilium"),
                    message: format!(
                        "{:?} matches no pinned Cilium version ({}): this group is never judged",
                        g.range.as_str(),
                        pinned.join(", ")
                    ),
                });
            }
        }
    }
    out
}

/// Fields of `orig` that the typed round trip dropped: fields the type does not know.
fn dropped_fields(orig: &Value, typed: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match (orig, typed) {
        (Value::Object(o), Value::Object(t)) => {
            for (k, v) in o {
                if v.is_null() {
                    continue;
                }
                let p = format!("{path}.{k}");
                match t.get(k) {
                    None => out.push((p, k.clone())),
                    Some(tv) => dropped_fields(v, tv, &p, out),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                dropped_fields(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(spec: &Value) -> Option<Value> {
    serde_json::to_value(serde_json::from_value::<T>(spec.clone()).ok()?).ok()
}

/// Manifest fields the typed Gateway API objects (gateway-api crate, standard channel) do not know: a typo such as `sectionNmae` that the API server would drop or
/// refuse, and the case would then test something else. Located at the field's real line.
pub(super) fn check_unknown_manifest_fields(objects: &[Object], texts: &BTreeMap<PathBuf, String>) -> Vec<Problem> {
    use gateway_api as x;
    let mut out = Vec::new();
    for o in objects.iter().filter(|o| o.group() == "gateway.networking.k8s.io") {
        let Some(spec) = o.value.get("spec") else { continue };
        let typed = match o.kind.as_str() {
            "Gateway" => round_trip::<x::gateways::GatewaySpec>(spec),
            "HTTPRoute" => round_trip::<x::httproutes::HttpRouteSpec>(spec),
            "TLSRoute" => round_trip::<x::tlsroutes::TlsRouteSpec>(spec),
            // Shape errors of a Gateway are reported elsewhere; other kinds are not checked.
            _ => None,
        };
        let Some(typed) = typed else { continue };
        let mut dropped = Vec::new();
        dropped_fields(spec, &typed, "spec", &mut dropped);
        for (path, key) in dropped {
            let (line, column) = texts.get(&o.file).map(|t| locate(t, o.line, &format!("{key}:"))).unwrap_or((o.line, 1));
            out.push(Problem {
                file: o.file.clone(),
                line,
                column,
                field: format!("{} {}: {path}", o.kind, o.name),
                message: format!("{key:?} is not a field of {} (gateway.networking.k8s.io, standard channel)", o.kind),
            });
        }
    }
    out
}
