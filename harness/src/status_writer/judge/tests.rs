use serde_json::json;

use super::*;

const CILIUM: &str = "io.cilium/gateway-controller";
const STAND_IN: &str = "layout-gate.test/tenantgateway-stand-in";
const MANAGER: &str = "layout-gate-status-writer";

fn pref() -> Value {
    json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "sectionName": "http"})
}

fn cond(t: &str, message: &str) -> Value {
    json!({"type": t, "status": "True", "reason": t, "message": message, "observedGeneration": 1, "lastTransitionTime": "2026-12-05T00:00:00Z"})
}

fn cilium_entry() -> Entry {
    Entry {
        controller: CILIUM.into(),
        parent_ref: pref(),
        conditions: vec![cond("Accepted", "Accepted HTTPRoute"), cond("ResolvedRefs", "Service reference is valid")],
    }
}

fn own_entry() -> Entry {
    Entry { controller: STAND_IN.into(), parent_ref: pref(), conditions: vec![cond("Accepted", "stand-in")] }
}

/// The stand-in's entry after Cilium merged into it: Cilium's Accepted over its own, and
/// Cilium's ResolvedRefs added.
fn merged_entry() -> Entry {
    Entry {
        controller: STAND_IN.into(),
        parent_ref: pref(),
        conditions: vec![cond("Accepted", "Accepted HTTPRoute"), cond("ResolvedRefs", "Service reference is valid")],
    }
}

fn mgr(name: &str, time: &str) -> Manager {
    Manager { manager: name.into(), operation: "Update".into(), time: time.into() }
}

fn seen(at_ms: u64, rv: u32, parents: Vec<Entry>, managers: Vec<Manager>) -> Seen {
    Seen { at_ms, event: "MODIFIED".into(), resource_version: rv.to_string(), generation: 1, parents, status_managers: managers }
}

fn written(at_ms: u64, from: u32, to: u32) -> Write {
    Write { at_ms, from_resource_version: from.to_string(), outcome: WriteOutcome::Written { resource_version: to.to_string() } }
}

fn record(order: &str, window_start_ms: Option<u64>, seen: Vec<Seen>, writes: Vec<Write>) -> Record {
    Record {
        kind: "HTTPRoute".into(),
        name: "r".into(),
        order: order.into(),
        cilium_controller: CILIUM.into(),
        stand_in_controller: STAND_IN.into(),
        stand_in_manager: MANAGER.into(),
        window_start_ms,
        window_from: usize::from(order == "cilium-first" && seen.len() > 1),
        window_ms: 30_000,
        quiet_ms: 10_000,
        seen,
        writes,
    }
}

/// Cilium's entry first, the stand-in's appended once, Cilium's reconcile finds its own entry
/// and writes nothing: one move in the window, by the stand-in, both entries kept, settled.
#[test]
fn cilium_first_one_move_both_kept_settled() {
    let c = mgr("cilium-operator-generic", "2026-12-05T00:00:01Z");
    let r = record(
        "cilium-first",
        Some(1_000),
        vec![
            seen(0, 10, vec![], vec![]),
            seen(900, 11, vec![cilium_entry()], vec![c.clone()]),
            seen(1_100, 12, vec![cilium_entry(), own_entry()], vec![c.clone(), mgr(MANAGER, "2026-12-05T00:00:02Z")]),
        ],
        vec![written(1_050, 11, 12)],
    );
    let v = judge(&r);
    assert_eq!(v.moves.len(), 2);
    assert_eq!(v.moves[0].by, Writer::Cilium("cilium-operator-generic".into()));
    assert_eq!(r.window_from, 1, "the stand-in began on the version with Cilium's entry");
    assert!(!v.moves[0].in_window, "Cilium's first entry came before the window");
    assert_eq!((v.moves_in_window, v.by_stand_in, v.by_cilium, v.by_other), (1, 1, 0, 0));
    assert_eq!(v.moves[1].changes, vec![Change::Added { controller: STAND_IN.into() }]);
    assert_eq!(v.cilium_entry, Fate::Kept);
    assert_eq!(v.stand_in_entry, Fate::Kept);
    assert!(!v.cilium_wrote_into_stand_in_entry);
    assert_eq!(v.last_move_ms, Some(100));
    assert!(v.settled);
    assert!(summary(&r, &v).starts_with("settled"), "{}", summary(&r, &v));
}

/// The stand-in's entry first: Cilium's merge writes into it, the stand-in restores it, and
/// so on to the window's end. Every Cilium move is attributed though its managedFields stamp
/// does not move within a second; Cilium never has an entry of its own.
#[test]
fn stand_in_first_ping_pong_is_counted_and_attributed() {
    let c = mgr("cilium-operator-generic", "2026-12-05T00:00:05Z");
    let o = mgr(MANAGER, "2026-12-05T00:00:05Z");
    let mut seen_list = vec![seen(0, 100, vec![], vec![]), seen(10, 101, vec![own_entry()], vec![o.clone()])];
    let mut writes = vec![written(5, 100, 101)];
    let mut rv = 101;
    let mut at = 10;
    while at < 30_000 {
        at += 500;
        rv += 1;
        seen_list.push(seen(at, rv, vec![merged_entry()], vec![o.clone(), c.clone()]));
        at += 500;
        rv += 1;
        writes.push(written(at - 10, rv - 1, rv));
        seen_list.push(seen(at, rv, vec![own_entry()], vec![o.clone(), c.clone()]));
    }
    let r = record("stand-in-first", Some(0), seen_list, writes);
    let v = judge(&r);
    assert_eq!(v.by_stand_in + v.by_cilium, v.moves_in_window);
    assert_eq!(v.by_cilium, 30);
    assert_eq!(v.by_stand_in, 30, "30 restores in the window and the first write");
    assert_eq!(v.cilium_entry, Fate::NeverWritten);
    assert_eq!(v.stand_in_entry, Fate::Disturbed { changed: 30, removed: 0 });
    assert!(v.cilium_wrote_into_stand_in_entry);
    assert!(!v.settled);
    let s = summary(&r, &v);
    assert!(s.starts_with("PING-PONG") && s.contains("parentRef alone"), "{s}");
}

/// The first write of stand-in-first is the window's first move.
#[test]
fn a_move_at_the_windows_start_is_in_it() {
    let r = record(
        "stand-in-first",
        Some(0),
        vec![seen(0, 1, vec![], vec![]), seen(0, 2, vec![own_entry()], vec![mgr(MANAGER, "t")])],
        vec![written(0, 1, 2)],
    );
    let v = judge(&r);
    assert_eq!((v.moves_in_window, v.by_stand_in), (1, 1));
}

/// A stand-in that removed or rewrote Cilium's entry is caught; a change with no status entry
/// touched (a spec write) is neither writer's.
#[test]
fn a_stand_in_that_clobbers_ciliums_entry_is_caught() {
    let c = mgr("cilium-operator-generic", "t1");
    let r = record(
        "cilium-first",
        Some(0),
        vec![
            seen(0, 1, vec![cilium_entry()], vec![c.clone()]),
            seen(10, 2, vec![own_entry()], vec![c.clone(), mgr(MANAGER, "t2")]),
            seen(20, 3, vec![own_entry()], vec![c.clone(), mgr(MANAGER, "t2")]),
        ],
        vec![written(5, 1, 2)],
    );
    let v = judge(&r);
    assert_eq!(v.cilium_entry, Fate::Disturbed { changed: 0, removed: 1 });
    assert_eq!(v.moves[1].by, Writer::Other("cilium-operator-generic".into()));
    assert_eq!(v.by_other, 1);
}

/// Entries compared field for field: a condition's message alone is a change, named by type;
/// equal entries are none.
#[test]
fn changes_name_the_condition_types_that_differ() {
    assert!(changes(&[own_entry()], &[own_entry()]).is_empty());
    assert_eq!(
        changes(&[own_entry()], &[merged_entry()]),
        vec![Change::Changed { controller: STAND_IN.into(), conditions: vec!["Accepted".into(), "ResolvedRefs".into()] }]
    );
}

/// A record from the evidence file judges the same: the verdict is re-derivable.
#[test]
fn a_record_round_trips_through_json_and_judges_the_same() {
    let r = record(
        "cilium-first",
        Some(0),
        vec![seen(0, 1, vec![cilium_entry()], vec![]), seen(5, 2, vec![cilium_entry(), own_entry()], vec![mgr(MANAGER, "t")])],
        vec![written(4, 1, 2), Write { at_ms: 6, from_resource_version: "1".into(), outcome: WriteOutcome::Conflict }],
    );
    let back: Record = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    assert_eq!(judge(&back), judge(&r));
}

/// Never started (Cilium wrote no entry within the wait): nothing in a window, said so.
#[test]
fn a_route_never_measured_says_so() {
    let r = record("cilium-first", None, vec![seen(0, 1, vec![], vec![])], vec![]);
    let v = judge(&r);
    assert!(!v.settled && v.moves_in_window == 0);
    assert!(summary(&r, &v).starts_with("not measured"));
}
