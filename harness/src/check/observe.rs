//! `check`'s Envoys: every version's prediction served on a real local Envoy and probed, as the
//! model lane does it, with two differences that make a big Gateway answer in seconds:
//!
//! * versions whose Envoy configuration is **byte-identical** (same listeners as pushed over
//!   LDS, same clusters, rendered with the same certificates, backends and ports) are served by
//!   one Envoy, and its observations are every such version's answers ([`EnvoyPlan::Shared`]);
//!   each version still gets its own statuses from its own prediction;
//! * probing starts only once the Envoy's listeners are ready ([`serve::wait_listening`]): none
//!   warming, every active one accepting. A static local Envoy then picks the same chain for the
//!   same ClientHello every time, so `check` confirms each key with fewer consecutive
//!   observations than the catalogue runs ([`crate::check::check_defaults`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::case::{Case, CiliumVersion};
use crate::evidence::ProbeRecord;
use crate::judge::ListenerFact;
use crate::lanes::model::serve::{self, Config, ServeError};
use crate::lanes::model::{input, translate};
use crate::observe::envoy_dump;
use crate::render::certs::CertSet;
use crate::run::{self, Timeouts};
use crate::types::{CertName, Fingerprint};

/// How many Envoys `check` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvoyPlan {
    /// One per distinct configuration: versions whose configuration is byte-identical share one.
    Shared,
    /// One per version, whatever the configurations (the model lane's way; kept to compare).
    PerVersion,
}

/// What one Envoy answered.
#[derive(Debug, Clone)]
pub struct EnvoyObservation {
    pub probes: Vec<ProbeRecord>,
    /// Envoy's own listeners, from its config dump.
    pub listeners: Option<Vec<ListenerFact>>,
    /// The config dump could not be read.
    pub dump_error: Option<String>,
    /// Listeners Cilium's agent withdrew after Envoy refused one of their CiliumEnvoyConfig
    /// (`crate::envoy::revert`), by short name, with what Envoy said: absent from the dump, so
    /// said here.
    pub withdrawn: BTreeMap<String, String>,
}

/// One version's observations.
#[derive(Debug, Clone)]
pub struct VersionObservation {
    pub version: CiliumVersion,
    /// The other versions the same Envoy answered for (their configuration is byte-identical).
    pub shared_with: Vec<CiliumVersion>,
    /// Why nothing was observed.
    pub observed: Result<Arc<EnvoyObservation>, String>,
}

/// Everything observed for a case, with the names of the certificates that answered.
#[derive(Debug, Clone)]
pub struct Observed {
    pub names: BTreeMap<Fingerprint, CertName>,
    /// In the order of the versions asked for.
    pub versions: Vec<VersionObservation>,
}

/// The versions served by one Envoy, and the configuration each of them rendered to.
struct EnvoyGroup<C> {
    members: Vec<usize>,
    config: C,
}

/// A rendered configuration, as [`group`] compares them.
trait Rendered {
    /// What Envoy is given, byte for byte.
    fn bytes(&self) -> Vec<u8>;
    /// Whether the two give Envoy the same bytes (may be cheaper than comparing [`bytes`]).
    ///
    /// [`bytes`]: Rendered::bytes
    fn same_as(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
    fn ports(&self) -> &serve::PortMap;
}

impl Rendered for Config {
    fn bytes(&self) -> Vec<u8> {
        Config::bytes(self)
    }
    fn same_as(&self, other: &Self) -> bool {
        Config::same_as(self, other)
    }
    fn ports(&self) -> &serve::PortMap {
        &self.ports
    }
}

/// Serves every version of `versions` for `case` and probes it. Must run inside a tokio runtime.
pub async fn observe(case: &Case, versions: &[CiliumVersion], timeouts: &Timeouts, plan: EnvoyPlan) -> Result<Observed, String> {
    observe_all(&[case], versions, timeouts, plan).await.pop().unwrap_or_else(|| Err("nothing was observed".into()))
}

/// At most this many Envoy listeners in one Envoy serving several cases (a case with more
/// still gets an Envoy of its own): bounds the configuration dump, which is read whole.
const LISTENERS_PER_ENVOY: usize = 2048;
/// Envoys running at once.
const ENVOYS_AT_ONCE: usize = 4;
/// Cases probed at once in one Envoy (each probes all its keys at once).
const CASES_AT_ONCE: usize = 32;

/// One case, ready to serve: its certificates, backends, predictions, and the Envoy
/// configurations its versions render to, grouped as [`group`] does for a case alone.
struct Setup<'a> {
    case: &'a Case,
    /// Before every listener and cluster name of this case in a shared Envoy.
    scope: String,
    certs: CertSet,
    model: input::ModelInput,
    /// Per version asked for, per Gateway of the case.
    predictions: Vec<Vec<translate::Prediction>>,
    stage: serve::Stage,
    groups: Vec<EnvoyGroup<Config>>,
}

impl Setup<'_> {
    fn pairs(&self, i: usize) -> Vec<(&input::GatewayInput, &translate::Prediction)> {
        self.model.gateways.iter().zip(&self.predictions[i]).collect()
    }

    fn gateways(&self) -> Vec<&input::GatewayInput> {
        self.model.gateways.iter().collect()
    }

    fn render(&self, i: usize, ports: &serve::PortMap) -> Result<Config, ServeError> {
        serve::render_scoped(self.case, &self.pairs(i), &self.certs, &self.stage, ports, &self.scope)
    }

    /// Group `slot`'s configuration onto new ports; every member must still render to the
    /// very bytes served.
    fn rerender(&self, slot: usize) -> Result<Config, ServeError> {
        let g = &self.groups[slot];
        let ports = serve::free_ports(&self.gateways())?;
        let first = self.render(g.members[0], &ports)?;
        for &m in &g.members[1..] {
            if !self.render(m, &ports)?.same_as(&first) {
                return Err(ServeError::Backend { name: "envoy".into(), message: "configurations differ on new ports".into() });
            }
        }
        Ok(first)
    }

    fn listener_count(&self) -> usize {
        self.groups.iter().map(|g| g.config.listeners.len()).max().unwrap_or(0)
    }

    /// `case check on model 1.19.5: ...`, naming the version group `slot` is probed at.
    fn on(&self, versions: &[CiliumVersion], slot: usize, e: &dyn std::fmt::Display) -> String {
        format!("case {} on model {}: {e}", self.case.name, versions[self.groups[slot].members[0]])
    }
}

/// The scope of case `n` in a shared Envoy: a prefix no Gateway namespace can start with (a
/// namespace is a DNS label), so a name of one case is never read as another's.
fn scope_of(n: usize) -> String {
    format!("~c{n}~")
}

fn setup<'a>(case: &'a Case, n: usize, versions: &[CiliumVersion], plan: EnvoyPlan) -> Result<Setup<'a>, String> {
    let certs = CertSet::generate(&format!("check {}", case.name), &case.certificates).map_err(|e| format!("certificates: {e}"))?;
    let model = input::read_derived(case).map_err(|e| e.to_string())?;
    let predictions: Vec<Vec<translate::Prediction>> =
        versions.iter().map(|v| model.gateways.iter().map(|g| translate::predict(g, v)).collect()).collect();
    let stage = {
        let all: Vec<(&input::GatewayInput, &translate::Prediction)> =
            predictions.iter().flat_map(|p| model.gateways.iter().zip(p)).collect();
        serve::stage(case, &all, &certs).map_err(|e| e.to_string())?
    };
    let mut s = Setup { case, scope: scope_of(n), certs, model, predictions, stage, groups: Vec::new() };
    s.groups = group(versions.len(), plan, |i, ports| {
        let ports = match ports {
            Some(p) => p.clone(),
            None => serve::free_ports(&s.gateways())?,
        };
        s.render(i, &ports)
    })
    .map_err(|e| e.to_string())?;
    Ok(s)
}

/// [`observe`] for several cases at once, answered in their order. Their Envoys are shared: the
/// `k`-th Envoy configuration of every case (each case's versions grouped as for the case
/// alone) is served by one Envoy, each case under its own names ([`serve::render_scoped`]) on
/// its own held addresses, as many cases together as [`LISTENERS_PER_ENVOY`] allows. So a
/// thousand Gateways start a handful of Envoys rather than thousands, and each case observes
/// exactly what an Envoy of its own would have answered: the same listeners and chains, only
/// renamed; Envoy takes or refuses each listener apart. Must run inside a tokio runtime.
pub async fn observe_all(
    cases: &[&Case],
    versions: &[CiliumVersion],
    timeouts: &Timeouts,
    plan: EnvoyPlan,
) -> Vec<Result<Observed, String>> {
    use futures::stream::{self, StreamExt};
    let t = std::time::Instant::now();
    let setups: Vec<Result<Setup, String>> = cases.iter().enumerate().map(|(n, c)| setup(c, n, versions, plan)).collect();
    let ready = setups.iter().filter(|s| s.is_ok()).count();
    let sizes: Vec<Option<(usize, usize)>> = setups.iter().map(|s| s.as_ref().ok().map(|s| (s.listener_count(), s.groups.len()))).collect();
    let slots = envoys_for(&sizes, LISTENERS_PER_ENVOY);
    tracing::debug!(
        elapsed_ms = t.elapsed().as_millis() as u64,
        cases = cases.len(),
        ready,
        envoys = slots.len(),
        "check: certificates, backends, predictions and configurations ready"
    );
    let runs = slots.iter().map(|(members, slot)| {
        let members: Vec<(usize, &Setup)> = members.iter().filter_map(|&n| setups[n].as_ref().ok().map(|s| (n, s))).collect();
        run_slot(members, *slot, versions, timeouts)
    });
    let results: Vec<Vec<SlotResult>> = stream::iter(runs).buffered(ENVOYS_AT_ONCE).collect().await;
    let mut observed: Vec<Vec<Option<VersionObservation>>> = vec![vec![None; versions.len()]; cases.len()];
    for (n, slot, result) in results.into_iter().flatten() {
        let Ok(s) = &setups[n] else { continue };
        let g = &s.groups[slot];
        let shared = result.map(Arc::new);
        for &m in &g.members {
            observed[n][m] = Some(VersionObservation {
                version: versions[m].clone(),
                shared_with: g.members.iter().filter(|&&o| o != m).map(|&o| versions[o].clone()).collect(),
                observed: shared.clone(),
            });
        }
    }
    setups
        .into_iter()
        .zip(observed)
        .map(|(s, versions)| {
            let s = s?;
            let names = s.certs.iter().map(|c| (c.fingerprint(), c.name.clone())).collect();
            // `group` places every version in exactly one group, and every group ran.
            Ok(Observed { names, versions: versions.into_iter().flatten().collect() })
        })
        .collect()
}

/// Places versions `0..n` into Envoys. `render(i, ports)` renders version `i` onto `ports`
/// (`None`: onto new free ports). With [`EnvoyPlan::Shared`], a version joins the first Envoy
/// whose configuration its own rendering onto that Envoy's ports equals byte for byte.
/// Rendering onto the group's ports matters: on ports of its own no rendering would equal another.
fn group<C: Rendered, E>(
    n: usize,
    plan: EnvoyPlan,
    render: impl Fn(usize, Option<&serve::PortMap>) -> Result<C, E>,
) -> Result<Vec<EnvoyGroup<C>>, E> {
    let mut groups: Vec<EnvoyGroup<C>> = Vec::new();
    for i in 0..n {
        let mut joined = false;
        if plan == EnvoyPlan::Shared {
            for g in &mut groups {
                let candidate = render(i, Some(g.config.ports()))?;
                if candidate.same_as(&g.config) {
                    // What is claimed: the very bytes this version would have been served.
                    debug_assert!(candidate.bytes() == g.config.bytes(), "equal specs rendered to different bytes");
                    g.members.push(i);
                    joined = true;
                    break;
                }
            }
        }
        if !joined {
            groups.push(EnvoyGroup { members: vec![i], config: render(i, None)? });
        }
    }
    Ok(groups)
}

/// The Envoys serving cases of `sizes` (per case: its largest configuration's listeners and how
/// many configurations it has; `None`: the case has nothing to serve): consecutive cases share
/// an Envoy while their listeners fit `limit` (a case larger than that alone); within such a
/// batch the `k`-th configuration of every case that has one is served by the batch's `k`-th
/// Envoy. Each Envoy as (its cases, `k`).
fn envoys_for(sizes: &[Option<(usize, usize)>], limit: usize) -> Vec<(Vec<usize>, usize)> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut load = 0;
    for (n, size) in sizes.iter().enumerate() {
        let Some((listeners, _)) = size else { continue };
        match batches.last_mut() {
            Some(b) if load + listeners <= limit => b.push(n),
            _ => {
                batches.push(vec![n]);
                load = 0;
            }
        }
        load += listeners;
    }
    let groups_of = |n: usize| sizes[n].map(|(_, g)| g).unwrap_or(0);
    let mut envoys = Vec::new();
    for b in &batches {
        let most = b.iter().map(|&n| groups_of(n)).max().unwrap_or(0);
        for slot in 0..most {
            envoys.push((b.iter().copied().filter(|&n| groups_of(n) > slot).collect(), slot));
        }
    }
    envoys
}

/// (case, slot, what that case observed in the slot's Envoy).
type SlotResult = (usize, usize, Result<EnvoyObservation, String>);

/// One Envoy for configuration `slot` of every case of `members`: start it (new ports if one
/// was taken meanwhile), wait until it listens, probe every key of each case at the version
/// its group is probed at, read the dump once and give each case its own listeners back under
/// their own names. Answers (case, slot, observation) for every member.
async fn run_slot<'a>(
    members: Vec<(usize, &'a Setup<'a>)>,
    slot: usize,
    versions: &[CiliumVersion],
    timeouts: &Timeouts,
) -> Vec<SlotResult> {
    use futures::stream::{self, StreamExt};
    let all_err = |e: &dyn std::fmt::Display| members.iter().map(|(n, s)| (*n, slot, Err(s.on(versions, slot, e)))).collect::<Vec<_>>();
    let t = std::time::Instant::now();
    let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
    let mut moved: Option<Vec<Config>> = None;
    let mut attempt = 0;
    let running = loop {
        attempt += 1;
        let configs: Vec<&Config> = match &moved {
            Some(m) => m.iter().collect(),
            None => members.iter().map(|(_, s)| &s.groups[slot].config).collect(),
        };
        match serve::start_merged(&format!("check-{slot}"), &configs, timeouts.envoy_ready.limit).await {
            Ok(r) => break r,
            Err(ServeError::PortTaken(p)) if attempt < 3 => {
                tracing::warn!("check: port race on {p}; retrying");
                match members.iter().map(|(_, s)| s.rerender(slot)).collect::<Result<Vec<_>, _>>() {
                    Ok(m) => moved = Some(m),
                    Err(e) => return all_err(&e),
                }
            }
            Err(e) => return all_err(&e),
        }
    };
    let configs: Vec<&Config> = match &moved {
        Some(m) => m.iter().collect(),
        None => members.iter().map(|(_, s)| &s.groups[slot].config).collect(),
    };
    tracing::debug!(slot, cases = members.len(), elapsed_ms = ms(t), "check: Envoy started and took the listeners");
    let t = std::time::Instant::now();
    if let Err(e) = serve::wait_listening_all(&running, &configs, timeouts.envoy_ready.limit.max(timeouts.converge.limit)).await {
        return all_err(&e);
    }
    tracing::debug!(slot, elapsed_ms = ms(t), "check: every listener ready");
    let t = std::time::Instant::now();
    let probes: Vec<Vec<ProbeRecord>> = stream::iter(members.iter().zip(&configs).map(|((_, s), config)| {
        let version = &versions[s.groups[slot].members[0]];
        let applied = s.case.applied(version);
        let primary = s.case.gateway.clone();
        let ports = config.ports.clone();
        async move {
            let addr_of =
                move |k: &crate::case::ProbeKey| ports.get(&(k.gateway.clone().unwrap_or_else(|| primary.clone()), k.port)).copied();
            run::probe_all_keyed(&applied, &addr_of, &s.certs, timeouts).await
        }
    }))
    .buffered(CASES_AT_ONCE)
    .collect()
    .await;
    let observations: usize = probes.iter().flatten().map(|p| p.facts.len()).sum();
    tracing::debug!(slot, elapsed_ms = ms(t), observations, "check: probed");
    let dump = running.envoy.admin().dynamic_listeners_dump().await;
    let summary = dump
        .map_err(|e| e.to_string())
        .and_then(|d| envoy_dump::summarize_bytes(&d, "model envoy /config_dump", false).map_err(|e| e.to_string()));
    members
        .iter()
        .zip(probes)
        .map(|((n, s), probes)| {
            let (listeners, dump_error) = match &summary {
                Ok(all) => (Some(ListenerFact::all(&own_listeners(all, &s.scope))), None),
                Err(e) => (None, Some(format!("config dump: {e}"))),
            };
            let refusal = |r: &str| running.revert.refused.iter().find(|(n, _)| n == r).map(|(_, d)| d.replace(&s.scope, ""));
            let withdrawn = running
                .revert
                .withdrawn
                .iter()
                .filter_map(|w| {
                    let own = w.strip_prefix(&s.scope)?;
                    let why = refusal(w).unwrap_or_else(|| {
                        "withdrawn by Cilium's agent with its CiliumEnvoyConfig: Envoy refused another of its listeners".into()
                    });
                    // By short name, as the judge's listener facts and the rows name them.
                    let short = own.rsplit_once('/').map_or(own, |(_, short)| short);
                    Some((short.to_string(), why))
                })
                .collect();
            (*n, slot, Ok(EnvoyObservation { probes, listeners, dump_error, withdrawn }))
        })
        .collect()
}

/// The listeners of a shared Envoy's dump named with `scope`, under their own names (the
/// scope taken out of names and Envoy's messages alike).
fn own_listeners(all: &envoy_dump::DumpSummary, scope: &str) -> envoy_dump::DumpSummary {
    let listeners = all
        .listeners
        .iter()
        .filter_map(|l| {
            let name = l.name.strip_prefix(scope)?;
            let mut l = l.clone();
            l.name = name.to_string();
            l.error = l.error.map(|e| e.replace(scope, ""));
            Some(l)
        })
        .collect();
    envoy_dump::DumpSummary { listeners }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::net::SocketAddr;

    /// A configuration that, like a real one, names its ports.
    struct Fake {
        body: &'static str,
        ports: serve::PortMap,
    }

    impl Rendered for Fake {
        fn bytes(&self) -> Vec<u8> {
            format!("{} {:?}", self.body, self.ports).into_bytes()
        }
        fn ports(&self) -> &serve::PortMap {
            &self.ports
        }
    }

    /// Renders version `i` to `bodies[i]`; onto new ports, each call gets ports no other call had.
    fn grouped(bodies: &[&'static str], plan: EnvoyPlan) -> Vec<Vec<usize>> {
        let next = Cell::new(40000u16);
        let render = |i: usize, ports: Option<&serve::PortMap>| -> Result<Fake, ()> {
            let ports = ports.cloned().unwrap_or_else(|| {
                next.set(next.get() + 1);
                let addr: SocketAddr = format!("127.0.0.1:{}", next.get()).parse().unwrap();
                serve::PortMap::unheld(BTreeMap::from([(("gw".to_string(), crate::types::Port::new(443).unwrap()), addr)]))
            });
            Ok(Fake { body: bodies[i], ports })
        };
        group(bodies.len(), plan, render).unwrap().into_iter().map(|g| g.members).collect()
    }

    #[test]
    fn gateways_share_envoys_while_their_listeners_fit() {
        // Three cases of 10 listeners; the second has two distinct configurations: two Envoys
        // serve all three (the second Envoy only the second case's other configuration).
        let three = [Some((10, 1)), Some((10, 2)), Some((10, 1))];
        assert_eq!(envoys_for(&three, 2048), [(vec![0, 1, 2], 0), (vec![1], 1)]);
        // What does not fit starts a new Envoy; a case larger than the limit has one alone; a
        // case that could not be set up has none.
        assert_eq!(envoys_for(&three, 20), [(vec![0, 1], 0), (vec![1], 1), (vec![2], 0)]);
        assert_eq!(envoys_for(&[Some((30, 1)), None, Some((5, 1))], 20), [(vec![0], 0), (vec![2], 0)]);
        // A thousand Gateways of 3 listeners: two Envoys, not a thousand.
        let many = vec![Some((3, 1)); 1000];
        assert_eq!(envoys_for(&many, LISTENERS_PER_ENVOY).len(), 2);
    }

    #[test]
    fn identical_configurations_share_an_envoy_and_different_ones_do_not() {
        // Joining compares a version rendered onto the group's own ports: with fresh ports every
        // rendering would differ and nothing would ever be shared.
        assert_eq!(grouped(&["a", "a", "b", "a"], EnvoyPlan::Shared), [vec![0, 1, 3], vec![2]]);
        assert_eq!(grouped(&["a", "b", "c"], EnvoyPlan::Shared), [vec![0], vec![1], vec![2]]);
        assert_eq!(grouped(&["a", "a"], EnvoyPlan::PerVersion), [vec![0], vec![1]]);
    }
}
