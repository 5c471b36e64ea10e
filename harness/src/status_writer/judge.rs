//! What a recorded sequence of one route's versions says, purely: every move of its
//! `resourceVersion` in the window, who made it (the stand-in knows its own writes by the
//! resourceVersion each returned; any other status write is named by the route's
//! `managedFields`), which `status.parents` entries it touched, and so whether Cilium's entry
//! or the stand-in's was ever overwritten or removed by the other, and whether the route
//! settled or was still moving when the window closed. The evidence keeps the record, so the
//! verdict is re-derived from it by [`judge`] alone.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One `status.parents` entry, as the API server returned it (compared field for field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub controller: String,
    pub parent_ref: Value,
    pub conditions: Vec<Value>,
}

/// A `managedFields` entry of the status subresource: who last wrote status fields, and when
/// (second precision, as the API server stamps it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manager {
    pub manager: String,
    pub operation: String,
    pub time: String,
}

/// One version of the route: the create response, or a watch event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    /// Milliseconds since the route's record began (its create request).
    pub at_ms: u64,
    /// `CREATED` (the create response) or the watch event's type (`MODIFIED`, `DELETED`).
    pub event: String,
    pub resource_version: String,
    pub generation: i64,
    pub parents: Vec<Entry>,
    pub status_managers: Vec<Manager>,
}

/// What one of the stand-in's status writes got back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WriteOutcome {
    /// Stored: the route's new resourceVersion.
    Written { resource_version: String },
    /// 409: the route moved since the version the write was computed from (the next watch
    /// event brings the newer version, and the stand-in decides again).
    Conflict,
    /// Any other refusal or error, said as the API server or the client said it.
    Failed { error: String },
}

/// One status write of the stand-in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    pub at_ms: u64,
    /// The resourceVersion the write carried (the version it was computed from).
    pub from_resource_version: String,
    #[serde(flatten)]
    pub outcome: WriteOutcome,
}

/// Everything recorded for one route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `HTTPRoute` or `TLSRoute`.
    pub kind: String,
    pub name: String,
    /// Whose entry came first (see [`super::Order`]).
    pub order: String,
    /// Cilium's controllerName at the tag.
    pub cilium_controller: String,
    /// The stand-in's controllerName.
    pub stand_in_controller: String,
    /// The stand-in's field manager (how `managedFields` names its writes).
    pub stand_in_manager: String,
    /// When the stand-in began writing (ms since the record began), and so the window's start;
    /// `None` when it never began (Cilium wrote no entry within the wait).
    pub window_start_ms: Option<u64>,
    /// The version (index into `seen`) the stand-in began on: the moves after it, up to the
    /// window's end, are the window's (cilium-first: the version with Cilium's first entry,
    /// whose own move came before the stand-in was there).
    pub window_from: usize,
    pub window_ms: u64,
    /// A move this close to the window's end (or closer) means the route was still moving.
    pub quiet_ms: u64,
    pub seen: Vec<Seen>,
    pub writes: Vec<Write>,
}

/// Who moved the route's resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "writer", content = "manager", rename_all = "snake_case")]
pub enum Writer {
    /// The stand-in: the resourceVersion one of its writes returned.
    StandIn,
    /// Cilium's operator: the only other status manager in `managedFields`, or the one whose
    /// stamp moved, and its name says cilium.
    Cilium(String),
    /// Someone else, or no status field changed (a spec or metadata write): the managers named.
    Other(String),
}

/// What a move did to one `status.parents` entry, keyed by its controllerName (the routes here
/// have one parentRef, so the controllerName names the entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    Added {
        controller: String,
    },
    Removed {
        controller: String,
    },
    /// The entry's conditions (or parentRef) differ field for field; the condition types that
    /// differ are listed.
    Changed {
        controller: String,
        conditions: Vec<String>,
    },
}

/// One move of the route's resourceVersion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Move {
    pub at_ms: u64,
    pub resource_version: String,
    pub by: Writer,
    pub in_window: bool,
    pub changes: Vec<Change>,
}

/// What became of an entry over the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Present and never touched by the other writer.
    Kept,
    /// The other writer changed it at least once (`times`), and removed it `removed` times.
    Disturbed { changed: usize, removed: usize },
    /// The writer never had an entry of its own on the route.
    NeverWritten,
}

/// The answer for one route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub moves: Vec<Move>,
    /// resourceVersion moves inside the window, and by whom.
    pub moves_in_window: usize,
    pub by_stand_in: usize,
    pub by_cilium: usize,
    pub by_other: usize,
    /// Cilium's own entry: kept, disturbed by the stand-in, or never written.
    pub cilium_entry: Fate,
    /// The stand-in's entry: kept, disturbed by Cilium (or anyone not the stand-in).
    pub stand_in_entry: Fate,
    /// Cilium's conditions were written into the stand-in's entry (its merge matched the
    /// entry on parentRef alone).
    pub cilium_wrote_into_stand_in_entry: bool,
    /// The last move inside the window, ms after the window began.
    pub last_move_ms: Option<u64>,
    /// No move in the window's last `quiet_ms`: the two writers left each other alone.
    pub settled: bool,
}

fn is_cilium(manager: &str) -> bool {
    manager.to_ascii_lowercase().contains("cilium")
}

/// Who wrote `new` (the version after `old`): the stand-in when one of its writes returned
/// that resourceVersion; else the status managers other than the stand-in, preferring the one
/// whose stamp moved.
fn writer_of(r: &Record, old: &Seen, new: &Seen) -> Writer {
    let own = r
        .writes
        .iter()
        .any(|w| matches!(&w.outcome, WriteOutcome::Written { resource_version } if *resource_version == new.resource_version));
    if own {
        return Writer::StandIn;
    }
    let others: Vec<&Manager> = new.status_managers.iter().filter(|m| m.manager != r.stand_in_manager).collect();
    let moved: Vec<&Manager> = others.iter().copied().filter(|m| !old.status_managers.contains(m)).collect();
    let named = if moved.len() == 1 || (moved.is_empty() && others.len() == 1) {
        moved.first().or(others.first()).map(|m| m.manager.clone())
    } else {
        None
    };
    if old.parents == new.parents {
        // No entry changed: a write of something else (spec, metadata) or of the same status.
        let names: Vec<&str> = others.iter().map(|m| m.manager.as_str()).collect();
        return Writer::Other(if names.is_empty() { "no status manager".into() } else { names.join(", ") });
    }
    match named {
        Some(m) if is_cilium(&m) => Writer::Cilium(m),
        Some(m) => Writer::Other(m),
        None => Writer::Other(others.iter().map(|m| m.manager.as_str()).collect::<Vec<_>>().join(", ")),
    }
}

fn entry<'a>(parents: &'a [Entry], controller: &str) -> Option<&'a Entry> {
    parents.iter().find(|e| e.controller == controller)
}

fn condition_type(c: &Value) -> String {
    c.get("type").and_then(Value::as_str).unwrap_or("?").to_string()
}

/// The entries `old` and `new` differ in, by controllerName.
pub fn changes(old: &[Entry], new: &[Entry]) -> Vec<Change> {
    let mut controllers: Vec<&str> = old.iter().chain(new).map(|e| e.controller.as_str()).collect();
    controllers.dedup();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for c in controllers {
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        match (entry(old, c), entry(new, c)) {
            (None, Some(_)) => out.push(Change::Added { controller: c.into() }),
            (Some(_), None) => out.push(Change::Removed { controller: c.into() }),
            (Some(a), Some(b)) if a != b => {
                let mut types: Vec<String> = Vec::new();
                for t in a.conditions.iter().chain(&b.conditions).map(condition_type) {
                    let ca = a.conditions.iter().find(|x| condition_type(x) == t);
                    let cb = b.conditions.iter().find(|x| condition_type(x) == t);
                    if ca != cb && !types.contains(&t) {
                        types.push(t);
                    }
                }
                if a.parent_ref != b.parent_ref {
                    types.push("parentRef".into());
                }
                out.push(Change::Changed { controller: c.into(), conditions: types });
            }
            _ => {}
        }
    }
    out
}

fn touched(changes: &[Change], controller: &str) -> (usize, usize) {
    changes.iter().fold((0, 0), |(c, r), ch| match ch {
        Change::Changed { controller: x, .. } if x == controller => (c + 1, r),
        Change::Removed { controller: x } if x == controller => (c, r + 1),
        _ => (c, r),
    })
}

fn fate(ever: bool, changed: usize, removed: usize) -> Fate {
    match (ever, changed + removed) {
        (false, _) => Fate::NeverWritten,
        (true, 0) => Fate::Kept,
        (true, _) => Fate::Disturbed { changed, removed },
    }
}

/// The verdict of a record: each move attributed and classified, counted in the window.
pub fn judge(r: &Record) -> Verdict {
    let start = r.window_start_ms;
    let end = start.map(|s| s + r.window_ms);
    let in_window = |i: usize, at: u64| i > r.window_from && matches!(end, Some(e) if at <= e);
    let mut moves = Vec::new();
    for (i, pair) in r.seen.windows(2).enumerate() {
        let (old, new) = (&pair[0], &pair[1]);
        if old.resource_version == new.resource_version {
            continue;
        }
        moves.push(Move {
            at_ms: new.at_ms,
            resource_version: new.resource_version.clone(),
            by: writer_of(r, old, new),
            in_window: in_window(i + 1, new.at_ms),
            changes: changes(&old.parents, &new.parents),
        });
    }
    let windowed: Vec<&Move> = moves.iter().filter(|m| m.in_window).collect();
    let count = |f: fn(&Writer) -> bool| windowed.iter().filter(|m| f(&m.by)).count();
    let (mut cilium_changed, mut cilium_removed, mut own_changed, mut own_removed) = (0, 0, 0, 0);
    let mut into_stand_in = false;
    for m in &moves {
        if m.by == Writer::StandIn {
            let (c, rm) = touched(&m.changes, &r.cilium_controller);
            cilium_changed += c;
            cilium_removed += rm;
        } else {
            let (c, rm) = touched(&m.changes, &r.stand_in_controller);
            own_changed += c;
            own_removed += rm;
            into_stand_in |= matches!(m.by, Writer::Cilium(_)) && c > 0;
        }
    }
    let ever = |controller: &str| r.seen.iter().any(|s| entry(&s.parents, controller).is_some());
    let last_move_ms = windowed.last().zip(start).map(|(m, s)| m.at_ms.saturating_sub(s));
    let settled = match last_move_ms {
        None => start.is_some(),
        Some(last) => last + r.quiet_ms <= r.window_ms,
    };
    Verdict {
        moves_in_window: windowed.len(),
        by_stand_in: count(|w| *w == Writer::StandIn),
        by_cilium: count(|w| matches!(w, Writer::Cilium(_))),
        by_other: count(|w| matches!(w, Writer::Other(_))),
        cilium_entry: fate(ever(&r.cilium_controller), cilium_changed, cilium_removed),
        stand_in_entry: fate(ever(&r.stand_in_controller), own_changed, own_removed),
        cilium_wrote_into_stand_in_entry: into_stand_in,
        last_move_ms,
        settled,
        moves,
    }
}

/// The verdict in one line: what a maintainer reads first.
pub fn summary(r: &Record, v: &Verdict) -> String {
    let Some(_) = r.window_start_ms else {
        return "not measured: the stand-in never began (Cilium wrote no entry within the wait)".into();
    };
    let state = if v.settled {
        match v.last_move_ms {
            Some(ms) => format!("settled (last move {:.1}s into the window)", ms as f64 / 1000.0),
            None => "settled (no move in the window)".into(),
        }
    } else {
        "PING-PONG: still moving when the window closed".into()
    };
    let fate = |f: &Fate, whose: &str, by: &str| match f {
        Fate::Kept => format!("{whose} entry kept"),
        Fate::NeverWritten => format!("{whose} entry: none (never written)"),
        Fate::Disturbed { changed, removed } => format!("{whose} entry overwritten by {by} {changed}x, removed {removed}x"),
    };
    let mut s = format!(
        "{state}; resourceVersion moved {} time{} in {}s (stand-in {}, Cilium {}, other {}); {}; {}",
        v.moves_in_window,
        if v.moves_in_window == 1 { "" } else { "s" },
        r.window_ms / 1000,
        v.by_stand_in,
        v.by_cilium,
        v.by_other,
        fate(&v.cilium_entry, "Cilium's", "the stand-in"),
        fate(&v.stand_in_entry, "the stand-in's", "Cilium"),
    );
    if v.cilium_wrote_into_stand_in_entry {
        s.push_str("; Cilium wrote its conditions into the stand-in's entry (matched on parentRef alone)");
    }
    s
}

#[cfg(test)]
mod tests;
