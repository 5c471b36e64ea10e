//! Why a TLS handshake is answered on a port where the Gateway has only HTTP listeners: the
//! version builds one Envoy listener for every Gateway port (1.19.5's single listener, or the
//! unsplit listener of later versions), so the TLS chains of the HTTPS and TLS ports match a
//! ClientHello on port 80 too. Without this said in the matrix itself, a certificate on :80
//! reads as a leak of the layout rather than of the version.

use serde::Serialize;

use super::answer::Reply;
use super::derive::MatrixKey;
use super::types::{GatewayCheck, VersionResult};
use crate::lanes::model::rules;

/// The Envoy listener that carries an HTTP-only port together with others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedListener {
    pub listener: String,
    pub ports: Vec<u16>,
    pub rule: &'static str,
}

impl SharedListener {
    /// The marker in a matrix cell.
    pub fn marker(&self) -> String {
        format!("[shared {} listener]", self.ports.iter().map(u16::to_string).collect::<Vec<_>>().join("+"))
    }

    /// The legend under the matrix.
    pub fn legend(&self, port: u16, versions: &[String]) -> String {
        let says = rules::ALL.iter().find(|r| r.id == self.rule).map(|r| r.says).unwrap_or("");
        format!(
            "{} on {}: port {port} has only HTTP listeners, but Envoy listener `{}` serves ports {} (rule {}: {says}), so the TLS chains of the other ports answer a handshake on {port} too",
            self.marker(),
            super::outcome::and_list(versions),
            self.listener,
            self.ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
            self.rule,
        )
    }
}

/// For a TLS answer on an HTTP-only port of `c` at version `r`, the listener that shares the
/// port with others; `None` when the answer is nothing, the port has TLS listeners of its own,
/// or Envoy serves the port alone.
pub fn shared(c: &GatewayCheck, r: &VersionResult, key: &MatrixKey, reply: &Reply) -> Option<SharedListener> {
    if key.plain || reply.is_nothing() || !c.derived.http_ports.contains(&key.port) {
        return None;
    }
    let l = r.envoy.iter().find(|e| e.ports.contains(&key.port) && e.ports.len() > 1)?;
    Some(SharedListener { listener: l.name.clone(), ports: l.ports.iter().map(|p| p.get()).collect(), rule: l.rule })
}

/// The legends for every marked cell of the matrix, one per (port, listener, rule) with the
/// versions it holds for.
pub fn legends(c: &GatewayCheck) -> Vec<String> {
    let mut seen: Vec<((u16, SharedListener), Vec<String>)> = Vec::new();
    for r in &c.versions {
        for (k, a) in &r.answers {
            if let Some(s) = shared(c, r, k, a) {
                let key = (k.port.get(), s);
                match seen.iter_mut().find(|(x, _)| *x == key) {
                    Some((_, vs)) if !vs.contains(&r.version) => vs.push(r.version.clone()),
                    Some(_) => {}
                    None => seen.push((key, vec![r.version.clone()])),
                }
            }
        }
    }
    seen.into_iter().map(|((port, s), vs)| s.legend(port, &vs)).collect()
}
