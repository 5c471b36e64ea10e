//! Probe expectations: which certificate answers a (port, SNI), or that none does.
//!
//! Data-plane checks are eventually consistent. An expectation holds when the last K
//! observations all match it (K consecutive, as the Gateway API conformance suite does); the
//! message counts how the last K went, so a flapping answer is visible as such.

use std::collections::BTreeMap;

use super::{Aspect, Outcome, OutcomeClass, ProbeFact, Verdict};
use crate::case::{Answer, ProbeExpect};
use crate::types::{CertName, Fingerprint};

pub const DEFAULT_CONSECUTIVE: usize = 3;

/// Does one observation meet the expectation? `name_of` maps a fingerprint to this run's
/// certificate name (None for a certificate that is not ours).
pub fn matches(expect: &ProbeExpect, fact: &ProbeFact, name_of: &dyn Fn(&Fingerprint) -> Option<CertName>) -> bool {
    let answer_ok = match &expect.answer {
        Answer::Cert(want) => fact.outcome == OutcomeClass::Certificate && fact.leaf.as_ref().and_then(name_of).as_ref() == Some(want),
        Answer::Nothing { how, alert } => {
            !matches!(fact.outcome, OutcomeClass::Certificate | OutcomeClass::Answered | OutcomeClass::LocalError)
                && how.is_none_or(|h| h.as_str() == fact.outcome.as_str())
                && alert.as_ref().is_none_or(|a| fact.alert.as_deref() == Some(a.as_str()))
        }
        Answer::Answered => fact.outcome == OutcomeClass::Answered,
    };
    let served_ok = expect.served_by.as_ref().is_none_or(|b| fact.served_by.as_deref() == Some(b.as_str()));
    let status_ok = expect.status.is_none_or(|s| fact.http_status == Some(s));
    answer_ok && served_ok && status_ok
}

/// How one observation reads in a message: the certificate's name (or a stranger's
/// fingerprint), or how the attempt ended.
pub fn describe(fact: &ProbeFact, name_of: &dyn Fn(&Fingerprint) -> Option<CertName>) -> String {
    let base = match (fact.outcome, &fact.leaf) {
        (OutcomeClass::Certificate, Some(fp)) => match name_of(fp) {
            Some(n) => format!("{n} (sha256 {}…)", fp.short()),
            None => format!("an unknown certificate (sha256 {}…)", fp.short()),
        },
        (OutcomeClass::Answered, _) => {
            let status = fact.http_status.map(|s| format!("HTTP {s}")).unwrap_or_else(|| "an HTTP answer".into());
            return match &fact.served_by {
                Some(b) => format!("{status}, served by {b}"),
                None => status,
            };
        }
        (OutcomeClass::Alert, _) => format!("alert {}", fact.alert.as_deref().unwrap_or("?")),
        (OutcomeClass::LocalError, _) => "a local error on the probing machine (the server was not asked)".into(),
        (o, _) => format!("nothing ({})", o.as_str()),
    };
    match (&fact.served_by, fact.http_status) {
        (Some(b), _) => format!("{base}, served by {b}"),
        (None, Some(s)) => format!("{base}, HTTP {s} from no named backend"),
        (None, None) => base,
    }
}

/// Judges a probe expectation over all observations of its (port, SNI), in time order.
pub fn judge_probe(
    expect: &ProbeExpect,
    observations: &[ProbeFact],
    k: usize,
    name_of: &dyn Fn(&Fingerprint) -> Option<CertName>,
) -> Verdict {
    let k = k.max(1);
    let mut expected = match (&expect.answer, expect.status) {
        (Answer::Answered, Some(s)) => format!("HTTP {s}"),
        (_, Some(s)) => format!("{}, HTTP {s}", expect.answer),
        (_, None) => expect.answer.to_string(),
    };
    if let Some(b) = &expect.served_by {
        expected.push_str(&format!(", served by {b}"));
    }
    let window = &observations[observations.len().saturating_sub(k)..];
    let hits = window.iter().filter(|f| matches(expect, f, name_of)).count();
    let held = window.len() == k && hits == k;

    // The most frequent description among the window's misses says what happened instead.
    let mut misses: BTreeMap<String, usize> = BTreeMap::new();
    for f in window.iter().filter(|f| !matches(expect, f, name_of)) {
        *misses.entry(describe(f, name_of)).or_default() += 1;
    }
    let observed = match window.last() {
        Some(last) => describe(last, name_of),
        None => "no observation".into(),
    };
    let detail = if held {
        format!("{expected} in {k} of {k} consecutive observations ({} in all)", observations.len())
    } else if window.is_empty() {
        format!("expected {expected}, but no observation was made")
    } else if window.len() < k {
        format!("expected {expected}, but only {} observation(s) were made, {hits} matching; {k} consecutive are needed", window.len())
    } else {
        let (got, n) = misses.iter().max_by_key(|(_, n)| **n).map(|(d, n)| (d.clone(), *n)).unwrap_or_default();
        format!("expected {expected}, got {got} in {n} of {} observations", window.len())
    };
    Verdict {
        aspect: Aspect::Probe,
        subject: expect.key.to_string(),
        expected,
        observed,
        outcome: if held { Outcome::Pass } else { Outcome::Fail },
        provenance: expect.provenance.clone(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{NothingHow, ProbeKey, Provenance, ProvenanceKind};
    use crate::types::{BackendName, Port, Sni};

    fn fp(b: u8) -> Fingerprint {
        Fingerprint([b; 32])
    }
    fn names(f: &Fingerprint) -> Option<CertName> {
        match f.0[0] {
            1 => Some(CertName::new("api-backend").unwrap()),
            2 => Some(CertName::new("gateway-wildcard").unwrap()),
            _ => None,
        }
    }
    fn expect(answer: Answer, served_by: Option<&str>) -> ProbeExpect {
        ProbeExpect {
            key: ProbeKey {
                port: Port::new(443).unwrap(),
                sni: Some(Sni::new("api.example.test").unwrap()),
                http: served_by.is_some(),
                plain: false,
                gateway: None,
                path: None,
            },
            answer,
            served_by: served_by.map(|b| BackendName::new(b).unwrap()),
            status: None,
            provenance: Provenance { kind: ProvenanceKind::Source, reference: None, note: None, observed: None },
            line: 1,
        }
    }
    fn cert(b: u8) -> ProbeFact {
        ProbeFact { outcome: OutcomeClass::Certificate, leaf: Some(fp(b)), alert: None, served_by: None, http_status: None }
    }
    fn ended(o: OutcomeClass) -> ProbeFact {
        ProbeFact { outcome: o, leaf: None, alert: None, served_by: None, http_status: None }
    }

    #[test]
    fn names_the_wrong_certificate() {
        let e = expect(Answer::Cert(CertName::new("api-backend").unwrap()), None);
        let v = judge_probe(&e, &[cert(2), cert(2), cert(2)], 3, &names);
        assert!(!v.passed());
        assert_eq!(v.detail, format!("expected api-backend, got gateway-wildcard (sha256 {}…) in 3 of 3 observations", fp(2).short()));
        assert_eq!(v.subject, "443 api.example.test");
    }

    #[test]
    fn needs_k_consecutive_at_the_end() {
        let e = expect(Answer::Cert(CertName::new("api-backend").unwrap()), None);
        assert!(judge_probe(&e, &[cert(2), cert(1), cert(1), cert(1)], 3, &names).passed());
        let flapping = judge_probe(&e, &[cert(1), cert(2), cert(1), cert(1)], 4, &names);
        assert!(!flapping.passed());
        assert!(!judge_probe(&e, &[cert(1), cert(1)], 3, &names).passed());
        assert!(!judge_probe(&e, &[], 3, &names).passed());
    }

    #[test]
    fn strangers_are_not_ours() {
        let e = expect(Answer::Cert(CertName::new("api-backend").unwrap()), None);
        let v = judge_probe(&e, &[cert(9)], 1, &names);
        assert!(!v.passed());
        assert!(v.detail.contains("unknown certificate"), "{}", v.detail);
    }

    #[test]
    fn nothing_and_how() {
        let any = expect(Answer::Nothing { how: None, alert: None }, None);
        assert!(judge_probe(&any, &[ended(OutcomeClass::Reset)], 1, &names).passed());
        assert!(!judge_probe(&any, &[cert(1)], 1, &names).passed());
        let reset = expect(Answer::Nothing { how: Some(NothingHow::Reset), alert: None }, None);
        let v = judge_probe(&reset, &[ended(OutcomeClass::Timeout)], 1, &names);
        assert!(!v.passed());
        assert_eq!(v.detail, "expected nothing (reset), got nothing (timeout) in 1 of 1 observations");
        let alert = expect(Answer::Nothing { how: Some(NothingHow::Alert), alert: Some("unrecognized_name".into()) }, None);
        // A local failure (out of file descriptors) is no answer of the server's: it meets no
        // "nothing answers" expectation, with or without how:.
        for e in [&any, &reset] {
            let v = judge_probe(e, &[ended(OutcomeClass::LocalError)], 1, &names);
            assert!(!v.passed(), "{v:?}");
            assert!(v.observed.contains("local error"), "{}", v.observed);
        }
        let mut f = ended(OutcomeClass::Alert);
        f.alert = Some("handshake_failure".into());
        assert!(!judge_probe(&alert, &[f.clone()], 1, &names).passed());
        f.alert = Some("unrecognized_name".into());
        assert!(judge_probe(&alert, &[f], 1, &names).passed());
    }

    #[test]
    fn served_by_is_checked() {
        let e = expect(Answer::Cert(CertName::new("gateway-wildcard").unwrap()), Some("web"));
        let mut f = cert(2);
        f.served_by = Some("other".into());
        let v = judge_probe(&e, &[f.clone()], 1, &names);
        assert!(!v.passed());
        assert!(v.detail.contains("served by other"), "{}", v.detail);
        f.served_by = Some("web".into());
        assert!(judge_probe(&e, &[f], 1, &names).passed());
    }

    #[test]
    fn plain_answers_and_status() {
        let mut e = expect(Answer::Answered, None);
        e.key.plain = true;
        e.status = Some(301);
        let answered =
            |status| ProbeFact { outcome: OutcomeClass::Answered, leaf: None, alert: None, served_by: None, http_status: Some(status) };
        assert!(judge_probe(&e, &[answered(301)], 1, &names).passed());
        let v = judge_probe(&e, &[answered(200)], 1, &names);
        assert!(!v.passed());
        assert_eq!(v.detail, "expected HTTP 301, got HTTP 200 in 1 of 1 observations");
        assert_eq!(v.subject, "443 api.example.test (plain HTTP)");
        assert!(!judge_probe(&e, &[ended(OutcomeClass::Reset)], 1, &names).passed());
        // Nothing means no answer at all: an HTTP answer is something.
        let nothing = expect(Answer::Nothing { how: None, alert: None }, None);
        assert!(!judge_probe(&nothing, &[answered(404)], 1, &names).passed());
        // A status beside a certificate: both must hold.
        let mut tls = expect(Answer::Cert(CertName::new("gateway-wildcard").unwrap()), None);
        tls.status = Some(200);
        let mut f = cert(2);
        f.http_status = Some(404);
        assert!(!judge_probe(&tls, &[f.clone()], 1, &names).passed());
        f.http_status = Some(200);
        assert!(judge_probe(&tls, &[f], 1, &names).passed());
    }
}
