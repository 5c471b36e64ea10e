//! Conditions on the Gateway, its listeners and routes.

use serde::{Deserialize, Serialize};

use super::{Aspect, Outcome, Verdict};
use crate::case::{CondExpect, CondWant, Provenance};

/// A condition as observed on an object (a projection of metav1.Condition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionObs {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    #[serde(default)]
    pub message: String,
    /// The generation the controller had seen when it wrote the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Judges one expected condition against the conditions observed on the object.
///
/// `generation` is the object's metadata.generation when known: a condition written for an
/// older generation says nothing about the current spec and counts as not observed.
pub fn judge_condition(
    aspect: Aspect,
    subject: &str,
    expect: &CondExpect,
    observed: Option<&[ConditionObs]>,
    generation: Option<i64>,
    provenance: &Provenance,
) -> Verdict {
    let subject = format!("{subject} {}", expect.type_);
    let verdict = |outcome, observed: String, detail: String| Verdict {
        aspect,
        subject: subject.clone(),
        expected: expect.want.to_string(),
        observed,
        outcome,
        provenance: provenance.clone(),
        detail,
    };
    let Some(conds) = observed else {
        return verdict(
            Outcome::Fail,
            "not observed".into(),
            format!("expected {}, but the object's status was never observed", expect.want),
        );
    };
    let found = conds.iter().find(|c| c.type_ == expect.type_);
    if let (Some(c), Some(g)) = (found, generation)
        && let Some(og) = c.observed_generation
        && og < g
    {
        return verdict(
            Outcome::Fail,
            format!("{} (stale: observedGeneration {og} < generation {g})", show(c)),
            format!("expected {}, but the only {} condition is stale (observedGeneration {og}, generation {g})", expect.want, expect.type_),
        );
    }
    match (&expect.want, found) {
        (CondWant::Absent, None) => verdict(Outcome::Pass, "absent".into(), "absent, as expected".into()),
        (CondWant::Absent, Some(c)) => {
            verdict(Outcome::Fail, show(c), format!("expected no {} condition, got {}", expect.type_, show_long(c)))
        }
        (CondWant::Status { .. }, None) => {
            let present: Vec<String> = conds.iter().map(|c| format!("{}={}", c.type_, show(c))).collect();
            verdict(
                Outcome::Fail,
                "absent".into(),
                format!(
                    "expected {}, but there is no {} condition (present: {})",
                    expect.want,
                    expect.type_,
                    if present.is_empty() { "none".into() } else { present.join(", ") }
                ),
            )
        }
        (CondWant::Status { status, reason }, Some(c)) => {
            let status_ok = c.status == status.as_str();
            let reason_ok = reason.as_ref().is_none_or(|r| *r == c.reason);
            if status_ok && reason_ok {
                verdict(Outcome::Pass, show(c), format!("{} as expected", show(c)))
            } else {
                verdict(Outcome::Fail, show(c), format!("expected {}, got {}", expect.want, show_long(c)))
            }
        }
    }
}

fn show(c: &ConditionObs) -> String {
    crate::words::condition_value(&c.status, &c.reason)
}

fn show_long(c: &ConditionObs) -> String {
    if c.message.is_empty() { show(c) } else { format!("{} ({:?})", show(c), c.message) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::ProvenanceKind;

    fn prov() -> Provenance {
        Provenance { kind: ProvenanceKind::Reported, reference: Some("cozystack#3912".into()), note: None, observed: None }
    }
    fn cond(t: &str, s: &str, r: &str, og: Option<i64>) -> ConditionObs {
        ConditionObs { type_: t.into(), status: s.into(), reason: r.into(), message: String::new(), observed_generation: og }
    }
    fn exp(t: &str, w: &str) -> CondExpect {
        CondExpect { type_: t.into(), want: CondWant::parse(w).unwrap() }
    }

    #[test]
    fn status_and_reason_must_both_match() {
        let obs = [cond("Conflicted", "True", "ProtocolConflict", Some(1)), cond("Accepted", "False", "Invalid", Some(1))];
        let v =
            judge_condition(Aspect::Listener, "listener https", &exp("Conflicted", "True/ProtocolConflict"), Some(&obs), Some(1), &prov());
        assert!(v.passed(), "{}", v.detail);
        let v = judge_condition(Aspect::Listener, "listener https", &exp("Accepted", "True"), Some(&obs), Some(1), &prov());
        assert!(!v.passed());
        assert_eq!(v.detail, "expected True, got False/Invalid");
        let v =
            judge_condition(Aspect::Listener, "listener https", &exp("Conflicted", "True/HostnameConflict"), Some(&obs), Some(1), &prov());
        assert!(!v.passed());
    }

    #[test]
    fn absent_conditions() {
        let obs = [cond("Accepted", "True", "Accepted", None)];
        assert!(judge_condition(Aspect::Listener, "l", &exp("Conflicted", "absent"), Some(&obs), None, &prov()).passed());
        let v = judge_condition(Aspect::Listener, "l", &exp("Accepted", "absent"), Some(&obs), None, &prov());
        assert!(!v.passed());
        let v = judge_condition(Aspect::Listener, "l", &exp("Programmed", "True"), Some(&obs), None, &prov());
        assert!(v.detail.contains("no Programmed condition (present: Accepted=True/Accepted)"), "{}", v.detail);
    }

    #[test]
    fn stale_generation_does_not_count() {
        let obs = [cond("Accepted", "True", "Accepted", Some(1))];
        let v = judge_condition(Aspect::Gateway, "gateway", &exp("Accepted", "True"), Some(&obs), Some(2), &prov());
        assert!(!v.passed());
        assert!(v.detail.contains("stale"), "{}", v.detail);
    }

    #[test]
    fn unobserved_object_fails() {
        assert!(!judge_condition(Aspect::Gateway, "gateway", &exp("Accepted", "True"), None, None, &prov()).passed());
    }
}
