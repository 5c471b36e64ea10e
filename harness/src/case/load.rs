//! Reads a case folder and checks it, collecting every problem with file, line, column and
//! field rather than stopping at the first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, Spanned};

use super::manifests::{self, ListenerFacts, Object, ROUTE_KINDS};
use super::model::*;
use super::raw::*;
use super::refs;
use super::template::{self, Vars};
use super::version::VersionRange;
use crate::render::certs::CertSpec;
use crate::types::{BackendName, CertName, DnsName, Port, Sni};

pub const CASE_FILE: &str = "case.yaml";
pub const DEFAULT_APEX: &str = "example.test";
/// The Gateway's name when the case does not set `gateway:`; `{gateway}` renders to it.
pub const DEFAULT_GATEWAY: &str = "gw";

/// One problem in a case, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.file.display(), self.line, self.column, self.field, self.message)
    }
}

/// serde-saphyr's message without its source snippet and location prefix (we print our own).
pub fn short_yaml_message(e: &serde_saphyr::Error) -> String {
    let full = e.to_string();
    let first = full.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 7 column 5: unknown field ..." -> "unknown field ..."
    match first.split_once(": ") {
        Some((loc, rest)) if loc.starts_with("line ") => rest.to_string(),
        _ => first.to_string(),
    }
}

/// The YAML key written on `line` of `text`, to name the field of a syntax or type error.
fn key_on_line(text: &str, line: u64) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)? as usize)?;
    let t = l.trim_start().trim_start_matches("- ").trim_start();
    let (key, _) = t.split_once(':')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')).then(|| key.to_string())
}

struct Ctx {
    file: PathBuf,
    problems: Vec<Problem>,
    /// Where document references resolve (the repository holding the case).
    repo_root: Option<PathBuf>,
}

impl Ctx {
    fn at(&mut self, loc: &Location, field: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.clone(),
            line: loc.line(),
            column: loc.column(),
            field: field.into(),
            message: message.into(),
        });
    }
}

/// Loads and checks the case in `dir` (a folder holding `case.yaml`).
pub fn load(dir: &Path) -> Result<Case, Vec<Problem>> {
    let file = dir.join(CASE_FILE);
    let name = case_name(dir);
    // Inside the case folder like its manifests, opened once.
    let text = match crate::input::read_text_inside(dir, CASE_FILE, crate::input::CASE_FILE) {
        Ok(t) => t,
        Err(e) => {
            return Err(vec![Problem {
                file,
                line: 0,
                column: 0,
                field: "case.yaml".into(),
                message: format!("cannot read: {}", e.reason()),
            }]);
        }
    };
    let raw: RawCase = match serde_saphyr::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            let field = key_on_line(&text, line).unwrap_or_else(|| "yaml".into());
            return Err(vec![Problem { file, line, column, field, message: short_yaml_message(&e) }]);
        }
    };
    let mut cx = Ctx { file: file.clone(), problems: Vec::new(), repo_root: refs::repo_root_above(dir) };
    for r in &raw.refs {
        check_ref(&mut cx, "refs", r);
    }
    // Vocabulary, alerts and contradicting probes: see lint_rules.rs.

    // Only {apex} may appear in case.yaml: namespaces and Secrets exist only in manifests.
    for p in template::placeholders(&text) {
        if p.name != "apex" {
            cx.problems.push(Problem {
                file: file.clone(),
                line: p.line as u64,
                column: p.column as u64,
                field: "placeholder".into(),
                message: format!("only {{apex}} may be used in case.yaml, not {{{}}}", p.name),
            });
        }
    }

    let apex = match &raw.apex {
        Some(a) => match DnsName::new(a.value.clone()) {
            Ok(d) if !d.as_str().starts_with('*') => d.to_string(),
            _ => {
                cx.at(&a.referenced, "apex", format!("{:?} is not a DNS name", a.value));
                DEFAULT_APEX.to_string()
            }
        },
        None => DEFAULT_APEX.to_string(),
    };

    cx.problems.extend(super::lint_rules::check_case(&raw, &file, &apex));

    if raw.summary.value.trim().is_empty() {
        cx.at(&raw.summary.referenced, "summary", "must say what the case answers");
    }

    // Certificates.
    let mut certificates = Vec::new();
    let mut cert_names = BTreeSet::new();
    for (cname, names) in &raw.certificates {
        let field = format!("certificates.{cname}");
        let cert = match CertName::new(cname.clone()) {
            Ok(c) if c.as_str() != "nothing" => c,
            Ok(_) => {
                cx.at(&names.referenced, &field, "\"nothing\" is reserved for probes that expect no certificate");
                continue;
            }
            Err(e) => {
                cx.at(&names.referenced, &field, e.0);
                continue;
            }
        };
        let mut dns = Vec::new();
        for n in &names.value {
            match DnsName::new(template::render_apex(&n.value, &apex)) {
                Ok(d) => dns.push(d),
                Err(e) => cx.at(&n.referenced, &field, e.0),
            }
        }
        if names.value.is_empty() {
            cx.at(&names.referenced, &field, "a certificate needs at least one DNS name");
        }
        cert_names.insert(cert.clone());
        certificates.push(CertSpec { name: cert, dns_names: dns });
    }

    // Certificates placed in another namespace of the case.
    let mut certificate_namespaces = BTreeMap::new();
    for (cname, suffix) in &raw.certificate_namespaces {
        let field = format!("certificate_namespaces.{cname}");
        match CertName::new(cname.clone()) {
            Ok(c) if cert_names.contains(&c) => match namespace_suffix(&suffix.value) {
                Ok(()) => {
                    certificate_namespaces.insert(c, suffix.value.clone());
                }
                Err(m) => cx.at(&suffix.referenced, &field, m),
            },
            _ => cx.at(&suffix.referenced, &field, format!("{cname:?} is not a certificate of this case (certificates:)")),
        }
    }

    // Backends.
    let mut backends = BTreeMap::new();
    let mut backend_namespaces = BTreeMap::new();
    for (bname, b) in &raw.backends {
        let field = format!("backends.{bname}");
        let Ok(name) = BackendName::new(bname.clone()).map_err(|e| cx.at(&b.referenced, &field, e.0)) else { continue };
        if let Some(suffix) = &b.value.namespace_suffix {
            match namespace_suffix(&suffix.value) {
                Ok(()) => {
                    backend_namespaces.insert(name.clone(), suffix.value.clone());
                }
                Err(m) => {
                    cx.at(&suffix.referenced, format!("{field}.namespace_suffix"), m);
                    continue;
                }
            }
        }
        let backend = match &b.value.tls {
            None => Backend::Http,
            Some(c) => match CertName::new(c.value.clone()) {
                Ok(c) if cert_names.contains(&c) => Backend::Tls { cert: c },
                _ => {
                    cx.at(
                        &c.referenced,
                        format!("{field}.tls"),
                        format!("{:?} is not a declared certificate{}", c.value, declared(&cert_names)),
                    );
                    continue;
                }
            },
        };
        backends.insert(name, backend);
    }

    // Manifests: read, render with lint-time values, parse.
    let mut manifest_files = Vec::new();
    let mut objects: Vec<Object> = Vec::new();
    let gateway_name = match &raw.gateway {
        Some(g) => match BackendName::new(g.value.clone()) {
            Ok(_) => g.value.clone(),
            Err(_) => {
                cx.at(
                    &g.referenced,
                    "gateway",
                    format!("{:?} is not a valid object name (lower-case letters, digits, inner hyphens)", g.value),
                );
                DEFAULT_GATEWAY.to_string()
            }
        },
        None => DEFAULT_GATEWAY.to_string(),
    };
    let lint_vars = Vars { apex: apex.clone(), namespace: super::scope::LINT_NAMESPACE.into(), gateway: gateway_name.clone() };
    if raw.manifests.value.is_empty() {
        cx.at(&raw.manifests.referenced, "manifests", "a case needs at least one manifest (the Gateway)");
    }
    for m in &raw.manifests.value {
        let path = dir.join(&m.value);
        if m.value.contains("..") || Path::new(&m.value).is_absolute() {
            cx.at(&m.referenced, "manifests", format!("{:?} must be a file inside the case folder", m.value));
            continue;
        }
        let mtext = match crate::input::read_text_inside(dir, &m.value, crate::input::MANIFEST) {
            Ok(t) => t,
            Err(e) => {
                cx.at(&m.referenced, "manifests", format!("cannot read {}: {}", path.display(), e.reason()));
                continue;
            }
        };
        for te in template::check(&mtext, &cert_names) {
            cx.problems.push(Problem {
                file: path.clone(),
                line: te.line as u64,
                column: te.column as u64,
                field: "placeholder".into(),
                message: te.message,
            });
        }
        match manifests::parse_file(&path, &mtext, &lint_vars) {
            Ok(objs) => objects.extend(objs),
            Err(p) if p.field == "placeholder" => {} // already reported by check above
            Err(p) => cx.problems.push(Problem { file: p.file, line: p.line, column: p.column, field: p.field, message: p.message }),
        }
        manifest_files.push(ManifestFile { path, text: mtext });
    }

    let rendered: BTreeMap<PathBuf, String> =
        manifest_files.iter().filter_map(|m| Some((m.path.clone(), template::render(&m.text, &lint_vars).ok()?))).collect();
    // The API's own limits and patterns (64 listeners, lower-case RFC 1123 hostnames, ...).
    cx.problems.extend(super::api_schema::check_objects(&objects, &rendered));
    cx.problems.extend(super::lint_rules::check_unknown_manifest_fields(&objects, &rendered));
    for k in &raw.cluster_scoped {
        if !k.value.starts_with(|c: char| c.is_ascii_uppercase()) || !k.value.bytes().all(|b| b.is_ascii_alphanumeric()) {
            cx.at(&k.referenced, "cluster_scoped", format!("{:?} is not a kind (CamelCase, like ClusterRole)", k.value));
        }
    }
    // Which listeners and backends present each certificate, for which names.
    let presenters = super::lint_rules::presenters(&objects, &certificates, &backends);
    cx.problems.extend(super::lint_rules::probe_certificates(&raw, &file, &apex, &presenters));

    // The Gateway the expectations speak of.
    let gateways: Vec<&Object> = objects.iter().filter(|o| o.kind == "Gateway").collect();
    if !manifest_files.is_empty() && !gateways.iter().any(|o| o.name == gateway_name) {
        let loc = raw.gateway.as_ref().map(|g| g.referenced).unwrap_or(raw.manifests.referenced);
        let found: Vec<&str> = gateways.iter().map(|o| o.name.as_str()).collect();
        cx.at(
            &loc,
            "gateway",
            format!(
                "no Gateway named {gateway_name:?} in the manifests (found: {}); name it `{{gateway}}` in the manifest or set `gateway:`",
                if found.is_empty() { "none".into() } else { found.join(", ") }
            ),
        );
    }
    // Every Gateway's listeners, by Gateway name.
    let mut by_gateway: BTreeMap<String, Vec<ListenerFacts>> = BTreeMap::new();
    for gw in &gateways {
        match manifests::gateway_listeners(gw) {
            Ok(l) => {
                by_gateway.insert(gw.name.clone(), l);
            }
            Err(p) => cx.problems.push(Problem { file: p.file, line: p.line, column: p.column, field: p.field, message: p.message }),
        }
    }
    let several = gateways.len() > 1;
    let single_gateway = (!several).then_some(gateway_name.as_str());
    // Listener keys expectations may use: `<listener>` with one Gateway, `<gateway>/<listener>`
    // always.
    let mut listener_keys: BTreeSet<String> = BTreeSet::new();
    for (g, ls) in &by_gateway {
        for l in ls {
            listener_keys.insert(format!("{g}/{}", l.name));
            if !several {
                listener_keys.insert(l.name.clone());
            }
        }
    }
    let listener_names: BTreeSet<&str> = listener_keys.iter().map(String::as_str).collect();
    // A ListenerSet's ports are its parent Gateway's too (whether a version serves them is what
    // the expectations say).
    let mut set_ports: BTreeMap<String, BTreeSet<Port>> = BTreeMap::new();
    for o in objects.iter().filter(|o| o.kind == "ListenerSet") {
        let parent = o.value.pointer("/spec/parentRef/name").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
        for l in o.value.pointer("/spec/listeners").and_then(serde_json::Value::as_array).into_iter().flatten() {
            if let Some(p) = l.get("port").and_then(serde_json::Value::as_u64).and_then(|p| Port::new(p).ok()) {
                set_ports.entry(parent.clone()).or_default().insert(p);
            }
        }
    }
    let ports_of = |g: &str| -> BTreeSet<Port> {
        let mut ports: BTreeSet<Port> = by_gateway.get(g).map(|ls| ls.iter().map(|l| l.port).collect()).unwrap_or_default();
        ports.extend(set_ports.get(g).into_iter().flatten().copied());
        ports
    };
    let gateway_ports: BTreeSet<Port> = ports_of(&gateway_name);
    let listener_sets: BTreeMap<String, BTreeSet<String>> = objects
        .iter()
        .filter(|o| o.kind == "ListenerSet")
        .map(|o| {
            let names = o
                .value
                .pointer("/spec/listeners")
                .and_then(serde_json::Value::as_array)
                .map(|ls| ls.iter().filter_map(|l| l.get("name").and_then(serde_json::Value::as_str).map(str::to_string)).collect())
                .unwrap_or_default();
            (o.name.clone(), names)
        })
        .collect();
    let routes: BTreeMap<String, manifests::RouteFacts> = objects
        .iter()
        .filter(|o| ROUTE_KINDS.contains(&o.kind.as_str()))
        .map(|o| (o.name.clone(), manifests::route_facts(o, single_gateway)))
        .collect();
    // Known as soon as the Gateway exists: `listeners: []` (or listeners that could not be read,
    // already a problem) must not switch the listener and port checks off.
    let knows_gateway = gateways.iter().any(|o| o.name == gateway_name);

    // Expectation groups.
    let mut groups = Vec::new();
    if raw.expect.value.is_empty() {
        cx.at(&raw.expect.referenced, "expect", "a case needs at least one expectation group");
    }
    for (gi, g) in raw.expect.value.iter().enumerate() {
        let gf = format!("expect[{gi}]");
        let g_loc = g.referenced;
        let g = &g.value;
        let range = match VersionRange::parse(&g.cilium.value) {
            Ok(r) => Some(r),
            Err(e) => {
                cx.at(&g.cilium.referenced, format!("{gf}.cilium"), e.0);
                None
            }
        };
        let Some(provenance) =
            provenance(&mut cx, &format!("{gf}.provenance"), Some(&g.provenance), &g.reference, &g.note, &g.observed, None, range.as_ref())
        else {
            continue;
        };

        let gateway = g.gateway.as_ref().map(|c| conditions(&mut cx, &format!("{gf}.gateway"), &c.value)).unwrap_or_default();
        let mut gmap = BTreeMap::new();
        for (gname, conds) in &g.gateways {
            if !manifest_files.is_empty() && !gateways.iter().any(|o| o.name == *gname) {
                let found: Vec<&str> = gateways.iter().map(|o| o.name.as_str()).collect();
                cx.at(
                    &conds.referenced,
                    format!("{gf}.gateways.{gname}"),
                    format!("no Gateway named {gname:?} in the manifests; Gateways: {}", join(&found.into_iter().collect())),
                );
            }
            gmap.insert(gname.clone(), conditions(&mut cx, &format!("{gf}.gateways.{gname}"), &conds.value));
        }
        let mut lsmap = BTreeMap::new();
        for (lsname, ls) in &g.listenersets {
            let lf = format!("{gf}.listenersets.{lsname}");
            let known = listener_sets.get(lsname);
            if known.is_none() {
                cx.at(
                    &ls.referenced,
                    &lf,
                    format!(
                        "no ListenerSet named {lsname:?} in the manifests; ListenerSets: {}",
                        join(&listener_sets.keys().map(String::as_str).collect())
                    ),
                );
            }
            let own = conditions(&mut cx, &format!("{lf}.conditions"), &ls.value.conditions);
            let mut lmap = BTreeMap::new();
            for (lname, conds) in &ls.value.listeners {
                if let Some(names) = known
                    && !names.contains(lname)
                {
                    cx.at(
                        &conds.referenced,
                        format!("{lf}.listeners.{lname}"),
                        format!(
                            "ListenerSet {lsname} has no listener {lname:?}; it has {}",
                            join(&names.iter().map(String::as_str).collect())
                        ),
                    );
                }
                lmap.insert(lname.clone(), conditions(&mut cx, &format!("{lf}.listeners.{lname}"), &conds.value));
            }
            lsmap.insert(lsname.clone(), (own, lmap));
        }
        let mut lmap = BTreeMap::new();
        for (lname, conds) in &g.listeners {
            if knows_gateway && !listener_names.contains(lname.as_str()) {
                let message = if several {
                    let hint = if lname.contains('/') { "" } else { " (with several Gateways, write <gateway>/<listener>)" };
                    format!("the Gateways have no listener {lname:?}{hint}; listeners: {}", join(&listener_names))
                } else {
                    let plain: BTreeSet<&str> = listener_names.iter().copied().filter(|n| !n.contains('/')).collect();
                    format!("the Gateway has no listener {lname:?}; it has {}", join(&plain))
                };
                cx.at(&conds.referenced, format!("{gf}.listeners.{lname}"), message);
            }
            lmap.insert(lname.clone(), conditions(&mut cx, &format!("{gf}.listeners.{lname}"), &conds.value));
        }
        let mut rmap = BTreeMap::new();
        for (rname, parents) in &g.routes {
            let rf = format!("{gf}.routes.{rname}");
            let facts = routes.get(rname);
            if facts.is_none() {
                cx.at(
                    &parents.referenced,
                    &rf,
                    format!("no route named {rname:?} in the manifests; routes: {}", join(&routes.keys().map(String::as_str).collect())),
                );
            }
            let mut pmap = BTreeMap::new();
            for (parent, conds) in &parents.value {
                if let Some(f) = facts
                    && !f.parents.contains(parent)
                {
                    cx.at(
                        &conds.referenced,
                        format!("{rf}.{parent}"),
                        format!("route {rname} has no parentRef {parent:?}; its parents: {}", f.parents.join(", ")),
                    );
                }
                pmap.insert(parent.clone(), conditions(&mut cx, &format!("{rf}.{parent}"), &conds.value));
            }
            rmap.insert(rname.clone(), pmap);
        }
        let mut probes = Vec::new();
        for (pi, p) in g.probes.iter().enumerate() {
            let pf = format!("{gf}.probes[{pi}]");
            // Which Gateway the probe targets: required when there are several.
            let target = match (&p.value.gateway, several) {
                (Some(gname), _) if !by_gateway.contains_key(&gname.value) => {
                    cx.at(&gname.referenced, format!("{pf}.gateway"), format!("no Gateway named {:?} in the manifests", gname.value));
                    continue;
                }
                (Some(gname), _) => Some(gname.value.clone()),
                (None, true) => {
                    cx.at(&p.referenced, format!("{pf}.gateway"), "the case has several Gateways; name the one probed with `gateway:`");
                    continue;
                }
                (None, false) => None,
            };
            let ports = target.as_deref().map(ports_of).unwrap_or_else(|| gateway_ports.clone());
            if let Some(mut pe) =
                probe(&mut cx, &pf, p, &apex, &cert_names, &backends, (&provenance, range.as_ref()), &ports, knows_gateway)
            {
                pe.key.gateway = target.filter(|_| several);
                pe.key.path = p.value.path.as_ref().map(|s| s.value.clone());
                if let Some(path) = &p.value.path
                    && (!path.value.starts_with('/') || !pe.key.http)
                {
                    cx.at(
                        &path.referenced,
                        format!("{pf}.path"),
                        "a path starts with '/' and needs an HTTP request (plain: true, served_by: or status:)",
                    );
                }
                probes.push(pe);
            }
        }
        let mut envoy = BTreeMap::new();
        for (lname, e) in &g.envoy {
            let ef = format!("{gf}.envoy.{lname}");
            if several && !lname.contains('/') {
                cx.at(&e.referenced, &ef, "the case has several Gateways; write the Envoy listener as <gateway>/<listener-name>");
            }
            if let Some(ee) = envoy_listener(&mut cx, &ef, e, &apex, (&provenance, range.as_ref())) {
                envoy.insert(lname.clone(), ee);
            }
        }
        let mut refused = Vec::new();
        for (key, contains) in &g.refused {
            let rf = format!("{gf}.refused.{key}");
            let Some((kind, name)) = key.split_once('/').filter(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('/')) else {
                cx.at(&contains.referenced, &rf, format!("{key:?}: name the refused object as Kind/name, like TLSRoute/api"));
                continue;
            };
            if !manifest_files.is_empty() && !objects.iter().any(|o| o.kind == kind && o.name == name) {
                cx.at(&contains.referenced, &rf, format!("no {kind} named {name:?} in the manifests"));
            }
            if contains.value.trim().is_empty() {
                cx.at(&contains.referenced, &rf, "say what the API server's message names, like \"spec.hostnames: Required value\"");
            }
            if g.routes.contains_key(name) && ROUTE_KINDS.contains(&kind) {
                cx.at(
                    &contains.referenced,
                    &rf,
                    format!("a refused route does not exist, so it has no conditions: drop routes.{name} from this group"),
                );
            }
            refused.push(crate::case::RefusedExpect {
                kind: kind.to_string(),
                name: name.to_string(),
                message_contains: contains.value.clone(),
            });
        }
        let confirmed = confirmed_by(&mut cx, &gf, &g.confirmed, range.as_ref());
        if let Some(range) = range {
            groups.push(ExpectGroup {
                range,
                provenance,
                confirmed,
                line: g_loc.line(),
                gateway,
                gateways: gmap,
                listener_sets: lsmap,
                listeners: lmap,
                routes: rmap,
                probes,
                envoy,
                refused,
            });
        }
    }

    if !cx.problems.is_empty() {
        return Err(cx.problems);
    }

    let hash = {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(text.as_bytes());
        for m in &manifest_files {
            h.update(m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default().as_bytes());
            h.update([0]);
            h.update(m.text.as_bytes());
        }
        crate::types::Fingerprint(h.finalize().into()).hex()
    };
    let file_digests = {
        use sha2::Digest;
        let sha = |t: &str| crate::types::Fingerprint(sha2::Sha256::digest(t.as_bytes()).into()).hex();
        let mut d = BTreeMap::from([(CASE_FILE.to_string(), sha(&text))]);
        for m in &manifest_files {
            d.insert(m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), sha(&m.text));
        }
        d
    };

    Ok(Case {
        name,
        dir: dir.to_path_buf(),
        file,
        summary: raw.summary.value.trim().to_string(),
        refs: raw.refs.iter().map(|r| r.value.clone()).collect(),
        apex,
        gateway: gateway_name,
        certificates,
        backends,
        backend_namespaces,
        certificate_namespaces,
        manifests: manifest_files,
        groups,
        hash,
        file_digests,
        cluster_scoped: raw.cluster_scoped.iter().map(|k| k.value.clone()).collect(),
    })
}

/// A backend's or certificate's namespace suffix: it lives only in a namespace the case owns
/// (`{namespace}-SUFFIX`), so a run never places one in a namespace it did not create.
fn namespace_suffix(suffix: &str) -> Result<(), String> {
    let ok = !suffix.is_empty()
        && suffix.len() <= super::NAMESPACE_SUFFIX_MAX
        && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !suffix.starts_with('-')
        && !suffix.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{suffix:?}: it lives in `{{namespace}}-SUFFIX`; SUFFIX is 1-{} lower-case letters, digits and inner hyphens",
            super::NAMESPACE_SUFFIX_MAX
        ))
    }
}

fn join(names: &BTreeSet<&str>) -> String {
    if names.is_empty() { "none".into() } else { names.iter().copied().collect::<Vec<_>>().join(", ") }
}

fn declared(certs: &BTreeSet<CertName>) -> String {
    if certs.is_empty() {
        "; none are declared under `certificates:`".into()
    } else {
        format!("; declared: {}", certs.iter().map(CertName::as_str).collect::<Vec<_>>().join(", "))
    }
}

#[allow(clippy::too_many_arguments)]
fn provenance(
    cx: &mut Ctx,
    field: &str,
    kind: Option<&Spanned<String>>,
    reference: &Option<Spanned<String>>,
    note: &Option<Spanned<String>>,
    observed: &Option<Spanned<RawObserved>>,
    inherit: Option<&Provenance>,
    range: Option<&VersionRange>,
) -> Option<Provenance> {
    let kind_given = kind.is_some();
    let kind_at = kind.map(|k| k.referenced);
    let kind = match (kind, inherit) {
        (Some(k), _) => match ProvenanceKind::parse(&k.value) {
            Some(p) => p,
            None => {
                cx.at(&k.referenced, field, format!("{:?} is not a provenance; use source, reported, inferred or observed", k.value));
                return None;
            }
        },
        (None, Some(parent)) => {
            if let Some(o) = observed {
                cx.at(&o.referenced, field.replace(".provenance", ".observed"), "`observed:` needs `provenance: observed` beside it");
                return None;
            }
            // An item that names only a ref or note still inherits its group's kind.
            if reference.is_none() && note.is_none() {
                return Some(parent.clone());
            }
            parent.kind
        }
        (None, None) => return None,
    };
    let stated = kind_at.filter(|_| kind == ProvenanceKind::Observed);
    let observed = observed_by(cx, field, kind, stated, observed, range);
    let observed = match observed {
        Ok(o) => o,
        Err(()) => return None,
    };
    // An item that inherits `observed` inherits the run that observed it.
    let observed = observed.or_else(|| if kind_given { None } else { inherit.and_then(|p| p.observed.clone()) });
    if let Some(r) = reference {
        check_ref(cx, &field.replace(".provenance", ".ref"), r);
    }
    // A ref is inherited only with the kind: an item that states its own provenance speaks for
    // itself, and the group's reference may not support it.
    let inherit_ref = if kind_given { None } else { inherit.and_then(|p| p.reference.clone()) };
    Some(Provenance {
        kind,
        reference: reference.as_ref().map(|r| r.value.clone()).or(inherit_ref),
        note: note.as_ref().map(|n| n.value.clone()),
        observed,
    })
}

/// `observed:` is required with a stated `provenance: observed`, refused with any other, and
/// must name lane `kind` (only the kind lane observes Cilium), a Cilium version, a date and a
/// run id.
fn observed_by(
    cx: &mut Ctx,
    field: &str,
    kind: ProvenanceKind,
    stated_observed: Option<Location>,
    observed: &Option<Spanned<RawObserved>>,
    range: Option<&VersionRange>,
) -> Result<Option<ObservedBy>, ()> {
    let ofield = field.replace(".provenance", ".observed");
    match (stated_observed, observed) {
        (None, None) => Ok(None),
        (None, Some(o)) => {
            cx.at(&o.referenced, &ofield, format!("`observed:` belongs to `provenance: observed`, not {}", kind.as_str()));
            Err(())
        }
        (Some(at), None) => {
            cx.at(
                &at,
                ofield,
                "provenance: observed needs `observed: {lane: kind, cilium: VERSION, date: YYYY-MM-DD, run: RUN_ID}` (only `run --lane kind --record` writes it)",
            );
            Err(())
        }
        (Some(_), Some(o)) => {
            let mut bad = false;
            let mut get = |v: &Option<Spanned<String>>, name: &str| -> String {
                match v {
                    Some(s) if !s.value.trim().is_empty() => s.value.clone(),
                    _ => {
                        cx.at(&o.referenced, format!("{ofield}.{name}"), format!("`observed:` must say {name}"));
                        bad = true;
                        String::new()
                    }
                }
            };
            let by = ObservedBy {
                lane: get(&o.value.lane, "lane"),
                cilium: get(&o.value.cilium, "cilium"),
                date: get(&o.value.date, "date"),
                run: get(&o.value.run, "run"),
            };
            if bad {
                return Err(());
            }
            if by.lane != "kind" {
                cx.at(
                    &o.referenced,
                    format!("{ofield}.lane"),
                    format!("{:?}: only the kind lane observes Cilium; a model run never makes an expectation observed", by.lane),
                );
                return Err(());
            }
            // Each part located at its own value (all four are present here).
            let loc = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.referenced).unwrap_or(o.referenced);
            let version = match crate::case::CiliumVersion::parse(&by.cilium) {
                Ok(v) => v,
                Err(_) => {
                    cx.at(&loc(&o.value.cilium), format!("{ofield}.cilium"), format!("{:?} is not a Cilium version", by.cilium));
                    return Err(());
                }
            };
            if let Some(r) = range
                && !r.matches(&version)
            {
                cx.at(
                    &loc(&o.value.cilium),
                    format!("{ofield}.cilium"),
                    format!("{version} is outside this group's range {r}: an observation of {version} says nothing about the versions this group speaks of"),
                );
                return Err(());
            }
            let day = time::macros::format_description!("[year]-[month]-[day]");
            if time::Date::parse(&by.date, day).is_err() {
                cx.at(&loc(&o.value.date), format!("{ofield}.date"), format!("{:?} is not a date (YYYY-MM-DD)", by.date));
                return Err(());
            }
            // The run ids the kind lane writes name the lane and the version.
            if !by.run.contains(&format!("-kind-{version}")) {
                cx.at(
                    &loc(&o.value.run),
                    format!("{ofield}.run"),
                    format!("{:?} is not a kind run of {version}: the kind lane's run ids read <time>-kind-{version}-...", by.run),
                );
                return Err(());
            }
            Ok(Some(by))
        }
    }
}

/// `confirmed:` entries: each names lane `operator`, a Cilium version inside the group's range
/// (once), the operator module's sum (`h1:...`), a date and an operator run of that version.
fn confirmed_by(cx: &mut Ctx, gf: &str, raw: &[Spanned<RawConfirmed>], range: Option<&VersionRange>) -> Vec<ConfirmedBy> {
    let mut out: Vec<ConfirmedBy> = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let field = format!("{gf}.confirmed[{i}]");
        let at = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.referenced).unwrap_or(c.referenced);
        let mut missing = false;
        let mut get = |v: &Option<Spanned<String>>, name: &str| match v {
            Some(s) if !s.value.trim().is_empty() => s.value.trim().to_string(),
            _ => {
                cx.at(&c.referenced, format!("{field}.{name}"), format!("`confirmed:` must say {name}"));
                missing = true;
                String::new()
            }
        };
        let by = ConfirmedBy {
            lane: get(&c.value.lane, "lane"),
            cilium: get(&c.value.cilium, "cilium"),
            module: get(&c.value.module, "module"),
            date: get(&c.value.date, "date"),
            run: get(&c.value.run, "run"),
        };
        if missing {
            continue;
        }
        if by.lane != "operator" {
            cx.at(
                &at(&c.value.lane),
                format!("{field}.lane"),
                format!("{:?}: only the operator lane confirms (the kind lane observes: `observed:`)", by.lane),
            );
            continue;
        }
        let Ok(version) = crate::case::CiliumVersion::parse(&by.cilium) else {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{:?} is not a Cilium version", by.cilium));
            continue;
        };
        if let Some(r) = range
            && !r.matches(&version)
        {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{version} is outside this group's range {r}"));
            continue;
        }
        if out.iter().any(|o| o.cilium == by.cilium) {
            cx.at(&at(&c.value.cilium), format!("{field}.cilium"), format!("{version} is confirmed twice in this group"));
            continue;
        }
        if !by.module.starts_with("h1:") {
            cx.at(&at(&c.value.module), format!("{field}.module"), format!("{:?} is not a Go module sum (h1:...)", by.module));
            continue;
        }
        let day = time::macros::format_description!("[year]-[month]-[day]");
        if time::Date::parse(&by.date, day).is_err() {
            cx.at(&at(&c.value.date), format!("{field}.date"), format!("{:?} is not a date (YYYY-MM-DD)", by.date));
            continue;
        }
        if !by.run.contains(&format!("-operator-{version}")) {
            cx.at(
                &at(&c.value.run),
                format!("{field}.run"),
                format!("{:?} is not an operator run of {version}: its run ids read <time>-operator-{version}-...", by.run),
            );
            continue;
        }
        out.push(by);
    }
    out
}

/// A `ref` (or `refs` entry) must classify (see [`refs`]); the problem points at the value.
fn check_ref(cx: &mut Ctx, field: &str, r: &Spanned<String>) {
    if let Err(e) = refs::classify_all(&r.value, cx.repo_root.as_deref()) {
        cx.at(&r.referenced, field, e);
    }
}

fn conditions(cx: &mut Ctx, field: &str, map: &BTreeMap<String, Spanned<String>>) -> Vec<CondExpect> {
    let mut out = Vec::new();
    for (ty, want) in map {
        let ok_type = !ty.is_empty() && ty.starts_with(|c: char| c.is_ascii_uppercase()) && ty.bytes().all(|b| b.is_ascii_alphanumeric());
        if !ok_type {
            cx.at(&want.referenced, format!("{field}.{ty}"), format!("{ty:?} is not a condition type (CamelCase, like Accepted)"));
            continue;
        }
        match CondWant::parse(&want.value) {
            Ok(w) => out.push(CondExpect { type_: ty.clone(), want: w }),
            Err(e) => cx.at(&want.referenced, format!("{field}.{ty}"), e),
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn probe(
    cx: &mut Ctx,
    pf: &str,
    p: &Spanned<RawProbe>,
    apex: &str,
    certs: &BTreeSet<CertName>,
    backends: &BTreeMap<BackendName, Backend>,
    (group, range): (&Provenance, Option<&VersionRange>),
    gateway_ports: &BTreeSet<Port>,
    knows_gateway: bool,
) -> Option<ProbeExpect> {
    let loc = &p.referenced;
    let p = &p.value;
    let mut ok = true;
    let port = match u64::try_from(p.port.value).map_err(|_| ()).and_then(|n| Port::new(n).map_err(|_| ())) {
        Ok(port) => {
            if knows_gateway && !gateway_ports.contains(&port) {
                let ports: Vec<String> = gateway_ports.iter().map(Port::to_string).collect();
                cx.at(
                    &p.port.referenced,
                    format!("{pf}.port"),
                    format!("{port} is not a port of the Gateway (its ports: {})", ports.join(", ")),
                );
                ok = false;
            }
            Some(port)
        }
        Err(()) => {
            cx.at(&p.port.referenced, format!("{pf}.port"), format!("port {} is outside 1-65535", p.port.value));
            None
        }
    };
    let sni = if p.plain {
        // A plain probe sends no TLS at all; `host` is its Host header.
        for (present, name) in [(p.sni.is_some(), "sni"), (p.no_sni, "no_sni"), (p.alert.is_some(), "alert")] {
            if present {
                cx.at(loc, format!("{pf}.{name}"), format!("{name} has no meaning for a plain HTTP probe (plain: true)"));
                ok = false;
            }
        }
        match &p.host {
            Some(h) => match Sni::new(template::render_apex(&h.value, apex)) {
                Ok(h) => Some(h),
                Err(e) => {
                    cx.at(&h.referenced, format!("{pf}.host"), e.0);
                    ok = false;
                    None
                }
            },
            None => {
                cx.at(loc, pf, "a plain HTTP probe needs host: NAME (its Host header)");
                ok = false;
                None
            }
        }
    } else {
        if let Some(h) = &p.host {
            cx.at(&h.referenced, format!("{pf}.host"), "host: is the Host header of a plain HTTP probe; add plain: true, or use sni:");
            ok = false;
        }
        match (&p.sni, p.no_sni) {
            (Some(s), false) => match Sni::new(template::render_apex(&s.value, apex)) {
                Ok(s) => Some(s),
                Err(e) => {
                    cx.at(&s.referenced, format!("{pf}.sni"), e.0);
                    ok = false;
                    None
                }
            },
            (None, true) => None,
            (Some(s), true) => {
                cx.at(&s.referenced, format!("{pf}.sni"), "give either sni or no_sni: true, not both");
                ok = false;
                None
            }
            (None, false) => {
                cx.at(loc, pf, "a probe needs sni: NAME, or no_sni: true to send none");
                ok = false;
                None
            }
        }
    };
    let status = match &p.status {
        Some(st) => match u16::try_from(st.value) {
            Ok(code) if (100..=599).contains(&code) => Some(code),
            _ => {
                cx.at(&st.referenced, format!("{pf}.status"), format!("{} is not an HTTP status (100-599)", st.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    let how = match &p.how {
        Some(h) => match NothingHow::parse(&h.value) {
            Some(x) => Some(x),
            None => {
                cx.at(&h.referenced, format!("{pf}.how"), format!("{:?}: use reset, alert, closed, timeout or refused", h.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    let answer = match &p.answers {
        Some(ans) if ans.value == "nothing" => {
            if let (Some(a), Some(h)) = (&p.alert, how)
                && h != NothingHow::Alert
            {
                cx.at(&a.referenced, format!("{pf}.alert"), "alert: goes with how: alert");
                ok = false;
            }
            if let Some(st) = &p.status {
                cx.at(&st.referenced, format!("{pf}.status"), "status: needs an answer; nothing answers this probe");
                ok = false;
            }
            let how = if p.alert.is_some() && how.is_none() { Some(NothingHow::Alert) } else { how };
            Some(Answer::Nothing { how, alert: p.alert.as_ref().map(|a| a.value.clone()) })
        }
        other => {
            for (opt, name) in [(&p.how, "how"), (&p.alert, "alert")] {
                if let Some(x) = opt {
                    cx.at(&x.referenced, format!("{pf}.{name}"), format!("{name}: goes with answers: nothing"));
                    ok = false;
                }
            }
            match (other, p.plain) {
                (None, true) if status.is_some() || p.served_by.is_some() => Some(Answer::Answered),
                (None, true) => {
                    cx.at(loc, pf, "say what a plain HTTP probe expects: status:, served_by:, or answers: nothing");
                    None
                }
                (Some(ans), true) => {
                    cx.at(
                        &ans.referenced,
                        format!("{pf}.answers"),
                        "a plain HTTP probe presents no certificate: answers: may only be `nothing`; check status: or served_by:",
                    );
                    None
                }
                (None, false) => {
                    cx.at(loc, pf, "a probe needs answers: CERTIFICATE, or answers: nothing");
                    None
                }
                (Some(ans), false) => match CertName::new(ans.value.clone()) {
                    Ok(c) if certs.contains(&c) => Some(Answer::Cert(c)),
                    _ => {
                        cx.at(
                            &ans.referenced,
                            format!("{pf}.answers"),
                            format!("{:?} is not a declared certificate or `nothing`{}", ans.value, declared(certs)),
                        );
                        None
                    }
                },
            }
        }
    };
    let served_by = match &p.served_by {
        Some(b) => match BackendName::new(b.value.clone()) {
            Ok(n) if backends.contains_key(&n) => {
                if matches!(answer, Some(Answer::Nothing { .. })) {
                    cx.at(&b.referenced, format!("{pf}.served_by"), "served_by needs an answer: nothing can serve a probe nothing answers");
                    ok = false;
                }
                Some(n)
            }
            _ => {
                let names: Vec<&str> = backends.keys().map(BackendName::as_str).collect();
                cx.at(
                    &b.referenced,
                    format!("{pf}.served_by"),
                    format!(
                        "{:?} is not a declared backend; declared: {}",
                        b.value,
                        if names.is_empty() { "none".into() } else { names.join(", ") }
                    ),
                );
                ok = false;
                None
            }
        },
        None => None,
    };
    let prov = provenance(cx, &format!("{pf}.provenance"), p.provenance.as_ref(), &p.reference, &p.note, &p.observed, Some(group), range);
    match (ok, port, answer, prov) {
        (true, Some(port), Some(answer), Some(provenance)) => {
            let http = p.plain || served_by.is_some() || status.is_some();
            Some(ProbeExpect {
                key: ProbeKey { port, sni, http, plain: p.plain, gateway: None, path: None },
                answer,
                served_by,
                status,
                provenance,
                line: loc.line(),
            })
        }
        _ => None,
    }
}

fn envoy_listener(
    cx: &mut Ctx,
    ef: &str,
    e: &Spanned<RawEnvoyListener>,
    apex: &str,
    (group, range): (&Provenance, Option<&VersionRange>),
) -> Option<EnvoyListenerExpect> {
    let loc = &e.referenced;
    let e = &e.value;
    let mut ok = true;
    let filter_chains = match &e.filter_chains {
        Some(n) => match u32::try_from(n.value) {
            Ok(v) => Some(v),
            Err(_) => {
                cx.at(&n.referenced, format!("{ef}.filter_chains"), format!("{} is not a count", n.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    if e.absent && (e.filter_chains.is_some() || e.server_names.is_some() || e.chains.is_some() || e.error_contains.is_some()) {
        cx.at(loc, ef, "absent: true cannot be combined with facts about the listener");
        ok = false;
    }
    if !e.absent && e.filter_chains.is_none() && e.server_names.is_none() && e.chains.is_none() && e.error_contains.is_none() {
        cx.at(loc, ef, "say something about the listener: filter_chains, server_names, chains, error_contains or absent: true");
        ok = false;
    }
    let server_names: Option<Vec<Vec<String>>> = e.server_names.as_ref().map(|s| {
        s.value
            .iter()
            .map(|chain| {
                chain
                    .iter()
                    .map(|n| {
                        let r = template::render_apex(n, apex);
                        if let Err(err) = DnsName::new(r.clone()) {
                            cx.at(&s.referenced, format!("{ef}.server_names"), err.0);
                        }
                        r
                    })
                    .collect()
            })
            .collect()
    });
    if let (Some(n), Some(sn)) = (filter_chains, &server_names)
        && n as usize != sn.len()
    {
        cx.at(loc, ef, format!("filter_chains is {n} but server_names lists {} chains", sn.len()));
        ok = false;
    }
    let chains: Option<Vec<ChainExpect>> = e.chains.as_ref().map(|cs| {
        cs.value
            .iter()
            .filter_map(|c| {
                let kind = ChainKind::parse(&c.value.kind.value);
                if kind.is_none() {
                    cx.at(
                        &c.value.kind.referenced,
                        format!("{ef}.chains.kind"),
                        format!("{:?} is not a chain kind; use http, https or tcp_proxy", c.value.kind.value),
                    );
                    ok = false;
                }
                let names = c
                    .value
                    .server_names
                    .iter()
                    .map(|n| {
                        let r = template::render_apex(n, apex);
                        if let Err(err) = DnsName::new(r.clone()) {
                            cx.at(&c.referenced, format!("{ef}.chains.server_names"), err.0);
                        }
                        r
                    })
                    .collect();
                kind.map(|kind| ChainExpect { kind, server_names: names })
            })
            .collect()
    });
    if let (Some(n), Some(cs)) = (filter_chains, &e.chains)
        && n as usize != cs.value.len()
    {
        cx.at(loc, ef, format!("filter_chains is {n} but chains lists {}", cs.value.len()));
        ok = false;
    }
    let prov = provenance(cx, &format!("{ef}.provenance"), e.provenance.as_ref(), &e.reference, &e.note, &e.observed, Some(group), range)?;
    ok.then(|| EnvoyListenerExpect {
        filter_chains,
        server_names,
        chains,
        error_contains: e.error_contains.as_ref().map(|s| s.value.clone()),
        absent: e.absent,
        provenance: prov,
        line: loc.line(),
    })
}

/// A case's name: its folder, prefixed by the folders between it and the `cases` folder above
/// it (`cilium/gateway-multi-port-https` for `cases/cilium/gateway-multi-port-https/`), so a
/// name is the same whichever folder lint was pointed at.
fn case_name(dir: &Path) -> String {
    let leaf = || dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Ok(abs) = dir.canonicalize() else { return leaf() };
    let Some(cases) = abs.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "cases")) else { return leaf() };
    match abs.strip_prefix(cases) {
        Ok(rel) if rel.components().count() > 1 => rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
        _ => leaf(),
    }
}

/// Every case folder below `root` (folders holding a case.yaml), sorted by name. A folder
/// without a case.yaml (like `cases/cilium/`) is a group: its case folders are cases too.
pub fn discover(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    discover_with_links(root).map(|(dirs, _)| dirs)
}

/// [`discover`], and the symbolic links to folders it did not follow where it looks for cases:
/// a link would make one case count twice (`again -> dns01-default`) or loop (`self -> .`).
/// `root` itself may be a link.
pub fn discover_with_links(root: &Path) -> std::io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    if root.join(CASE_FILE).is_file() {
        return Ok((vec![root.to_path_buf()], Vec::new()));
    }
    let (mut dirs, mut links) = (Vec::new(), Vec::new());
    // `file_type` of a directory entry does not follow links.
    fn entries(dir: &Path, links: &mut Vec<PathBuf>) -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let p = entry.path();
            if entry.file_type()?.is_symlink() {
                if p.is_dir() {
                    links.push(p);
                }
            } else {
                out.push(p);
            }
        }
        Ok(out)
    }
    for p in entries(root, &mut links)? {
        if p.join(CASE_FILE).is_file() {
            dirs.push(p);
        } else if p.is_dir() {
            for q in entries(&p, &mut links)? {
                if q.join(CASE_FILE).is_file() {
                    dirs.push(q);
                }
            }
        }
    }
    dirs.sort();
    links.sort();
    Ok((dirs, links))
}

/// Checks every case below `root`; the problems of all of them.
pub fn lint(root: &Path) -> Result<Vec<Case>, Vec<Problem>> {
    let (dirs, links) = discover_with_links(root).map_err(|e| {
        vec![Problem { file: root.to_path_buf(), line: 0, column: 0, field: "cases".into(), message: format!("cannot list cases: {e}") }]
    })?;
    if dirs.is_empty() {
        return Err(vec![Problem {
            file: root.to_path_buf(),
            line: 0,
            column: 0,
            field: "cases".into(),
            message: "no case folders (with a case.yaml) here".into(),
        }]);
    }
    let mut cases = Vec::new();
    // Folders that look like cases but would be skipped are problems: a case nobody runs is a
    // gap nobody sees.
    let mut problems = if root.join(CASE_FILE).is_file() { Vec::new() } else { super::lint_rules::skipped_case_folders(root) };
    problems.extend(links.into_iter().map(|file| {
        Problem {
            file,
            line: 0,
            column: 0,
            field: "cases".into(),
            message: "a symbolic link to a folder: not followed (the case it points at would count twice, or the walk would loop); \
                  move or copy the case here instead"
                .into(),
        }
    }));
    for d in dirs {
        match load(&d) {
            Ok(c) => {
                // Whether the case stays in its namespaces is a rule for cases that run on a
                // cluster (`lint`, `run`), not for every loaded case: `check` loads what a
                // platform rendered, wherever its objects live, to predict it.
                problems.extend(super::scope::check_case(&c));
                cases.push(c);
            }
            Err(p) => problems.extend(p),
        }
    }
    if problems.is_empty() { Ok(cases) } else { Err(problems) }
}
