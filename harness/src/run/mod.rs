//! The lane-independent half of running a case: probe every (port, SNI) the expectations name,
//! concurrently and until they converge, then judge everything observed and assemble the
//! case's evidence. A lane supplies where each Gateway port is reachable, the conditions it
//! saw and the Envoy dump it took.

mod interrupt;
mod select;
mod timeouts;

/// How a run of any lane ended; only `cli/` turns it into an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every selected case ran and passed, and the evidence is written.
    Passed,
    /// A case failed, or did not run.
    Failed,
    /// The run could not do its job: preflight refused, a phase failed, or the evidence could
    /// not be written.
    Broken,
    /// A signal stopped it (after teardown).
    Interrupted(Signal),
}

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

use crate::case::{Applied, Case, CiliumVersion, ProbeExpect, ProbeKey};
use crate::evidence::{CaseEvidence, Observed, ProbeRecord};
use crate::judge::{self, Outcome, ProbeFact, Verdict};
use crate::observe::converge::{self, ConvergePolicy};
use crate::observe::probe::{self, HttpRequestSpec, ProbeOptions, ProbeSpec};
use crate::render::certs::CertSet;
use crate::types::{CertName, Fingerprint, Port};

pub use interrupt::{Signal, Signals};
pub use select::{Selection, Shard, nothing_to_run, select};
pub(crate) use timeouts::waits_table;
pub use timeouts::{
    CONFIG_FILE, Count, Profile, Row, Setting, Settings, Source, Timeouts, TimeoutsError, Wait, human, key_of, parse_duration, var_of,
};

/// Probes every distinct (port, SNI) of `applied` at the address `addr_of(port)`, all at once.
/// Each probe repeats until its expectations held for `consecutive` observations in a row, or
/// its timeout ran out; every observation is kept. A port without an address is recorded as a
/// probe that could not be made.
pub async fn probe_all(
    applied: &Applied,
    addr_of: &(dyn Fn(Port) -> Option<SocketAddr> + Sync),
    certs: &CertSet,
    timeouts: &Timeouts,
) -> Vec<ProbeRecord> {
    probe_all_with(applied, addr_of, certs, timeouts, None).await
}

/// [`probe_all`] for lanes where the address depends on the whole probe key (the model lane
/// gives every Gateway of a case its own addresses).
pub async fn probe_all_keyed(
    applied: &Applied,
    addr_of: &(dyn Fn(&ProbeKey) -> Option<SocketAddr> + Sync),
    certs: &CertSet,
    timeouts: &Timeouts,
) -> Vec<ProbeRecord> {
    probe_keys_with(applied, addr_of, certs, timeouts, None).await
}

/// How HTTP answers name their backend, for lanes whose backends cannot send
/// [`crate::observe::probe::BACKEND_HEADER`] (the kind lane's echo pods name their pod in a JSON
/// field).
#[derive(Clone)]
pub struct ServedByRules {
    /// Tried in order on each answer.
    pub rules: Vec<crate::observe::probe::ServedBy>,
    /// Maps what a rule found (e.g. a pod name) to a backend name; `None` keeps it as found.
    pub backend_of: BackendOf,
}

/// See [`ServedByRules::backend_of`].
pub type BackendOf = std::sync::Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// [`probe_all`], with the lane's rules for finding the serving backend. The observations keep
/// what the answer said (a pod name); the facts the judge reads carry the backend name.
pub async fn probe_all_with(
    applied: &Applied,
    addr_of: &(dyn Fn(Port) -> Option<SocketAddr> + Sync),
    certs: &CertSet,
    timeouts: &Timeouts,
    served_by: Option<&ServedByRules>,
) -> Vec<ProbeRecord> {
    probe_keys_with(applied, &|k: &ProbeKey| addr_of(k.port), certs, timeouts, served_by).await
}

/// [`probe_all_keyed`] with the lane's rules for finding the serving backend (the kind lane
/// with several Gateways, each at its own address).
pub async fn probe_keys_with(
    applied: &Applied,
    addr_of: &(dyn Fn(&ProbeKey) -> Option<SocketAddr> + Sync),
    certs: &CertSet,
    timeouts: &Timeouts,
    served_by: Option<&ServedByRules>,
) -> Vec<ProbeRecord> {
    let names: BTreeMap<Fingerprint, CertName> = certs.iter().map(|c| (c.fingerprint(), c.name.clone())).collect();
    let mut tasks = Vec::new();
    for key in Case::probe_keys(applied) {
        let expects: Vec<ProbeExpect> = applied.probes.iter().filter(|p| p.key == key).cloned().collect();
        let Some(addr) = addr_of(&key) else {
            tasks.push(tokio::spawn(async move {
                ProbeRecord { address: format!("(no address for port {})", key.port), key, observations: Vec::new(), facts: Vec::new() }
            }));
            continue;
        };
        let http = if key.http {
            let host = key.sni.as_ref().map(|s| s.to_string()).unwrap_or_else(|| addr.to_string());
            HttpRequestSpec::get(key.path.as_deref().unwrap_or("/")).and_then(|r| r.with_host(&host)).ok().map(|r| match served_by {
                Some(s) => r.with_served_by(s.rules.clone()),
                None => r,
            })
        } else {
            None
        };
        let options = ProbeOptions { timeout: timeouts.probe.limit, ..ProbeOptions::default() };
        let converging = Converging {
            key: key.clone(),
            addr,
            expects,
            names: names.clone(),
            backend_of: served_by.map(|s| s.backend_of.clone()),
            policy: policy_of(timeouts),
        };
        if key.plain {
            let Some(request) = http else {
                // The key was checked at load time; an HTTP request always exists for it.
                continue;
            };
            tasks.push(tokio::spawn(async move {
                converging.run(|| probe::probe_plain_http(addr, &request, &options), ProbeFact::from_plain).await
            }));
        } else {
            let spec = ProbeSpec { addr, sni: key.sni.clone(), http };
            tasks
                .push(tokio::spawn(async move { converging.run(|| probe::probe_tls(&spec, &options), ProbeFact::from_observation).await }));
        }
    }
    let mut records = Vec::new();
    for t in tasks {
        match t.await {
            Ok(r) => records.push(r),
            // A probe task only ends this way if it panicked; the probe's expectations then
            // fail for want of observations rather than take the run down.
            Err(e) => tracing::error!("probe task failed: {e}"),
        }
    }
    records
}

fn policy_of(t: &Timeouts) -> ConvergePolicy {
    ConvergePolicy { consecutive: t.consecutive.value, timeout: t.converge.limit, interval: t.interval.limit }
}

/// One probe key's run: observe until its expectations held for `policy.consecutive`
/// observations in a row (or the timeout), then keep every observation, raw and as judge facts.
/// The same for a TLS handshake and a plain HTTP request; only the observation differs.
struct Converging {
    key: ProbeKey,
    addr: SocketAddr,
    expects: Vec<ProbeExpect>,
    names: BTreeMap<Fingerprint, CertName>,
    backend_of: Option<BackendOf>,
    policy: ConvergePolicy,
}

impl Converging {
    async fn run<O, F, Fut>(self, observe: F, reduce: fn(&O) -> ProbeFact) -> ProbeRecord
    where
        O: serde::Serialize,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = O>,
    {
        let name_of = |fp: &Fingerprint| self.names.get(fp).cloned();
        // The judge reads backend names; what the answer said (e.g. a pod name) stays in the
        // raw observation.
        let fact_of = |o: &O| {
            let mut fact = reduce(o);
            if let (Some(map), Some(found)) = (&self.backend_of, &fact.served_by)
                && let Some(b) = map(found)
            {
                fact.served_by = Some(b);
            }
            fact
        };
        let converged = converge::until_consecutive(
            observe,
            |o| {
                let fact = fact_of(o);
                self.expects.iter().all(|e| judge::probe_matches(e, &fact, &name_of))
            },
            &self.policy,
        )
        .await;
        let facts = converged.observations.iter().map(fact_of).collect();
        let observations = converged.observations.iter().map(|o| serde_json::to_value(o).unwrap_or_default()).collect();
        ProbeRecord { key: self.key, address: self.addr.to_string(), observations, facts }
    }
}

/// Judges everything `observed` against `applied`.
pub fn judge_all(case: &Case, applied: &Applied, observed: &Observed, certs: &CertSet, consecutive: usize) -> Vec<Verdict> {
    let name_of = |fp: &Fingerprint| certs.name_of(fp).cloned();
    judge::judge_case(&case.gateway, applied, &observed.view(), &name_of, consecutive)
}

/// Assembles a case's evidence. `error` is why the case could not be observed at all; it makes
/// the case fail whatever the verdicts say. `consecutive` is the K the probes were judged with.
pub fn case_evidence(
    case: &Case,
    version: &CiliumVersion,
    observed: Observed,
    verdicts: Vec<Verdict>,
    error: Option<String>,
    started: Instant,
    consecutive: usize,
) -> CaseEvidence {
    let applied = case.applied(version);
    // A case that checked nothing must not read as a pass.
    let error = error.or_else(|| verdicts.is_empty().then(|| format!("no expectation of case {} applies to Cilium {version}", case.name)));
    let outcome = if error.is_some() { Outcome::Fail } else { judge::overall(&verdicts) };
    CaseEvidence {
        name: case.name.clone(),
        summary: case.summary.clone(),
        refs: case.refs.clone(),
        hash: case.hash.clone(),
        ranges: applied.ranges.clone(),
        outcome,
        error,
        duration_ms: started.elapsed().as_millis() as u64,
        verdicts,
        observed,
        certificates: Vec::new(),
        gateway: case.gateway.clone(),
        expectations: applied,
        consecutive,
        case_files: case.file_digests.clone(),
        served_by: BTreeMap::new(),
        recording: None,
        steps: Vec::new(),
    }
}
