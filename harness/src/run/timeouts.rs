//! Every wait of a run, named, in one place, like the Gateway API conformance suite's
//! `TimeoutConfig`; each is set, highest first, by a flag, an environment variable, the config
//! file, or its default ([`Settings`]).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::observe::converge::{DEFAULT_CONSECUTIVE, DEFAULT_CONVERGE_INTERVAL, DEFAULT_CONVERGE_TIMEOUT};
use crate::observe::probe::DEFAULT_PROBE_TIMEOUT;

/// One named wait: what the messages, the dry run and `run --list` call it, the variable that
/// overrides it, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub name: &'static str,
    pub var: &'static str,
    pub limit: Duration,
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.name, human(self.limit), self.var)
    }
}

/// One named count (how many agreeing observations), set like a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub name: &'static str,
    pub var: &'static str,
    pub value: NonZeroU32,
}

/// Which defaults a lane starts from. `Cluster`: a real cluster (kind), which waits on pods,
/// image pulls, the datapath and L2 announcements. `Local`: everything on loopback (the model
/// lane, the operator lane), where a local Envoy is ready when it says so and Cilium's operator
/// reconciles a case within a second or two, so the same waits can be much shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Cluster,
    Local,
}

/// A value a table row holds: a wait or a count, parsed from a setting and shown in its units.
pub trait Setting: Copy {
    type Value: Copy;
    fn named(name: &'static str, var: &'static str, value: Self::Value) -> Self;
    fn var(&self) -> &'static str;
    fn set(&mut self, text: &str) -> Result<(), String>;
    fn shown(&self) -> String;
    fn as_wait(&self) -> Option<Wait>;
}

impl Setting for Wait {
    type Value = Duration;
    fn named(name: &'static str, var: &'static str, limit: Duration) -> Self {
        Wait { name, var, limit }
    }
    fn var(&self) -> &'static str {
        self.var
    }
    fn set(&mut self, text: &str) -> Result<(), String> {
        self.limit = parse_duration(text)?;
        Ok(())
    }
    fn shown(&self) -> String {
        human(self.limit)
    }
    fn as_wait(&self) -> Option<Wait> {
        Some(*self)
    }
}

impl Setting for Count {
    type Value = NonZeroU32;
    fn named(name: &'static str, var: &'static str, value: NonZeroU32) -> Self {
        Count { name, var, value }
    }
    fn var(&self) -> &'static str {
        self.var
    }
    fn set(&mut self, text: &str) -> Result<(), String> {
        self.value = text.trim().parse::<NonZeroU32>().map_err(|_| "must be a whole number of at least 1".to_string())?;
        Ok(())
    }
    fn shown(&self) -> String {
        self.value.to_string()
    }
    fn as_wait(&self) -> Option<Wait> {
        None
    }
}

/// One row of a lane's table of waits, as docs/waits.md lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The setting's name in `--timeout NAME=...` and the config file (`probe_timeout`).
    pub key: String,
    pub var: &'static str,
    /// What it bounds.
    pub bounds: &'static str,
    /// The default on a `Profile::Cluster` lane (kind) and on a `Profile::Local` one.
    pub cluster: String,
    pub local: String,
}

/// The one shape of every lane's waits: a struct of named settings built from one table, each
/// row `field: Wait|Count = ("name", "LAYOUT_GATE_VAR", cluster default, local default, "what
/// it bounds")`. It gives the defaults per [`Profile`], the one override path (a lookup by
/// variable, so flags, environment and config file through [`Settings`]), every value as
/// `run --list` shows it, and the rows docs/waits.md lists (a unit test keeps that doc equal).
macro_rules! waits_table {
    ($(#[$smeta:meta])* pub struct $ty:ident {
        $( $field:ident : $kind:ident = ($name:literal, $var:literal, $cluster:expr, $local:expr, $bounds:literal) ),* $(,)?
    }) => {
        $(#[$smeta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            $( #[doc = $bounds] pub $field: $crate::run::$kind, )*
        }

        impl Default for $ty {
            fn default() -> Self {
                Self::defaults($crate::run::Profile::Cluster)
            }
        }

        impl $ty {
            /// The table's defaults for a lane of this profile.
            pub fn defaults(profile: $crate::run::Profile) -> Self {
                use $crate::run::Setting as _;
                let local = profile == $crate::run::Profile::Local;
                $ty { $( $field: $crate::run::$kind::named($name, $var, if local { $local } else { $cluster }), )* }
            }

            /// Defaults, overridden by every variable that is set.
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, $crate::run::TimeoutsError> {
                Self::from_lookup_over(Self::default(), get)
            }

            /// `base` (a lane's own defaults), overridden by every variable `get` finds.
            pub fn from_lookup_over(base: Self, get: impl Fn(&str) -> Option<String>) -> Result<Self, $crate::run::TimeoutsError> {
                use $crate::run::Setting as _;
                let mut t = base;
                $(
                    if let Some(v) = get($var) {
                        t.$field.set(&v).map_err(|message| $crate::run::TimeoutsError { var: $var, value: v.clone(), message })?;
                    }
                )*
                Ok(t)
            }

            /// The one way a run reads them: `profile`'s defaults, overridden by a flag, the
            /// environment or the config file; a bad value's error names where it came from.
            pub fn from_settings(profile: $crate::run::Profile, settings: &$crate::run::Settings) -> Result<Self, String> {
                Self::from_lookup_over(Self::defaults(profile), |k| settings.lookup(k)).map_err(|e| settings.explain(&e))
            }

            /// Defaults, overridden by any variable set in the environment.
            pub fn from_env() -> Result<Self, $crate::run::TimeoutsError> {
                Self::from_lookup(|k| std::env::var(k).ok())
            }

            /// Every variable the table reads, in its order.
            pub fn vars() -> Vec<&'static str> {
                vec![$( $var ),*]
            }

            /// Every wait (counts left out), in the table's order.
            pub fn all(&self) -> Vec<$crate::run::Wait> {
                use $crate::run::Setting as _;
                [$( self.$field.as_wait() ),*].into_iter().flatten().collect()
            }

            /// Every value by the variable that sets it (`LAYOUT_GATE_PROBE_TIMEOUT` -> `2s`),
            /// as `run --list` shows them.
            pub fn values(&self) -> Vec<(&'static str, String)> {
                use $crate::run::Setting as _;
                vec![$( (self.$field.var(), self.$field.shown()) ),*]
            }

            /// The table as docs/waits.md lists it.
            pub fn rows() -> Vec<$crate::run::Row> {
                use $crate::run::Setting as _;
                let (c, l) = (Self::defaults($crate::run::Profile::Cluster), Self::defaults($crate::run::Profile::Local));
                vec![$( $crate::run::Row {
                    key: $crate::run::key_of($var),
                    var: $var,
                    bounds: $bounds,
                    cluster: c.$field.shown(),
                    local: l.$field.shown(),
                } ),*]
            }
        }
    };
}

pub(crate) use waits_table;

waits_table! {
    /// The waits of running a case's probes and its local Envoy, which every lane has, like
    /// the Gateway API conformance suite's `TimeoutConfig`.
    pub struct Timeouts {
        probe: Wait = ("probe", "LAYOUT_GATE_PROBE_TIMEOUT", DEFAULT_PROBE_TIMEOUT, Duration::from_secs(2),
            "one probe: connect, handshake and HTTP exchange"),
        converge: Wait = ("converge", "LAYOUT_GATE_CONVERGE_TIMEOUT", DEFAULT_CONVERGE_TIMEOUT, Duration::from_secs(5),
            "how long a probe may take to converge on its expectation"),
        interval: Wait = ("probe interval", "LAYOUT_GATE_PROBE_INTERVAL", DEFAULT_CONVERGE_INTERVAL, Duration::from_millis(20),
            "pause between two observations of one probe"),
        consecutive: Count = ("consecutive", "LAYOUT_GATE_CONSECUTIVE", DEFAULT_CONSECUTIVE, DEFAULT_CONSECUTIVE,
            "consecutive agreeing observations needed (a count)"),
        envoy_ready: Wait = ("Envoy ready", "LAYOUT_GATE_ENVOY_READY_TIMEOUT", Duration::from_secs(10), Duration::from_secs(10),
            "a local Envoy to answer /ready"),
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

impl Timeouts {
    /// The defaults of a lane whose data plane is a local Envoy (model, operator): it is ready
    /// when it says so, so probes converge fast, with a short pause between observations.
    pub fn local_envoy() -> Timeouts {
        Timeouts::defaults(Profile::Local)
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
        assert_eq!(t.probe.limit, Duration::from_millis(500));
        assert_eq!(t.converge.limit, Timeouts::default().converge.limit);
        let e = Timeouts::from_lookup(|k| (k == "LAYOUT_GATE_CONSECUTIVE").then(|| "0".to_string())).unwrap_err();
        assert_eq!(e.var, "LAYOUT_GATE_CONSECUTIVE");
    }

    #[test]
    fn flags_beat_env_beat_file_beat_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("layout-gate.yaml");
        std::fs::write(&file, "timeouts:\n  probe_timeout: 7s\n  converge_timeout: 9s\n  consecutive: 5\n").unwrap();
        let known: Vec<&str> = Timeouts::vars();
        let mut s = Settings::load(&known, &[("probe_timeout".into(), "1s".into())], Some(&file)).unwrap();
        // The environment layer, set by hand: the process environment is shared by every test.
        s.env.insert("LAYOUT_GATE_CONVERGE_TIMEOUT".into(), "3s".into());
        let t = Timeouts::from_lookup(|k| s.lookup(k)).unwrap();
        assert_eq!(t.probe.limit, Duration::from_secs(1), "the flag beats the file");
        assert_eq!(t.converge.limit, Duration::from_secs(3), "the environment beats the file");
        assert_eq!(t.consecutive.value.get(), 5, "the file beats the default");
        assert_eq!(t.interval.limit, Timeouts::default().interval.limit);
        assert_eq!(s.source("LAYOUT_GATE_PROBE_TIMEOUT"), Source::Flag);
        assert_eq!(s.source("LAYOUT_GATE_CONVERGE_TIMEOUT"), Source::Env);
        assert_eq!(s.source("LAYOUT_GATE_CONSECUTIVE"), Source::File(file.clone()));
        assert_eq!(s.source("LAYOUT_GATE_PROBE_INTERVAL"), Source::Default);
    }

    #[test]
    fn unknown_settings_and_bad_values_name_where_they_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let known: Vec<&str> = Timeouts::vars();
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
