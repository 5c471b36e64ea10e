//! File-based LDS: writing listener updates where a running Envoy watches for them, and waiting
//! until Envoy has accepted or rejected one.
//!
//! Envoy's `watched_directory` reacts to a file being *moved into* the directory, so each update
//! is written to `lds.json.tmp` and renamed over `lds.json` in the same directory: Envoy never
//! reads a half-written file, and rename within one filesystem is atomic.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::admin::{AdminClient, AdminError, Stats};
use super::bootstrap::{LDS_FILE, lds_discovery_response, write_json};
use super::listener::ListenerSpec;

/// Default bound of the `lds-update` wait. Envoy applies a file update within milliseconds.
pub const DEFAULT_LDS_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(20);
const SUCCESS: &str = "listener_manager.lds.update_success";
const REJECTED: &str = "listener_manager.lds.update_rejected";
const STATS_FILTER: &str = r"^listener_manager\.lds\.";

#[derive(Debug, thiserror::Error)]
pub enum LdsError {
    #[error("cannot write LDS file {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },

    #[error(transparent)]
    Admin(#[from] AdminError),

    #[error(
        "wait `lds-update` timed out after {timeout:?}: {REJECTED} and {SUCCESS} never rose above {since:?}; last stats seen: {}",
        show(last)
    )]
    Timeout { timeout: Duration, since: LdsCounters, last: Option<Stats> },
}

fn show(stats: &Option<Stats>) -> String {
    match stats {
        None => "none (admin never answered)".into(),
        Some(s) => s.0.iter().map(|(k, v)| format!("{k}={v:?}")).collect::<Vec<_>>().join(", "),
    }
}

/// A directory holding `lds.json`, watched by an Envoy started with
/// [`super::Bootstrap::file_lds`].
#[derive(Debug, Clone)]
pub struct LdsDir {
    dir: PathBuf,
}

impl LdsDir {
    /// Creates the directory if needed. Push a first version before starting Envoy, so it
    /// comes up with listeners instead of waiting for the file.
    pub fn create(dir: &Path) -> Result<Self, LdsError> {
        std::fs::create_dir_all(dir).map_err(|source| LdsError::Write { path: dir.to_path_buf(), source })?;
        Ok(LdsDir { dir: dir.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join(LDS_FILE)
    }

    /// Writes `listeners` at `version` as a `DiscoveryResponse` and renames it into place.
    pub fn push(&self, version: &str, listeners: &[ListenerSpec]) -> Result<(), LdsError> {
        self.push_value(&lds_discovery_response(version, listeners))
    }

    /// Any `DiscoveryResponse` JSON (e.g. one recorded elsewhere), written the same way.
    pub fn push_value(&self, response: &Value) -> Result<(), LdsError> {
        let tmp = self.dir.join(format!("{LDS_FILE}.tmp"));
        let target = self.file();
        write_json(&tmp, response).map_err(|source| LdsError::Write { path: tmp.clone(), source })?;
        std::fs::rename(&tmp, &target).map_err(|source| LdsError::Write { path: target, source })
    }
}

/// The two counters that say how an LDS update went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LdsCounters {
    pub update_success: u64,
    pub update_rejected: u64,
}

impl LdsCounters {
    fn from_stats(stats: &Stats) -> Self {
        LdsCounters { update_success: stats.number(SUCCESS).unwrap_or(0), update_rejected: stats.number(REJECTED).unwrap_or(0) }
    }
}

/// Which way an update went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdsOutcome {
    Accepted,
    Rejected,
}

/// The outcome of an update and the `listener_manager.lds.*` stats that showed it.
#[derive(Debug, Clone)]
pub struct LdsUpdate {
    pub outcome: LdsOutcome,
    pub counters: LdsCounters,
    pub stats: Stats,
}

/// The current counters; read them before a push and hand them to [`wait_for_lds_update`].
pub async fn lds_counters(admin: &AdminClient) -> Result<LdsCounters, LdsError> {
    Ok(LdsCounters::from_stats(&admin.stats(STATS_FILTER).await?))
}

/// Waits until `update_rejected` or `update_success` rises above `since`. Rejection is checked
/// first: Envoy bumps only one of them per update, and a rejection is the thing not to miss.
/// Admin errors while waiting are retried until the deadline (Envoy may be busy applying).
pub async fn wait_for_lds_update(admin: &AdminClient, since: LdsCounters, timeout: Duration) -> Result<LdsUpdate, LdsError> {
    let deadline = Instant::now() + timeout;
    let mut last = None;
    loop {
        if let Ok(stats) = admin.stats(STATS_FILTER).await {
            let counters = LdsCounters::from_stats(&stats);
            let outcome = if counters.update_rejected > since.update_rejected {
                Some(LdsOutcome::Rejected)
            } else if counters.update_success > since.update_success {
                Some(LdsOutcome::Accepted)
            } else {
                None
            };
            if let Some(outcome) = outcome {
                return Ok(LdsUpdate { outcome, counters, stats });
            }
            last = Some(stats);
        }
        if Instant::now() >= deadline {
            return Err(LdsError::Timeout { timeout, since, last });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
