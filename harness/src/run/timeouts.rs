//! Every wait of a run, named, in one place, and overridable from the environment, like the
//! Gateway API conformance suite's `TimeoutConfig`.

use std::num::NonZeroU32;
use std::time::Duration;

use crate::observe::converge::{DEFAULT_CONSECUTIVE, DEFAULT_CONVERGE_INTERVAL, DEFAULT_CONVERGE_TIMEOUT};
use crate::observe::probe::DEFAULT_PROBE_TIMEOUT;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    /// One TLS probe: connect, handshake and HTTP exchange (`LAYOUT_GATE_PROBE_TIMEOUT`).
    pub probe: Duration,
    /// How long a probe may take to converge on its expectation (`LAYOUT_GATE_CONVERGE_TIMEOUT`).
    pub converge: Duration,
    /// Pause between two observations of one probe (`LAYOUT_GATE_PROBE_INTERVAL`).
    pub interval: Duration,
    /// Consecutive agreeing observations needed (`LAYOUT_GATE_CONSECUTIVE`).
    pub consecutive: NonZeroU32,
    /// A local Envoy to answer `/ready` (`LAYOUT_GATE_ENVOY_READY_TIMEOUT`).
    pub envoy_ready: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            probe: DEFAULT_PROBE_TIMEOUT,
            converge: DEFAULT_CONVERGE_TIMEOUT,
            interval: DEFAULT_CONVERGE_INTERVAL,
            consecutive: DEFAULT_CONSECUTIVE,
            envoy_ready: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: {message}")]
pub struct TimeoutsError {
    pub var: &'static str,
    pub value: String,
    pub message: String,
}

/// Parses `1.5s`, `250ms`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let n: f64 = num.parse().map_err(|_| "not a duration like 1.5s, 250ms or 2m".to_string())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("unknown unit {unit:?}; use ms, s or m")),
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        return Err("must be more than 0 and at most an hour".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

impl Timeouts {
    /// Defaults, overridden by any `LAYOUT_GATE_*` variable that is set.
    pub fn from_env() -> Result<Timeouts, TimeoutsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Timeouts, TimeoutsError> {
        let mut t = Timeouts::default();
        let dur = |var: &'static str, slot: &mut Duration| -> Result<(), TimeoutsError> {
            if let Some(v) = get(var) {
                *slot = parse_duration(&v).map_err(|message| TimeoutsError { var, value: v.clone(), message })?;
            }
            Ok(())
        };
        dur("LAYOUT_GATE_PROBE_TIMEOUT", &mut t.probe)?;
        dur("LAYOUT_GATE_CONVERGE_TIMEOUT", &mut t.converge)?;
        dur("LAYOUT_GATE_PROBE_INTERVAL", &mut t.interval)?;
        dur("LAYOUT_GATE_ENVOY_READY_TIMEOUT", &mut t.envoy_ready)?;
        if let Some(v) = get("LAYOUT_GATE_CONSECUTIVE") {
            t.consecutive = v.trim().parse::<NonZeroU32>().map_err(|_| TimeoutsError {
                var: "LAYOUT_GATE_CONSECUTIVE",
                value: v.clone(),
                message: "must be a whole number of at least 1".into(),
            })?;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn env_overrides_and_errors_name_the_variable() {
        let t = Timeouts::from_lookup(|k| (k == "LAYOUT_GATE_PROBE_TIMEOUT").then(|| "500ms".to_string())).unwrap();
        assert_eq!(t.probe, Duration::from_millis(500));
        assert_eq!(t.converge, Timeouts::default().converge);
        let e = Timeouts::from_lookup(|k| (k == "LAYOUT_GATE_CONSECUTIVE").then(|| "0".to_string())).unwrap_err();
        assert_eq!(e.var, "LAYOUT_GATE_CONSECUTIVE");
    }
}
