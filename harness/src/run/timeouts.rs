//! Every wait of a run, named, in one place, like the Gateway API conformance suite's
//! `TimeoutConfig`; each is set, highest first, by a flag, an environment variable, the config
//! file, or its default ([`Settings`]).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
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

/// `90s` → `1m30s`, as people and helm write durations.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    match (s / 60, s % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

/// The variables [`Timeouts`] reads, with what each sets.
pub const VARS: [(&str, &str); 5] = [
    ("LAYOUT_GATE_PROBE_TIMEOUT", "one probe: connect, handshake and HTTP exchange"),
    ("LAYOUT_GATE_CONVERGE_TIMEOUT", "how long a probe may take to converge on its expectation"),
    ("LAYOUT_GATE_PROBE_INTERVAL", "pause between two observations of one probe"),
    ("LAYOUT_GATE_CONSECUTIVE", "consecutive agreeing observations needed (a count)"),
    ("LAYOUT_GATE_ENVOY_READY_TIMEOUT", "a local Envoy to answer /ready"),
];

impl Timeouts {
    /// The defaults of a lane whose data plane is a local Envoy (model, operator): it is ready
    /// when it says so, so probes converge fast, with a short pause between observations.
    pub fn local_envoy() -> Timeouts {
        Timeouts {
            converge: Duration::from_secs(5),
            interval: Duration::from_millis(20),
            probe: Duration::from_secs(2),
            ..Timeouts::default()
        }
    }

    /// Every value by the variable that sets it (`LAYOUT_GATE_PROBE_TIMEOUT` -> `2s`), as
    /// `run --list` shows them.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LAYOUT_GATE_PROBE_TIMEOUT", human(self.probe)),
            ("LAYOUT_GATE_CONVERGE_TIMEOUT", human(self.converge)),
            ("LAYOUT_GATE_PROBE_INTERVAL", human(self.interval)),
            ("LAYOUT_GATE_CONSECUTIVE", self.consecutive.to_string()),
            ("LAYOUT_GATE_ENVOY_READY_TIMEOUT", human(self.envoy_ready)),
        ]
    }

    /// Defaults, overridden by any `LAYOUT_GATE_*` variable that is set.
    pub fn from_env() -> Result<Timeouts, TimeoutsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Timeouts, TimeoutsError> {
        Self::from_lookup_over(Timeouts::default(), get)
    }

    /// `base` (a lane's own defaults), overridden by every setting `get` finds.
    pub fn from_lookup_over(base: Timeouts, get: impl Fn(&str) -> Option<String>) -> Result<Timeouts, TimeoutsError> {
        let mut t = base;
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

/// The config file read when no `--config` is given and it exists in the current folder.
pub const CONFIG_FILE: &str = "layout-gate.yaml";

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    File(PathBuf),
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => write!(f, "flag"),
            Source::Env => write!(f, "environment"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Default => write!(f, "default"),
        }
    }
}

/// The named settings of a run (every `LAYOUT_GATE_*` wait), layered: a flag beats the
/// environment, the environment beats the config file, the file beats the default. Settings
/// are keyed by their variable name; the file and `--timeout NAME=VALUE` use the same name in
/// lower case without `LAYOUT_GATE_` (`probe_timeout`, `helm_install_timeout`).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    flags: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    file: BTreeMap<String, String>,
    file_path: Option<PathBuf>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    timeouts: BTreeMap<String, Scalar>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Number(f64),
}

/// `probe_timeout` → `LAYOUT_GATE_PROBE_TIMEOUT`.
pub fn var_of(key: &str) -> String {
    format!("LAYOUT_GATE_{}", key.trim().to_ascii_uppercase().replace('-', "_"))
}

/// `LAYOUT_GATE_PROBE_TIMEOUT` → `probe_timeout`.
pub fn key_of(var: &str) -> String {
    var.trim_start_matches("LAYOUT_GATE_").to_ascii_lowercase()
}

impl Settings {
    /// `known`: every variable a setting may name (the run's and the lane's waits); anything
    /// else in a flag or the file is an error naming the known ones. `flags`: `(key, value)` as
    /// given on the command line. `config`: the `--config` file, else [`CONFIG_FILE`] when it
    /// exists here. The environment is read for the known variables only.
    pub fn load(known: &[&str], flags: &[(String, String)], config: Option<&Path>) -> Result<Settings, String> {
        let env = known.iter().filter_map(|v| std::env::var(v).ok().map(|x| (v.to_string(), x))).collect();
        let (file, file_path) = match config {
            Some(p) => (read_config(p, known)?, Some(p.to_path_buf())),
            None if Path::new(CONFIG_FILE).is_file() => (read_config(Path::new(CONFIG_FILE), known)?, Some(PathBuf::from(CONFIG_FILE))),
            None => (BTreeMap::new(), None),
        };
        let mut by_var = BTreeMap::new();
        for (key, value) in flags {
            let var = var_of(key);
            if !known.contains(&var.as_str()) {
                return Err(format!("--timeout {key}={value}: unknown setting {key:?}; known: {}", known_keys(known)));
            }
            by_var.insert(var, value.clone());
        }
        Ok(Settings { flags: by_var, env, file, file_path })
    }

    /// Only the environment (what the e2e suite and the benches use).
    pub fn from_env(known: &[&str]) -> Settings {
        Settings { env: known.iter().filter_map(|v| std::env::var(v).ok().map(|x| (v.to_string(), x))).collect(), ..Settings::default() }
    }

    /// The value for `var`, from the highest layer that sets it.
    pub fn lookup(&self, var: &str) -> Option<String> {
        self.flags.get(var).or_else(|| self.env.get(var)).or_else(|| self.file.get(var)).cloned()
    }

    /// Which layer `var`'s value comes from.
    pub fn source(&self, var: &str) -> Source {
        if self.flags.contains_key(var) {
            Source::Flag
        } else if self.env.contains_key(var) {
            Source::Env
        } else if self.file.contains_key(var) {
            Source::File(self.file_path.clone().unwrap_or_default())
        } else {
            Source::Default
        }
    }

    /// A bad value's error, naming the layer it came from.
    pub fn explain(&self, e: &TimeoutsError) -> String {
        let key = key_of(e.var);
        match self.source(e.var) {
            Source::Flag => format!("--timeout {key}={:?}: {}", e.value, e.message),
            Source::Env => e.to_string(),
            Source::File(p) => format!("{}: timeouts.{key}: {:?}: {}", p.display(), e.value, e.message),
            Source::Default => e.to_string(),
        }
    }
}

fn known_keys(known: &[&str]) -> String {
    known.iter().map(|v| key_of(v)).collect::<Vec<_>>().join(", ")
}

fn read_config(path: &Path, known: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("config file {}: {e}", path.display()))?;
    // A config file is a few lines; anything large (or not a regular file) is a mistake.
    const LIMIT: u64 = 64 * 1024;
    if !meta.is_file() || meta.len() > LIMIT {
        return Err(format!("config file {}: must be a regular file of at most {LIMIT} bytes", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("config file {}: {e}", path.display()))?;
    let parsed: ConfigFile = serde_saphyr::from_str(&text).map_err(|e| format!("config file {}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for (key, value) in parsed.timeouts {
        let var = var_of(&key);
        if !known.contains(&var.as_str()) {
            return Err(format!("config file {}: timeouts.{key}: unknown setting; known: {}", path.display(), known_keys(known)));
        }
        let value = match value {
            Scalar::Text(s) => s,
            Scalar::Number(n) => n.to_string(),
        };
        out.insert(var, value);
    }
    Ok(out)
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

    #[test]
    fn flags_beat_env_beat_file_beat_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("layout-gate.yaml");
        std::fs::write(&file, "timeouts:\n  probe_timeout: 7s\n  converge_timeout: 9s\n  consecutive: 5\n").unwrap();
        let known: Vec<&str> = VARS.iter().map(|(v, _)| *v).collect();
        let mut s = Settings::load(&known, &[("probe_timeout".into(), "1s".into())], Some(&file)).unwrap();
        // The environment layer, set by hand: the process environment is shared by every test.
        s.env.insert("LAYOUT_GATE_CONVERGE_TIMEOUT".into(), "3s".into());
        let t = Timeouts::from_lookup(|k| s.lookup(k)).unwrap();
        assert_eq!(t.probe, Duration::from_secs(1), "the flag beats the file");
        assert_eq!(t.converge, Duration::from_secs(3), "the environment beats the file");
        assert_eq!(t.consecutive.get(), 5, "the file beats the default");
        assert_eq!(t.interval, Timeouts::default().interval);
        assert_eq!(s.source("LAYOUT_GATE_PROBE_TIMEOUT"), Source::Flag);
        assert_eq!(s.source("LAYOUT_GATE_CONVERGE_TIMEOUT"), Source::Env);
        assert_eq!(s.source("LAYOUT_GATE_CONSECUTIVE"), Source::File(file.clone()));
        assert_eq!(s.source("LAYOUT_GATE_PROBE_INTERVAL"), Source::Default);
    }

    #[test]
    fn unknown_settings_and_bad_values_name_where_they_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let known: Vec<&str> = VARS.iter().map(|(v, _)| *v).collect();
        let e = Settings::load(&known, &[("probe_timout".into(), "1s".into())], None).unwrap_err();
        assert!(e.contains("unknown setting \"probe_timout\"") && e.contains("probe_timeout"), "{e}");
        let file = dir.path().join("c.yaml");
        std::fs::write(&file, "timeouts:\n  flurb: 1s\n").unwrap();
        let e = Settings::load(&known, &[], Some(&file)).unwrap_err();
        assert!(e.contains("c.yaml: timeouts.flurb: unknown setting"), "{e}");
        std::fs::write(&file, "timeout:\n  probe_timeout: 1s\n").unwrap();
        assert!(Settings::load(&known, &[], Some(&file)).unwrap_err().contains("c.yaml"));
        std::fs::write(&file, "timeouts:\n  probe_timeout: soon\n").unwrap();
        let s = Settings::load(&known, &[], Some(&file)).unwrap();
        let err = Timeouts::from_lookup(|k| s.lookup(k)).unwrap_err();
        assert!(s.explain(&err).contains("c.yaml: timeouts.probe_timeout: \"soon\""), "{}", s.explain(&err));
    }
}
