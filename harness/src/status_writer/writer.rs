//! The second status writer's decision, purely: layout-gate's stand-in for cozystack's
//! TenantGateway controller. It owns one `status.parents` entry per route, keyed on its own
//! controllerName and the parentRef the route names (cozystack#4199: "our merge keys on
//! (ControllerName, ParentRef)"; `cozystack/cozystack@48214d7:internal/controller/tenantgateway/conflict.go`,
//! `mergeRouteParentStatus`, finds its entry by controllerName and overwrites that entry's
//! conditions, leaving every other entry alone), writes one `Accepted` condition into it as
//! `updateRouteStatuses` there does, and re-writes it whenever it is missing or not as it
//! wants it: a controller that reacts to every change of the route. Every other entry is kept
//! as it was read, in place.

use serde_json::{Value, json};

use super::judge::Entry;

/// The stand-in's controllerName: its own, not cozystack's, so no reader mistakes it for the
/// real controller.
pub const CONTROLLER: &str = "layout-gate.test/tenantgateway-stand-in";

/// The field manager its status writes carry: how the route's `managedFields` name them.
pub const MANAGER: &str = "layout-gate-status-writer";

/// The message of its Accepted condition.
pub const MESSAGE: &str = "route attached (layout-gate's stand-in for cozystack's TenantGateway controller)";

/// A condition without its `lastTransitionTime`: what the stand-in compares (the API server
/// truncates the time to seconds, and a controller does not rewrite a condition for it).
fn without_time(c: &Value) -> Value {
    let mut c = c.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("lastTransitionTime");
    }
    c
}

/// The conditions the stand-in wants at `generation`: `Accepted=True`, the transition time kept
/// from an `Accepted` condition of the same status already in its entry, else `now`.
pub fn desired(generation: i64, existing: Option<&Entry>, now: &str) -> Vec<Value> {
    let kept_time = existing
        .and_then(|e| e.conditions.iter().find(|c| c.get("type") == Some(&json!("Accepted")) && c.get("status") == Some(&json!("True"))))
        .and_then(|c| c.get("lastTransitionTime").cloned());
    vec![json!({
        "type": "Accepted",
        "status": "True",
        "reason": "Accepted",
        "message": MESSAGE,
        "observedGeneration": generation,
        "lastTransitionTime": kept_time.unwrap_or_else(|| json!(now)),
    })]
}

/// The `status.parents` the stand-in writes for a route at `generation` whose parents are
/// `parents`, or `None` when its entry for `parent_ref` is there and exactly as it wants it
/// (transition times aside). Its entry keeps its place; a missing one is appended.
pub fn rewrite(parents: &[Entry], parent_ref: &Value, generation: i64, now: &str) -> Option<Vec<Entry>> {
    let mine = |e: &Entry| e.controller == CONTROLLER && &e.parent_ref == parent_ref;
    let existing = parents.iter().find(|e| mine(e));
    let want = desired(generation, existing, now);
    if let Some(e) = existing
        && e.conditions.iter().map(without_time).eq(want.iter().map(without_time))
    {
        return None;
    }
    let entry = Entry { controller: CONTROLLER.into(), parent_ref: parent_ref.clone(), conditions: want };
    let mut out = parents.to_vec();
    match out.iter().position(mine) {
        Some(i) => out[i] = entry,
        None => out.push(entry),
    }
    Some(out)
}

/// The entries as `status.parents` JSON.
pub fn to_json(parents: &[Entry]) -> Value {
    Value::Array(
        parents.iter().map(|e| json!({"controllerName": e.controller, "parentRef": e.parent_ref, "conditions": e.conditions})).collect(),
    )
}

/// The entries of a route object's `status.parents` (none when it has no status yet).
pub fn parents_of(route: &Value) -> Vec<Entry> {
    route
        .pointer("/status/parents")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| Entry {
                    controller: p.get("controllerName").and_then(Value::as_str).unwrap_or_default().to_string(),
                    parent_ref: p.get("parentRef").cloned().unwrap_or(Value::Null),
                    conditions: p.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pref() -> Value {
        json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "sectionName": "http"})
    }

    fn cilium() -> Entry {
        Entry {
            controller: "io.cilium/gateway-controller".into(),
            parent_ref: pref(),
            conditions: vec![
                json!({"type": "Accepted", "status": "True", "reason": "Accepted", "message": "Accepted HTTPRoute", "observedGeneration": 1, "lastTransitionTime": "t0"}),
            ],
        }
    }

    /// Missing: appended after the entries already there, which are kept as they were.
    #[test]
    fn a_missing_entry_is_appended_and_the_others_kept() {
        let out = rewrite(&[cilium()], &pref(), 1, "t1").expect("a write");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], cilium());
        assert_eq!(out[1].controller, CONTROLLER);
        assert_eq!(out[1].conditions[0]["lastTransitionTime"], "t1");
        assert_eq!(out[1].conditions[0]["observedGeneration"], 1);
    }

    /// As it wants it: no write, whatever the transition time says; a new generation is a write
    /// that keeps the transition time (the status did not change).
    #[test]
    fn an_entry_as_wanted_is_not_rewritten_and_a_new_generation_is() {
        let written = rewrite(&[cilium()], &pref(), 1, "t1").unwrap();
        assert_eq!(rewrite(&written, &pref(), 1, "t9"), None);
        let bumped = rewrite(&written, &pref(), 2, "t9").expect("a write at generation 2");
        assert_eq!(bumped[1].conditions[0]["observedGeneration"], 2);
        assert_eq!(bumped[1].conditions[0]["lastTransitionTime"], "t1");
    }

    /// Changed by someone else (another controller's conditions merged into it): rewritten in
    /// place, exactly its own conditions again; Cilium's entry untouched.
    #[test]
    fn an_entry_someone_else_changed_is_rewritten_in_place() {
        let mut written = rewrite(&[], &pref(), 1, "t1").unwrap();
        written.push(cilium());
        written[0].conditions.push(json!({"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs"}));
        written[0].conditions[0]["message"] = json!("Accepted HTTPRoute");
        let out = rewrite(&written, &pref(), 1, "t2").expect("a write");
        assert_eq!(out[0].controller, CONTROLLER);
        assert_eq!(out[0].conditions.len(), 1);
        assert_eq!(out[0].conditions[0]["message"], MESSAGE);
        assert_eq!(out[1], cilium());
    }

    /// Its entry is its controllerName and the parentRef: an entry of its name for another
    /// parentRef is not its entry for this one.
    #[test]
    fn the_entry_is_keyed_on_controller_and_parent_ref() {
        let other = rewrite(&[], &json!({"name": "other"}), 1, "t1").unwrap();
        let out = rewrite(&other, &pref(), 1, "t1").expect("a write");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], other[0]);
    }

    #[test]
    fn parents_round_trip_through_json() {
        let ps = vec![cilium()];
        assert_eq!(parents_of(&json!({"status": {"parents": to_json(&ps)}})), ps);
        assert!(parents_of(&json!({"metadata": {}})).is_empty());
    }
}
