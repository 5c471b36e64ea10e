//! Envoy clusters: the upstream HTTP protocol Envoy holds for a backend's cluster.

use super::{Aspect, Outcome, Verdict};
use crate::case::ClusterExpect;
use crate::observe::envoy_dump::ClusterFact;

/// Judges one expected cluster (`<service>:<port>`) against the clusters of the dump. `clusters`
/// is `None` when the lane read no cluster (no dump, or a lane that cannot: the kind lane).
/// Several clusters for one backend (two Gateways' CECs) must all hold the protocol.
pub fn judge_cluster(key: &str, expect: &ClusterExpect, clusters: Option<&[ClusterFact]>) -> Verdict {
    let v = |expected: String, observed: String, ok: bool, detail: String| Verdict {
        aspect: Aspect::Envoy,
        subject: format!("envoy cluster {key} protocol"),
        expected,
        observed,
        outcome: if ok { Outcome::Pass } else { Outcome::Fail },
        provenance: expect.provenance.clone(),
        detail,
    };
    let want = expect.protocol.as_str().to_string();
    let Some(clusters) = clusters else {
        return v(want, "none".into(), false, "expected an Envoy cluster, but the lane read no cluster from Envoy".into());
    };
    let found: Vec<&ClusterFact> = clusters.iter().filter(|c| c.backend().as_deref() == Some(key)).collect();
    if found.is_empty() {
        let names: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
        let have = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return v(want, "absent".into(), false, format!("Envoy holds no cluster for backend {key}; its clusters: {have}"));
    }
    let seen: Vec<String> = found.iter().map(|c| c.protocol.as_str().to_string()).collect();
    let ok = found.iter().all(|c| c.protocol == expect.protocol);
    let mut observed = seen.clone();
    observed.dedup();
    let detail = found.iter().map(|c| format!("{}: {}", c.name, c.protocol)).collect::<Vec<_>>().join("; ");
    v(want, observed.join(", "), ok, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Provenance;
    use crate::observe::envoy_dump::clusters::{ClusterSource, ClusterState};
    use crate::types::UpstreamProtocol;

    fn fact(name: &str, protocol: UpstreamProtocol) -> ClusterFact {
        ClusterFact { name: name.into(), source: ClusterSource::Dynamic, state: ClusterState::Active, protocol }
    }

    fn expect(protocol: UpstreamProtocol) -> ClusterExpect {
        ClusterExpect { protocol, provenance: Provenance::inferred(), line: 1 }
    }

    #[test]
    fn a_cluster_is_found_by_its_backend_and_judged_by_its_protocol() {
        let seen = [
            fact("ns/cilium-gateway-gw/ns:api:443", UpstreamProtocol::Downstream),
            fact("ns/cilium-gateway-gw/ns:web:80", UpstreamProtocol::Http1),
        ];
        let ok = judge_cluster("api:443", &expect(UpstreamProtocol::Downstream), Some(&seen));
        assert_eq!(ok.outcome, Outcome::Pass, "{ok:?}");
        let bad = judge_cluster("web:80", &expect(UpstreamProtocol::Downstream), Some(&seen));
        assert_eq!((bad.outcome, bad.observed.as_str()), (Outcome::Fail, "http1"));
        let missing = judge_cluster("grpc:8080", &expect(UpstreamProtocol::Http2), Some(&seen));
        assert_eq!(missing.observed, "absent");
        assert!(missing.detail.contains("ns/cilium-gateway-gw/ns:web:80"), "{}", missing.detail);
        let unread = judge_cluster("api:443", &expect(UpstreamProtocol::Downstream), None);
        assert_eq!(unread.outcome, Outcome::Fail);
    }
}
