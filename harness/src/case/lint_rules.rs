//! Checks that catch a case that would fail for a reason of its own making, or could never pass:
//! a condition type no implementation sets, an alert name that does not exist, two probes of
//! one port and name that want different answers, two groups that contradict each other at a
//! version both cover, `server_names` and `chains` that describe different chains, a probe
//! answered by a certificate nothing presents or that does not cover its name, a group that
//! checks nothing, folders that look like cases but are skipped. Each problem carries the real
//! file, line and column. Kept apart from `load.rs` so the loader stays one pass over the
//! format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_saphyr::Location;

use super::manifests::Object;
use super::problem::{Problem, locate};
use super::raw::{RawCase, RawConditions, RawEnvoyListener, RawGroup, RawProbe, S};
use super::template;
use super::version::VersionRange;
use super::walk::CASE_FILE;

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
    for (ef, list) in raw.expect_lists() {
        for (gi, g) in list.value.iter().enumerate() {
            let gf = format!("{ef}[{gi}]");
            let g = &g.value;
            for (path, map) in condition_maps(g) {
                let field = format!("{gf}.{path}");
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
            if says_nothing(g) {
                out.push(at(
                file,
                &list.value[gi].referenced,
                gf.clone(),
                "this group checks nothing: say what to expect (gateway, listeners, routes, probes, envoy, ...); a run of it would pass with 0 checks",
            ));
            }
            for (name, e) in &g.envoy {
                if let Some(p) = chains_against_server_names(&e.value, apex) {
                    out.push(at(file, &e.referenced, format!("{gf}.envoy.{name}"), p));
                }
            }
        }
    }
    for (ef, list) in raw.expect_lists() {
        out.extend(contradictions(&list.value, &ef, file, apex));
    }
    out
}

fn says_nothing(g: &RawGroup) -> bool {
    g.gateway.as_ref().is_none_or(|c| c.value.is_empty())
        && g.gateways.values().all(|c| c.value.is_empty())
        && g.listenersets.values().all(|l| l.value.conditions.is_empty() && l.value.listeners.values().all(|c| c.value.is_empty()))
        && g.listeners.values().all(|c| c.value.is_empty())
        && g.routes.values().all(|p| p.value.values().all(|c| c.value.is_empty()))
        && g.probes.is_empty()
        && g.envoy.is_empty()
        && g.refused.is_empty()
}

/// Each chain's server_names as one sorted line, the lines sorted: the judge compares both
/// fields this way, so two that differ here can never both hold.
fn chain_lines<'a>(chains: impl Iterator<Item = &'a [String]>, apex: &str) -> Vec<String> {
    let mut lines: Vec<String> = chains
        .map(|names| {
            let mut n: Vec<String> = names.iter().map(|x| template::render_apex(x, apex)).collect();
            n.sort();
            n.join(", ")
        })
        .collect();
    lines.sort();
    lines
}

fn chains_against_server_names(e: &RawEnvoyListener, apex: &str) -> Option<String> {
    let (names, chains) = (e.server_names.as_ref()?, e.chains.as_ref()?);
    let a = chain_lines(names.value.iter().map(Vec::as_slice), apex);
    let b = chain_lines(chains.value.iter().map(|c| c.value.server_names.as_slice()), apex);
    (a != b).then(|| {
        format!(
            "server_names and chains describe different chains (server_names: [{}]; chains: [{}]); both can never hold",
            a.join(" | "),
            b.join(" | ")
        )
    })
}

/// A condition expectation as written, for comparing two groups.
fn cond_want(s: &str) -> Option<super::model::CondWant> {
    super::model::CondWant::parse(s).ok()
}

/// Whether two condition expectations can both hold: the same, or the same status where one
/// names no reason.
fn conds_agree(a: &str, b: &str) -> bool {
    use super::model::CondWant::Status;
    match (cond_want(a), cond_want(b)) {
        (Some(x), Some(y)) if x == y => true,
        (Some(Status { status: s1, reason: r1 }), Some(Status { status: s2, reason: r2 })) => s1 == s2 && (r1.is_none() || r2.is_none()),
        // Shape errors are the loader's.
        (None, _) | (_, None) => true,
        _ => false,
    }
}

/// Whether two probes of the same identity can both hold: every field both state is the same.
fn probes_agree(a: &RawProbe, b: &RawProbe) -> bool {
    fn same<T: PartialEq>(x: &Option<S<T>>, y: &Option<S<T>>) -> bool {
        match (x, y) {
            (Some(x), Some(y)) => x.value == y.value,
            _ => true,
        }
    }
    // An answer is implied: `nothing` with how/alert, a certificate otherwise.
    let answers = |p: &RawProbe| p.answers.as_ref().map(|a| a.value.clone());
    answers(a) == answers(b)
        && same(&a.how, &b.how)
        && same(&a.alert, &b.alert)
        && same(&a.status, &b.status)
        && same(&a.served_by, &b.served_by)
}

/// What two Envoy listener expectations say that cannot both hold, as (field, message part).
fn envoy_disagreement(a: &RawEnvoyListener, b: &RawEnvoyListener, apex: &str) -> Option<(Option<&'static str>, String)> {
    if a.absent != b.absent {
        return Some((None, format!("absent: {}, where the other says absent: {}", b.absent, a.absent)));
    }
    let count = |e: &RawEnvoyListener| {
        e.filter_chains
            .as_ref()
            .map(|n| n.value)
            .or(e.server_names.as_ref().map(|s| s.value.len() as i64))
            .or(e.chains.as_ref().map(|c| c.value.len() as i64))
    };
    if let (Some(x), Some(y)) = (count(a), count(b))
        && x != y
    {
        return Some((b.filter_chains.as_ref().map(|_| "filter_chains"), format!("{y} filter chains, where the other wants {x}")));
    }
    if let (Some(x), Some(y)) = (&a.server_names, &b.server_names) {
        let (x, y) = (chain_lines(x.value.iter().map(Vec::as_slice), apex), chain_lines(y.value.iter().map(Vec::as_slice), apex));
        if x != y {
            return Some((Some("server_names"), format!("server_names [{}], where the other wants [{}]", y.join(" | "), x.join(" | "))));
        }
    }
    if let (Some(x), Some(y)) = (&a.chains, &b.chains) {
        let lines = |c: &S<Vec<S<super::raw::RawChain>>>| {
            let mut l: Vec<String> = c
                .value
                .iter()
                .map(|c| {
                    format!("{}: {}", c.value.kind.value, chain_lines(std::iter::once(c.value.server_names.as_slice()), apex).join(""))
                })
                .collect();
            l.sort();
            l
        };
        let (x, y) = (lines(x), lines(y));
        if x != y {
            return Some((Some("chains"), format!("chains [{}], where the other wants [{}]", y.join(" | "), x.join(" | "))));
        }
    }
    None
}

/// Every condition map of a group, by its field path below the group.
fn condition_maps(g: &RawGroup) -> Vec<(String, &RawConditions)> {
    let mut maps: Vec<(String, &RawConditions)> = Vec::new();
    if let Some(c) = &g.gateway {
        maps.push(("gateway".into(), &c.value));
    }
    for (n, c) in &g.gateways {
        maps.push((format!("gateways.{n}"), &c.value));
    }
    for (n, ls) in &g.listenersets {
        maps.push((format!("listenersets.{n}.conditions"), &ls.value.conditions));
        for (l, c) in &ls.value.listeners {
            maps.push((format!("listenersets.{n}.listeners.{l}"), &c.value));
        }
    }
    for (l, c) in &g.listeners {
        maps.push((format!("listeners.{l}"), &c.value));
    }
    for (r, parents) in &g.routes {
        for (p, c) in &parents.value {
            maps.push((format!("routes.{r}.{p}"), &c.value));
        }
    }
    maps
}

/// Two groups whose ranges share a version and that want different things there: both are
/// judged on that version, so one of them fails whatever Cilium does. Named at the later
/// group's item, with the earlier group and the version.
fn contradictions(groups: &[S<RawGroup>], ef: &str, file: &Path, apex: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let ranges: Vec<Option<VersionRange>> = groups.iter().map(|g| VersionRange::parse(&g.value.cilium.value).ok()).collect();
    for (j, later) in groups.iter().enumerate() {
        let later = &later.value;
        let Some(rj) = &ranges[j] else { continue };
        // Each item is named once, against the first earlier group it contradicts.
        let mut named: BTreeSet<String> = BTreeSet::new();
        for (i, earlier) in groups.iter().enumerate().take(j) {
            let earlier = &earlier.value;
            let Some(ri) = &ranges[i] else { continue };
            let Some(v) = ri.shared_with(rj) else { continue };
            let why = |what: String| {
                format!(
                    "{what}, but {ef}[{i}] wants otherwise at Cilium {v}, a version both groups cover ({} and {}): both can never hold",
                    ri.as_str(),
                    rj.as_str()
                )
            };
            let earlier_maps = condition_maps(earlier);
            for (path, map) in condition_maps(later) {
                let Some((_, other)) = earlier_maps.iter().find(|(p, _)| *p == path) else { continue };
                for (ty, want) in map {
                    let field = format!("{ef}[{j}].{path}.{ty}");
                    if let Some(theirs) = other.get(ty)
                        && !conds_agree(&theirs.value, &want.value)
                        && named.insert(field.clone())
                    {
                        out.push(at(file, &want.referenced, field, why(format!("{ty} {} ({ef}[{i}]: {})", want.value, theirs.value))));
                    }
                }
            }
            for (pj, p) in later.probes.iter().enumerate() {
                let id = probe_identity(&p.value, apex);
                let field = format!("{ef}[{j}].probes[{pj}]");
                if let Some(q) = earlier.probes.iter().find(|q| probe_identity(&q.value, apex) == id)
                    && !probes_agree(&q.value, &p.value)
                    && named.insert(field.clone())
                {
                    out.push(at(
                        file,
                        &p.referenced,
                        field,
                        why(format!("this probe wants {} ({ef}[{i}]: {})", probe_want(&p.value), probe_want(&q.value))),
                    ));
                }
            }
            for (name, e) in &later.envoy {
                let Some(other) = earlier.envoy.get(name) else { continue };
                if let Some((sub, what)) = envoy_disagreement(&other.value, &e.value, apex) {
                    let field = match sub {
                        Some(f) => format!("{ef}[{j}].envoy.{name}.{f}"),
                        None => format!("{ef}[{j}].envoy.{name}"),
                    };
                    let loc = match sub {
                        Some("filter_chains") => e.value.filter_chains.as_ref().map(|n| n.referenced),
                        Some("server_names") => e.value.server_names.as_ref().map(|n| n.referenced),
                        Some("chains") => e.value.chains.as_ref().map(|n| n.referenced),
                        _ => None,
                    }
                    .unwrap_or(e.referenced);
                    if named.insert(field.clone()) {
                        out.push(at(file, &loc, field, why(format!("{}: {what}", crate::words::envoy_listener(name)))));
                    }
                }
            }
        }
    }
    out
}

/// Where each declared certificate can be presented: the host patterns of the chains that
/// present it (`None`: a chain without server_names, chosen for any name). A listener presents
/// the certificate its `tls.certificateRefs` name (`{secret:CERT}`), for its hostname; a TLS
/// backend presents its own, for the hostnames of the TLSRoutes that pass traffic to it (a
/// route without hostnames: its parent listeners'). `objects`: the rendered manifests.
pub(super) fn presenters(
    objects: &[Object],
    certs: &[crate::render::certs::CertSpec],
    backends: &BTreeMap<crate::types::BackendName, super::model::Backend>,
) -> BTreeMap<String, Vec<Option<String>>> {
    // Every declared certificate, presented or not (an undeclared one is the loader's problem).
    let mut out: BTreeMap<String, Vec<Option<String>>> = certs.iter().map(|c| (c.name.to_string(), Vec::new())).collect();
    let by_secret: BTreeMap<String, String> = certs.iter().map(|c| (template::secret_name(&c.name), c.name.to_string())).collect();
    let listeners =
        |o: &Object| -> Vec<Value> { o.value.pointer("/spec/listeners").and_then(Value::as_array).cloned().unwrap_or_default() };
    let hostname = |l: &Value| l.get("hostname").and_then(Value::as_str).map(str::to_string);
    for o in objects.iter().filter(|o| o.kind == "Gateway" || o.kind == "ListenerSet" || o.kind == "XListenerSet") {
        for l in listeners(o) {
            for r in l.pointer("/tls/certificateRefs").and_then(Value::as_array).into_iter().flatten() {
                if let Some(cert) = r.get("name").and_then(Value::as_str).and_then(|n| by_secret.get(n)) {
                    out.entry(cert.clone()).or_default().push(hostname(&l));
                }
            }
        }
    }
    // The hostnames of a route's parent listeners (any parent without one: any name).
    let parent_hosts = |route: &Object| -> Vec<Option<String>> {
        let mut hosts = Vec::new();
        for p in route.value.pointer("/spec/parentRefs").and_then(Value::as_array).into_iter().flatten() {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            let section = p.get("sectionName").and_then(Value::as_str);
            let parent = objects.iter().find(|o| o.name == name && (o.kind == "Gateway" || o.kind.ends_with("ListenerSet")));
            let Some(parent) = parent else { return vec![None] };
            for l in listeners(parent) {
                if section.is_none_or(|s| l.get("name").and_then(Value::as_str) == Some(s)) {
                    hosts.push(hostname(&l));
                }
            }
        }
        if hosts.is_empty() { vec![None] } else { hosts }
    };
    for (backend, b) in backends {
        let super::model::Backend::Tls { cert } = b else { continue };
        for route in objects.iter().filter(|o| o.kind == "TLSRoute") {
            let to_it = route
                .value
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|r| r.get("backendRefs").and_then(Value::as_array).cloned().unwrap_or_default())
                .any(|r| r.get("name").and_then(Value::as_str) == Some(backend.as_str()));
            if !to_it {
                continue;
            }
            let hosts: Vec<Option<String>> = match route.value.pointer("/spec/hostnames").and_then(Value::as_array) {
                Some(h) if !h.is_empty() => h.iter().filter_map(Value::as_str).map(|h| Some(h.to_string())).collect(),
                _ => parent_hosts(route),
            };
            out.entry(cert.to_string()).or_default().extend(hosts);
        }
    }
    out
}

/// Whether a chain for `pattern` (a listener or route hostname; `None`: no server_names) is
/// chosen for `sni`: the same name, or a wildcard `*.rest` for any name under `rest` (Gateway
/// API hostnames and Envoy's server_names match wildcards as suffixes).
fn chosen_for(pattern: Option<&str>, sni: &str) -> bool {
    match pattern.map(str::to_ascii_lowercase) {
        None => true,
        Some(p) => match p.strip_prefix('*') {
            Some(suffix) => sni.len() > suffix.len() && sni.ends_with(suffix),
            None => p == sni,
        },
    }
}

/// A probe answered by a certificate that no listener or backend presents, or that none of
/// those presenting it is chosen for the probe's SNI: the probe can never see it. (A
/// certificate need not cover the name to be presented: a listener without a hostname answers
/// every name with its own.) `presenters`: see [`presenters`].
pub(super) fn probe_certificates(
    raw: &RawCase,
    file: &Path,
    apex: &str,
    presenters: &BTreeMap<String, Vec<Option<String>>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for (ef, list) in raw.expect_lists() {
        for (gi, g) in list.value.iter().enumerate() {
            for (pi, p) in g.value.probes.iter().enumerate() {
                let p = &p.value;
                let Some(ans) = p.answers.as_ref().filter(|a| a.value != "nothing" && !p.plain) else { continue };
                let field = format!("{ef}[{gi}].probes[{pi}].answers");
                let Some(patterns) = presenters.get(&ans.value) else { continue };
                if patterns.is_empty() {
                    out.push(at(
                    file,
                    &ans.referenced,
                    field,
                    format!(
                        "no listener or backend presents certificate {0}: no listener's tls.certificateRefs names {{secret:{0}}}, and no TLSRoute passes traffic to a backend with tls: {0}; the probe can never see it",
                        ans.value
                    ),
                ));
                    continue;
                }
                let Some(sni) = p.sni.as_ref().filter(|_| !p.no_sni) else { continue };
                let sni = template::render_apex(&sni.value, apex);
                // An SNI that is not one (`*.{apex}`) is the loader's problem.
                if crate::types::Sni::new(sni.clone()).is_err() || patterns.iter().any(|h| chosen_for(h.as_deref(), &sni)) {
                    continue;
                }
                let shown: BTreeSet<&str> = patterns.iter().flatten().map(String::as_str).collect();
                out.push(at(
                file,
                &ans.referenced,
                field,
                format!(
                    "no listener or backend presenting certificate {} is chosen for {sni}: it is presented for {} only, so the probe can never see it",
                    ans.value,
                    shown.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
            }
        }
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

/// Folders below `root` that look like cases but are not run: a `case.yml` (the loader reads
/// only `case.yaml`), or a case folder where [`super::walk::discover`] does not look: inside
/// another case's folder, or deeper than one group (`cases/<group>/<case>`, as `cases/cilium/`).
pub fn skipped_case_folders(root: &Path) -> Vec<Problem> {
    let mut out = Vec::new();
    let problem = |file: PathBuf, message: String| Problem { file, line: 0, column: 0, field: "cases".into(), message };
    let found: std::collections::BTreeSet<PathBuf> = super::walk::discover(root).unwrap_or_default().into_iter().collect();
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
pub fn ranges_matching_no_version(cases: &[super::model::Case], versions: &[super::version::CiliumVersion]) -> Vec<Problem> {
    let mut out = Vec::new();
    let pinned: Vec<String> = versions.iter().map(ToString::to_string).collect();
    for c in cases {
        let text = crate::input::read_text(&c.file, crate::input::CASE_FILE).unwrap_or_default();
        let lists = std::iter::once(("expect".to_string(), &c.groups))
            .chain(c.steps.iter().enumerate().map(|(i, s)| (format!("steps[{i}].expect"), &s.groups)));
        for (ef, groups) in lists {
            for (gi, g) in groups.iter().enumerate() {
                if !versions.iter().any(|v| g.range.matches(v)) {
                    let (line, column) = locate(&text, g.line, "cilium");
                    out.push(Problem {
                        file: c.file.clone(),
                        line,
                        column,
                        field: format!("{ef}[{gi}].cilium"),
                        message: format!(
                            "{:?} matches no pinned Cilium version ({}): this group is never judged",
                            g.range.as_str(),
                            pinned.join(", ")
                        ),
                    });
                }
            }
        }
    }
    out
}

/// Every rule that needs the pinned versions: ranges no pinned version falls in
/// ([`ranges_matching_no_version`]), and `observed:` versions that are not pinned (only a kind
/// run of a pinned version observes; `9.9.9` was never run).
pub fn with_pins(cases: &[super::model::Case], versions: &[super::version::CiliumVersion]) -> Vec<Problem> {
    let mut out = ranges_matching_no_version(cases, versions);
    let pinned: Vec<String> = versions.iter().map(ToString::to_string).collect();
    for c in cases {
        let Ok(text) = crate::input::read_text(&c.file, crate::input::CASE_FILE) else { continue };
        let Ok(raw) = serde_saphyr::from_str::<RawCase>(&text) else { continue };
        for (ef, list) in raw.expect_lists() {
            for (gi, g) in list.value.iter().enumerate() {
                let g = &g.value;
                let mut observed: Vec<(String, &S<super::raw::RawObserved>)> = Vec::new();
                if let Some(o) = &g.observed {
                    observed.push((format!("{ef}[{gi}].observed"), o));
                }
                for (pi, p) in g.probes.iter().enumerate() {
                    if let Some(o) = &p.value.observed {
                        observed.push((format!("{ef}[{gi}].probes[{pi}].observed"), o));
                    }
                }
                for (n, e) in &g.envoy {
                    if let Some(o) = &e.value.observed {
                        observed.push((format!("{ef}[{gi}].envoy.{n}.observed"), o));
                    }
                }
                // Each run named beside an expectation must be of a pinned version: (field, its
                // `cilium:` value, who records such runs).
                let mut runs: Vec<(String, &S<String>, &str)> = Vec::new();
                for (ci, conf) in g.confirmed.iter().enumerate() {
                    if let Some(cilium) = &conf.value.cilium {
                        runs.push((
                            format!("{ef}[{gi}].confirmed[{ci}].cilium"),
                            cilium,
                            "only an operator run of a pinned version confirms",
                        ));
                    }
                }
                for (field, o) in observed {
                    if let Some(cilium) = &o.value.cilium {
                        runs.push((
                            format!("{field}.cilium"),
                            cilium,
                            "only a kind run of a pinned version observes (`run --lane kind --record`)",
                        ));
                    }
                }
                for (field, cilium, who) in runs {
                    let Ok(v) = super::version::CiliumVersion::parse(&cilium.value) else { continue };
                    if !versions.contains(&v) {
                        out.push(at(
                            &c.file,
                            &cilium.referenced,
                            field,
                            format!("{v} is not a pinned Cilium version ({}): {who}", pinned.join(", ")),
                        ));
                    }
                }
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

/// Warnings, not problems: objects of a case that the API server refuses at a pinned version (a
/// TLSRoute without hostnames at Cilium 1.20+, whose lanes apply TLSRoute v1 of Gateway API
/// v1.6.1), read from the schema of the bundle each pin installs, where the case's groups for
/// that version do not say so (`refused:`). The case still loads: it may mean the refusal on
/// another version, and what a lane records is then judged.
/// `installs`: for each pinned Cilium version, the Gateway API bundle its lanes install and the
/// version they apply TLSRoutes at (`kind-config/versions.yaml` `gateway_api`).
pub fn admission_warnings(cases: &[super::Case], installs: &[(super::CiliumVersion, String, String)]) -> Vec<Problem> {
    let mut out = Vec::new();
    for c in cases {
        let vars = template::Vars { apex: c.apex.clone(), namespace: super::scope::LINT_NAMESPACE.into(), gateway: c.gateway.clone() };
        for m in &c.manifests {
            let Ok(objects) = super::manifests::parse_file(&m.path, &m.text, &vars) else { continue };
            for o in &objects {
                // (pinned version, why), for each pin whose installation refuses `o`.
                let mut refused_at: Vec<(String, String)> = Vec::new();
                for (cilium, bundle, tlsroute) in installs {
                    let version = if o.kind == "TLSRoute" {
                        tlsroute.clone()
                    } else {
                        o.api_version.rsplit_once('/').map(|(_, v)| v.to_string()).unwrap_or_default()
                    };
                    let why = super::api_schema::refusals(o, bundle, &version);
                    let expected = c.applied(cilium).refused.iter().any(|(e, _)| e.kind == o.kind && e.name == o.name);
                    if !why.is_empty() && !expected {
                        refused_at.push((cilium.to_string(), format!("Gateway API {bundle} {} {version}: {}", o.kind, why.join(", "))));
                    }
                }
                if refused_at.is_empty() {
                    continue;
                }
                let versions: Vec<&str> = refused_at.iter().map(|(v, _)| v.as_str()).collect();
                let mut whys: Vec<&str> = refused_at.iter().map(|(_, w)| w.as_str()).collect();
                whys.dedup();
                out.push(Problem {
                    file: o.file.clone(),
                    line: o.line,
                    column: 1,
                    field: format!("{} {}", o.kind, o.name),
                    message: format!(
                        "the API server refuses it (422 Invalid) at Cilium {} ({}): it will not exist there; give it what the schema requires, or expect `refused: {{{}/{}: ...}}` in the groups of those versions",
                        versions.join(", "),
                        whys.join("; "),
                        o.kind,
                        o.name
                    ),
                });
            }
        }
    }
    out
}
