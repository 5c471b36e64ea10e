//! What the lane waits for, as pure state machines over watched objects.
//!
//! A live wait feeds every watch event (the object as JSON, with the time since the wait
//! began) into a [`Tracker`] and asks it how things stand; a unit test feeds a recorded
//! sequence instead. So every rule (stale observedGeneration ignored, flapping conditions must
//! settle, an unpullable image ends the wait early) is tested without a cluster, and a timeout
//! always has the last state to report.

mod address;
mod case_status;
mod cec_update;
pub mod record;
mod workloads;

use std::time::Duration;

use serde_json::Value;

pub use address::GatewayAddress;
pub use case_status::{CaseConditions, GatewayView, Parents, conditions_of, gateway_addresses, route_parents};
pub use cec_update::CecSettled;
pub use workloads::{AllOf, ConditionTrue, CrdsEstablished, DaemonSetReady, DeploymentAvailable, Gone, PodsReady};

/// One watch event.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// The object as it is now (created or changed, or listed when the watch began).
    Applied(&'a Value),
    Deleted(&'a Value),
    /// The watch's initial listing is complete: anything not seen by now does not exist.
    Listed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Waiting,
    Done,
    /// It will not get better by waiting (e.g. an image name that cannot be pulled).
    Failed(String),
}

pub trait Tracker: Send {
    fn observe(&mut self, at: Duration, event: Event<'_>);
    fn progress(&self, now: Duration) -> Progress;
    /// The last state seen, in a sentence or a few lines, for the message when time runs out.
    fn last_state(&self) -> String;
}

/// `(kind, namespace, name)` of an object.
pub fn ident(v: &Value) -> (&str, &str, &str) {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    (s("/kind"), s("/metadata/namespace"), s("/metadata/name"))
}

/// `metadata.generation`, when the object has one.
pub fn generation(v: &Value) -> Option<i64> {
    v.pointer("/metadata/generation").and_then(Value::as_i64)
}

/// Feeds a recorded sequence to a tracker and reports the progress after each event, for
/// tests and for re-judging a recorded wait.
pub fn replay(t: &mut dyn Tracker, events: &[(Duration, Option<Value>)]) -> Vec<Progress> {
    events
        .iter()
        .map(|(at, ev)| {
            match ev {
                Some(v) => t.observe(*at, Event::Applied(v)),
                None => t.observe(*at, Event::Listed),
            }
            t.progress(*at)
        })
        .collect()
}
