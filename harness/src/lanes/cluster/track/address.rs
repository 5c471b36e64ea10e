//! The probed Gateways have IP addresses: each Gateway has its own Service (Cilium's
//! `cilium-gateway-<name>`) and so its own LB IPAM address; a probe naming a Gateway goes to
//! that Gateway's.
//!
//! A Gateway Cilium did not accept never gets one: every path of the operator's
//! `gatewayReconciler.Reconcile` that sets Accepted=False (no valid listener, invalid
//! GatewayClass parameters, a translation error, an unsupported address) returns before
//! `ensureService` (`operator/pkg/gateway-api/gateway_reconcile.go` at v1.19.6), so there is no
//! Service for LB IPAM to give an address to. Such a Gateway, with its Accepted=False current
//! (observedGeneration = generation), is settled without an address instead of waited for until
//! the wait runs out.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use super::case_status::{GatewayView, gateway_addresses, show_all};
use super::{Event, Progress, Tracker, ident};

/// Done when every Gateway waited for has an IP address in its status, or says (Accepted=False,
/// current) that Cilium will give it none.
pub struct GatewayAddress {
    namespace: String,
    /// The case's Gateway first when it is probed.
    gateways: Vec<String>,
    last: BTreeMap<String, Value>,
}

impl GatewayAddress {
    pub fn new(namespace: &str, gateway: &str) -> Self {
        Self::for_all(namespace, &[gateway.to_string()])
    }

    /// Waits for each of `gateways`.
    pub fn for_all(namespace: &str, gateways: &[String]) -> Self {
        GatewayAddress { namespace: namespace.into(), gateways: gateways.to_vec(), last: BTreeMap::new() }
    }

    /// The first Gateway's address.
    pub fn address(&self) -> Option<IpAddr> {
        self.gateways.first().and_then(|g| self.address_of(g))
    }

    pub fn address_of(&self, gateway: &str) -> Option<IpAddr> {
        self.last.get(gateway).and_then(|g| gateway_addresses(g).into_iter().next())
    }

    /// Every Gateway's address that is known, by name.
    pub fn addresses(&self) -> BTreeMap<String, IpAddr> {
        self.gateways.iter().filter_map(|g| Some((g.clone(), self.address_of(g)?))).collect()
    }

    /// The Gateways settled without an address, each with the condition that says why
    /// (`Accepted=False/ListenersNotValid (gen 1)`).
    pub fn refused(&self) -> BTreeMap<String, String> {
        self.gateways
            .iter()
            .filter(|g| self.address_of(g).is_none())
            .filter_map(|g| Some((g.clone(), not_accepted(self.last.get(g)?)?)))
            .collect()
    }

    fn settled(&self, gateway: &str) -> bool {
        self.address_of(gateway).is_some() || self.last.get(gateway).and_then(not_accepted).is_some()
    }
}

/// The Gateway's current Accepted=False condition, shown, when it has one.
fn not_accepted(gw: &Value) -> Option<String> {
    let v = GatewayView::of(gw);
    let c = v.conditions?.into_iter().find(|c| c.type_ == "Accepted" && c.status == "False")?;
    Some(show_all(std::slice::from_ref(&c)))
}

impl Tracker for GatewayAddress {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        if let Event::Applied(v) = e
            && let ("Gateway", ns, name) = ident(v)
            && ns == self.namespace
            && self.gateways.iter().any(|g| g == name)
        {
            self.last.insert(name.to_string(), v.clone());
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        if self.gateways.iter().all(|g| self.settled(g)) { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        let ns = &self.namespace;
        let lines: Vec<String> = self
            .gateways
            .iter()
            .filter(|g| !self.settled(g))
            .map(|g| match self.last.get(g) {
                None => format!("Gateway {ns}/{g} not seen"),
                Some(obj) => {
                    let v = GatewayView::of(obj);
                    format!(
                        "Gateway {ns}/{g} has no IP address in status.addresses; conditions: {}",
                        v.conditions.as_deref().map(show_all).unwrap_or_else(|| "none current".into())
                    )
                }
            })
            .collect();
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::track::replay;
    use serde_json::json;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }
    fn gw(name: &str, addr: Option<&str>, conds: Value) -> Option<Value> {
        let mut v = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"namespace": "ns", "name": name, "generation": 1}, "status": {"conditions": conds}});
        if let Some(a) = addr {
            v["status"]["addresses"] = json!([{"type": "IPAddress", "value": a}]);
        }
        Some(v)
    }
    fn cond(t: &str, s: &str, r: &str) -> Value {
        json!({"type": t, "status": s, "reason": r, "message": "", "observedGeneration": 1})
    }

    #[test]
    fn address_wait_reports_the_conditions_when_there_is_none() {
        let mut t = GatewayAddress::new("ns", "gw");
        let p = replay(
            &mut t,
            &[(at(0), gw("gw", None, json!([cond("Accepted", "True", "Accepted"), cond("Programmed", "False", "AddressNotAssigned")])))],
        );
        assert_eq!(p, vec![Progress::Waiting]);
        assert_eq!(
            t.last_state(),
            "Gateway ns/gw has no IP address in status.addresses; conditions: Accepted=True/Accepted (gen 1), Programmed=False/AddressNotAssigned (gen 1)"
        );
        replay(&mut t, &[(at(9), gw("gw", Some("172.18.255.200"), json!([])))]);
        assert_eq!(t.address(), Some("172.18.255.200".parse().unwrap()));
        assert_eq!(t.progress(at(9)), Progress::Done);
        let hostname = json!({"status": {"addresses": [{"type": "Hostname", "value": "gw.example"}, {"value": "10.0.0.1"}]}});
        assert_eq!(gateway_addresses(&hostname), vec!["10.0.0.1".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn every_probed_gateway_needs_its_own_address() {
        let mut t = GatewayAddress::for_all("ns", &["gw".into(), "second".into()]);
        let p = replay(
            &mut t,
            &[(at(0), gw("gw", Some("172.18.255.200"), json!([]))), (at(5), gw("other", Some("172.18.255.202"), json!([])))],
        );
        // The first Gateway's address alone is not enough, and another Gateway's is not ours.
        assert_eq!(p, vec![Progress::Waiting, Progress::Waiting]);
        assert_eq!(t.last_state(), "Gateway ns/second not seen");
        replay(&mut t, &[(at(9), gw("second", Some("172.18.255.201"), json!([])))]);
        assert_eq!(t.progress(at(9)), Progress::Done);
        assert_eq!(t.address_of("second"), Some("172.18.255.201".parse().unwrap()));
        assert_eq!(t.addresses().len(), 2);
    }

    #[test]
    fn a_gateway_cilium_did_not_accept_is_settled_without_an_address() {
        let mut t = GatewayAddress::for_all("ns", &["gw".into(), "bad".into()]);
        let refused = json!([cond("Accepted", "False", "ListenersNotValid"), cond("Programmed", "False", "ListenersNotValid")]);
        let p = replay(&mut t, &[(at(0), gw("bad", None, refused)), (at(5), gw("gw", Some("172.18.255.200"), json!([])))]);
        assert_eq!(p, vec![Progress::Waiting, Progress::Done]);
        assert_eq!(t.addresses().keys().collect::<Vec<_>>(), ["gw"]);
        assert_eq!(t.refused(), BTreeMap::from([("bad".to_string(), "Accepted=False/ListenersNotValid (gen 1)".to_string())]));
        assert_eq!(t.last_state(), "");

        // A condition written for an older generation says nothing of this one: still waited for.
        let mut t = GatewayAddress::new("ns", "gw");
        let mut old =
            gw("gw", None, json!([{"type": "Accepted", "status": "False", "reason": "ListenersNotValid", "observedGeneration": 1}]));
        if let Some(o) = old.as_mut() {
            o["metadata"]["generation"] = json!(2);
        }
        assert_eq!(replay(&mut t, &[(at(0), old)]), vec![Progress::Waiting]);
        assert!(t.refused().is_empty());
        // Accepted but without an address yet (LB IPAM not done): waited for.
        let mut t = GatewayAddress::new("ns", "gw");
        let waiting = gw("gw", None, json!([cond("Accepted", "True", "Accepted"), cond("Programmed", "False", "AddressNotAssigned")]));
        assert_eq!(replay(&mut t, &[(at(0), waiting)]), vec![Progress::Waiting]);
    }
}
