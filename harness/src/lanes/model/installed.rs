//! The Gateway API CRD bundle the lanes install per Cilium line, and what its schema refuses of
//! one object: read once per route while the model's input is built, below the input types
//! (`admission` decides, from these, which routes of a Gateway do not exist at a version).

use super::rules;
use crate::case::CiliumVersion;
use crate::case::api_schema;
use crate::case::manifests::Object;

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
