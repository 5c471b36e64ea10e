//! The facts of one case on one run that a release note cares about, reduced to comparable
//! words: which certificate answers each (port, SNI), each observed condition, each Envoy
//! listener's chain count or refusal and its server_names. Pure functions over evidence.
//!
//! Values are normalised so that two runs of the same behaviour read the same: certificates are
//! generated per run, so a named certificate's fingerprint is dropped (the name is the fact);
//! local addresses in Envoy's error texts differ per run and are masked.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::evidence::CaseEvidence;
use crate::judge::{Aspect, ListenerFact, Outcome, Verdict};
pub use crate::words::mask_addresses;

/// What kind of fact; also the order facts are listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// Which certificate (or nothing) answers a (port, SNI); from the probe verdicts.
    Answer,
    /// A condition on the Gateway, a listener or a route; from the condition verdicts.
    Condition,
    /// An Envoy listener's filter-chain count, state, or refusal; from the config dump.
    EnvoyListener,
    /// The server_names of an Envoy listener's chains; from the config dump.
    EnvoyServerNames,
}

/// Which fact: its kind and its subject in the words of the evidence (`443 api.example.test`,
/// `listener https Conflicted`, `Envoy listener named "listener"`). Answers sort by port number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FactKey {
    pub kind: FactKind,
    #[serde(skip)]
    port: u32,
    /// Probes without SNI sort after the named ones of their port.
    #[serde(skip)]
    no_sni: bool,
    pub subject: String,
}

impl FactKey {
    pub fn new(kind: FactKind, subject: impl Into<String>) -> FactKey {
        let subject = subject.into();
        let port = match kind {
            FactKind::Answer => subject.split(' ').next().and_then(|p| p.parse().ok()).unwrap_or(0),
            _ => 0,
        };
        let no_sni = kind == FactKind::Answer && subject.ends_with("(no SNI)");
        FactKey { kind, port, no_sni, subject }
    }
}

/// One case as one run saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFacts {
    pub outcome: Outcome,
    /// Why the case could not be judged, if it could not.
    pub error: Option<String>,
    pub hash: String,
    pub checks: usize,
    pub failures: usize,
    pub facts: BTreeMap<FactKey, String>,
    /// Whether a config dump was taken: only then does a missing Envoy listener mean "absent".
    pub envoy_dump: bool,
    /// Listener name -> the Conflicted condition observed as True (`True/ProtocolConflict`).
    pub conflicted: BTreeMap<String, String>,
    /// Every expectation judged is an inference the model itself wrote (`case new --from`): a
    /// pass here is the model agreeing with its own inference, not with Cilium.
    pub own_inference: bool,
}

/// The listener conditions every run's facts carry, whether or not an expectation names them:
/// a listener that becomes `Conflicted` is news even in a case that never expected it.
pub const LISTENER_CONDITIONS: [&str; 4] = ["Accepted", "Conflicted", "Programmed", "ResolvedRefs"];

impl CaseFacts {
    pub fn of(case: &CaseEvidence) -> CaseFacts {
        let mut facts = BTreeMap::new();
        let mut conflicted = BTreeMap::new();
        for v in &case.verdicts {
            match v.aspect {
                Aspect::Probe => {
                    facts.insert(FactKey::new(FactKind::Answer, v.subject.clone()), answer_words(&v.observed));
                }
                Aspect::Gateway | Aspect::Listener | Aspect::Route => {
                    if let Some(l) = conflicted_listener(v) {
                        conflicted.insert(l.to_string(), v.observed.clone());
                    }
                    facts.insert(FactKey::new(FactKind::Condition, v.subject.clone()), v.observed.clone());
                }
                // Whether the API server admitted an object, compared across lanes like a condition.
                Aspect::Admission => {
                    facts.insert(FactKey::new(FactKind::Condition, v.subject.clone()), v.observed.clone());
                }
                // The dump itself is read below, whole: it names listeners no expectation did.
                Aspect::Envoy => {}
            }
        }
        // Every observed listener condition the report compares, in the judge's words (an
        // expectation's verdict on the same subject, above, stays: it says the same or more).
        for (l, cs) in &case.observed.listeners {
            for t in LISTENER_CONDITIONS {
                // A missing Conflicted is the healthy `absent`; the others are said when present.
                let value = match cs.iter().find(|c| c.type_ == t) {
                    Some(c) => crate::words::condition_value(&c.status, &c.reason),
                    None if t == "Conflicted" => "absent".into(),
                    None => continue,
                };
                if t == "Conflicted" && crate::words::conflicted_reason(&value).is_some() {
                    conflicted.entry(l.clone()).or_insert_with(|| value.clone());
                }
                facts.entry(FactKey::new(FactKind::Condition, format!("listener {l} {t}"))).or_insert(value);
            }
        }
        if let Some(listeners) = &case.observed.envoy_listeners {
            for l in listeners {
                facts.insert(FactKey::new(FactKind::EnvoyListener, envoy_subject(&l.name)), listener_words(l));
                facts.insert(
                    FactKey::new(FactKind::EnvoyServerNames, format!("{} server_names", envoy_subject(&l.name))),
                    server_names_words(l),
                );
            }
        }
        CaseFacts {
            outcome: case.outcome,
            error: case.error.as_deref().map(mask_addresses),
            hash: case.hash.clone(),
            checks: case.verdicts.len(),
            failures: case.verdicts.iter().filter(|v| !v.passed()).count(),
            facts,
            envoy_dump: case.observed.envoy_listeners.is_some(),
            conflicted,
            own_inference: !case.verdicts.is_empty() && case.verdicts.iter().all(|v| v.provenance.is_model_inference()),
        }
    }

    /// The value of a fact, with what its absence means: an Envoy listener missing from a dump
    /// that was taken is `absent`; anything else missing was not checked (None).
    pub fn value(&self, key: &FactKey) -> Option<String> {
        match self.facts.get(key) {
            Some(v) => Some(v.clone()),
            None if key.kind == FactKind::EnvoyListener && self.envoy_dump => Some("absent".into()),
            None => None,
        }
    }

    /// The answers, in port order, as `(subject, answer)`.
    pub fn answers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.of_kind(FactKind::Answer)
    }

    /// The Envoy listeners as `(subject, words)`.
    pub fn envoy_listeners(&self) -> impl Iterator<Item = (&str, &str)> {
        self.of_kind(FactKind::EnvoyListener)
    }

    fn of_kind(&self, kind: FactKind) -> impl Iterator<Item = (&str, &str)> {
        self.facts.iter().filter(move |(k, _)| k.kind == kind).map(|(k, v)| (k.subject.as_str(), v.as_str()))
    }
}

/// `Envoy listener named "listener"` ([`crate::words::envoy_listener`]): Cilium names its one
/// listener `listener`, and "listener listener" does not read.
pub fn envoy_subject(name: &str) -> String {
    crate::words::envoy_listener(name)
}

/// A listener verdict saying Conflicted=True: its listener name. The judge writes listener
/// subjects as `listener <name> <ConditionType>`.
fn conflicted_listener(v: &Verdict) -> Option<&str> {
    if v.aspect != Aspect::Listener || !(v.observed == "True" || v.observed.starts_with("True/")) {
        return None;
    }
    v.subject.strip_prefix("listener ")?.strip_suffix(" Conflicted")
}

/// A probe verdict's observation without the fingerprint of a named certificate:
/// `api-backend (sha256 2e01fbfc5416…), served by web` -> `api-backend, served by web`. A
/// stranger's fingerprint stays: it is the only name it has.
pub fn answer_words(observed: &str) -> String {
    if observed.starts_with("an unknown certificate") {
        return observed.to_string();
    }
    // The judge says `alert X`; an answer of no certificate reads as `check` says it.
    if let Some(alert) = observed.strip_prefix("alert ") {
        let (alert, rest) = alert.split_once(", ").map_or((alert, None), |(a, r)| (a, Some(r)));
        let nothing = crate::words::nothing("alert", Some(alert));
        return match rest {
            Some(r) => format!("{nothing}, {r}"),
            None => nothing,
        };
    }
    match observed.find(" (sha256 ") {
        Some(start) => match observed[start..].find(')') {
            Some(len) => format!("{}{}", &observed[..start], &observed[start + len + 1..]),
            None => observed.to_string(),
        },
        None => observed.to_string(),
    }
}

fn listener_words(l: &ListenerFact) -> String {
    let chains = match l.filter_chains {
        1 => "1 filter chain".to_string(),
        n => format!("{n} filter chains"),
    };
    match (&l.error, l.state.as_str()) {
        (Some(e), "error") => format!("refused by Envoy: {}", mask_addresses(e)),
        (Some(e), state) => format!("{chains} ({state}); its last update was refused: {}", mask_addresses(e)),
        (None, "active") => chains,
        (None, state) => format!("{chains} ({state})"),
    }
}

fn server_names_words(l: &ListenerFact) -> String {
    let mut chains: Vec<String> = l
        .server_names
        .iter()
        .map(|names| {
            let mut n = names.clone();
            n.sort();
            if n.is_empty() { "(no server_names)".to_string() } else { n.join(", ") }
        })
        .collect();
    chains.sort();
    if chains.is_empty() { "no chains".into() } else { chains.join(" | ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_certificates_lose_their_fingerprint() {
        assert_eq!(answer_words("api-backend (sha256 2e01fbfc5416…)"), "api-backend");
        assert_eq!(answer_words("gateway-wildcard (sha256 d6eaf4a0a582…), served by web"), "gateway-wildcard, served by web");
        assert_eq!(answer_words("nothing (reset)"), "nothing (reset)");
        assert_eq!(answer_words("alert unrecognized_name"), "nothing (alert unrecognized_name)");
        assert_eq!(answer_words("an unknown certificate (sha256 abcdef012345…)"), "an unknown certificate (sha256 abcdef012345…)");
    }

    #[test]
    fn addresses_are_masked() {
        assert_eq!(
            mask_addresses("error adding listener '127.0.0.1:10447': filter chain '' has the same matching rules"),
            "error adding listener '<address>': filter chain '' has the same matching rules"
        );
        assert_eq!(mask_addresses("v1.19.6 and 10.0.0.1 and x1.2.3.4:5 — ok"), "v1.19.6 and 10.0.0.1 and x1.2.3.4:5 — ok");
    }

    #[test]
    fn answers_sort_by_port_number() {
        let a = FactKey::new(FactKind::Answer, "80 a.test");
        let b = FactKey::new(FactKind::Answer, "443 a.test");
        let c = FactKey::new(FactKind::Answer, "8443 a.test");
        let none = FactKey::new(FactKind::Answer, "443 (no SNI)");
        let mut v = vec![c.clone(), none.clone(), a.clone(), b.clone()];
        v.sort();
        assert_eq!(v, vec![a, b, none, c]);
    }
}
