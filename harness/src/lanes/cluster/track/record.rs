//! A tracker that keeps every event it passes on: the kind lane's raw record of what a wait
//! saw, for `layout-gate replay`.

use std::time::Duration;

use super::{Event, Progress, Tracker};
use crate::evidence::recording::{RecordedEvent, RecordedKind, RecordedWait, TrackerKind, recorded_object};

/// Feeds `inner` and remembers each event with its time.
pub struct Recorder<'a> {
    inner: &'a mut dyn Tracker,
    pub wait: RecordedWait,
}

impl<'a> Recorder<'a> {
    pub fn new(inner: &'a mut dyn Tracker, what: &str, tracker: TrackerKind) -> Self {
        Recorder { inner, wait: RecordedWait { what: what.to_string(), tracker, events: Vec::new() } }
    }
}

impl Tracker for Recorder<'_> {
    fn observe(&mut self, at: Duration, event: Event<'_>) {
        let kind = match event {
            Event::Applied(v) => RecordedKind::Applied { object: recorded_object(v) },
            Event::Deleted(v) => RecordedKind::Deleted { object: recorded_object(v) },
            Event::Listed => RecordedKind::Listed,
        };
        self.wait.events.push(RecordedEvent {
            at_ms: at.as_millis().min(u128::from(u64::MAX)) as u64,
            at: crate::evidence::now_rfc3339(),
            event: kind,
        });
        self.inner.observe(at, event);
    }
    fn progress(&self, now: Duration) -> Progress {
        self.inner.progress(now)
    }
    fn last_state(&self) -> String {
        self.inner.last_state()
    }
}

/// Feeds a recorded wait to a tracker, as the live wait did: each event at its time, then the
/// progress at the last event.
pub fn feed(t: &mut dyn Tracker, wait: &RecordedWait) -> Progress {
    let mut last = Duration::ZERO;
    for e in &wait.events {
        let at = Duration::from_millis(e.at_ms);
        last = at;
        match &e.event {
            RecordedKind::Applied { object } => t.observe(at, Event::Applied(object)),
            RecordedKind::Deleted { object } => t.observe(at, Event::Deleted(object)),
            RecordedKind::Listed => t.observe(at, Event::Listed),
        }
    }
    t.progress(last)
}
