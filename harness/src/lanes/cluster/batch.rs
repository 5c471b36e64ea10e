//! Many cases on one cluster at once, for a lane whose cases can share it
//! ([`super::lane::ClusterLane::cases_at_once`]): up to [`Batch`] cases in flight, each in
//! namespaces of its own, with its own fork of the driver and its own data plane, each read as
//! Cilium settles it. The per-case code is the shared one ([`super::one_case::run_case`]); only
//! the scheduling differs from [`super::session::run_cases`], which runs one case after
//! another. `run --lane operator`, `check --lane operator` and `differential` all come here.
//!
//! Why a case's answer does not depend on the cases beside it is argued from Cilium's operator
//! at the tag in `lanes/operator/batch.rs`; two things that argument needs are checked here,
//! before any case starts, and a run that fails either goes one case at a time, saying why:
//!
//! * [`families_disjoint`]: no case's namespace begins with another's followed by a dash (the
//!   synced Secret names of Cilium 1.19.5 and earlier, `<namespace>-<name>`, could meet);
//! * [`asks_for_an_address`]: no case asks for a Gateway address of its own (`spec.addresses`
//!   or the LB-IPAM annotations): two such cases asking for the same address would take it
//!   from each other, which alone neither does.

use std::num::NonZeroUsize;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;

use super::driver::ObjRef;
use super::failure::PhaseError;
use super::lane::{StillUp, stopped_before};
use super::live::LiveDriver;
use super::manifests::SecretMaterial;
use super::names::{namespace_for, run_suffix};
use super::one_case::{self, CaseInput, CaseOutcome};
use super::plane::DataPlane;
use super::progress::Progress;
use super::setup::{CaseRun, Gathered, result_lines};
use super::teardown::Teardown;
use crate::case::Case;
use crate::case::manifests::parse_file;
use crate::case::template::Vars;
use crate::judge::Outcome;
use crate::render::certs::{CertRecord, CertSet};

/// The most cases in flight at once that `--batch` accepts.
pub const MAX_BATCH: usize = 64;

/// The evidence `environment` key saying how many cases a run had on its cluster at once.
pub const CASES_AT_ONCE_KEY: &str = "cases_at_once";

/// How many cases run on one cluster at once (1..=[`MAX_BATCH`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch(NonZeroUsize);

impl Batch {
    pub const ONE: Batch = Batch(NonZeroUsize::MIN);

    pub fn new(n: usize) -> Result<Batch, BatchSizeError> {
        match NonZeroUsize::new(n) {
            Some(n) if n.get() <= MAX_BATCH => Ok(Batch(n)),
            _ => Err(BatchSizeError { given: n.to_string(), source: None }),
        }
    }

    pub fn get(self) -> usize {
        self.0.get()
    }
}

/// One at a time: what a lane does unless it says otherwise.
impl Default for Batch {
    fn default() -> Batch {
        Batch::ONE
    }
}

/// A `--batch` value out of range or not a number: as given, quoted when it was text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given} is not a batch size: from 1 to {MAX_BATCH} cases at once")]
pub struct BatchSizeError {
    given: String,
    #[source]
    source: Option<std::num::ParseIntError>,
}

impl FromStr for Batch {
    type Err = BatchSizeError;
    fn from_str(s: &str) -> Result<Batch, BatchSizeError> {
        let n: usize = s.trim().parse().map_err(|e| BatchSizeError { given: format!("{s:?}"), source: Some(e) })?;
        Batch::new(n)
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Whether no case's namespace begins with another's followed by a dash (then the names Cilium
/// 1.19.5 and earlier give synced Secrets, `<namespace>-<name>`, cannot meet, and no case's
/// namespace family holds another's namespace).
pub fn families_disjoint(namespaces: &[String]) -> bool {
    let mut sorted: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    // Sorted, a namespace followed by `-...` comes right after its prefix or after others
    // that also start with it: checking each against every later one that shares its start.
    sorted.iter().enumerate().all(|(i, a)| {
        let family = format!("{a}-");
        sorted[i + 1..].iter().take_while(|b| b.starts_with(a)).all(|b| !b.starts_with(&family))
    })
}

/// The annotations through which a Gateway or Service asks Cilium's LB IPAM for given addresses
/// (`pkg/annotation/k8s.go` at cilium@v1.19.6: `LBIPAMIPsKey` and its alias `LBIPAMIPKeyAlias`).
const ADDRESS_ANNOTATIONS: &[&str] = &["lbipam.cilium.io/ips", "io.cilium/lb-ipam-ips"];

/// Whether `case` asks for an address of its own: a Gateway with `spec.addresses`, or a Gateway
/// (through `spec.infrastructure.annotations`) or Service with an LB-IPAM address annotation.
/// The pool hands each address to one Service, so two such cases side by side may answer
/// otherwise than alone. A manifest that does not parse asks for nothing here (the case's
/// manifests phase says where it is wrong).
pub fn asks_for_an_address(case: &Case) -> bool {
    let vars = Vars { apex: case.apex.clone(), namespace: "lg-x".into(), gateway: case.gateway.clone() };
    let annotated = |v: &serde_json::Value| ADDRESS_ANNOTATIONS.iter().any(|k| v.get(*k).is_some());
    case.manifests.iter().flat_map(|m| parse_file(&m.path, &m.text, &vars).unwrap_or_default()).any(|o| match o.kind.as_str() {
        "Gateway" => {
            let spec = &o.value["spec"];
            spec["addresses"].as_array().is_some_and(|a| !a.is_empty()) || annotated(&spec["infrastructure"]["annotations"])
        }
        "Service" => annotated(&o.value["metadata"]["annotations"]),
        _ => false,
    })
}

/// `batch`, or one at a time when `cases` (in `namespaces`) could meet on the cluster; why not.
pub fn effective(cases: &[Case], namespaces: &[String], batch: Batch) -> (Batch, Option<String>) {
    if batch == Batch::ONE {
        return (batch, None);
    }
    if !families_disjoint(namespaces) {
        return (Batch::ONE, Some("two cases' namespaces share a prefix; running them one at a time".into()));
    }
    let asking: Vec<&str> = cases.iter().filter(|c| asks_for_an_address(c)).map(|c| c.name.as_str()).collect();
    if !asking.is_empty() {
        return (Batch::ONE, Some(format!("{} asks for a Gateway address of its own; running the cases one at a time", asking.join(", "))));
    }
    (batch, None)
}

/// What a case registers with the run's teardown while it is in flight.
struct Registered {
    namespaces: Vec<String>,
    objects: Vec<ObjRef>,
}

impl Registered {
    fn of(case: &Case, namespace: &str) -> Registered {
        let mut namespaces = vec![namespace.to_string()];
        namespaces.extend(one_case::created_namespaces(case, namespace));
        Registered { namespaces, objects: one_case::cluster_objects(case, namespace) }
    }
}

type Finished = (usize, Result<(CaseOutcome, Vec<CertRecord>), PhaseError>);

/// Runs `cases` on the ready cluster `d` is connected to, up to `batch` at once, each on a data
/// plane of its own from `new_plane`. Outcomes land in `st` in the order of `cases` (as
/// [`super::session::run_cases`] leaves them), each case's result line printed as it finishes;
/// `st.environment` says how many ran at once ([`CASES_AT_ONCE_KEY`]). While a case is in flight
/// its namespaces and objects are registered with `teardown` too, so a run stopped midway (an
/// error, a signal) still undoes every case it started.
#[allow(clippy::too_many_arguments)]
pub async fn run_cases<P: DataPlane>(
    d: &LiveDriver,
    new_plane: &dyn Fn() -> P,
    cases: &[Case],
    run_id: &str,
    common: &CaseRun<'_>,
    teardown: &mut Teardown,
    st: &mut Gathered,
    progress: &Progress,
    fail_fast: bool,
    batch: Batch,
    still_up: StillUp<'_>,
) -> Result<(), PhaseError> {
    let suffix = run_suffix(run_id);
    let namespaces: Vec<String> = cases.iter().map(|c| namespace_for(&c.name, &suffix)).collect();
    let (batch, why) = effective(cases, &namespaces, batch);
    if let Some(why) = why {
        progress.note(&format!("layout-gate {} lane: {why}", common.lane.as_str()));
    }
    st.environment.insert(CASES_AT_ONCE_KEY.into(), batch.to_string());
    let outer = Mutex::new(teardown);
    let stop = AtomicBool::new(false);
    let finished: Vec<Finished> = {
        let outer = &outer;
        let stop = &stop;
        let mut stream = futures::stream::iter(cases.iter().zip(namespaces).enumerate())
            .map(|(i, (case, namespace))| async move {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
                if let Err(e) = still_up() {
                    stop.store(true, Ordering::SeqCst);
                    return Some((i, Err(stopped_before(&case.name, e))));
                }
                Some((i, one(d, new_plane(), case, namespace, run_id, common, outer).await))
            })
            .buffer_unordered(batch.get());
        let mut finished = Vec::new();
        while let Some(next) = stream.next().await {
            let Some((i, r)) = next else { continue };
            match &r {
                Ok((outcome, _)) => {
                    let passed = outcome.evidence.outcome == Outcome::Pass;
                    progress.case_done(passed, &result_lines(&outcome.evidence));
                    if fail_fast && !passed && !stop.swap(true, Ordering::SeqCst) {
                        progress.note(&format!(
                            "layout-gate {} lane: --fail-fast: case {} failed; starting no further case",
                            common.lane.as_str(),
                            cases[i].name
                        ));
                    }
                }
                // A case that could not even start (its certificates): the run stops, the
                // cases in flight are dropped, and the teardown undoes what they registered.
                Err(_) => {
                    finished.push((i, r));
                    break;
                }
            }
            finished.push((i, r));
        }
        finished
    };
    let mut finished = finished;
    finished.sort_by_key(|(i, _)| *i);
    for (_, r) in finished {
        let (outcome, certs) = r?;
        st.certs.extend(certs);
        st.cleanup.done.extend(outcome.cleanup.done.iter().cloned());
        st.cleanup.kept.extend(outcome.cleanup.kept.iter().cloned());
        st.cleanup.failed.extend(outcome.cleanup.failed.iter().cloned());
        st.outcomes.push(outcome);
    }
    Ok(())
}

/// One case of a batch, on its own fork of the driver and its own data plane.
async fn one<P: DataPlane>(
    d: &LiveDriver,
    mut data: P,
    case: &Case,
    namespace: String,
    run_id: &str,
    common: &CaseRun<'_>,
    outer: &Mutex<&mut Teardown>,
) -> Result<(CaseOutcome, Vec<CertRecord>), PhaseError> {
    let certs = CertSet::generate(run_id, &case.certificates)
        .map_err(|e| PhaseError::new(&format!("case {}: certificates", case.name), e.to_string()))?;
    let registered = Registered::of(case, &namespace);
    with(outer, |t| {
        for n in &registered.namespaces {
            t.push_namespace(n);
        }
        for o in &registered.objects {
            t.push_object(o.clone());
        }
    });
    let input = CaseInput {
        case,
        version: common.version,
        namespace,
        run_id,
        certs: SecretMaterial::Issued(&certs),
        timeouts: common.timeouts,
        probe_timeouts: common.probe_timeouts,
        keep_namespace: common.keep_namespaces,
        tlsroute_version: common.tlsroute_version,
        expecting: common.expecting,
    };
    let mut d = d.fork();
    let mut own = Teardown::default();
    let outcome = one_case::run_case(&mut d, &mut data, &input, &mut own).await;
    // The data plane (the operator lane's Envoy, backends and held ports) goes now, not when
    // the batch ends.
    drop(data);
    with(outer, |t| {
        for n in &registered.namespaces {
            t.forget_namespace(n);
        }
        for o in &registered.objects {
            t.forget_object(o);
        }
        // Whatever the case's own teardown could not end is the run's to end.
        t.absorb(own);
    });
    Ok((outcome, certs.records()))
}

fn with(outer: &Mutex<&mut Teardown>, f: impl FnOnce(&mut Teardown)) {
    let mut guard = outer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut guard);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_from_one_to_the_ceiling() {
        assert_eq!("8".parse::<Batch>().unwrap().get(), 8);
        assert_eq!(Batch::new(MAX_BATCH).unwrap().get(), MAX_BATCH);
        assert_eq!(Batch::default(), Batch::ONE);
        for bad in ["0", "65", "-1", "x", ""] {
            let e = bad.parse::<Batch>().unwrap_err();
            assert!(e.to_string().contains("from 1 to 64"), "{bad}: {e}");
        }
        // Text is quoted and keeps why it is no number; a number out of range is said bare.
        let e = "x".parse::<Batch>().unwrap_err();
        assert_eq!(e.to_string(), r#""x" is not a batch size: from 1 to 64 cases at once"#);
        assert!(std::error::Error::source(&e).is_some());
        let e = "65".parse::<Batch>().unwrap_err();
        assert_eq!(e.to_string(), "65 is not a batch size: from 1 to 64 cases at once");
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn namespaces_one_of_which_begins_another_are_not_disjoint() {
        let ns = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(families_disjoint(&ns(&["lg-check-0-abc123", "lg-check-1-abc123", "lg-check-10-abc123"])));
        // Cilium 1.19.5 would sync Secret `x-tls` of the first and `tls` of the second to the
        // same name `lg-a-abc123-x-tls`.
        assert!(!families_disjoint(&ns(&["lg-a-abc123", "lg-a-abc123-x"])));
        assert!(!families_disjoint(&ns(&["lg-a-abc123-x", "lg-b", "lg-a-abc123"])));
        assert!(families_disjoint(&ns(&["lg-a-abc123", "lg-a-abc1234"])));
    }

    /// The real names: a run's case namespaces (`check`'s per-Gateway cases and the catalogue's)
    /// never begin one another.
    #[test]
    fn the_namespaces_of_a_run_are_disjoint() {
        let suffix = run_suffix("operator-1.19.6-check-20261203T000000Z");
        let check: Vec<String> = (0..300).map(|i| namespace_for(&format!("check-{i}"), &suffix)).collect();
        assert!(families_disjoint(&check));
        let ns: Vec<String> = catalogue().iter().map(|c| namespace_for(&c.name, &suffix)).collect();
        assert!(families_disjoint(&ns), "{ns:?}");
    }

    fn catalogue() -> Vec<Case> {
        crate::case::load::lint(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap()
    }

    fn with_gateway(case: &Case, gateway: &str) -> Case {
        let mut c = case.clone();
        c.manifests = vec![crate::case::ManifestFile { path: "gateway.yaml".into(), text: gateway.into() }];
        c
    }

    /// No case of the catalogue asks for an address, so the catalogue runs batched; a Gateway
    /// with `spec.addresses` or an LB-IPAM annotation (on it or on a Service) makes a run go one
    /// case at a time, and says which case.
    #[test]
    fn a_case_asking_for_an_address_runs_the_batch_one_at_a_time() {
        let cases = catalogue();
        let ns: Vec<String> = cases.iter().map(|c| namespace_for(&c.name, "abc123")).collect();
        assert!(cases.iter().all(|c| !asks_for_an_address(c)));
        assert_eq!(effective(&cases, &ns, Batch::new(8).unwrap()), (Batch::new(8).unwrap(), None));
        let gw = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec:\n  gatewayClassName: cilium\n";
        let asking = [
            format!("{gw}  addresses: [{{type: IPAddress, value: 172.18.255.200}}]\n"),
            format!("{gw}  infrastructure: {{annotations: {{io.cilium/lb-ipam-ips: 172.18.255.200}}}}\n"),
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, annotations: {lbipam.cilium.io/ips: 172.18.255.9}}\nspec: {type: LoadBalancer}\n".into(),
        ];
        for text in &asking {
            let mut run = cases.clone();
            run[3] = with_gateway(&cases[3], text);
            assert!(asks_for_an_address(&run[3]), "{text}");
            let (b, why) = effective(&run, &ns, Batch::new(8).unwrap());
            assert_eq!(b, Batch::ONE, "{text}");
            assert!(why.is_some_and(|w| w.contains(&cases[3].name)), "{text}");
        }
        assert!(!asks_for_an_address(&with_gateway(&cases[3], &format!("{gw}  addresses: []\n"))));
        // Namespaces that share a prefix also run one at a time.
        let mut clash = ns.clone();
        clash[1] = format!("{}-x", clash[0]);
        assert_eq!(effective(&cases, &clash, Batch::new(8).unwrap()).0, Batch::ONE);
        // One at a time is said by nobody.
        assert_eq!(effective(&cases, &clash, Batch::ONE), (Batch::ONE, None));
    }
}
