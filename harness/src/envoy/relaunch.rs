//! One Envoy start that answers a refused listener as Cilium's agent makes cilium-envoy answer
//! it ([`super::revert`]): the refused listener's whole CiliumEnvoyConfig withdrawn. Shared by
//! the model lane (`lanes/model/serve.rs`) and the operator lane's emulated agent step
//! (`lanes/operator/plane.rs`), which differ only in how they start one Envoy.
//!
//! Upstream Envoy given the listeners by file keeps every listener it accepts (active at once:
//! inline routes, static secrets), and removing an active listener leaves it draining in the
//! dump, where cilium-envoy's listeners were still warming (waiting on the agent's RDS and SDS)
//! when the agent's revert removed them. So a fresh Envoy is started on what the agent leaves,
//! and the first one stopped.

use std::collections::BTreeSet;
use std::future::Future;

use super::admin::AdminError;
use super::lds::LdsOutcome;
use super::process::EnvoyProcess;

/// One started Envoy and the outcome of the listener update it was given.
pub trait Launched {
    fn envoy(&self) -> &EnvoyProcess;
    fn lds(&self) -> LdsOutcome;
}

impl Launched for (EnvoyProcess, LdsOutcome) {
    fn envoy(&self) -> &EnvoyProcess {
        &self.0
    }
    fn lds(&self) -> LdsOutcome {
        self.1
    }
}

/// Which start a launch is: the first, on every listener, or the one after the agent's revert,
/// on what it left (callers keep the two starts' files apart by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    First,
    AfterRevert,
}

/// The listeners Envoy refused and every listener Cilium's agent withdrew with them (every
/// listener of the refused one's CiliumEnvoyConfig). Empty when nothing was withdrawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revert {
    pub refused: Vec<(String, String)>,
    pub withdrawn: BTreeSet<String>,
}

impl Revert {
    /// What a lane says of it (nothing when nothing was withdrawn).
    pub fn notes(&self) -> Vec<String> {
        super::revert::say(&self.refused, &self.withdrawn)
    }
}

/// Starts Envoy on `listeners` with `launch`; where it refuses a listener, stops it and starts a
/// fresh one on the listeners the agent's revert leaves (every listener whose CEC had one
/// refused withdrawn, by the names `name` gives). Returns the Envoy that serves and what was
/// withdrawn. `admin_error` turns a failed read of the first Envoy's dump into the caller's error.
pub async fn launch_reverting<L, T, E, Fut>(
    listeners: Vec<L>,
    name: impl Fn(&L) -> Option<&str>,
    mut launch: impl FnMut(Attempt, Vec<L>) -> Fut,
    admin_error: impl FnOnce(AdminError) -> E,
) -> Result<(T, Revert), E>
where
    L: Clone,
    T: Launched,
    Fut: Future<Output = Result<T, E>>,
{
    let first = launch(Attempt::First, listeners.clone()).await?;
    if first.lds() != LdsOutcome::Rejected {
        return Ok((first, Revert::default()));
    }
    let refused = super::revert::refused(&first.envoy().admin()).await.map_err(admin_error)?;
    let names: Vec<String> = refused.iter().map(|(n, _)| n.clone()).collect();
    let withdrawn = super::revert::withdrawn(&names, listeners.iter().filter_map(&name));
    if withdrawn.is_empty() {
        return Ok((first, Revert::default()));
    }
    drop(first);
    let kept: Vec<L> = listeners.into_iter().filter(|l| name(l).is_none_or(|n| !withdrawn.contains(n))).collect();
    let again = launch(Attempt::AfterRevert, kept).await?;
    Ok((again, Revert { refused, withdrawn }))
}
