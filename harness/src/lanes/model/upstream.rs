//! Which upstream function a status rule of the model mirrors, at a Cilium tag: the place a
//! reader opens to check the model (`go mod download -json github.com/cilium/cilium@TAG` prints
//! the folder). The conflict and validation code moved between releases (1.19.6 checks
//! cross-protocol pairs in one function; 1.20 checks every pair per listener source), so one
//! rule may mirror different functions on different version ranges; each entry says which.
//!
//! The unit test below downloads each tag through the Go module cache and checks that the
//! commit is the tag's and the function is declared in that file.

use super::rules::Rule;
use crate::case::{CiliumVersion, VersionRange};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upstream {
    /// The rule's id.
    pub rule: &'static str,
    /// The versions this function is the one mirrored.
    pub versions: &'static str,
    /// `true` when this entry is about a conflict across listener sources (a ListenerSet's
    /// listener losing to an earlier source's), not within one.
    pub across_sources: bool,
    pub tag: &'static str,
    pub commit: &'static str,
    pub path: &'static str,
    pub function: &'static str,
}

impl Upstream {
    /// `samePortCrossProtocolConflictedListeners in operator/pkg/gateway-api/gateway_reconcile.go
    /// at cilium v1.19.6 (9a8982433e18)`.
    pub fn text(&self) -> String {
        format!("{} in {} at cilium {} ({})", self.function, self.path, self.tag, &self.commit[..12])
    }
}

const RECONCILE: &str = "operator/pkg/gateway-api/gateway_reconcile.go";
const V1195: (&str, &str) = ("v1.19.5", "20eaccfef029cb046d70219717fb6dbbdf27a59f");
const V1196: (&str, &str) = ("v1.19.6", "9a8982433e18019e290b8199c0c4ad24f66befe8");
const V1201: (&str, &str) = ("v1.20.1", "7d68cfb394f2960e10aa72e76d0d51e66c1b2ebc");

const INGESTION: &str = "operator/pkg/model/ingestion/gateway.go";
const ROUTE_CHECKS: &str = "operator/pkg/gateway-api/routechecks/gateway_checks.go";
const ENVOY_LISTENER: &str = "operator/pkg/model/translation/envoy_listener.go";
const CEC_TRANSLATOR: &str = "operator/pkg/model/translation/cec_translator.go";
const ROUTE_CONFIGURATION: &str = "operator/pkg/model/translation/envoy_route_configuration.go";

macro_rules! upstream {
    ($($rule:literal, $versions:literal, $across:literal, $tag:ident, $path:ident, $function:literal;)*) => {
        pub const ALL: &[Upstream] = &[$(Upstream {
            rule: $rule, versions: $versions, across_sources: $across,
            tag: $tag.0, commit: $tag.1, path: $path, function: $function,
        }),*];
    };
}

upstream! {
    "protocol-conflict", ">=1.19.6, <1.20.0", false, V1196, RECONCILE, "samePortCrossProtocolConflictedListeners";
    "protocol-conflict", ">=1.20.0", false, V1201, RECONCILE, "conflictsWithinSource";
    "protocol-conflict", ">=1.20.0", true, V1201, RECONCILE, "conflictsAcrossSources";
    "hostname-conflict", ">=1.20.0", false, V1201, RECONCILE, "conflictsWithinSource";
    "hostname-conflict", ">=1.20.0", true, V1201, RECONCILE, "conflictsAcrossSources";
    "route-kinds-checked", "<1.20.0", false, V1196, RECONCILE, "setListenerStatus";
    "route-kinds-last-listener-decides", "<1.19.6", false, V1195, ROUTE_CHECKS, "CheckGatewayRouteKindAllowed";
    "route-kinds-checked", ">=1.20.0", false, V1201, RECONCILE, "validateListener";
    "certificate-ref-check", "<1.20.0", false, V1196, RECONCILE, "setListenerStatus";
    "certificate-ref-check", ">=1.20.0", false, V1201, RECONCILE, "validateListener";
    "certificate-ref-invalidates-listener", "<1.20.0", false, V1196, RECONCILE, "setListenerStatus";
    "certificate-ref-invalidates-listener", ">=1.20.0", false, V1201, RECONCILE, "validateListener";
    "invalid-listener-not-translated", ">=1.20.1", false, V1201, RECONCILE, "filterOutInvalidListeners";
    "invalid-listener-chain-kept", "<1.20.1", false, V1196, INGESTION, "toTLS";
    "per-port-no-insecure-chain", ">=1.19.6, <1.20.0", false, V1196, ENVOY_LISTENER, "desiredEnvoyListenerPerPort";
    "per-port-no-insecure-chain", ">=1.20.0", false, V1201, ENVOY_LISTENER, "desiredEnvoyListenerPerPort";
    "per-port-tls-without-chains-skipped", ">=1.19.6, <1.20.0", false, V1196, ENVOY_LISTENER, "tlsPassthroughFilterChainsForPort";
    "per-port-tls-without-chains-skipped", ">=1.20.0", false, V1201, ENVOY_LISTENER, "tlsPassthroughFilterChainsForPort";
    "port-to-first-service-entry", ">=1.19.6, <1.20.0", false, V1196, CEC_TRANSLATOR, "desiredServicesWithPortsSplit";
    "port-to-first-service-entry", ">=1.20.0", false, V1201, CEC_TRANSLATOR, "desiredServicesWithPortsSplit";
    "https-without-secret-is-plain", "<1.20.0", false, V1196, ROUTE_CONFIGURATION, "desiredEnvoyHTTPRouteConfiguration";
}

/// The function `rule` mirrors on `v` (`across_sources` for a conflict across listener
/// sources), if the table has one.
pub fn mirrored(rule: &Rule, v: &CiliumVersion, across_sources: bool) -> Option<&'static Upstream> {
    ALL.iter()
        .find(|u| u.rule == rule.id && u.across_sources == across_sources && VersionRange::parse(u.versions).is_ok_and(|r| r.matches(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::model::rules;

    #[test]
    fn every_entry_names_a_rule_and_a_range() {
        for u in ALL {
            let rule = rules::ALL.iter().find(|r| r.id == u.rule).unwrap_or_else(|| panic!("{}: no such rule", u.rule));
            let range = VersionRange::parse(u.versions).unwrap_or_else(|e| panic!("{}: {e}", u.rule));
            // The entry's range lies inside the rule's: at the entry's own tag both hold.
            let tag = CiliumVersion::parse(u.tag.trim_start_matches('v')).unwrap();
            assert!(range.matches(&tag) && rule.applies(&tag), "{} {}: its tag {} is outside the range", u.rule, u.versions, u.tag);
        }
    }

    #[test]
    fn mirrored_picks_the_function_of_the_version() {
        let v = |s: &str| CiliumVersion::parse(s).unwrap();
        assert_eq!(
            mirrored(&rules::PROTOCOL_CONFLICT, &v("1.19.7"), false).map(|u| u.function),
            Some("samePortCrossProtocolConflictedListeners")
        );
        assert_eq!(mirrored(&rules::PROTOCOL_CONFLICT, &v("1.20.1"), false).map(|u| u.function), Some("conflictsWithinSource"));
        assert_eq!(mirrored(&rules::PROTOCOL_CONFLICT, &v("1.20.1"), true).map(|u| u.function), Some("conflictsAcrossSources"));
        assert_eq!(mirrored(&rules::PROTOCOL_CONFLICT, &v("1.19.5"), false), None);
    }

    /// Each tag's module: its folder and the commit it was built from.
    fn module(tag: &str) -> (std::path::PathBuf, String) {
        let out = std::process::Command::new("go")
            .args(["mod", "download", "-json", &format!("github.com/cilium/cilium@{tag}")])
            .env("GOFLAGS", "-mod=mod")
            .output()
            .unwrap_or_else(|e| panic!("go mod download cilium@{tag} (Go is needed, as for the schema test): {e}"));
        assert!(out.status.success(), "go mod download cilium@{tag}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let dir = v["Dir"].as_str().unwrap().into();
        let hash = v["Origin"]["Hash"].as_str().unwrap_or_default().to_string();
        (dir, hash)
    }

    #[test]
    fn every_function_is_declared_at_its_tag() {
        let mut tags: Vec<(&str, &str)> = ALL.iter().map(|u| (u.tag, u.commit)).collect();
        tags.sort();
        tags.dedup();
        for (tag, commit) in tags {
            let (dir, hash) = module(tag);
            assert_eq!(hash, commit, "cilium {tag} is commit {hash}, the table says {commit}");
            for u in ALL.iter().filter(|u| u.tag == tag) {
                let text = std::fs::read_to_string(dir.join(u.path)).unwrap_or_else(|e| panic!("{tag} {}: {e}", u.path));
                // A function or a method: `func name(` or `func (r *T) name(`.
                let declared = text.lines().any(|l| {
                    l.starts_with("func ") && (l.starts_with(&format!("func {}(", u.function)) || l.contains(&format!(") {}(", u.function)))
                });
                assert!(declared, "{tag} {}: no func {}", u.path, u.function);
            }
        }
    }
}
