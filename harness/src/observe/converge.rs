//! Eventual consistency, as the Gateway API conformance suite does it: an expectation holds
//! once K consecutive observations agree with it, within a named, bounded timeout. Every
//! observation is kept, so evidence shows the flapping as well as the verdict.

use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

use tokio::time::{Instant, sleep_until, timeout_at};

/// Consecutive agreeing observations required by default (the conformance suite's
/// `RequiredConsecutiveSuccesses`).
pub const DEFAULT_CONSECUTIVE: NonZeroU32 = NonZeroU32::new(3).expect("3 is not zero");
/// How long to wait for agreement by default (the conformance suite's `MaxTimeToConsistency`).
pub const DEFAULT_CONVERGE_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between observations by default.
pub const DEFAULT_CONVERGE_INTERVAL: Duration = Duration::from_secs(1);
/// Intervals are at least this long, so a zero interval with an instant observer cannot fill
/// memory with millions of observations before the deadline.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// How long and how hard to look for agreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvergePolicy {
    /// Observations in a row that must agree.
    pub consecutive: NonZeroU32,
    /// Overall bound, observation time included.
    pub timeout: Duration,
    /// Pause between observations (at least 1 ms).
    pub interval: Duration,
}

impl Default for ConvergePolicy {
    fn default() -> Self {
        ConvergePolicy { consecutive: DEFAULT_CONSECUTIVE, timeout: DEFAULT_CONVERGE_TIMEOUT, interval: DEFAULT_CONVERGE_INTERVAL }
    }
}

/// What convergence found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converged<T> {
    /// Every observation, oldest first.
    pub observations: Vec<T>,
    /// Whether the last `consecutive` observations agreed with the expectation.
    pub held: bool,
    /// Agreeing observations at the end of `observations` (equals `consecutive` when held).
    pub streak: u32,
    /// The deadline cut an observation short; it is not in `observations`.
    pub interrupted: bool,
    pub elapsed: Duration,
}

impl<T> Converged<T> {
    /// The last thing seen, for "timed out; last saw ..." messages.
    pub fn last(&self) -> Option<&T> {
        self.observations.last()
    }
}

/// Observes until `consecutive` observations in a row satisfy `holds`, or the timeout passes.
/// Never loops past the timeout: observations themselves are bounded by the same deadline.
pub async fn until_consecutive<T, F, Fut>(mut observe: F, holds: impl Fn(&T) -> bool, policy: &ConvergePolicy) -> Converged<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    let started = Instant::now();
    let deadline = started + policy.timeout;
    let interval = policy.interval.max(MIN_INTERVAL);
    let needed = policy.consecutive.get();
    let mut observations = Vec::new();
    let mut streak = 0u32;
    let mut interrupted = false;

    loop {
        let attempt = observations.len() + 1;
        let Ok(observation) = timeout_at(deadline, observe()).await else {
            tracing::debug!(attempt, "convergence: deadline passed during an observation");
            interrupted = true;
            break;
        };
        let ok = holds(&observation);
        streak = if ok { streak + 1 } else { 0 };
        tracing::debug!(attempt, holds = ok, streak, needed, elapsed_ms = started.elapsed().as_millis() as u64, "convergence attempt");
        observations.push(observation);
        if streak >= needed {
            break;
        }
        let next = Instant::now() + interval;
        if next >= deadline {
            break;
        }
        sleep_until(next).await;
    }
    let held = streak >= needed;
    if !held {
        tracing::debug!(attempts = observations.len(), streak, needed, "convergence: expectation did not hold in time");
    }
    Converged { observations, held, streak, interrupted, elapsed: started.elapsed() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn policy(consecutive: u32, timeout_ms: u64, interval_ms: u64) -> ConvergePolicy {
        ConvergePolicy {
            consecutive: NonZeroU32::new(consecutive).unwrap(),
            timeout: Duration::from_millis(timeout_ms),
            interval: Duration::from_millis(interval_ms),
        }
    }

    /// An observer that replays a script of booleans, then repeats the last one.
    fn scripted(script: &[bool]) -> impl FnMut() -> std::future::Ready<bool> + '_ {
        let i = Cell::new(0usize);
        move || {
            let v = script[i.get().min(script.len() - 1)];
            i.set(i.get() + 1);
            std::future::ready(v)
        }
    }

    #[tokio::test]
    async fn holds_immediately_after_k_observations() {
        let c = until_consecutive(scripted(&[true]), |v| *v, &policy(3, 2000, 1)).await;
        assert!(c.held);
        assert_eq!((c.observations.len(), c.streak), (3, 3));
        assert!(!c.interrupted);
    }

    #[tokio::test]
    async fn flapping_resets_the_streak() {
        let script = [true, true, false, true, false, true, true, true];
        let c = until_consecutive(scripted(&script), |v| *v, &policy(3, 2000, 1)).await;
        assert!(c.held);
        assert_eq!(c.observations, script.to_vec(), "every observation is kept");
    }

    #[tokio::test]
    async fn never_holding_stops_at_the_timeout() {
        let c = until_consecutive(scripted(&[false]), |v| *v, &policy(3, 150, 10)).await;
        assert!(!c.held);
        assert_eq!(c.streak, 0);
        assert!(c.elapsed >= Duration::from_millis(140) && c.elapsed < Duration::from_millis(1000), "{:?}", c.elapsed);
        // About timeout / interval observations, never an unbounded number.
        assert!((5..=16).contains(&c.observations.len()), "{}", c.observations.len());
        assert_eq!(c.last(), Some(&false));
    }

    #[tokio::test]
    async fn too_few_agreeing_before_the_timeout_is_not_held() {
        // Two agreeing observations fit in the window, three do not.
        let c = until_consecutive(scripted(&[true]), |v| *v, &policy(3, 150, 100)).await;
        assert!(!c.held);
        assert_eq!((c.observations.len(), c.streak), (2, 2));
    }

    #[tokio::test]
    async fn a_hanging_observer_is_cut_by_the_deadline() {
        let c = until_consecutive(
            || async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                true
            },
            |v| *v,
            &policy(1, 100, 1),
        )
        .await;
        assert!(!c.held && c.interrupted && c.observations.is_empty());
        assert!(c.elapsed < Duration::from_secs(2), "{:?}", c.elapsed);
    }

    #[test]
    fn defaults_match_the_conformance_suite() {
        let p = ConvergePolicy::default();
        assert_eq!((p.consecutive.get(), p.timeout, p.interval), (3, Duration::from_secs(30), Duration::from_secs(1)));
    }
}
