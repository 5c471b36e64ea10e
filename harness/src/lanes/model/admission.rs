//! What the API server admits, before Cilium sees anything: a route whose kind's schema (at the
//! version the lanes apply it, with the CRD bundle they install for the Cilium version) lacks a
//! required field is refused with HTTP 422 (reason Invalid), so on a cluster it does not exist:
//! no status, no attachment, no chain. The model predicts the refusal from the same schema facts
//! `lint` reads (`case::api_schema`), never from a list of its own (rule
//! [`rules::TLSROUTE_V1_ADMISSION`]).

use super::input::{GatewayInput, Route};
use super::rules;
use crate::case::CiliumVersion;
use crate::case::api_schema;
use crate::case::manifests::Object;
use crate::judge::Refused;

/// A Gateway API CRD bundle as a lane installs it for a Cilium line, and the version it applies
/// TLSRoutes at (every other kind keeps the version its manifest names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// The bundle (`v1.6.1`), as `kind-config/versions.yaml` pins it.
    pub bundle: &'static str,
    /// The TLSRoute version (`v1`), as `kind-config/versions.yaml` `tlsroute` says.
    pub tlsroute: &'static str,
}

/// What Cilium 1.19.x needs: Gateway API v1.4.1, TLSRoute v1alpha2 (cilium@v1.19.6 cell.go
/// optionalGVKs).
pub const LINE_1_19: Installed = Installed { bundle: "v1.4.1", tlsroute: "v1alpha2" };
/// What Cilium 1.20.x needs: Gateway API v1.6.1, TLSRoute v1 (cilium@v1.20.0 RequiredGVKs).
pub const LINE_1_20: Installed = Installed { bundle: "v1.6.1", tlsroute: "v1" };
/// Every installation the model knows, for reading a route once for all of them.
pub const ALL: [Installed; 2] = [LINE_1_19, LINE_1_20];

impl Installed {
    /// The key a route's refusals are stored under.
    pub fn key(&self) -> String {
        format!("{} {}", self.bundle, self.tlsroute)
    }
}

/// The bundle the lanes install for Cilium `v` (a unit test holds it to every pin of
/// `kind-config/versions.yaml`).
pub fn installed(v: &CiliumVersion) -> Installed {
    if rules::TLSROUTE_V1_ADMISSION.applies(v) { LINE_1_20 } else { LINE_1_19 }
}

/// The version object `o` is applied at under `inst`: a TLSRoute at the installation's, as the
/// cluster lanes apply it (`lanes/cluster/one_case.rs` `at_stored_version`); anything else at
/// its own.
fn applied_version(o: &Object, inst: &Installed) -> String {
    if o.kind == "TLSRoute" {
        inst.tlsroute.to_string()
    } else {
        o.api_version.rsplit_once('/').map(|(_, v)| v).unwrap_or(&o.api_version).to_string()
    }
}

/// The API server's message refusing `o` under each installation that refuses it, by
/// [`Installed::key`]: what a [`Route`] carries, read once.
pub fn refusals_of(o: &Object) -> std::collections::BTreeMap<String, String> {
    ALL.iter()
        .filter_map(|inst| {
            let why = api_schema::refusals(o, inst.bundle, &applied_version(o, inst));
            (!why.is_empty()).then(|| (inst.key(), api_schema::refusal_message(o, &why)))
        })
        .collect()
}

/// The routes of `gw` the API server refuses at `v`, as the lanes record a refusal.
pub fn refused_routes(gw: &GatewayInput, v: &CiliumVersion) -> Vec<Refused> {
    let key = installed(v).key();
    gw.routes
        .iter()
        .filter_map(|r| {
            r.refused.get(&key).map(|message| Refused {
                kind: r.kind.clone(),
                namespace: Some(r.namespace.clone()),
                name: r.name.clone(),
                code: 422,
                reason: "Invalid".into(),
                message: message.clone(),
            })
        })
        .collect()
}

/// `gw` without the routes the API server refuses at `v`: what exists on the cluster.
pub fn admitted(gw: &GatewayInput, refused: &[Refused]) -> GatewayInput {
    let mut g = gw.clone();
    g.routes
        .retain(|r: &Route| !refused.iter().any(|x| x.kind == r.kind && x.name == r.name && x.namespace.as_deref() == Some(&r.namespace)));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The installation the model assumes at each pin is the one the lanes install there.
    #[test]
    fn the_installation_is_the_pins_own() {
        let pins = crate::versions::Pins::load_default().unwrap();
        for p in &pins.cilium {
            let inst = installed(&p.version);
            assert_eq!(inst.bundle, p.gateway_api.version, "Cilium {}", p.version);
            assert_eq!(inst.tlsroute, p.gateway_api.tlsroute, "Cilium {}", p.version);
        }
    }

    fn tlsroute(spec: &str) -> Object {
        let text = format!(
            "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: api, namespace: ns}}\nspec:\n{spec}"
        );
        crate::case::manifests::parse_file(
            std::path::Path::new("r.yaml"),
            &text,
            &crate::case::template::Vars { apex: "example.test".into(), namespace: "ns".into(), gateway: "gw".into() },
        )
        .unwrap()
        .remove(0)
    }

    /// From the schema facts: TLSRoute v1 of v1.6.1 requires hostnames, v1alpha2 of v1.4.1 does
    /// not; a TLSRoute with hostnames is admitted by both.
    #[test]
    fn a_tlsroute_without_hostnames_is_refused_at_v1_only() {
        let bare = tlsroute("  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: api, port: 443}]}]\n");
        let r = refusals_of(&bare);
        assert_eq!(r.keys().collect::<Vec<_>>(), ["v1.6.1 v1"], "{r:?}");
        assert_eq!(r["v1.6.1 v1"], "TLSRoute.gateway.networking.k8s.io \"api\" is invalid: spec.hostnames: Required value");
        let named =
            tlsroute("  parentRefs: [{name: gw}]\n  hostnames: [a.example.test]\n  rules: [{backendRefs: [{name: api, port: 443}]}]\n");
        assert!(refusals_of(&named).is_empty());
    }
}
