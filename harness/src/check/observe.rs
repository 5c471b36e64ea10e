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
    let t = std::time::Instant::now();
    let certs = CertSet::generate(&format!("check {}", case.name), &case.certificates).map_err(|e| format!("certificates: {e}"))?;
    let model = input::read(case).map_err(|e| e.to_string())?;
    let predictions: Vec<Vec<translate::Prediction>> =
        versions.iter().map(|v| model.gateways.iter().map(|g| translate::predict(g, v)).collect()).collect();
    let pairs_of =
        |i: usize| -> Vec<(&input::GatewayInput, &translate::Prediction)> { model.gateways.iter().zip(&predictions[i]).collect() };
    let all: Vec<(&input::GatewayInput, &translate::Prediction)> = (0..versions.len()).flat_map(pairs_of).collect();
    let gateways: Vec<&input::GatewayInput> = model.gateways.iter().collect();
    let stage = serve::stage(case, &all, &certs).map_err(|e| e.to_string())?;
    let groups = group(versions.len(), plan, |i, ports| {
        let ports = match ports {
            Some(p) => p.clone(),
            None => serve::free_ports(&gateways)?,
        };
        serve::render(case, &pairs_of(i), &certs, &stage, &ports)
    })
    .map_err(|e| e.to_string())?;
    tracing::debug!(
        elapsed_ms = t.elapsed().as_millis() as u64,
        envoys = groups.len(),
        "check: certificates, backends, predictions and configurations ready"
    );
    let runs = groups.iter().map(|g| {
        let rerender = |ports: &serve::PortMap| -> Result<Config, ServeError> {
            let first = serve::render(case, &pairs_of(g.members[0]), &certs, &stage, ports)?;
            // Every member must still render to the very bytes served.
            for &m in &g.members[1..] {
                if !serve::render(case, &pairs_of(m), &certs, &stage, ports)?.same_as(&first) {
                    return Err(ServeError::Backend { name: "envoy".into(), message: "configurations differ on new ports".into() });
                }
            }
            Ok(first)
        };
        run_group(case, &versions[g.members[0]], &g.config, rerender, &gateways, &certs, timeouts)
    });
    let results = futures::future::join_all(runs).await;
    let mut out: Vec<Option<VersionObservation>> = vec![None; versions.len()];
    for (g, result) in groups.iter().zip(results) {
        let shared = result.map(Arc::new);
        for &m in &g.members {
            out[m] = Some(VersionObservation {
                version: versions[m].clone(),
                shared_with: g.members.iter().filter(|&&o| o != m).map(|&o| versions[o].clone()).collect(),
                observed: shared.clone(),
            });
        }
    }
    let names = certs.iter().map(|c| (c.fingerprint(), c.name.clone())).collect();
    // `group` places every version in exactly one group.
    Ok(Observed { names, versions: out.into_iter().flatten().collect() })
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

/// One Envoy: start it (new ports if one was taken meanwhile), wait until it listens, probe
/// every key of `version`'s expectations, read its dump.
async fn run_group(
    case: &Case,
    version: &CiliumVersion,
    config: &Config,
    rerender: impl Fn(&serve::PortMap) -> Result<Config, ServeError>,
    gateways: &[&input::GatewayInput],
    certs: &CertSet,
    timeouts: &Timeouts,
) -> Result<EnvoyObservation, String> {
    let on = |e: &dyn std::fmt::Display| format!("case {} on model {version}: {e}", case.name);
    let t = std::time::Instant::now();
    let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
    let mut moved: Option<Config> = None;
    let mut attempt = 0;
    let running = loop {
        attempt += 1;
        let cfg = moved.as_ref().unwrap_or(config);
        match serve::start(case, cfg, timeouts.envoy_ready).await {
            Ok(r) => break r,
            Err(ServeError::PortTaken(p)) if attempt < 3 => {
                tracing::warn!("check: port race on {p}; retrying");
                let ports = serve::free_ports(gateways).map_err(|e| on(&e))?;
                moved = Some(rerender(&ports).map_err(|e| on(&e))?);
            }
            Err(e) => return Err(on(&e)),
        }
    };
    let config = moved.as_ref().unwrap_or(config);
    tracing::debug!(%version, elapsed_ms = ms(t), "check: Envoy started and took the listeners");
    let t = std::time::Instant::now();
    serve::wait_listening(&running.envoy, config, timeouts.envoy_ready.max(timeouts.converge)).await.map_err(|e| on(&e))?;
    tracing::debug!(%version, elapsed_ms = ms(t), "check: every listener ready");
    let t = std::time::Instant::now();
    let applied = case.applied(version);
    let primary = case.gateway.clone();
    let ports = config.ports.clone();
    let addr_of = move |k: &crate::case::ProbeKey| ports.get(&(k.gateway.clone().unwrap_or_else(|| primary.clone()), k.port)).copied();
    let probes = run::probe_all_keyed(&applied, &addr_of, certs, timeouts).await;
    let observations: usize = probes.iter().map(|p| p.facts.len()).sum();
    tracing::debug!(%version, elapsed_ms = ms(t), keys = probes.len(), observations, "check: probed");
    let dump = running.envoy.admin().dynamic_listeners_dump().await;
    let (listeners, dump_error) = match dump
        .map_err(|e| e.to_string())
        .and_then(|d| envoy_dump::summarize_bytes(&d, "model envoy /config_dump", false).map_err(|e| e.to_string()))
    {
        Ok(s) => (Some(ListenerFact::all(&s)), None),
        Err(e) => (None, Some(format!("config dump: {e}"))),
    };
    Ok(EnvoyObservation { probes, listeners, dump_error })
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
    fn identical_configurations_share_an_envoy_and_different_ones_do_not() {
        // Joining compares a version rendered onto the group's own ports: with fresh ports every
        // rendering would differ and nothing would ever be shared.
        assert_eq!(grouped(&["a", "a", "b", "a"], EnvoyPlan::Shared), [vec![0, 1, 3], vec![2]]);
        assert_eq!(grouped(&["a", "b", "c"], EnvoyPlan::Shared), [vec![0], vec![1], vec![2]]);
        assert_eq!(grouped(&["a", "a"], EnvoyPlan::PerVersion), [vec![0], vec![1]]);
    }
}
