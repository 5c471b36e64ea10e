//! Objects the API server refused (HTTP 422, Invalid): what a case expects refused against what
//! a lane recorded. A refused object does not exist on the cluster, so it has no conditions;
//! a refusal no expectation names fails the case (a route silently missing is no pass).

use serde::{Deserialize, Serialize};

use super::{Aspect, Outcome, Verdict};
use crate::case::{Provenance, RefusedExpect};

/// One object the API server refused to create, as a lane recorded it (the model predicts it
/// from the CRD schema; the cluster lanes keep the API server's own status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// The HTTP status (422).
    pub code: u16,
    /// The Status reason (`Invalid`).
    pub reason: String,
    /// The API server's message.
    pub message: String,
}

impl Refused {
    /// `TLSRoute any`, how verdicts and expectations name it.
    pub fn object(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// Judges one expected refusal against every refusal recorded.
pub fn judge_refused(expect: &RefusedExpect, observed: &[Refused], provenance: &Provenance) -> Verdict {
    let object = format!("{}/{}", expect.kind, expect.name);
    let expected = format!("refused ({})", expect.message_contains);
    let verdict = |outcome, observed: String, detail: String| Verdict {
        aspect: Aspect::Admission,
        subject: format!("{object} admission"),
        expected: expected.clone(),
        observed,
        outcome,
        provenance: provenance.clone(),
        detail,
    };
    match observed.iter().find(|r| r.kind == expect.kind && r.name == expect.name) {
        None => verdict(Outcome::Fail, "admitted".into(), format!("expected the API server to refuse {object}, but it was admitted")),
        Some(r) if r.message.contains(&expect.message_contains) => verdict(
            Outcome::Pass,
            format!("refused {} {}", r.code, r.reason),
            format!("refused ({} {}: {}), as expected", r.code, r.reason, r.message),
        ),
        Some(r) => verdict(
            Outcome::Fail,
            format!("refused {} {}", r.code, r.reason),
            format!("refused ({} {}: {}), but not for {:?}", r.code, r.reason, r.message, expect.message_contains),
        ),
    }
}

/// A refusal that no applied expectation names: the case fails, with the API server's words.
pub fn unexpected(r: &Refused) -> Verdict {
    Verdict {
        aspect: Aspect::Admission,
        subject: format!("{} admission", r.object()),
        expected: "admitted".into(),
        observed: format!("refused {} {}", r.code, r.reason),
        outcome: Outcome::Fail,
        provenance: Provenance::inferred(),
        detail: format!("the API server refused it ({} {}: {}) and no expectation says so (`refused:`)", r.code, r.reason, r.message),
    }
}

/// Whether `v` is an [`unexpected`] refusal's verdict: it speaks of no expectation, so a group
/// judged on its own (`--record`) is not held back by it.
pub fn is_unexpected(v: &Verdict) -> bool {
    v.aspect == Aspect::Admission && v.expected == "admitted"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(kind: &str, name: &str, message: &str) -> Refused {
        Refused {
            kind: kind.into(),
            namespace: Some("ns".into()),
            name: name.into(),
            code: 422,
            reason: "Invalid".into(),
            message: message.into(),
        }
    }
    fn expect(name: &str, contains: &str) -> RefusedExpect {
        RefusedExpect { kind: "TLSRoute".into(), name: name.into(), message_contains: contains.into() }
    }

    #[test]
    fn an_expected_refusal_passes_only_when_refused_for_the_reason_named() {
        let seen = [refused("TLSRoute", "any", "TLSRoute.gateway.networking.k8s.io \"any\" is invalid: spec.hostnames: Required value")];
        let p = Provenance::inferred();
        assert!(judge_refused(&expect("any", "spec.hostnames: Required value"), &seen, &p).passed());
        let wrong = judge_refused(&expect("any", "spec.rules"), &seen, &p);
        assert!(!wrong.passed() && wrong.detail.contains("but not for"), "{}", wrong.detail);
        let admitted = judge_refused(&expect("other", "spec.hostnames"), &seen, &p);
        assert!(!admitted.passed() && admitted.observed == "admitted", "{admitted:?}");
        let u = unexpected(&seen[0]);
        assert!(!u.passed() && is_unexpected(&u) && u.detail.contains("spec.hostnames: Required value"), "{u:?}");
        assert!(!is_unexpected(&judge_refused(&expect("any", "spec.hostnames"), &seen, &p)));
    }
}
