//! A verdict per version against a baseline (what the platform runs today, `default:` in the
//! pins): `no change`, `status-only regression` (which listeners, Gateway or routes change
//! conditions; traffic unchanged) or `traffic regression` (which names on which ports stop
//! answering or change who answers), in words, grouped: names per port, one cause once.

use std::collections::BTreeMap;

use serde::Serialize;

use super::outcome::{Event, FailOn, and_list, reply_text};
use super::types::{GatewayCheck, VersionResult};
use crate::judge::ConditionObs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Baseline,
    NoChange,
    StatusOnlyRegression,
    TrafficRegression,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Baseline => crate::words::BASELINE,
            Kind::NoChange => crate::words::NO_CHANGE,
            Kind::StatusOnlyRegression => crate::words::STATUS_ONLY_REGRESSION,
            Kind::TrafficRegression => crate::words::TRAFFIC_REGRESSION,
        }
    }
}

/// One version against the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub version: String,
    pub baseline: String,
    pub kind: Kind,
    /// Condition changes, one sentence per distinct change with every subject it applies to.
    pub status: Vec<String>,
    /// Answer changes, one sentence per port and kind of change with every name it applies to.
    pub traffic: Vec<String>,
    /// The root causes of the status changes, each once: the headline of every conflict or
    /// refusal this version has and the baseline has not (the details are under "Why").
    pub causes: Vec<String>,
}

impl Verdict {
    /// `1.19.6: status-only regression against 1.19.5: ...`.
    pub fn line(&self) -> String {
        let mut s = format!("{}: {}", self.version, self.kind.as_str());
        if self.kind != Kind::Baseline {
            s.push_str(&format!(" against {}", self.baseline));
        }
        let details: Vec<&str> = self.traffic.iter().chain(&self.status).map(String::as_str).collect();
        if !details.is_empty() {
            s.push_str(&format!(": {}", details.join("; ")));
        }
        if self.kind == Kind::StatusOnlyRegression {
            s.push_str(&format!("; {}", crate::words::TRAFFIC_UNCHANGED));
        }
        s
    }

    /// What `--fail-on` sees of it.
    pub fn events(&self) -> Vec<Event> {
        let mut out = Vec::new();
        if !self.traffic.is_empty() {
            out.push(Event { kind: FailOn::TrafficChanged, version: self.version.clone(), what: self.traffic.join("; ") });
        }
        if !self.status.is_empty() {
            out.push(Event { kind: FailOn::StatusChanged, version: self.version.clone(), what: self.status.join("; ") });
        }
        out
    }
}

/// `Conflicted True/ProtocolConflict, Accepted False/Invalid` for the conditions that are not
/// healthy, `ok` otherwise.
fn state(cs: &[ConditionObs]) -> String {
    let bad: Vec<String> = cs
        .iter()
        .filter(|c| if c.type_ == "Conflicted" { c.status == "True" } else { c.status != "True" })
        .map(|c| crate::words::condition(&c.type_, &c.status, &c.reason))
        .collect();
    if bad.is_empty() { "ok".into() } else { bad.join(", ") }
}

/// `listeners a, b and c` for several subjects of one kind, not `listener a, listener b and
/// listener c`.
fn subjects_text(subjects: &[String]) -> String {
    if subjects.len() > 1
        && let Some(names) = subjects.iter().map(|s| s.strip_prefix("listener ").map(str::to_string)).collect::<Option<Vec<_>>>()
    {
        return format!("listeners {}", and_list(&names));
    }
    and_list(subjects)
}

/// Every version of `check` against `baseline` (a version of the check; `None` when it is not
/// one of them).
pub fn verdicts(check: &GatewayCheck, baseline: &str) -> Option<Vec<Verdict>> {
    let base = check.versions.iter().find(|r| r.version == baseline)?;
    Some(check.versions.iter().map(|r| verdict(check, base, r)).collect())
}

fn verdict(check: &GatewayCheck, base: &VersionResult, r: &VersionResult) -> Verdict {
    let mut v = Verdict {
        version: r.version.clone(),
        baseline: base.version.clone(),
        kind: Kind::Baseline,
        status: Vec::new(),
        traffic: Vec::new(),
        causes: Vec::new(),
    };
    if r.version == base.version {
        return v;
    }
    // Conditions: subjects grouped by (before, after).
    let mut by_change: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut note = |subject: String, before: String, after: String| {
        if before != after {
            let k = (before, after);
            if !by_change.contains_key(&k) {
                order.push(k.clone());
            }
            by_change.entry(k).or_default().push(subject);
        }
    };
    note("Gateway".into(), state(&base.gateway), state(&r.gateway));
    for (l, cs) in &r.listeners {
        let before = base.listeners.iter().find(|(x, _)| x == l).map(|(_, cs)| state(cs)).unwrap_or_else(|| "absent".into());
        note(format!("listener {l}"), before, state(cs));
    }
    for (route, parent, cs) in &r.routes {
        let before =
            base.routes.iter().find(|(x, p, _)| x == route && p == parent).map(|(_, _, cs)| state(cs)).unwrap_or_else(|| "absent".into());
        note(format!("route {route} on {parent}"), before, state(cs));
    }
    for k in order {
        v.status.push(format!("{} {} (was {})", subjects_text(&by_change[&k]), k.1, k.0));
    }
    v.traffic = traffic(check, base, r);
    if !v.status.is_empty() || !v.traffic.is_empty() {
        v.causes = super::why::new_causes(base, r);
    }
    v.kind = match (v.traffic.is_empty(), v.status.is_empty()) {
        (false, _) => Kind::TrafficRegression,
        (true, false) => Kind::StatusOnlyRegression,
        (true, true) => Kind::NoChange,
    };
    v
}

/// Answer changes in words, grouped: per port, one sentence per thing that happened now
/// (`stop answering (reset)`), every name it happened to with what it answered before
/// (`www.x and dash.x (was Secret s), api.x (was backend default/kubernetes)`); ports whose
/// sentences are the same are said together (`on 80 and 443`).
fn traffic(check: &GatewayCheck, base: &VersionResult, r: &VersionResult) -> Vec<String> {
    let before: BTreeMap<_, _> = base.answers.iter().map(|(k, a)| (k, a)).collect();
    let mut changes = Vec::new();
    for (k, a) in &r.answers {
        let Some(old) = before.get(k) else { continue };
        if super::types::same_answer(base, r, k, old, a) {
            continue;
        }
        let (now, was) = match (old.is_nothing(), a.is_nothing()) {
            (false, true) => (format!("stop answering ({})", a.how_text()), reply_text(check, old)),
            (true, false) => (format!("start answering with {}", reply_text(check, a)), format!("nothing, {}", old.how_text())),
            (true, true) => (format!("now end {}", a.how_text()), old.how_text()),
            (false, false) => (format!("answer with {}", reply_text(check, a)), reply_text(check, old)),
        };
        changes.push(NameChange { port: k.port.get(), now, was: Some(was), name: k.name() });
    }
    grouped_sentences(&changes)
}

/// One name's answer changing on one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameChange {
    pub port: u16,
    /// What it does now: `stop answering (reset)`, `answer with Secret s`.
    pub now: String,
    /// What it answered before, when the sentence should say it.
    pub was: Option<String>,
    pub name: String,
}

/// What names answered before a change: `(what they answered, the names)`, in first-seen order.
type Befores = Vec<(Option<String>, Vec<String>)>;

/// Changes as sentences: per port one per `now`, the names grouped by what they answered
/// before; ports whose sentences are the same said together (`on 80 and 443: ...`).
pub fn grouped_sentences(changes: &[NameChange]) -> Vec<String> {
    let mut per_port: Vec<(u16, Vec<(String, Befores)>)> = Vec::new();
    for c in changes {
        let nows = entry(&mut per_port, c.port);
        entry(entry(nows, c.now.clone()), c.was.clone()).push(c.name.clone());
    }
    let mut sentences: Vec<(Vec<String>, String)> = Vec::new();
    for (port, nows) in per_port {
        for (now, wases) in nows {
            let who: Vec<String> = wases
                .iter()
                .map(|(was, names)| match was {
                    Some(was) => format!("{} (was {was})", and_list(names)),
                    None => and_list(names),
                })
                .collect();
            let body = format!("{} {now}", who.join(", "));
            match sentences.iter_mut().find(|(_, b)| *b == body) {
                Some((ports, _)) => ports.push(port.to_string()),
                None => sentences.push((vec![port.to_string()], body)),
            }
        }
    }
    sentences.into_iter().map(|(ports, body)| format!("on {}: {body}", and_list(&ports))).collect()
}

/// The value under `key` in an association list kept in first-seen order, added empty when
/// missing (a map would sort, and the order is the matrix's).
fn entry<K: PartialEq, V: Default>(list: &mut Vec<(K, V)>, key: K) -> &mut V {
    let i = match list.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            list.push((key, V::default()));
            list.len() - 1
        }
    };
    &mut list[i].1
}
