//! The agent rule on real recorded exchanges: Cilium's own agent through the bridge onto upstream
//! Envoy 1.40 (operator runs 20261206T002340.853Z at 1.19.6 and 20261206T001042.423Z at 1.19.5,
//! each case's `recording.agent` kept as it was written in
//! `harness/tests/data/operator/agent-xds/<pin>-<case>.json`).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::*;

fn recorded(case: &str) -> RecordedAgent {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/operator/agent-xds").join(format!("{case}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

const NACK: &str = "1.19.6-catch-all-https-and-passthrough";

/// Envoy refused the listener update carrying the CEC's one listener (nonce 2); the agent's next
/// update (version 3) carries none of it: refused and reverted, read off the exchange.
#[test]
fn a_nack_and_the_agents_revert_are_read_off_the_exchange() {
    let rec = recorded(NACK);
    let updates = lds_updates(&rec.xds);
    let cec = &rec.cecs[0].name;
    let x = exchange_of(cec, &updates);
    let (nonce, m) = x.refused.clone().expect("the NACK");
    assert_eq!(nonce, "2");
    assert!(m.contains("same matching rules"), "{m}");
    let revert = x.reverted.clone().expect("the revert");
    assert_eq!((revert.version.as_str(), revert.withdrawn, &revert.answer), ("3", true, &Answer::Ack));
    assert_eq!(x.retried, None);
    assert!(!x.acked && x.sent);
    // Envoy acknowledged version 3 (no listener): it serves none of the case's.
    assert_eq!(read(&rec.cecs, &rec.xds, rec.limit()).served, Some(Vec::new()));
}

/// The recorded statements follow from the recorded rows and exchange, for a NACK, an accepted
/// CEC and one the agent never took; nothing contradicts itself.
#[test]
fn real_recordings_recheck_clean() {
    for case in [NACK, "1.19.6-dns01-default", "1.19.6-native-port-passthrough"] {
        let rec = recorded(case);
        assert_eq!(recheck(&rec), Vec::<String>::new(), "{case}");
        let r = read(&rec.cecs, &rec.xds, rec.limit());
        assert_eq!(r.said, rec.said, "{case}");
    }
    let ok = recorded("1.19.6-dns01-default");
    let served = read(&ok.cecs, &ok.xds, ok.limit()).served.unwrap();
    assert!(served.iter().any(|l| l.starts_with(&format!("{}/", ok.cecs[0].name))), "{served:?}");
    // A recording that keeps what Envoy served is held to it.
    let mut with = ok.clone();
    with.served = Some(served);
    assert!(recheck(&with).is_empty());
}

/// A tampered statement fails, with a diff of expected against recorded.
#[test]
fn a_tampered_statement_fails_with_a_diff() {
    let mut rec = recorded(NACK);
    let honest = rec.said[0].clone();
    rec.said[0] = format!("agent step: Cilium's agent took CiliumEnvoyConfig {} and Envoy accepted it", rec.cecs[0].name);
    let d = recheck(&rec);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].contains(&format!("- {}", honest.lines().next().unwrap())), "{}", d[0]);
    assert!(d[0].contains(&format!("+ {}", rec.said[0])), "{}", d[0]);

    // What Envoy served, tampered.
    let mut rec = recorded(NACK);
    rec.served = Some(vec![format!("{}/listener", rec.cecs[0].name)]);
    let d = recheck(&rec);
    assert!(d.len() == 1 && d[0].contains("+ ") && d[0].contains("served"), "{d:#?}");
}

/// Rows and exchange that contradict each other: the agent's row says Done while Envoy NACKed
/// its update, or says Envoy refused it while the exchange holds no NACK, or gives another
/// message than Envoy's.
#[test]
fn rows_that_contradict_the_exchange_fail() {
    let mut rec = recorded(NACK);
    rec.cecs[0].status = Some("Done".into());
    rec.cecs[0].error = None;
    rec.said = read(&rec.cecs, &rec.xds, rec.limit()).said;
    let d = recheck(&rec);
    assert!(d.len() == 1 && d[0].contains("contradicts itself") && d[0].contains("nonce 2"), "{d:#?}");

    let mut rec = recorded(NACK);
    rec.cecs[0].error = Some("NACK received: something else".into());
    rec.said = read(&rec.cecs, &rec.xds, rec.limit()).said;
    let d = recheck(&rec);
    assert!(d.len() == 1 && d[0].contains("is not Envoy's NACK"), "{d:#?}");

    // The NACK removed from the exchange: Envoy's answer is an ACK.
    let mut rec = recorded(NACK);
    for l in &mut rec.xds {
        if let Some(o) = l.as_object_mut() {
            o.remove("nack");
        }
    }
    rec.said = read(&rec.cecs, &rec.xds, rec.limit()).said;
    let d = recheck(&rec);
    assert!(d.iter().any(|x| x.contains("refused no update")), "{d:#?}");

    // A CEC the agent never took whose listeners it sent.
    let mut rec = recorded("1.19.6-native-port-passthrough");
    let ack = recorded("1.19.6-dns01-default");
    rec.cecs[0].name = ack.cecs[0].name.clone();
    rec.xds = ack.xds.clone();
    rec.said = read(&rec.cecs, &rec.xds, rec.limit()).said;
    assert!(recheck(&rec).iter().any(|x| x.contains("holds no generation")));
}

/// A retry the exchange shows is said with its answer; a refusal not yet reverted is not said
/// reverted.
#[test]
fn a_retry_and_a_missing_revert_are_said_as_seen() {
    let rec = recorded(NACK);
    let cec = rec.cecs[0].name.clone();
    let lds = |event: &str, nonce: &str, names: &[&str]| -> Value {
        serde_json::json!({"event": event, "type_url": LISTENER_TYPE, "version_info": nonce, "nonce": nonce,
            "resources": names.iter().map(|n| serde_json::json!({"name": n})).collect::<Vec<_>>()})
    };
    let answer = |nonce: &str, nack: Option<&str>| -> Value {
        let mut v = serde_json::json!({"event": "from_envoy", "type_url": LISTENER_TYPE, "response_nonce": nonce});
        if let Some(n) = nack {
            v["nack"] = serde_json::json!(n);
        }
        v
    };
    let l = format!("{cec}/listener");
    // The retry carries the refused form again.
    let refused = lds_updates(&rec.xds).into_iter().find(|u| u.nonce == "2").unwrap().resources;
    let mut retry = lds("to_envoy", "4", &[]);
    retry["resources"] = Value::Array(refused);
    let mut xds = rec.xds.clone();
    xds.extend([retry, answer("4", Some("again"))]);
    let said = read(&rec.cecs, &xds, rec.limit()).said;
    assert!(said[0].contains("LDS version 3") && said[0].contains("retried (LDS version 4: refused: again)"), "{said:?}");

    // Only the refusal: no revert seen.
    let only: Vec<Value> =
        vec![lds("to_envoy", "2", &[&l]), answer("2", Some(rec.cecs[0].error.as_deref().unwrap().trim_start_matches(NACK_PREFIX)))];
    let r = read(&rec.cecs, &only, rec.limit());
    assert!(r.said[0].ends_with("no revert within the case's wait"), "{:?}", r.said);
    assert!(r.conflicts.is_empty() && r.served.is_none(), "{r:?}");
}

/// The limit of the agent's wait is the recording's, 20 s for recordings made before it was kept.
#[test]
fn the_limit_is_the_recordings() {
    let mut rec = recorded("1.19.6-native-port-passthrough");
    assert_eq!(rec.limit(), Duration::from_secs(20));
    assert!(rec.said[0].contains("within 20s"), "{:?}", rec.said);
    rec.limit_ms = 5_000;
    assert!(recheck(&rec).iter().any(|d| d.contains("within 5s")));
}

/// At 1.19.5 the CEC's first form was served (LDS version 2, ACKed), its update refused (version
/// 3, NACK), and the agent's revert put the first form back (version 4, ACKed): Envoy keeps
/// serving the older listener, which the lane's statement at the time ("reverted (every
/// resource of the CEC)") hid. Its recording fails the re-check, with the statement the
/// exchange gives.
#[test]
fn a_revert_to_the_form_served_before_is_said_so() {
    let rec = recorded("1.19.5-catch-all-https-and-passthrough");
    let cec = rec.cecs[0].name.clone();
    let x = exchange_of(&cec, &lds_updates(&rec.xds));
    assert!(x.acked);
    assert_eq!(x.refused.as_ref().map(|(n, _)| n.as_str()), Some("3"));
    let revert = x.reverted.expect("the revert");
    assert_eq!((revert.version.as_str(), revert.withdrawn, revert.answer), ("4", false, Answer::Ack));
    let r = read(&rec.cecs, &rec.xds, rec.limit());
    assert!(r.said[0].contains("to the form of its listeners it held before (LDS version 4, accepted by Envoy)"), "{:?}", r.said);
    assert_eq!(r.served, Some(vec![format!("{cec}/listener")]));
    assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
    let d = recheck(&rec);
    assert!(d.len() == 1 && d[0].contains("- ") && d[0].contains("+ ") && d[0].contains("(every resource of the CEC)"), "{d:#?}");
}

/// Found replaying `refused-update-keeps-generation` through Cilium's agent at 1.19.7: its step 3
/// put the CEC back to the form Envoy already served, so the agent sent nothing, and its row still
/// carried step 2's NACK. A slice with nothing of the CEC in it does not contradict the row (one
/// that carries its listeners and no refusal still does: `read`'s other tests).
#[test]
fn a_status_from_an_earlier_exchange_is_no_contradiction() {
    let agent = recorded(NACK);
    let row = agent.cecs.iter().find(|c| c.error.as_deref().is_some_and(|e| e.starts_with(NACK_PREFIX))).cloned().expect("a NACKed row");
    let r = read(std::slice::from_ref(&row), &[], Duration::from_secs(20));
    assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
    assert!(r.said[0].contains("from an earlier exchange"), "{:?}", r.said);
}
