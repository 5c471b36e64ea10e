//! Envoy facts: filter-chain counts, the server_names of chains, listeners Envoy refused.

use serde::{Deserialize, Serialize};

use super::{Aspect, Outcome, Verdict, diff_lines};
use crate::case::EnvoyListenerExpect;

/// What the judge needs of one Envoy listener (a projection of the dump summary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerFact {
    /// Short name (`listener`, `listener-443`); Cilium's `<ns>/<cec>/` prefix removed.
    pub name: String,
    /// active, warming, draining or error.
    pub state: String,
    pub filter_chains: usize,
    /// Per chain, its server_names.
    pub server_names: Vec<Vec<String>>,
    /// Envoy's error text for a refused update or listener.
    pub error: Option<String>,
}

fn chain_line(names: &[String]) -> String {
    if names.is_empty() { "(no server_names)".into() } else { names.join(", ") }
}

/// Judges one expected Envoy listener against the listeners seen in the dump. `listeners` is
/// `None` when no dump could be taken at all; `Some(&[])` is a dump with no listeners.
pub fn judge_envoy_listener(name: &str, expect: &EnvoyListenerExpect, listeners: Option<&[ListenerFact]>) -> Vec<Verdict> {
    let v = |what: &str, expected: String, observed: String, ok: bool, detail: String| Verdict {
        aspect: Aspect::Envoy,
        subject: format!("envoy {name} {what}"),
        expected,
        observed,
        outcome: if ok { Outcome::Pass } else { Outcome::Fail },
        provenance: expect.provenance.clone(),
        detail,
    };
    let Some(listeners) = listeners else {
        return vec![v("dump", "a config dump".into(), "none".into(), false, "expected Envoy facts, but no config dump was taken".into())];
    };
    let found = listeners.iter().find(|l| l.name == name);
    if expect.absent {
        return vec![match found {
            None => v("absent", "absent".into(), "absent".into(), true, "absent, as expected".into()),
            Some(l) => v(
                "absent",
                "absent".into(),
                format!("{} with {} chains", l.state, l.filter_chains),
                false,
                format!("expected no listener {name}, found it {} with {} filter chains", l.state, l.filter_chains),
            ),
        }];
    }
    let Some(l) = found else {
        let names: Vec<&str> = listeners.iter().map(|l| l.name.as_str()).collect();
        return vec![v(
            "present",
            "present".into(),
            "absent".into(),
            false,
            format!(
                "expected listener {name}, but the dump has {}",
                if names.is_empty() { "no listeners".into() } else { names.join(", ") }
            ),
        )];
    };
    let mut out = Vec::new();
    if let Some(n) = expect.filter_chains {
        let ok = l.filter_chains == n as usize && l.state != "error";
        let detail = if ok {
            format!("{n} filter chains as expected")
        } else if l.state == "error" {
            format!("expected {n} filter chains, but the listener exists only as an error: {}", l.error.as_deref().unwrap_or("(no text)"))
        } else {
            format!("expected {n} filter chains, got {}", l.filter_chains)
        };
        out.push(v("filter_chains", n.to_string(), l.filter_chains.to_string(), ok, detail));
    }
    if let Some(want) = &expect.server_names {
        let mut want_lines: Vec<String> = want.iter().map(|c| chain_line(&sorted(c))).collect();
        let mut got_lines: Vec<String> = l.server_names.iter().map(|c| chain_line(&sorted(c))).collect();
        want_lines.sort();
        got_lines.sort();
        let ok = want_lines == got_lines;
        let detail = if ok {
            format!("{} chains with the expected server_names", want_lines.len())
        } else {
            format!("server_names per chain differ (- expected, + observed):\n{}", diff_lines(&want_lines, &got_lines))
        };
        out.push(v("server_names", want_lines.join(" | "), got_lines.join(" | "), ok, detail));
    }
    if let Some(text) = &expect.error_contains {
        let (ok, detail) = match &l.error {
            Some(e) if e.contains(text.as_str()) => (true, format!("Envoy refused it: {e}")),
            Some(e) => (false, format!("expected an error containing {text:?}, got {e:?}")),
            None => (false, format!("expected Envoy to refuse the listener with {text:?}, but it has no error")),
        };
        out.push(v("error", format!("contains {text:?}"), l.error.clone().unwrap_or_else(|| "none".into()), ok, detail));
    }
    out
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut n = names.to_vec();
    n.sort();
    n
}

impl ListenerFact {
    /// The judge's view of a summarized listener: short name, chains by server_names.
    pub fn from_summary(l: &crate::observe::envoy_dump::ListenerSummary) -> ListenerFact {
        ListenerFact {
            name: l.short_name().to_string(),
            state: l.state.as_str().to_string(),
            filter_chains: l.filter_chain_count(),
            server_names: l.filter_chains.iter().map(|c| c.filter_chain_match.server_names.clone()).collect(),
            error: l.error.clone(),
        }
    }

    /// Every listener of a dump.
    pub fn all(summary: &crate::observe::envoy_dump::DumpSummary) -> Vec<ListenerFact> {
        summary.listeners.iter().map(ListenerFact::from_summary).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Provenance, ProvenanceKind};

    fn expect() -> EnvoyListenerExpect {
        EnvoyListenerExpect {
            filter_chains: None,
            server_names: None,
            error_contains: None,
            absent: false,
            provenance: Provenance { kind: ProvenanceKind::Inferred, reference: None, note: None, observed: None },
            line: 1,
        }
    }
    fn fact(names: &[&[&str]]) -> ListenerFact {
        ListenerFact {
            name: "listener".into(),
            state: "active".into(),
            filter_chains: names.len(),
            server_names: names.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect(),
            error: None,
        }
    }

    #[test]
    fn counts_chains() {
        let mut e = expect();
        e.filter_chains = Some(3);
        let l = [fact(&[&[], &["*.example.test"], &["api.example.test"]])];
        assert!(judge_envoy_listener("listener", &e, Some(&l))[0].passed());
        e.filter_chains = Some(2);
        let v = &judge_envoy_listener("listener", &e, Some(&l))[0];
        assert!(!v.passed());
        assert_eq!(v.detail, "expected 2 filter chains, got 3");
        assert!(v.contradicts_inference());
    }

    #[test]
    fn server_names_compare_as_multiset_with_diff() {
        let mut e = expect();
        e.server_names = Some(vec![vec!["api.example.test".into()], vec![]]);
        let l = [fact(&[&[], &["api.example.test"]])];
        assert!(judge_envoy_listener("listener", &e, Some(&l))[0].passed());
        let l = [fact(&[&[], &["*.example.test"]])];
        let v = &judge_envoy_listener("listener", &e, Some(&l))[0];
        assert!(!v.passed());
        assert!(v.detail.contains("- api.example.test\n") && v.detail.contains("+ *.example.test\n"), "{}", v.detail);
    }

    #[test]
    fn absent_missing_and_errors() {
        let mut e = expect();
        e.absent = true;
        assert!(judge_envoy_listener("listener-443", &e, Some(&[fact(&[])]))[0].passed());
        assert!(!judge_envoy_listener("listener", &e, Some(&[fact(&[])]))[0].passed());
        let mut e = expect();
        e.error_contains = Some("same matching rules".into());
        let mut l = fact(&[&["a.test"]]);
        assert!(!judge_envoy_listener("listener", &e, Some(&[l.clone()]))[0].passed());
        l.error = Some("error adding listener '127.0.0.1:1': filter chain '' has the same matching rules defined as ''".into());
        assert!(judge_envoy_listener("listener", &e, Some(&[l]))[0].passed());
        let mut e = expect();
        e.filter_chains = Some(1);
        assert!(!judge_envoy_listener("listener-443", &e, Some(&[fact(&[])]))[0].passed());
        assert!(!judge_envoy_listener("listener", &e, None)[0].passed());
    }
}
