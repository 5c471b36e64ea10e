//! The conditions a case names, on its Gateways, their listeners, its ListenerSets and its
//! routes, read from watched objects.
//!
//! Rules, each tested below with recorded sequences:
//! * a condition whose `observedGeneration` is older than the object's `metadata.generation`
//!   describes an older spec and is ignored; a subject with only stale conditions counts as not
//!   observed (so an `absent` expectation cannot pass on stale data);
//! * every Gateway and ListenerSet of the case is read, keyed as the model lane keys them
//!   (`lanes::model::observed_of`): with one Gateway, listeners by name; with several,
//!   `<gateway>/<listener>` and each Gateway's conditions by name; ListenerSet listeners as
//!   `<listenerset>/<listener>`; route parents as `parent_key` names them;
//! * a cluster that serves no ListenerSet kind (Gateway API before 1.6) is an observation: the
//!   case's ListenerSets exist nowhere and carry no condition;
//! * the wait ends when every expectation holds on fresh conditions and has held, unchanged,
//!   for the settle window: a condition that flaps resets the window;
//! * when the expectations are another lane's prediction ([`CaseConditions::ending_when_quiet`]),
//!   the wait also ends once every Gateway carries fresh conditions and nothing seen has
//!   changed for the quiet window: what was seen is then the answer, matching or not;
//! * when time runs out, the last fresh view is what gets judged, and the last state (stale
//!   conditions included, marked) is what the message shows.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use super::{Event, Progress, Tracker, generation, ident};
use crate::case::Applied;
use crate::case::manifests::{ROUTE_KINDS, parent_key};
use crate::evidence::Observed;
use crate::judge::{ConditionObs, judge_case};

/// Cilium's controller name in route status parents.
pub const CILIUM_CONTROLLER: &str = "io.cilium/gateway-controller";

const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

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

/// What a Gateway (or a ListenerSet: its status has the same shape) says, fresh conditions
/// only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayView {
    pub generation: Option<i64>,
    /// `None` when the object carries no fresh condition at all.
    pub conditions: Option<Vec<ConditionObs>>,
    /// Listeners with at least one fresh condition.
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    pub addresses: Vec<IpAddr>,
    pub stale: Vec<String>,
}

impl GatewayView {
    pub fn of(gw: &Value) -> GatewayView {
        Self::of_kind(gw, "gateway")
    }

    fn of_kind(obj: &Value, what: &str) -> GatewayView {
        let generation = generation(obj);
        let mut view = GatewayView { generation, addresses: gateway_addresses(obj), ..GatewayView::default() };
        let (fresh, stale) = conditions_of(obj.pointer("/status/conditions"), generation);
        view.stale.extend(stale.iter().map(|c| format!("{what} {}", show(c))));
        view.conditions = (!fresh.is_empty()).then_some(fresh);
        for l in obj.pointer("/status/listeners").and_then(Value::as_array).into_iter().flatten() {
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

/// The parents a case's routes may name: its Gateways and ListenerSets, in its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parents<'a> {
    /// The case's namespace: a parentRef without a namespace means the route's own.
    pub namespace: &'a str,
    pub gateways: &'a [String],
    pub listener_sets: &'a [String],
}

impl Parents<'_> {
    /// The expectation key of a status parent that is one of the case's, or `None`.
    fn key(&self, route_ns: &str, r: &Value) -> Option<String> {
        let s = |k: &str| r.get(k).and_then(Value::as_str);
        let group = s("group").unwrap_or(GATEWAY_GROUP);
        let kind = s("kind").unwrap_or("Gateway");
        let name = s("name")?;
        if group != GATEWAY_GROUP || s("namespace").unwrap_or(route_ns) != self.namespace {
            return None;
        }
        let known = match kind {
            "Gateway" => self.gateways.iter().any(|g| g == name),
            "ListenerSet" => self.listener_sets.iter().any(|l| l == name),
            _ => false,
        };
        let single = (self.gateways.len() == 1).then(|| self.gateways[0].as_str());
        known.then(|| parent_key(kind, name, s("sectionName"), single))
    }
}

/// A route's fresh conditions per parent written by Cilium that is one of the case's, keyed as
/// expectations key them ([`parent_key`]): with one Gateway, its sectionName or the Gateway's
/// name; otherwise `<gateway or listenerset>/<sectionName>`.
pub fn route_parents(route: &Value, parents: &Parents<'_>) -> (BTreeMap<String, Vec<ConditionObs>>, Vec<String>) {
    let generation = generation(route);
    let route_ns = ident(route).1;
    let mut out = BTreeMap::new();
    let mut stale_out = Vec::new();
    for p in route.pointer("/status/parents").and_then(Value::as_array).into_iter().flatten() {
        if p.get("controllerName").and_then(Value::as_str).is_some_and(|c| c != CILIUM_CONTROLLER) {
            continue;
        }
        let Some(key) = p.get("parentRef").and_then(|r| parents.key(route_ns, r)) else { continue };
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

pub(super) fn show_all(cs: &[ConditionObs]) -> String {
    cs.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// Waits for the conditions of a case: its Gateways, listeners, ListenerSets and routes.
pub struct CaseConditions {
    namespace: String,
    /// Namespaces the case's manifests create (routes and ListenerSets may live there),
    /// watched too.
    others: Vec<String>,
    /// The case's Gateway first, then its others.
    gateways: Vec<String>,
    listener_sets: Vec<String>,
    /// Set when the cluster serves no ListenerSet kind: why.
    listener_sets_not_served: Option<String>,
    /// The condition expectations only (probes and Envoy are judged elsewhere).
    conditions: Applied,
    settle: Duration,
    gws: BTreeMap<String, Value>,
    sets: BTreeMap<String, Value>,
    routes: BTreeMap<String, Value>,
    matched_since: Option<Duration>,
    /// See [`Self::ending_when_quiet`].
    quiet: Option<Duration>,
    /// When what the case sees last changed.
    changed_at: Duration,
    /// One line per change of what the case sees, for diagnostics.
    pub history: Vec<String>,
    last_line: String,
}

impl CaseConditions {
    /// Watches `gateway` alone; [`Self::with_subjects`] adds the case's other Gateways and its
    /// ListenerSets.
    pub fn new(namespace: &str, gateway: &str, applied: &Applied, settle: Duration) -> Self {
        let conditions = Applied { probes: Vec::new(), envoy: Vec::new(), ..applied.clone() };
        CaseConditions {
            namespace: namespace.into(),
            others: Vec::new(),
            gateways: vec![gateway.to_string()],
            listener_sets: Vec::new(),
            listener_sets_not_served: None,
            conditions,
            settle,
            gws: BTreeMap::new(),
            sets: BTreeMap::new(),
            routes: BTreeMap::new(),
            matched_since: None,
            quiet: None,
            changed_at: Duration::ZERO,
            history: Vec::new(),
            last_line: String::new(),
        }
    }

    /// Also reads routes and ListenerSets in these namespaces (the ones the case's manifests
    /// create).
    pub fn watching(mut self, others: &[String]) -> Self {
        self.others = others.to_vec();
        self
    }

    /// Every Gateway of the case (the case's own first; others after it, in the case's
    /// namespace) and every ListenerSet. An empty `gateways` keeps the case's Gateway alone.
    pub fn with_subjects(mut self, gateways: &[String], listener_sets: &[String]) -> Self {
        for g in gateways {
            if !self.gateways.contains(g) {
                self.gateways.push(g.clone());
            }
        }
        self.listener_sets = listener_sets.to_vec();
        self
    }

    /// The expectations are a prediction (`check --lane operator`): the wait also ends once
    /// every Gateway of the case carries fresh conditions and nothing seen changed for `quiet`
    /// (`None`: only matching expectations end it).
    pub fn ending_when_quiet(mut self, quiet: Option<Duration>) -> Self {
        self.quiet = quiet;
        self
    }

    /// Whether every Gateway of the case has been seen with a fresh condition.
    /// Every Gateway carries fresh conditions a controller wrote: not only the Gateway API CRD's
    /// default status (every condition `Unknown/Pending`), which a Gateway has from its creation
    /// until the controller reconciles it. Found with many cases on one control plane: the
    /// operator's queue held a Gateway past the quiet window, and its defaults were taken for
    /// its answer (differential --count 200 --batch 16, seed 3, at 1.19.6).
    ///
    /// Nor an accepted Gateway still waiting for its address (Programmed False/AddressNotAssigned):
    /// cilium-operator writes that before it asks for the address (`gateway_reconcile.go:
    /// Reconcile` sets it, then `setAddressStatus` fails until LB IPAM has given the Service one,
    /// at cilium@v1.19.6), so it is a step on the way, however quiet; a Gateway that never gets
    /// one still ends the wait at its limit. Found the same way (seed 3, layout 150 read
    /// AddressNotAssigned with 16 at once at load 12-16: 198 of 200 agreed).
    fn every_gateway_answered(&self) -> bool {
        let defaults = |c: &Vec<ConditionObs>| c.iter().all(|c| c.status == "Unknown" && c.reason == "Pending");
        let awaiting_address = |c: &Vec<ConditionObs>| {
            let has = |t: &str, status: &str, reason: Option<&str>| {
                c.iter().any(|c| c.type_ == t && c.status == status && reason.is_none_or(|r| c.reason == r))
            };
            has("Accepted", "True", None) && has("Programmed", "False", Some("AddressNotAssigned"))
        };
        let written = |c: &Vec<ConditionObs>| !c.is_empty() && !defaults(c) && !awaiting_address(c);
        self.gateways.iter().all(|g| self.gws.get(g).is_some_and(|gw| GatewayView::of(gw).conditions.is_some_and(|c| written(&c))))
    }

    /// The cluster serves no ListenerSet kind (`why` says which was asked for): the case's
    /// ListenerSets were never applied, and read as existing with no condition.
    pub fn listener_sets_not_served(mut self, why: Option<&str>) -> Self {
        self.listener_sets_not_served = why.map(str::to_string);
        self
    }

    fn several(&self) -> bool {
        self.gateways.len() > 1
    }

    fn parents(&self) -> Parents<'_> {
        Parents { namespace: &self.namespace, gateways: &self.gateways, listener_sets: &self.listener_sets }
    }

    /// The conditions as observed now (fresh only), in the shape the judge reads.
    pub fn snapshot(&self) -> Observed {
        let mut o = Observed::default();
        let several = self.several();
        for (i, name) in self.gateways.iter().enumerate() {
            let Some(gw) = self.gws.get(name) else { continue };
            let v = GatewayView::of(gw);
            if i == 0 {
                o.gateway = v.conditions.clone();
            }
            if several && let Some(c) = v.conditions {
                o.gateways.insert(name.clone(), c);
            }
            for (l, cs) in v.listeners {
                let key = if several { format!("{name}/{l}") } else { l };
                o.listeners.insert(key, cs);
            }
        }
        for name in &self.listener_sets {
            if self.listener_sets_not_served.is_some() {
                o.listener_sets.insert(name.clone(), Vec::new());
                continue;
            }
            let Some(ls) = self.sets.get(name) else { continue };
            let v = GatewayView::of_kind(ls, "listenerset");
            if let Some(c) = v.conditions {
                o.listener_sets.insert(name.clone(), c);
            }
            for (l, cs) in v.listeners {
                o.listener_set_listeners.insert(format!("{name}/{l}"), cs);
            }
        }
        let parents = self.parents();
        for (name, r) in &self.routes {
            let (ps, _) = route_parents(r, &parents);
            if !ps.is_empty() {
                o.routes.insert(name.clone(), ps);
            }
        }
        o
    }

    /// Whether every condition expectation holds on `o`: the judge's own verdicts.
    fn holds(&self, o: &Observed) -> bool {
        judge_case(&self.gateways[0], &self.conditions, &o.view(), &|_| None, 1).iter().all(|v| v.passed())
    }

    fn describe(&self) -> String {
        let mut lines = Vec::new();
        for name in &self.gateways {
            describe_object(&mut lines, "Gateway", &self.namespace, name, self.gws.get(name), true);
        }
        for name in &self.listener_sets {
            match &self.listener_sets_not_served {
                Some(why) => lines.push(format!("ListenerSet {name}: not installed ({why})")),
                None => describe_object(&mut lines, "ListenerSet", &self.namespace, name, self.sets.get(name), false),
            }
        }
        let parents = self.parents();
        for (name, r) in &self.routes {
            let (ps, stale) = route_parents(r, &parents);
            let kind = ident(r).0;
            if ps.is_empty() {
                lines
                    .push(format!("{kind} {name} (generation {}): no current status from {CILIUM_CONTROLLER}", generation(r).unwrap_or(0)));
            }
            for (p, cs) in ps {
                lines.push(format!("{kind} {name} on {p}: {}", show_all(&cs)));
            }
            for s in stale {
                lines.push(format!("  ignored as stale: {s}"));
            }
        }
        lines.join("\n")
    }
}

/// The lines of one Gateway or ListenerSet in the last state and the history.
fn describe_object(lines: &mut Vec<String>, kind: &str, ns: &str, name: &str, obj: Option<&Value>, addresses: bool) {
    let Some(obj) = obj else {
        lines.push(format!("{kind} {ns}/{name} not seen"));
        return;
    };
    let what = if kind == "Gateway" { "gateway" } else { "listenerset" };
    let v = GatewayView::of_kind(obj, what);
    let addrs: Vec<String> = v.addresses.iter().map(|a| a.to_string()).collect();
    let mut line = format!(
        "{kind} {}/{name} (generation {}): {}",
        ident(obj).1,
        v.generation.unwrap_or(0),
        v.conditions.as_deref().map(show_all).unwrap_or_else(|| "no current conditions".into()),
    );
    if addresses {
        line.push_str(&format!("; addresses: {}", if addrs.is_empty() { "none".into() } else { addrs.join(", ") }));
    }
    lines.push(line);
    for (l, cs) in &v.listeners {
        lines.push(format!("  listener {l}: {}", show_all(cs)));
    }
    for s in &v.stale {
        lines.push(format!("  ignored as stale: {s}"));
    }
}

impl Tracker for CaseConditions {
    fn observe(&mut self, at: Duration, e: Event<'_>) {
        let Event::Applied(v) = e else { return };
        let (kind, ns, name) = ident(v);
        let ours = ns == self.namespace;
        if !ours && !self.others.iter().any(|o| o == ns) {
            return;
        }
        let group = v.get("apiVersion").and_then(Value::as_str).and_then(|a| a.rsplit_once('/')).map(|(g, _)| g);
        if kind == "Gateway" && ours && self.gateways.iter().any(|g| g == name) {
            self.gws.insert(name.to_string(), v.clone());
        } else if kind == "ListenerSet" && group == Some(GATEWAY_GROUP) && self.listener_sets.iter().any(|l| l == name) {
            self.sets.insert(name.to_string(), v.clone());
        } else if ROUTE_KINDS.contains(&kind) {
            self.routes.insert(name.to_string(), v.clone());
        } else {
            return;
        }
        let line = self.describe();
        if line != self.last_line {
            self.history.push(format!("t={:.1}s\n{line}", at.as_secs_f64()));
            self.last_line = line;
            self.changed_at = at;
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
        match (self.matched_since, self.quiet) {
            (Some(since), _) if now.saturating_sub(since) >= self.settle => Progress::Done,
            (_, Some(quiet)) if now.saturating_sub(self.changed_at) >= quiet && self.every_gateway_answered() => Progress::Done,
            _ => Progress::Waiting,
        }
    }

    fn last_state(&self) -> String {
        self.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{CondExpect, CondWant, Provenance, ProvenanceKind};
    use crate::lanes::cluster::track::replay;
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
    fn the_crds_default_status_is_no_answer_however_quiet() {
        let pending = gw(1, vec![cond("Accepted", "Unknown", "Pending", 1), cond("Programmed", "Unknown", "Pending", 1)], vec![], None);
        let answered = gw(1, vec![cond("Accepted", "True", "Accepted", 1), cond("Programmed", "True", "Programmed", 1)], vec![], None);
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(1000)).ending_when_quiet(Some(at(5000)));
        replay(&mut t, &[(at(0), pending)]);
        assert_eq!(t.progress(at(60_000)), Progress::Waiting, "the CRD's defaults are not the controller's answer");
        replay(&mut t, &[(at(60_000), answered)]);
        assert_eq!(t.progress(at(66_000)), Progress::Done);
    }

    #[test]
    fn an_accepted_gateway_waiting_for_its_address_is_no_answer_however_quiet() {
        let waiting =
            gw(1, vec![cond("Accepted", "True", "Accepted", 1), cond("Programmed", "False", "AddressNotAssigned", 1)], vec![], None);
        let answered = gw(1, vec![cond("Accepted", "True", "Accepted", 1), cond("Programmed", "True", "Programmed", 1)], vec![], None);
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(1000)).ending_when_quiet(Some(at(5000)));
        replay(&mut t, &[(at(0), waiting)]);
        assert_eq!(t.progress(at(20_000)), Progress::Waiting, "LB IPAM has not given the address yet");
        replay(&mut t, &[(at(20_000), answered)]);
        assert_eq!(t.progress(at(26_000)), Progress::Done);
        // Not accepted, it never gets an address: that is the answer once quiet.
        let refused = gw(
            1,
            vec![cond("Accepted", "False", "ListenersNotValid", 1), cond("Programmed", "False", "ListenersNotValid", 1)],
            vec![],
            None,
        );
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(1000)).ending_when_quiet(Some(at(5000)));
        replay(&mut t, &[(at(0), refused)]);
        assert_eq!(t.progress(at(6_000)), Progress::Done);
    }

    #[test]
    fn a_prediction_that_never_holds_ends_when_the_conditions_are_quiet() {
        // The prediction (a Conflicted listener) never holds: the operator says otherwise.
        let other = |g: i64| {
            gw(
                g,
                vec![cond("Accepted", "True", "Accepted", g)],
                vec![
                    ("https", vec![cond("Accepted", "True", "Accepted", g)]),
                    ("https-apex", vec![cond("Accepted", "True", "Accepted", g)]),
                ],
                None,
            )
        };
        let stale = gw(2, vec![cond("Accepted", "True", "Accepted", 1)], vec![], None);
        // Asserted: only the limit ends it.
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(1000));
        replay(&mut t, &[(at(0), other(1))]);
        assert_eq!(t.progress(at(60_000)), Progress::Waiting);
        // Predicted: quiet for 5 s after the last change, every Gateway answered at its generation.
        let mut t = CaseConditions::new("ns", "gw", &applied_conflict(), at(1000)).ending_when_quiet(Some(at(5000)));
        replay(&mut t, &[(at(0), stale)]);
        assert_eq!(t.progress(at(9000)), Progress::Waiting, "stale conditions are no answer, however quiet");
        replay(&mut t, &[(at(1000), other(2))]);
        assert_eq!(t.progress(at(5999)), Progress::Waiting);
        assert_eq!(t.progress(at(6000)), Progress::Done);
        assert_eq!(t.snapshot().listeners["https"][0].status, "True");
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
        let gws = ["gw".to_string()];
        let (parents, stale) = route_parents(&route, &Parents { namespace: "ns", gateways: &gws, listener_sets: &[] });
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

    /// A Gateway named `name` in `ns`.
    fn named(name: &str, g: Option<Value>) -> Value {
        let mut v = g.unwrap();
        v["metadata"]["name"] = json!(name);
        v
    }

    fn listener_set(generation: i64, conds: Vec<Value>, listeners: Vec<(&str, Vec<Value>)>) -> Value {
        let ls: Vec<Value> = listeners.into_iter().map(|(n, cs)| json!({"name": n, "conditions": cs, "attachedRoutes": 1})).collect();
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
            "metadata": {"namespace": "ns", "name": "extra", "generation": generation},
            "status": {"conditions": conds, "listeners": ls}})
    }

    fn applied_two() -> Applied {
        Applied {
            gateways: vec![("gw".into(), exp("Accepted", "True"), prov()), ("second".into(), exp("Accepted", "True"), prov())],
            listeners: vec![("second/https".into(), exp("Programmed", "True"), prov())],
            listener_sets: vec![("extra".into(), exp("Accepted", "True"), prov())],
            listener_set_listeners: vec![("extra".into(), "alt".into(), exp("Accepted", "True"), prov())],
            routes: vec![("alt".into(), "extra/alt".into(), exp("Accepted", "True"), prov())],
            ..Applied::default()
        }
    }

    #[test]
    fn several_gateways_and_a_listenerset_are_keyed_as_the_model_keys_them() {
        let subjects = ["gw".to_string(), "second".to_string()];
        let mut t = CaseConditions::new("ns", "gw", &applied_two(), at(0)).with_subjects(&subjects, &["extra".to_string()]);
        let ok = || vec![cond("Accepted", "True", "Accepted", 1), cond("Programmed", "True", "Programmed", 1)];
        let route = json!({"kind": "HTTPRoute", "metadata": {"namespace": "ns", "name": "alt", "generation": 1},
            "status": {"parents": [
                {"parentRef": {"name": "extra", "kind": "ListenerSet", "group": "gateway.networking.k8s.io", "sectionName": "alt"},
                 "controllerName": CILIUM_CONTROLLER, "conditions": [cond("Accepted", "True", "Accepted", 1)]},
                // A parentRef of kind Gateway named like the ListenerSet is another parent.
                {"parentRef": {"name": "extra", "sectionName": "alt"}, "controllerName": CILIUM_CONTROLLER,
                 "conditions": [cond("Accepted", "False", "NoMatchingParent", 1)]}]}});
        replay(&mut t, &[(at(0), gw(1, ok(), vec![("http", ok())], None)), (at(1), Some(route))]);
        assert_eq!(t.progress(at(1)), Progress::Waiting, "the second Gateway and the ListenerSet are not seen yet");
        let o = t.snapshot();
        assert!(o.listeners.contains_key("gw/http"), "{:?}", o.listeners.keys());
        assert_eq!(o.routes["alt"].keys().collect::<Vec<_>>(), ["extra/alt"]);
        t.observe(at(2), Event::Applied(&named("second", gw(1, ok(), vec![("https", ok())], None))));
        t.observe(at(3), Event::Applied(&listener_set(1, ok(), vec![("alt", ok())])));
        assert_eq!(t.progress(at(3)), Progress::Done);
        let o = t.snapshot();
        assert_eq!(o.gateways.keys().collect::<Vec<_>>(), ["gw", "second"]);
        assert_eq!(o.gateway.as_ref().map(Vec::len), Some(2), "the case's Gateway is also `gateway`");
        assert_eq!(o.listeners.keys().collect::<Vec<_>>(), ["gw/http", "second/https"]);
        assert_eq!(o.listener_sets["extra"].len(), 2);
        assert!(o.listener_set_listeners.contains_key("extra/alt"));
        assert!(t.last_state().contains("ListenerSet ns/extra (generation 1): Accepted=True/Accepted (gen 1)"), "{}", t.last_state());
        // The lane before: the case's Gateway alone; the second Gateway is never observed.
        let mut before = CaseConditions::new("ns", "gw", &applied_two(), at(0));
        before.observe(at(2), Event::Applied(&named("second", gw(1, ok(), vec![("https", ok())], None))));
        assert!(before.snapshot().gateways.is_empty() && before.snapshot().listeners.is_empty());
    }

    #[test]
    fn a_stale_listenerset_status_is_not_observed() {
        let applied = Applied { listener_sets: vec![("extra".into(), exp("Accepted", "absent"), prov())], ..Applied::default() };
        let mut t = CaseConditions::new("ns", "gw", &applied, at(0)).with_subjects(&[], &["extra".to_string()]);
        t.observe(at(0), Event::Applied(&listener_set(2, vec![cond("Programmed", "True", "Programmed", 1)], vec![])));
        assert!(!t.snapshot().listener_sets.contains_key("extra"));
        assert_eq!(t.progress(at(10)), Progress::Waiting, "absent must not pass on a stale status");
        assert!(t.last_state().contains("ignored as stale: listenerset Programmed=True/Programmed (gen 1)"), "{}", t.last_state());
    }

    #[test]
    fn a_cluster_without_listenersets_is_an_observation() {
        let applied = Applied { listener_sets: vec![("extra".into(), exp("Accepted", "absent"), prov())], ..Applied::default() };
        let why = "the API server serves no gateway.networking.k8s.io/v1 ListenerSet";
        let mut t =
            CaseConditions::new("ns", "gw", &applied, at(0)).with_subjects(&[], &["extra".to_string()]).listener_sets_not_served(Some(why));
        replay(&mut t, &[(at(0), gw(1, vec![cond("Accepted", "True", "Accepted", 1)], vec![], None))]);
        assert_eq!(t.progress(at(0)), Progress::Done);
        assert_eq!(t.snapshot().listener_sets["extra"], Vec::new());
        assert!(t.last_state().contains(&format!("ListenerSet extra: not installed ({why})")), "{}", t.last_state());
    }
}
