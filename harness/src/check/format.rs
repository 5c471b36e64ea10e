//! The check's answer as a plain table, JSON (schema `layout-gate-check`, version
//! [`SCHEMA_VERSION`], documented in docs/commands.md), or Markdown that fits a pull-request
//! comment.
//! Every output says it is a model prediction.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{Value, json};

use super::answer::Reply;
use super::derive::CertSource;
use super::outcome::{self, Change, Event, FailOn};
use super::types::GatewayCheck;
use super::verdict::{self, Verdict};
use crate::evidence::Lane;
use crate::judge::ConditionObs;
use crate::markdown::cell;

pub const SCHEMA_VERSION: u32 = 2;

/// Everything one `check` found, ready to print.
pub struct Report<'a> {
    pub checks: &'a [GatewayCheck],
    /// The line saying which objects were skipped, if any.
    pub skipped: Option<String>,
    pub skipped_counts: std::collections::BTreeMap<String, usize>,
    /// Whether answers were observed on a real Envoy (else computed from the chains).
    pub envoy: bool,
    pub envoy_version: Option<String>,
    pub fail_on: BTreeSet<FailOn>,
    /// The version the others are judged against (`--baseline`, default `default:` in the
    /// pins), with where it came from; `None`: no verdicts.
    pub baseline: Option<(String, String)>,
}

/// One Gateway's events, changes and verdicts.
pub struct Found {
    pub events: Vec<Event>,
    pub changes: Vec<Change>,
    pub verdicts: Vec<Verdict>,
}

impl Report<'_> {
    pub fn found(&self, c: &GatewayCheck) -> Found {
        let verdicts = self.baseline.as_ref().and_then(|(b, _)| verdict::verdicts(c, b)).unwrap_or_default();
        let mut events: Vec<Event> = Vec::new();
        for r in &c.versions {
            events.extend(outcome::events(r));
            events.extend(outcome::unreachable(c, r));
            events.extend(verdicts.iter().filter(|v| v.version == r.version).flat_map(Verdict::events));
        }
        Found { events, changes: outcome::changes(c), verdicts }
    }

    /// What `--fail-on` fails on, with the versions where it happened.
    pub fn failed(&self) -> Vec<(FailOn, Vec<String>)> {
        let mut out: Vec<(FailOn, Vec<String>)> = Vec::new();
        for c in self.checks {
            let f = self.found(c);
            let hits = f
                .events
                .iter()
                .map(|e| (e.kind, e.version.clone()))
                .chain(f.changes.iter().filter(|c| c.answer).map(|c| (FailOn::AnswerChanged, c.version.clone())));
            for (k, v) in hits.filter(|(k, _)| self.fail_on.contains(k)) {
                match out.iter_mut().find(|(x, _)| *x == k) {
                    Some((_, vs)) if !vs.contains(&v) => vs.push(v),
                    Some(_) => {}
                    None => out.push((k, vec![v])),
                }
            }
        }
        out.sort();
        out
    }

    /// Whether any version could not be observed (the answer is incomplete).
    pub fn errors(&self) -> Vec<String> {
        self.checks
            .iter()
            .flat_map(|c| {
                c.versions.iter().filter_map(move |v| {
                    v.error.as_ref().map(|e| format!("{}/{} on {}: {e}", c.derived.namespace, c.derived.gateway, v.version))
                })
            })
            .collect()
    }

    /// One line per version predicted with another's behaviour (`--assume-like`).
    pub fn assumed_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for v in self.checks.iter().flat_map(|c| &c.versions) {
            if let Some(like) = &v.assumed_like {
                let line = format!(
                    "{}: the model has not been checked at it; predicted with {like}'s behaviour (--assume-like {like})",
                    v.version
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
        out
    }

    /// Who answered this check: Cilium's operator when any version was put to it
    /// (`--lane operator`), else the model.
    pub fn lane(&self) -> Lane {
        answered_by(self.checks)
    }

    fn banner(&self) -> String {
        match self.lane() {
            Lane::Operator => {
                // Each step once, with the first version it answered.
                let mut steps: Vec<(&str, &str)> = Vec::new();
                for v in self.checks.iter().flat_map(|c| &c.versions) {
                    if let Some(s) = v.agent_step.as_deref()
                        && !steps.iter().any(|(_, x)| *x == s)
                    {
                        steps.push((&v.version, s));
                    }
                }
                operator_banner(self.envoy_version.as_deref(), &steps)
            }
            _ => banner(self.envoy, self.envoy_version.as_deref()),
        }
    }

    /// Per version Cilium's operator answered with a dependency built at another version than
    /// the tag requires: `VERSION: module required -> substitute, ...` (issue #24), once each.
    pub fn substituted_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for v in self.checks.iter().flat_map(|c| &c.versions).filter(|v| v.answered_by == Lane::Operator && !v.substituted.is_empty()) {
            let line = format!(
                "{}: Cilium's operator was built from the tag with {} (the Go module proxy refuses the required versions; each proved to change no code Gateway API reaches, see the evidence's {})",
                v.version,
                v.substituted.join(", "),
                crate::lanes::operator::control_plane::SUBSTITUTIONS_KEY
            );
            if !out.contains(&line) {
                out.push(line);
            }
        }
        out
    }

    /// Per version the model answered: whether the model has been held to Cilium's operator
    /// there, and how many generated layouts agreed (none for the operator's answers).
    pub fn held_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for v in self.checks.iter().flat_map(|c| &c.versions).filter(|v| v.answered_by == Lane::Model) {
            let Ok(version) = crate::case::CiliumVersion::parse(&v.version) else { continue };
            let line = crate::lanes::model::checked::held_line(&version);
            if !out.contains(&line) {
                out.push(line);
            }
        }
        out
    }
}

/// The lane that answered `checks`: the operator when any version was answered by it.
pub fn answered_by(checks: &[GatewayCheck]) -> Lane {
    if checks.iter().flat_map(|c| &c.versions).any(|v| v.answered_by == Lane::Operator) { Lane::Operator } else { Lane::Model }
}

/// What `check --lane operator` opens with: whose answers these are, and what is emulated.
/// `steps` says whose agent step answered: (version, step), each step once.
pub fn operator_banner(envoy_version: Option<&str>, steps: &[(&str, &str)]) -> String {
    let step = match steps {
        [] => "the agent step not said".to_string(),
        [(_, one)] => format!("agent step {one}"),
        many => format!("agent step per version: {}", many.iter().map(|(v, s)| format!("{v}: {s}")).collect::<Vec<_>>().join("; ")),
    };
    format!(
        "CILIUM'S OPERATOR: statuses and CiliumEnvoyConfig computed by Cilium's own operator built from each version's tag, on a local API server; {step}; answers observed on a real local Envoy{} serving what the agent step gave it (no BPF datapath, upstream Envoy in place of cilium-envoy)",
        envoy_version.map(|v| format!(" {v}")).unwrap_or_default()
    )
}

/// What every output of `check` opens with: it is a model prediction, observed on Envoy or not.
pub fn banner(envoy: bool, envoy_version: Option<&str>) -> String {
    if envoy {
        format!(
            "MODEL PREDICTION: layout-gate's model of Cilium, its answers observed on a real local Envoy{} serving the prediction; not an observation of Cilium",
            envoy_version.map(|v| format!(" {v}")).unwrap_or_default()
        )
    } else {
        "MODEL PREDICTION: layout-gate's model of Cilium; answers COMPUTED FROM THE CHAINS (--no-envoy), not observed on Envoy".into()
    }
}

/// `ok` for a healthy listener, else the conditions that are not.
fn health(cs: &[ConditionObs]) -> String {
    let bad: Vec<String> = cs
        .iter()
        .filter(|c| if c.type_ == "Conflicted" { c.status == "True" } else { c.status != "True" })
        .map(|c| crate::words::condition(&c.type_, &c.status, &c.reason))
        .collect();
    if cs.is_empty() {
        "-".into()
    } else if bad.is_empty() {
        "ok".into()
    } else {
        bad.join(", ")
    }
}

/// `1.19.6 and 1.19.7 share one Envoy: identical configuration`, for each Envoy that served
/// more than one version. Versions that share with a common one are one group: a version
/// predicted with another's behaviour (`--assume-like`) names its stand-in among those it
/// shares with, so the lists are not each other's mirror, and two lines once named one Envoy.
pub fn sharing_lines(c: &GatewayCheck) -> Vec<String> {
    let names: Vec<&str> = c.versions.iter().map(|x| x.version.as_str()).collect();
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for v in c.versions.iter().filter(|v| !v.shared_envoy.is_empty()) {
        let mut g: Vec<&str> = names.iter().copied().filter(|x| *x == v.version || v.shared_envoy.iter().any(|s| s == x)).collect();
        // Every group meeting this one joins it.
        let (meeting, apart): (Vec<Vec<&str>>, Vec<Vec<&str>>) = groups.into_iter().partition(|o| o.iter().any(|x| g.contains(x)));
        g.extend(meeting.into_iter().flatten());
        groups = apart;
        groups.push(g);
    }
    let mut lines: Vec<(usize, String)> = groups
        .into_iter()
        .filter_map(|g| {
            // In the check's version order, once each.
            let g: Vec<&str> = names.iter().copied().filter(|x| g.contains(x)).collect();
            let first = names.iter().position(|x| Some(x) == g.first())?;
            let (last, rest) = g.split_last().map(|(l, r)| (*l, r.join(", ")))?;
            (!rest.is_empty()).then(|| (first, format!("{rest} and {last} share one Envoy: identical configuration")))
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

fn answer_cell(c: &GatewayCheck, r: &Reply) -> String {
    outcome::reply_text(c, r)
}

/// The answer matrix: one row per (port, SNI), one column per version.
fn matrix_rows(c: &GatewayCheck) -> Vec<Vec<String>> {
    let mut rows = vec![[vec!["PORT".to_string(), "SNI".to_string()], c.versions.iter().map(|v| v.version.clone()).collect()].concat()];
    for k in c.derived.matrix.iter().filter(|k| !k.plain) {
        let mut row = vec![k.port.to_string(), k.sni.as_ref().map(|s| s.to_string()).unwrap_or_else(|| "(no SNI)".into())];
        for v in &c.versions {
            let cell = v.answers.iter().find(|(x, _)| x == k).map(|(_, r)| match super::http_port::shared(c, v, k, r) {
                // Said in the cell itself: TLS answers on an HTTP-only port because of the version.
                Some(s) => format!("{} {}", answer_cell(c, r), s.marker()),
                None => answer_cell(c, r),
            });
            row.push(cell.unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    rows
}

/// The plain HTTP matrix: one row per (HTTP port, Host), one column per version; each cell
/// the status and the backend that answered, the redirect's target, or how nothing answered.
/// Only the header row when the Gateway has no HTTP listener.
fn plain_rows(c: &GatewayCheck) -> Vec<Vec<String>> {
    let mut rows = vec![[vec!["PORT".to_string(), "HOST".to_string()], c.versions.iter().map(|v| v.version.clone()).collect()].concat()];
    for k in c.derived.matrix.iter().filter(|k| k.plain) {
        let mut row = vec![k.port.to_string(), k.sni.as_ref().map(|s| s.to_string()).unwrap_or_default()];
        for v in &c.versions {
            row.push(v.answers.iter().find(|(x, _)| x == k).map(|(_, r)| answer_cell(c, r)).unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    rows
}

/// What the plain HTTP matrix is, said above it.
const PLAIN_HEADING: &str = "Plain HTTP on the HTTP listeners' ports (HTTP/1.1 GET / with each name as Host, no TLS; a cell is the status and who answered: a backend, a redirect's Location, or Envoy itself)";

fn route_rows(c: &GatewayCheck) -> Vec<Vec<String>> {
    let mut rows = vec![[vec!["ROUTE".to_string(), "PARENT".to_string()], c.versions.iter().map(|v| v.version.clone()).collect()].concat()];
    let keys: Vec<(String, String)> =
        c.versions.first().map(|v| v.routes.iter().map(|(r, p, _)| (r.clone(), p.clone())).collect()).unwrap_or_default();
    for (r, p) in keys {
        let mut row = vec![r.clone(), p.clone()];
        for v in &c.versions {
            row.push(v.routes.iter().find(|(x, y, _)| *x == r && *y == p).map(|(_, _, cs)| health(cs)).unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    rows
}

fn listener_rows(c: &GatewayCheck) -> Vec<Vec<String>> {
    let mut rows = vec![[vec!["LISTENER".to_string()], c.versions.iter().map(|v| v.version.clone()).collect()].concat()];
    let names: Vec<String> = c.versions.first().map(|v| v.listeners.iter().map(|(l, _)| l.clone()).collect()).unwrap_or_default();
    for l in names {
        let mut row = vec![l.clone()];
        for v in &c.versions {
            row.push(v.listeners.iter().find(|(x, _)| *x == l).map(|(_, cs)| health(cs)).unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    let mut row = vec!["(Gateway)".to_string()];
    row.extend(c.versions.iter().map(|v| health(&v.gateway)));
    rows.push(row);
    rows
}

/// The table output, fitted to [`crate::table::WIDTH`] columns.
pub fn table_text(r: &Report) -> String {
    table_text_at(r, Some(crate::table::WIDTH))
}

/// The table output with its tables fitted to `width` columns and its long sentences wrapped
/// there (`None`: `--wide`, every cell whole).
pub fn table_text_at(r: &Report, width: Option<usize>) -> String {
    let table = |rows: &[Vec<String>]| crate::table::render_fit(rows, width);
    // A sentence under a heading: wrapped at the width, its continuation indented.
    let said = |s: &mut String, indent: &str, text: &str| {
        let _ = writeln!(s, "{}", crate::table::wrap_with(text, width.unwrap_or(usize::MAX), indent, &format!("{indent}  ")));
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", r.banner());
    for a in r.assumed_lines() {
        said(&mut s, "", &format!("ASSUMED: {a}"));
    }
    for h in r.held_lines() {
        said(&mut s, "", &format!("HELD: {h}"));
    }
    for l in r.substituted_lines() {
        said(&mut s, "", &format!("SUBSTITUTED: {l}"));
    }
    if let Some(k) = &r.skipped {
        said(&mut s, "", k);
    }
    for c in r.checks {
        let d = &c.derived;
        let _ = writeln!(s, "\nGateway {}/{} ({}:{})", d.namespace, d.gateway, d.origin.file, d.origin.line);
        for n in &d.notes {
            said(&mut s, "  ", &format!("note: {n}"));
        }
        let _ = writeln!(s, "\nListener and Gateway conditions (ok = Accepted, Programmed, ResolvedRefs True, not Conflicted):");
        s.push_str(&table(&listener_rows(c)));
        s.push_str(&crate::table::wrap_block(&super::why::table_block(c), width.unwrap_or(usize::MAX)));
        let routes = route_rows(c);
        if routes.len() > 1 {
            let _ = writeln!(s, "\nRoute conditions (ok = Accepted, ResolvedRefs True):");
            s.push_str(&table(&routes));
        }
        for v in c.versions.iter().filter(|v| !v.refused.is_empty()) {
            let _ = writeln!(s, "\nRefused by the API server on {} (never created, so no status and no chain):", v.version);
            for x in &v.refused {
                let _ = writeln!(s, "  {}", super::refused_line(x));
            }
        }
        for v in &c.versions {
            let _ = writeln!(s, "\nEnvoy on {} ({}):", v.version, answerer(v.answered_by));
            if !v.shared_envoy.is_empty() {
                let _ = writeln!(s, "  the same Envoy as {} (identical configuration)", v.shared_envoy.join(", "));
            }
            if let Some(e) = &v.cec_rejected {
                let _ = writeln!(s, "  the agent refuses the CiliumEnvoyConfig: {e}; Envoy gets no listener");
            } else if v.envoy.is_empty() {
                let _ = writeln!(s, "  no listener");
            }
            for e in &v.envoy {
                let ports: Vec<String> = e.ports.iter().map(|p| p.to_string()).collect();
                // The operator lane's rows come from Envoy's dump, whose ports are the local
                // Envoy's: no Gateway ports to show there.
                let ports = if ports.is_empty() { String::new() } else { format!(" (ports {})", ports.join(",")) };
                let state = e.state.as_ref().map(|st| format!(", {st} on Envoy")).unwrap_or_default();
                let _ = writeln!(s, "  {}{ports}: {} filter chains{state}", e.name, e.observed_chains.unwrap_or(e.chains.len()));
                if let Some(err) = &e.error {
                    let _ = writeln!(s, "    REFUSED: {}", err.lines().next().unwrap_or(""));
                }
                let rows: Vec<Vec<String>> = e
                    .chains
                    .iter()
                    .map(|ch| {
                        vec![
                            "   ".into(),
                            if ch.server_names.is_empty() { "*".into() } else { ch.server_names.join(",") },
                            ch.transport.into(),
                            ch.action.clone(),
                        ]
                    })
                    .collect();
                s.push_str(&table(&rows));
            }
            if let Some(e) = &v.error {
                let _ = writeln!(s, "  not observed: {e}");
            }
            for (k, want) in &v.chains_disagree {
                let _ = writeln!(s, "  Envoy answered {k} otherwise than the chains say ({})", outcome::reply_text(c, want));
            }
            for m in &v.may_answer {
                let replies: Vec<String> = m.replies.iter().map(|r| outcome::reply_text(c, r)).collect();
                let _ = writeln!(s, "  {} may be answered {}: {}", m.key, replies.join(" or "), m.why);
            }
        }
        let src = match (r.lane(), r.envoy) {
            (Lane::Operator, _) => "observed on Envoy serving the operator's CiliumEnvoyConfig",
            (_, true) => "observed on Envoy",
            (_, false) => "computed from the chains",
        };
        let _ = writeln!(s, "\nAnswer matrix ({src}; a wildcard is probed through one name under it):");
        for line in sharing_lines(c) {
            let _ = writeln!(s, "  {line}");
        }
        s.push_str(&table(&matrix_rows(c)));
        for l in super::http_port::legends(c) {
            said(&mut s, "  ", &l);
        }
        let plain = plain_rows(c);
        if plain.len() > 1 {
            s.push('\n');
            said(&mut s, "", &format!("{PLAIN_HEADING}:"));
            s.push_str(&table(&plain));
        }
        let f = r.found(c);
        let _ = writeln!(s, "\nWhat changes between versions:");
        if f.changes.is_empty() {
            let _ = writeln!(s, "  nothing");
        }
        for ch in &f.changes {
            said(&mut s, "  ", &ch.sentence);
        }
        if let Some((b, from)) = &r.baseline {
            let _ = writeln!(s, "\nVerdict per version against the baseline {b} ({from}):");
            for v in &f.verdicts {
                said(&mut s, "  ", &v.line());
                for cause in &v.causes {
                    said(&mut s, "    ", &format!("because: {cause}"));
                }
            }
        }
        let unreachable: Vec<&Event> = f.events.iter().filter(|e| e.kind == FailOn::Unreachable).collect();
        if !unreachable.is_empty() {
            let _ = writeln!(s, "\nClaimed names that answer nothing:");
            for e in unreachable {
                said(&mut s, "  ", &format!("{}: {}", e.version, e.what));
            }
        }
    }
    s.push_str(&crate::table::wrap_block(&verdict_line(r), width.unwrap_or(usize::MAX)));
    s
}

fn verdict_line(r: &Report) -> String {
    let failed = r.failed();
    if failed.is_empty() {
        let kinds: Vec<&str> = r.fail_on.iter().map(|f| f.as_str()).collect();
        format!("\nfail-on ({}): nothing happened\n", kinds.join(", "))
    } else {
        let parts: Vec<String> = failed.iter().map(|(k, vs)| format!("{k} ({})", vs.join(", "))).collect();
        format!("\nfail-on: {}\n", parts.join("; "))
    }
}

pub fn markdown_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### layout-gate check\n\n> **{}**\n", cell(&r.banner()));
    for a in r.assumed_lines() {
        let _ = writeln!(s, "> **ASSUMED:** {}\n", cell(&a));
    }
    for h in r.held_lines() {
        let _ = writeln!(s, "> **HELD:** {}\n", cell(&h));
    }
    for l in r.substituted_lines() {
        let _ = writeln!(s, "> **SUBSTITUTED:** {}\n", cell(&l));
    }
    if let Some(k) = &r.skipped {
        let _ = writeln!(s, "{}\n", cell(k));
    }
    let md_table = |rows: &[Vec<String>]| -> String {
        let mut t = String::new();
        for (i, row) in rows.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
            let _ = writeln!(t, "| {} |", cells.join(" | "));
            if i == 0 {
                let _ = writeln!(t, "|{}", "---|".repeat(row.len()));
            }
        }
        t
    };
    for c in r.checks {
        let d = &c.derived;
        let _ = writeln!(s, "#### Gateway `{}/{}`\n", d.namespace, d.gateway);
        let f = r.found(c);
        if let Some((b, from)) = &r.baseline {
            let _ = writeln!(s, "Verdict per version against the baseline **{b}** ({}):\n", cell(from));
            for v in &f.verdicts {
                let _ = writeln!(s, "- {}", cell(&v.line()));
                for cause in &v.causes {
                    let _ = writeln!(s, "  - because: {}", cell(cause));
                }
            }
            s.push('\n');
        }
        let mut unreachable = false;
        for e in f.events.iter().filter(|e| e.kind == FailOn::Unreachable) {
            let _ = writeln!(s, "- unreachable on {}: {}", e.version, cell(&e.what));
            unreachable = true;
        }
        if unreachable {
            s.push('\n');
        }
        let src = match (r.lane(), r.envoy) {
            (Lane::Operator, _) => "observed on a local Envoy serving Cilium's operator's CiliumEnvoyConfig",
            (_, true) => "observed on a local Envoy serving the model",
            (_, false) => "computed from the chains",
        };
        let _ = writeln!(s, "Answer matrix ({src}):\n");
        for line in sharing_lines(c) {
            let _ = writeln!(s, "- {}", cell(&line));
        }
        if !sharing_lines(c).is_empty() {
            s.push('\n');
        }
        s.push_str(&md_table(&matrix_rows(c)));
        for l in super::http_port::legends(c) {
            let _ = writeln!(s, "\n{}", cell(&l));
        }
        let plain = plain_rows(c);
        if plain.len() > 1 {
            let _ = writeln!(s, "\n{PLAIN_HEADING}:\n");
            s.push_str(&md_table(&plain));
        }
        let _ = writeln!(s, "\nListeners (ok = Accepted, Programmed, not Conflicted):\n");
        s.push_str(&md_table(&listener_rows(c)));
        s.push_str(&super::why::markdown_block(c));
        let routes = route_rows(c);
        if routes.len() > 1 {
            let _ = writeln!(s, "\nRoutes (ok = Accepted, ResolvedRefs True):\n");
            s.push_str(&md_table(&routes));
        }
        let f = r.found(c);
        let _ = writeln!(s, "\n**What changes between versions**\n");
        if f.changes.is_empty() {
            let _ = writeln!(s, "- nothing");
        }
        for ch in &f.changes {
            let _ = writeln!(s, "- {}", cell(&ch.sentence));
        }
        let _ = writeln!(s, "\n<details><summary>Envoy layout per version, notes</summary>\n");
        for n in &d.notes {
            let _ = writeln!(s, "- {}", cell(n));
        }
        for v in &c.versions {
            let _ = writeln!(s, "\n{} ({}):\n", v.version, answerer(v.answered_by));
            for e in &v.envoy {
                let _ = writeln!(
                    s,
                    "- `{}` ({} filter chains{}){}",
                    e.name,
                    e.observed_chains.unwrap_or(e.chains.len()),
                    e.state.as_ref().map(|st| format!(", {st}")).unwrap_or_default(),
                    e.error.as_ref().map(|x| format!(": refused: {}", cell(x.lines().next().unwrap_or("")))).unwrap_or_default()
                );
            }
            if let Some(e) = &v.cec_rejected {
                let _ = writeln!(s, "- the agent refuses the CiliumEnvoyConfig: {}", cell(e));
            }
            for x in &v.refused {
                let _ = writeln!(s, "- refused by the API server: {}", cell(&super::refused_line(x)));
            }
        }
        let _ = writeln!(s, "\n</details>\n");
    }
    s.push_str(verdict_line(r).trim_start());
    s
}

/// Who answered a version, in words.
pub fn answerer(l: Lane) -> &'static str {
    match l {
        Lane::Operator => "Cilium's operator",
        Lane::Kind => "a real cluster (kind)",
        Lane::Model | Lane::Fixture => "model",
    }
}

fn conds_json(cs: &[ConditionObs]) -> Value {
    Value::Array(cs.iter().map(|c| json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message})).collect())
}

fn reply_json(c: &GatewayCheck, r: &Reply) -> Value {
    match r {
        Reply::Certificate { cert } => json!({"answer": "certificate", "cert": cert.as_str(), "label": c.label(cert)}),
        Reply::Nothing { how, alert } => json!({"answer": "nothing", "how": how.as_str(), "alert": alert}),
        Reply::Http { status, location, backend } => json!({"answer": "http", "status": status, "location": location,
            "backend": backend, "label": backend.as_ref().map(|b| c.backend_label(b))}),
        Reply::Unknown { sha256 } => json!({"answer": "unknown", "sha256": sha256}),
        Reply::LocalError => json!({"answer": "local_error"}),
    }
}

/// Where a row of the matrix is: `{port, sni}` for a handshake, `{port, host}` for a plain
/// HTTP request.
fn key_json(k: &super::derive::MatrixKey) -> Value {
    let name = k.sni.as_ref().map(|s| s.as_str());
    if k.plain { json!({"port": k.port.get(), "host": name}) } else { json!({"port": k.port.get(), "sni": name}) }
}

pub fn json_value(r: &Report) -> Value {
    let gateways: Vec<Value> = r
        .checks
        .iter()
        .map(|c| {
            let d = &c.derived;
            let f = r.found(c);
            let certs: Vec<Value> = d
                .certs
                .iter()
                .map(|x| match &x.source {
                    CertSource::Secret { secret, namespace, in_input, listeners } => json!({"name": x.name.as_str(), "label": x.label(),
                        "dns_names": x.dns_names, "secret": secret, "secret_namespace": namespace, "secret_in_input": in_input, "listeners": listeners}),
                    CertSource::Backend { service } => json!({"name": x.name.as_str(), "label": x.label(), "dns_names": x.dns_names, "backend": service}),
                })
                .collect();
            let versions: Vec<Value> = c
                .versions
                .iter()
                .map(|v| {
                    json!({
                        "version": v.version,
                        "answered_by": v.answered_by.as_str(),
                        "substituted": v.substituted,
                        "gateway": conds_json(&v.gateway),
                        "listeners": v.listeners.iter().map(|(l, cs)| json!({"name": l, "conditions": conds_json(cs)})).collect::<Vec<_>>(),
                        "routes": v.routes.iter().map(|(rt, p, cs)| json!({"route": rt, "parent": p, "conditions": conds_json(cs)})).collect::<Vec<_>>(),
                        "envoy": v.envoy,
                        "cec_rejected": v.cec_rejected,
                        "refused": v.refused,
                        "answers": v.answers.iter().filter(|(k, _)| !k.plain).map(|(k, a)| {
                            let mut o = reply_json(c, a);
                            if let Some(sh) = super::http_port::shared(c, v, k, a) {
                                o["shared_listener"] = json!(sh);
                            }
                            o["port"] = json!(k.port.get());
                            o["sni"] = json!(k.sni.as_ref().map(|s| s.as_str()));
                            o
                        }).collect::<Vec<_>>(),
                        "http": v.answers.iter().filter(|(k, _)| k.plain).map(|(k, a)| {
                            let mut o = reply_json(c, a);
                            o["port"] = json!(k.port.get());
                            o["host"] = json!(k.sni.as_ref().map(|s| s.as_str()));
                            o
                        }).collect::<Vec<_>>(),
                        "chains_disagree": v.chains_disagree.iter().map(|(k, a)| {
                            let mut o = key_json(k);
                            o["chains_say"] = reply_json(c, a);
                            o
                        }).collect::<Vec<_>>(),
                        "may_answer": v.may_answer.iter().map(|m| {
                            let mut o = key_json(&m.key);
                            o["replies"] = json!(m.replies.iter().map(|a| reply_json(c, a)).collect::<Vec<_>>());
                            o["why"] = json!(m.why);
                            o
                        }).collect::<Vec<_>>(),
                        "events": f.events.iter().filter(|e| e.version == v.version).map(|e| json!({"kind": e.kind, "what": e.what})).collect::<Vec<_>>(),
                        "error": v.error,
                        "shared_envoy": v.shared_envoy,
                        "assumed_like": v.assumed_like,
                        "why": v.why,
                    })
                })
                .collect();
            json!({
                "namespace": d.namespace, "name": d.gateway, "source": format!("{}:{}", d.origin.file, d.origin.line),
                "apex": d.apex, "notes": d.notes, "certificates": certs,
                "versions": versions,
                "changes": f.changes,
                "verdicts": f.verdicts.iter().map(|v| json!({"version": v.version, "baseline": v.baseline, "verdict": v.kind.as_str(), "status": v.status, "traffic": v.traffic, "causes": v.causes})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let failed: Vec<Value> = r.failed().iter().map(|(k, vs)| json!({"kind": k, "versions": vs})).collect();
    json!({
        "schema": "layout-gate-check",
        "schema_version": SCHEMA_VERSION,
        "prediction": r.banner(),
        "answered_by": r.lane().as_str(),
        "held": r.held_lines(),
        "matrix_source": if r.envoy { "envoy" } else { "chains" },
        "envoy_version": r.envoy_version,
        "skipped": r.skipped_counts,
        "fail_on": r.fail_on.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        "baseline": r.baseline.as_ref().map(|(b, _)| b),
        "failed": failed,
        "gateways": gateways,
    })
}
