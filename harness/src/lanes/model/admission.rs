//! What the API server admits, before Cilium sees anything: a route whose kind's schema (at the
//! version the lanes apply it, with the CRD bundle they install for the Cilium version) lacks a
//! required field is refused with HTTP 422 (reason Invalid), so on a cluster it does not exist:
//! no status, no attachment, no chain. The model predicts the refusal from the same schema facts
//! `lint` reads (`case::api_schema`), never from a list of its own (rule
//! [`rules::TLSROUTE_V1_ADMISSION`]).

use super::input::{GatewayInput, Route};
pub use super::installed::{ALL, Installed, LINE_1_19, LINE_1_20, installed, refusals_of};
use crate::case::CiliumVersion;
use crate::judge::Refused;

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
    use crate::case::manifests::Object;

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
