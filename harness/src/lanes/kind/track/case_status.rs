//! The conditions a case names, on its Gateway, listeners and routes, read from watched
//! objects.
//!
//! Rules, each tested below with recorded sequences:
//! * a condition whose `observedGeneration` is older than the object's `metadata.generation`
//!   describes an older spec and is ignored; a subject with only stale conditions counts as not
//!   observed (so an `absent` expectation cannot pass on stale data);
//! * the wait ends when every expectation holds on fresh conditions and has held, unchanged,
//!   for the settle window: a condition that flaps resets the window;
//! * when time runs out, the last fresh view is what gets judged, and the last state (stale
//!   conditions included, marked) is what the message shows.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use super::{Event, Progress, Tracker, generation, ident};
use crate::case::Applied;
use crate::case::manifests::ROUTE_KINDS;
use crate::evidence::Observed;
use crate::judge::{Aspect, ConditionObs, judge_condition};

/// Cilium's controller name in route status parents.
pub const CILIUM_CONTROLLER: &str = "io.cilium/gateway-controller";

fn obs(c: &Value) -> Option<ConditionObs> {
    let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    Some(ConditionObs {
        type_: s("type")?,
        status: s("status")?,
        reason: s("reason").unwrap_or_default(),
        message: s("message").unwrap_or_default(),
        observed_generation: c.get("observedGeneration").and_then(Value::as_i64),
    })
}

/// Splits a `conditions` array into (fresh, stale) for an object at `generation`. A condition
/// without observedGeneration cannot be dated and counts as fresh.
pub fn conditions_of(conds: Option<&Value>, generation: Option<i64>) -> (Vec<ConditionObs>, Vec<ConditionObs>) {
    let all: Vec<ConditionObs> = conds.and_then(Value::as_array).into_iter().flatten().filter_map(obs).collect();
    all.into_iter().partition(|c| match (c.observed_generation, generation) {
        (Some(o), Some(g)) => o >= g,
        _ => true,
    })
}

/// What a Gateway object says, fresh conditions only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayView {
    pub generation: Option<i64>,
    /// `None` when the Gateway carries no fresh condition at all.
    pub conditions: Option<Vec<ConditionObs>>,
    /// Listeners with at least one fresh condition.
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    pub addresses: Vec<IpAddr>,
    pub stale: Vec<String>,
}

impl GatewayView {
    pub fn of(gw: &Value) -> GatewayView {
        let generation = generation(gw);
        let mut view = GatewayView { generation, addresses: gateway_addresses(gw), ..GatewayView::default() };
        let (fresh, stale) = conditions_of(gw.pointer("/status/conditions"), generation);
        view.stale.extend(stale.iter().map(|c| format!("gateway {}", show(c))));
        view.conditions = (!fresh.is_empty()).then_some(fresh);
        for l in gw.pointer("/status/listeners").and_then(Value::as_array).into_iter().flatten() {
            let Some(name) = l.get("name").and_then(Value::as_str) else { continue };
            let (fresh, stale) = conditions_of(l.get("conditions"), generation);
            view.stale.extend(stale.iter().map(|c| format!("listener {name} {}", show(c))));
            if !fresh.is_empty() {
                view.listeners.insert(name.to_string(), fresh);
            }
        }
        view
    }
}

/// The Gateway's IP addresses (`status.addresses` of type IPAddress, or untyped).
pub fn gateway_addresses(gw: &Value) -> Vec<IpAddr> {
    gw.pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("type").and_then(Value::as_str).is_none_or(|t| t == "IPAddress"))
        .filter_map(|a| a.get("value").and_then(Value::as_str)?.parse().ok())
        .collect()
}

/// A route's fresh conditions per parent of `gateway` written by Cilium, keyed as expectations
/// key them: the parentRef's sectionName, or the Gateway's name when it has none.
pub fn route_parents(route: &Value, gateway: &str) -> (BTreeMap<String, Vec<ConditionObs>>, Vec<String>) {
    let generation = generation(route);
    let mut out = BTreeMap::new();
    let mut stale_out = Vec::new();
    for p in route.pointer("/status/parents").and_then(Value::as_array).into_iter().flatten() {
        if p.get("controllerName").and_then(Value::as_str).is_some_and(|c| c != CILIUM_CONTROLLER) {
            continue;
        }
        let r = p.get("parentRef");
        if r.and_then(|r| r.get("name")).and_then(Value::as_str) != Some(gateway) {
            continue;
        }
        let key = r.and_then(|r| r.get("sectionName")).and_then(Value::as_str).unwrap_or(gateway).to_string();
        let (fresh, stale) = conditions_of(p.get("conditions"), generation);
        stale_out.extend(stale.iter().map(|c| format!("route {} on {key} {}", ident(route).2, show(c))));
        if !fresh.is_empty() {
            out.insert(key, fresh);
        }
    }
    (out, stale_out)
}

fn show(c: &ConditionObs) -> String {
    let mut t = format!("{}={}", c.type_, c.status);
    if !c.reason.is_empty() {
        t.push_str(&format!("/{}", c.reason));
    }
    if let Some(g) = c.observed_generation {
        t.push_str(&format!(" (gen {g})"));
    }
    t
}

fn show_all(cs: &[ConditionObs]) -> String {
    cs.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// Waits for the conditions of a case: its Gateway, listeners and routes.
pub struct CaseConditions {
    namespace: String,
    /// Namespaces the case's manifests create (routes may live there), watched too.
    others: Vec<String>,
    gateway: String,
    applied: Applied,
    settle: Duration,
    gw: Option<Value>,
    routes: BTreeMap<String, Value>,
    matched_since: Option<Duration>,
    /// One line per change of what the case sees, for diagnostics.
    pub history: Vec<String>,
    last_line: String,
}

impl CaseConditions {
    pub fn new(namespace: &str, gateway: &str, applied: &Applied, settle: Duration) -> Self {
        CaseConditions {
            namespace: namespace.into(),
            others: Vec::new(),
            gateway: gateway.into(),
            applied: applied.clone(),
            settle,
            gw: None,
            routes: BTreeMap::new(),
            matched_since: None,
            history: Vec::new(),
            last_line: String::new(),
        }
    }

    /// Also reads routes in these namespaces (the ones the case's manifests create).
    pub fn watching(mut self, others: &[String]) -> Self {
        self.others = others.to_vec();
        self
    }

    /// The conditions as observed now (fresh only), in the shape the judge reads.
    pub fn snapshot(&self) -> Observed {
        let mut o = Observed::default();
        if let Some(gw) = &self.gw {
            let v = GatewayView::of(gw);
            o.gateway = v.conditions;
            o.listeners = v.listeners;
        }
        for (name, r) in &self.routes {
            let (parents, _) = route_parents(r, &self.gateway);
            if !parents.is_empty() {
                o.routes.insert(name.clone(), parents);
            }
        }
        o
    }

    /// Whether every expectation holds on `o`.
    fn holds(&self, o: &Observed) -> bool {
        let a = &self.applied;
        a.gateway.iter().all(|(c, p)| judge_condition(Aspect::Gateway, "", c, o.gateway.as_deref(), None, p).passed())
            && a.listeners
                .iter()
                .all(|(l, c, p)| judge_condition(Aspect::Listener, "", c, o.listeners.get(l).map(Vec::as_slice), None, p).passed())
            && a.routes.iter().all(|(r, parent, c, p)| {
                let conds = o.routes.get(r).and_then(|ps| ps.get(parent)).map(Vec::as_slice);
                judge_condition(Aspect::Route, "", c, conds, None, p).passed()
            })
    }

    fn describe(&self) -> String {
        let mut lines = Vec::new();
        match &self.gw {
            None => lines.push(format!("Gateway {}/{} not seen", self.namespace, self.gateway)),
            Some(gw) => {
                let v = GatewayView::of(gw);
                let addrs: Vec<String> = v.addresses.iter().map(|a| a.to_string()).collect();
                lines.push(format!(
                    "Gateway {}/{} (generation {}): {}; addresses: {}",
                    self.namespace,
                    self.gateway,
                    v.generation.unwrap_or(0),
                    v.conditions.as_deref().map(show_all).unwrap_or_else(|| "no current conditions".into()),
                    if addrs.is_empty() { "none".into() } else { addrs.join(", ") }
                ));
                for (l, cs) in &v.listeners {
                    lines.push(format!("  listener {l}: {}", show_all(cs)));
                }
                for s in &v.stale {
                    lines.push(format!("  ignored as stale: {s}"));
                }
            }
        }
        for (name, r) in &self.routes {
            let (parents, stale) = route_parents(r, &self.gateway);
            let kind = ident(r).0;
            if parents.is_empty() {
                lines
                    .push(format!("{kind} {name} (generation {}): no current status from {CILIUM_CONTROLLER}", generation(r).unwrap_or(0)));
            }
            for (p, cs) in parents {
                lines.push(format!("{kind} {name} on {p}: {}", show_all(&cs)));
            }
            for s in stale {
                lines.push(format!("  ignored as stale: {s}"));
            }
        }
        lines.join("\n")
    }
}

impl Tracker for CaseConditions {
    fn observe(&mut self, at: Duration, e: Event<'_>) {
        let Event::Applied(v) = e else { return };
        let (kind, ns, name) = ident(v);
        if ns != self.namespace && !self.others.iter().any(|o| o == ns) {
            return;
        }
        if kind == "Gateway" && name == self.gateway && ns == self.namespace {
            self.gw = Some(v.clone());
        } else if ROUTE_KINDS.contains(&kind) {
            self.routes.insert(name.to_string(), v.clone());
        } else {
            return;
        }
        let line = self.describe();
        if line != self.last_line {
            self.history.push(format!("t={:.1}s\n{line}", at.as_secs_f64()));
            self.last_line = line;
        }
        // Any change re-decides the match; a flap (match, mismatch, match) restarts the window.
        if self.holds(&self.snapshot()) {
            if self.matched_since.is_none() {
                self.matched_since = Some(at);
            }
        } else {
            self.matched_since = None;
        }
    }

    fn progress(&self, now: Duration) -> Progress {
        match self.matched_since {
            Some(since) if now.saturating_sub(since) >= self.settle => Progress::Done,
            _ => Progress::Waiting,
        }
    }

    fn last_state(&self) -> String {
        self.describe()
    }
}

/// The Gateway has an IP address in its status.
pub struct GatewayAddress {
    namespace: String,
    gateway: String,
    last: Option<Value>,
}

impl GatewayAddress {
    pub fn new(namespace: &str, gateway: &str) -> Self {
        GatewayAddress { namespace: namespace.into(), gateway: gateway.into(), last: None }
    }
    pub fn address(&self) -> Option<IpAddr> {
        self.last.as_ref().and_then(|g| gateway_addresses(g).into_iter().next())
    }
}

impl Tracker for GatewayAddress {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        if let Event::Applied(v) = e
            && ident(v) == ("Gateway", self.namespace.as_str(), self.gateway.as_str())
        {
            self.last = Some(v.clone());
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        if self.address().is_some() { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        match &self.last {
            None => format!("Gateway {}/{} not seen", self.namespace, self.gateway),
            Some(g) => {
                let v = GatewayView::of(g);
                format!(
                    "Gateway {}/{} has no IP address in status.addresses; conditions: {}",
                    self.namespace,
                    self.gateway,
                    v.conditions.as_deref().map(show_all).unwrap_or_else(|| "none current".into())
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{CondExpect, CondWant, Provenance, ProvenanceKind};
    use crate::lanes::kind::track::replay;
    use serde_json::json;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }
    fn prov() -> Provenance {
        Provenance { kind: ProvenanceKind::Reported, reference: None, note: None, observed: None }
    }
    fn exp(t: &str, w: &str) -> CondExpect {
        CondExpect { type_: t.into(), want: CondWant::parse(w).unwrap() }
    }
    fn cond(t: &str, s: &str, r: &str, og: i64) -> Value {
        json!({"type": t, "status": s, "reason": r, "message": "", "observedGeneration": og})
    }
    /// A Gateway as Cilium writes it: generation, gateway conditions, listener conditions.
    fn gw(generation: i64, gconds: Vec<Value>, listeners: Vec<(&str, Vec<Value>)>, addr: Option<&str>) -> Option<Value> {
        let ls: Vec<Value> = listeners.into_iter().map(|(n, cs)| json!({"name": n, "conditions": cs, "attachedRoutes": 0})).collect();
        let mut v = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"namespace": "ns", "name": "gw", "generation": generation},
            "status": {"conditions": gconds, "listeners": ls}});
        if let Some(a) = addr {
            v["status"]["addresses"] = json!([{"type": "IPAddress", "value": a}]);
        }
        Some(v)
    }
    fn applied_conflict() -> Applied {
        Applied {
            gateway: vec![(exp("Accepted", "True"), prov())],
            listeners: vec![
                ("https".into(), exp("Conflicted", "True/ProtocolConflict"), prov()),
                ("https".into(), exp("Accepted", "False"), prov()),
                ("https-apex".into(), exp("Conflicted", "absent"), prov()),
            ],
            ..Applied::default()
        }
    }

    #[test]
    fn stale_conditions_are_ignored_until_the_controller_catches_up() {
        let settle = at(1000);
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), settle);
        let seq = [
            // Generation 2 (the harness re-applied); status still from generation 1, where
            // everything was Accepted and nothing Conflicted: must not satisfy `absent`.
            (
                at(0),
                gw(
                    2,
                    vec![cond("Accepted", "True", "Accepted", 1)],
                    vec![
                        ("https", vec![cond("Accepted", "True", "Accepted", 1)]),
                        ("https-apex", vec![cond("Accepted", "True", "Accepted", 1)]),
                    ],
                    None,
                ),
            ),
            // Caught up.
            (
                at(500),
                gw(
                    2,
                    vec![cond("Accepted", "True", "Accepted", 2)],
                    vec![
                        ("https", vec![cond("Conflicted", "True", "ProtocolConflict", 2), cond("Accepted", "False", "Invalid", 2)]),
                        ("https-apex", vec![cond("Accepted", "True", "Accepted", 2)]),
                    ],
                    None,
                ),
            ),
        ];
        let p = replay(&mut t, &seq);
        assert_eq!(p, vec![Progress::Waiting, Progress::Waiting]);
        // Settled after the window, with no further event.
        assert_eq!(t.progress(at(1499)), Progress::Waiting);
        assert_eq!(t.progress(at(1500)), Progress::Done);
        let o = t.snapshot();
        assert_eq!(o.listeners["https"].len(), 2);
        assert_eq!(o.gateway.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn stale_only_subjects_are_not_observed_and_named_in_the_last_state() {
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(0));
        replay(
            &mut t,
            &[(
                at(0),
                gw(
                    3,
                    vec![cond("Accepted", "True", "Accepted", 2)],
                    vec![("https-apex", vec![cond("Accepted", "True", "Accepted", 2)])],
                    None,
                ),
            )],
        );
        let o = t.snapshot();
        assert!(o.gateway.is_none());
        assert!(!o.listeners.contains_key("https-apex"), "a stale-only listener must read as not observed");
        assert_eq!(t.progress(at(10_000)), Progress::Waiting);
        assert_eq!(
            t.last_state(),
            "Gateway ns/gw (generation 3): no current conditions; addresses: none\n  ignored as stale: gateway Accepted=True/Accepted (gen 2)\n  ignored as stale: listener https-apex Accepted=True/Accepted (gen 2)"
        );
    }

    #[test]
    fn flapping_conditions_restart_the_settle_window() {
        let good = || {
            gw(
                1,
                vec![cond("Accepted", "True", "Accepted", 1)],
                vec![
                    ("https", vec![cond("Conflicted", "True", "ProtocolConflict", 1), cond("Accepted", "False", "Invalid", 1)]),
                    ("https-apex", vec![cond("Accepted", "True", "Accepted", 1)]),
                ],
                None,
            )
        };
        let flap = || {
            gw(
                1,
                vec![cond("Accepted", "True", "Accepted", 1)],
                vec![
                    ("https", vec![cond("Accepted", "True", "Accepted", 1)]),
                    ("https-apex", vec![cond("Accepted", "True", "Accepted", 1)]),
                ],
                None,
            )
        };
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(2000));
        let p = replay(&mut t, &[(at(0), good()), (at(1500), flap()), (at(1800), good())]);
        assert_eq!(p, vec![Progress::Waiting; 3]);
        // 2 s after the first match would have been t=2000; the flap moved it to t=3800.
        assert_eq!(t.progress(at(2000)), Progress::Waiting);
        assert_eq!(t.progress(at(3799)), Progress::Waiting);
        assert_eq!(t.progress(at(3800)), Progress::Done);
        assert_eq!(t.history.len(), 3, "{:#?}", t.history);
    }

    #[test]
    fn routes_are_read_per_parent_of_our_gateway_from_cilium_only() {
        let route = json!({"kind": "TLSRoute", "metadata": {"namespace": "ns", "name": "api", "generation": 1},
        "status": {"parents": [
            {"parentRef": {"name": "gw", "sectionName": "tls-api"}, "controllerName": CILIUM_CONTROLLER,
             "conditions": [cond("Accepted", "True", "Accepted", 1), cond("ResolvedRefs", "True", "ResolvedRefs", 1)]},
            {"parentRef": {"name": "gw"}, "controllerName": CILIUM_CONTROLLER, "conditions": [cond("Accepted", "False", "NotAllowedByListeners", 1)]},
            {"parentRef": {"name": "other", "sectionName": "x"}, "controllerName": CILIUM_CONTROLLER, "conditions": [cond("Accepted", "True", "Accepted", 1)]},
            {"parentRef": {"name": "gw", "sectionName": "y"}, "controllerName": "example.com/other", "conditions": [cond("Accepted", "True", "Accepted", 1)]}
        ]}});
        let (parents, stale) = route_parents(&route, "gw");
        assert_eq!(parents.keys().collect::<Vec<_>>(), vec!["gw", "tls-api"]);
        assert!(stale.is_empty());
        let applied = Applied {
            routes: vec![
                ("api".into(), "tls-api".into(), exp("Accepted", "True"), prov()),
                ("api".into(), "gw".into(), exp("Accepted", "False"), prov()),
            ],
            ..Applied::default()
        };
        let mut t = CaseConditions::new("ns", "gw", &applied, at(0));
        t.observe(at(5), Event::Applied(&route));
        assert_eq!(t.progress(at(5)), Progress::Done);
        assert!(
            t.last_state().contains("TLSRoute api on tls-api: Accepted=True/Accepted (gen 1), ResolvedRefs=True/ResolvedRefs (gen 1)"),
            "{}",
            t.last_state()
        );
    }

    #[test]
    fn objects_of_other_namespaces_are_ignored() {
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(0));
        let mut other = gw(1, vec![cond("Accepted", "True", "Accepted", 1)], vec![], None).unwrap();
        other["metadata"]["namespace"] = json!("elsewhere");
        t.observe(at(1), Event::Applied(&other));
        assert!(t.snapshot().gateway.is_none());
        assert!(t.history.is_empty());
    }

    #[test]
    fn routes_in_a_namespace_the_case_creates_are_read() {
        // route-without-sectionname-selector puts its HTTPRoute in `{namespace}-dashboard`:
        // before, it was dropped as "another namespace" and judged never observed.
        let route = json!({"kind": "HTTPRoute", "metadata": {"namespace": "ns-dashboard", "name": "dashboard", "generation": 1},
            "status": {"parents": [{"parentRef": {"name": "gw", "namespace": "ns"}, "controllerName": CILIUM_CONTROLLER,
                "conditions": [cond("Accepted", "True", "Accepted", 1)]}]}});
        let applied = Applied { routes: vec![("dashboard".into(), "gw".into(), exp("Accepted", "True"), prov())], ..Applied::default() };
        let mut t = CaseConditions::new("ns", "gw", &applied, at(0)).watching(&["ns-dashboard".to_string()]);
        t.observe(at(1), Event::Applied(&route));
        assert_eq!(t.progress(at(1)), Progress::Done);
        assert!(t.snapshot().routes.contains_key("dashboard"));
        // A Gateway of the same name in the other namespace is not the case's Gateway.
        let mut other = gw(1, vec![cond("Accepted", "True", "Accepted", 1)], vec![], None).unwrap();
        other["metadata"]["namespace"] = json!("ns-dashboard");
        t.observe(at(2), Event::Applied(&other));
        assert!(t.snapshot().gateway.is_none());
        // Without the extra namespace the route stays unseen.
        let mut before = CaseConditions::new("ns", "gw", &applied, at(0));
        before.observe(at(1), Event::Applied(&route));
        assert!(before.snapshot().routes.is_empty());
    }

    #[test]
    fn address_wait_reports_the_conditions_when_there_is_none() {
        let mut t = GatewayAddress::new("ns", "gw");
        let p = replay(
            &mut t,
            &[(
                at(0),
                gw(1, vec![cond("Accepted", "True", "Accepted", 1), cond("Programmed", "False", "AddressNotAssigned", 1)], vec![], None),
            )],
        );
        assert_eq!(p, vec![Progress::Waiting]);
        assert_eq!(
            t.last_state(),
            "Gateway ns/gw has no IP address in status.addresses; conditions: Accepted=True/Accepted (gen 1), Programmed=False/AddressNotAssigned (gen 1)"
        );
        replay(&mut t, &[(at(9), gw(1, vec![], vec![], Some("172.18.255.200")))]);
        assert_eq!(t.address(), Some("172.18.255.200".parse().unwrap()));
        assert_eq!(t.progress(at(9)), Progress::Done);
        let hostname = json!({"status": {"addresses": [{"type": "Hostname", "value": "gw.example"}, {"value": "10.0.0.1"}]}});
        assert_eq!(gateway_addresses(&hostname), vec!["10.0.0.1".parse::<IpAddr>().unwrap()]);
    }
}
