//! A case's recorded facts, as two runs of the same case compare: what was judged and what was
//! observed (outcome, verdicts, every condition, the Envoy listeners, each probe's settled
//! answer), without what differs between any two runs by design: times and durations, the
//! addresses probes went to, raw observations and how many there were, the certificates'
//! fingerprints (each run makes its own certificates: a fingerprint is named from the run's
//! records instead), and the run's namespace suffix (replaced by `<run>`).
//!
//! `report::facts` reduces a case to the words a release note compares (the expectations'
//! answers and conditions, Envoy's chains); this keeps every recorded observation, for the
//! stricter question of whether two runs of one case saw the same thing.
//!
//! Used to show that a case run beside others (`run --lane operator --batch N`) records what it
//! records alone (the e2e trial `operator_batch::1.19.6::catalogue_batched_evidence_equals_alone`).

use std::collections::BTreeSet;

use super::CaseEvidence;
use crate::judge::ConditionObs;
use crate::judge::describe_probe as describe;
use crate::render::certs::CertRecord;

/// `text` with the run's namespace suffix, every `sha256 <hex>` and every local `a.b.c.d:port`
/// replaced.
fn scrub(text: &str, suffix: &str) -> String {
    let text = crate::words::mask_addresses(text);
    let text = if suffix.is_empty() { text } else { text.replace(suffix, "<run>") };
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("sha256 ") {
        let (head, tail) = rest.split_at(i + "sha256 ".len());
        out.push_str(head);
        let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 {
            out.push_str("<fingerprint>");
        }
        rest = &tail[hex..];
    }
    out.push_str(rest);
    out
}

fn conditions(out: &mut Vec<String>, what: &str, cs: &[ConditionObs], suffix: &str) {
    for c in cs {
        out.push(format!(
            "condition {what} {}={}/{} generation {:?}: {}",
            c.type_,
            c.status,
            c.reason,
            c.observed_generation,
            scrub(&c.message, suffix)
        ));
    }
}

/// The recorded facts of `ev`, one line each, sorted. `run_certs`: the run's certificate
/// records (a probe's certificate is named from them); `suffix`: the run's namespace suffix
/// (`lanes::cluster::names::run_suffix` of its run id).
pub fn case_facts(ev: &CaseEvidence, run_certs: &[CertRecord], suffix: &str) -> Vec<String> {
    let s = |t: &str| scrub(t, suffix);
    let mut out = vec![
        format!("case {} hash {}", ev.name, ev.hash),
        format!("ranges {}", ev.ranges.join(" ")),
        format!("outcome {:?}", ev.outcome),
        format!("error {}", ev.error.as_deref().map(s).unwrap_or_default()),
    ];
    for v in &ev.verdicts {
        out.push(format!(
            "verdict {:?} {} | expected {} | observed {} | {:?}",
            v.aspect,
            s(&v.subject),
            s(&v.expected),
            s(&v.observed),
            v.outcome
        ));
    }
    let o = &ev.observed;
    conditions(&mut out, "gateway", o.gateway.as_deref().unwrap_or_default(), suffix);
    for (g, cs) in &o.gateways {
        conditions(&mut out, &format!("gateway {g}"), cs, suffix);
    }
    for (l, cs) in &o.listener_sets {
        conditions(&mut out, &format!("listenerset {l}"), cs, suffix);
    }
    for (l, cs) in &o.listener_set_listeners {
        conditions(&mut out, &format!("listenerset listener {l}"), cs, suffix);
    }
    for (l, cs) in &o.listeners {
        conditions(&mut out, &format!("listener {l}"), cs, suffix);
    }
    for (r, parents) in &o.routes {
        for (p, cs) in parents {
            conditions(&mut out, &format!("route {r} parent {}", s(p)), cs, suffix);
        }
    }
    match &o.envoy_listeners {
        None => out.push("envoy listeners: no dump".into()),
        Some(ls) => {
            for l in ls {
                out.push(format!("envoy listener {}", s(&serde_json::to_string(l).unwrap_or_default())));
            }
        }
    }
    let names = ev.cert_names(run_certs);
    for p in &o.probes {
        let key = serde_json::to_string(&p.key).unwrap_or_default();
        // The answer the probe settled on: how many observations it took is timing.
        let last = p.facts.last().map(|f| s(&describe(f, &names))).unwrap_or_else(|| "no observation".into());
        out.push(format!("probe {key} -> {last}"));
    }
    out.sort();
    out
}

/// The lines only one side has, each marked with its side (`alone:` or `batched:` for the
/// names given).
pub fn differences(a: &[String], b: &[String], a_name: &str, b_name: &str) -> Vec<String> {
    let (sa, sb): (BTreeSet<&String>, BTreeSet<&String>) = (a.iter().collect(), b.iter().collect());
    let mut out: Vec<String> = sa.difference(&sb).map(|l| format!("{a_name}: {l}")).collect();
    out.extend(sb.difference(&sa).map(|l| format!("{b_name}: {l}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Evidence;

    fn recorded() -> Evidence {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/operator/real-1.19.5/evidence.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// The recorded run's case with probes, Envoy listeners and listener conditions.
    const CASE: usize = 1;

    fn facts(ev: &Evidence, i: usize) -> Vec<String> {
        let suffix = crate::lanes::cluster::names::run_suffix(&ev.run_id);
        case_facts(&ev.cases[i], &ev.certificates, &suffix)
    }

    #[test]
    fn scrubbing_leaves_out_fingerprints_and_the_run() {
        assert_eq!(scrub("api-backend (sha256 ab12cd…) in lg-x-abc123", "abc123"), "api-backend (sha256 <fingerprint>…) in lg-x-<run>");
        assert_eq!(scrub("bind 127.0.0.1:43210: in use", ""), "bind <address>: in use");
        assert_eq!(scrub("sha256 of nothing", ""), "sha256 of nothing");
    }

    /// Another run of the same case (other times, addresses, certificates, run id) has the same
    /// facts; a changed condition, Envoy listener or probe answer does not.
    #[test]
    fn another_run_has_the_same_facts_and_another_answer_does_not() {
        let ev = recorded();
        assert_eq!(ev.cases[CASE].name, "dns01-default");
        let base = facts(&ev, CASE);
        assert!(base.iter().any(|l| l.starts_with("probe ")) && base.iter().any(|l| l.starts_with("condition listener ")), "{base:#?}");
        assert!(base.iter().any(|l| l.starts_with("envoy listener ")), "{base:#?}");

        // The same answers, run again: new run id (so a new namespace suffix), new
        // certificates, other durations and addresses, one more observation per probe.
        let mut again = ev.clone();
        let (old, new) = (crate::lanes::cluster::names::run_suffix(&ev.run_id), "run-2".to_string());
        again.run_id = new.clone();
        let new_suffix = crate::lanes::cluster::names::run_suffix(&new);
        let json = serde_json::to_string(&again).unwrap().replace(&old, &new_suffix);
        let mut again: Evidence = serde_json::from_str(&json).unwrap();
        let renamed: Vec<(crate::types::Fingerprint, crate::types::Fingerprint)> = again
            .certificates
            .iter_mut()
            .enumerate()
            .map(|(i, c)| {
                let was = c.leaf.sha256;
                c.leaf.sha256 = crate::types::Fingerprint::of_der(&[i as u8, 1, 2, 3]);
                (was, c.leaf.sha256)
            })
            .collect();
        let case = &mut again.cases[CASE];
        case.duration_ms += 1234;
        for p in &mut case.observed.probes {
            p.address = "127.0.0.1:1".into();
            if let Some(last) = p.facts.last().cloned() {
                p.facts.insert(0, last);
            }
            for f in &mut p.facts {
                if let Some((_, to)) = renamed.iter().find(|(from, _)| f.leaf.as_ref() == Some(from)) {
                    f.leaf = Some(*to);
                }
            }
        }
        assert_eq!(facts(&again, CASE), base);

        // Another answer is another fact.
        let mut other = ev.clone();
        let l = other.cases[CASE].observed.listeners.values_mut().next().unwrap();
        l[0].status = if l[0].status == "True" { "False".into() } else { "True".into() };
        let d = differences(&base, &facts(&other, CASE), "alone", "batched");
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(d[0].starts_with("alone: condition listener ") && d[1].starts_with("batched: condition listener "), "{d:#?}");

        let mut other = ev.clone();
        if let Some(ls) = other.cases[CASE].observed.envoy_listeners.as_mut() {
            ls[0].filter_chains += 1;
        }
        assert_ne!(facts(&other, CASE), base);

        let mut other = ev.clone();
        let p = &mut other.cases[CASE].observed.probes[0];
        let f = p.facts.last_mut().unwrap();
        f.outcome = if f.outcome == crate::judge::OutcomeClass::Reset {
            crate::judge::OutcomeClass::Refused
        } else {
            crate::judge::OutcomeClass::Reset
        };
        f.leaf = None;
        assert_ne!(facts(&other, CASE), base);
    }
}
