//! The conformance suite a Cilium pin is measured by: the version the tag's own `go.mod` names
//! (Cilium builds its conformance test, `operator/pkg/gateway-api/conformance_test.go`, against
//! it), built by `scripts/install-control-plane.sh --conformance` from the pinned module in
//! `kind-config/control-plane/gateway-api-conformance/<version>/` and checked against its
//! `build.json` ([`crate::lanes::operator::binaries::conformance_suite`]).

use std::path::{Path, PathBuf};

use crate::case::CiliumVersion;
use crate::lanes::operator::binaries::{self, Binary};
use crate::versions::Pins;

/// The suite version a Cilium tag's `go.mod` requires: `sigs.k8s.io/gateway-api/conformance`
/// when the tag requires it (a module of its own from v1.5), else `sigs.k8s.io/gateway-api`
/// (whose `conformance/` package the suite then is). The same reading as the install script's
/// `conformance_of`.
pub fn suite_version(go_mod: &str) -> Option<String> {
    let required = |module: &str| {
        go_mod.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            let first = words.next()?;
            let first = if first == "require" { words.next()? } else { first };
            (first == module).then(|| words.next().map(str::to_string)).flatten()
        })
    };
    required("sigs.k8s.io/gateway-api/conformance").or_else(|| required("sigs.k8s.io/gateway-api"))
}

/// The suite for one pin, with where its sources and the tag's sources are.
#[derive(Debug, Clone)]
pub struct Suite {
    /// e.g. `v1.4.0-rc.2`.
    pub version: String,
    pub binary: Binary,
    /// The suite's source folder (its `tests/` are read to name the traffic tests).
    pub suite_dir: PathBuf,
    /// The Cilium module at the tag (its workflow and conformance test are read).
    pub cilium_dir: PathBuf,
}

/// Finds the suite for `version`: the tag's source from the operator's build (its chart is
/// inside the Cilium module), the suite version from the tag's `go.mod`, the built suite.
pub fn find(pins: &Pins, version: &CiliumVersion) -> Result<Suite, String> {
    let bins = binaries::find_recorded(pins, version).map_err(|e| e.to_string())?;
    let chart = bins.operator.build.chart_dir.clone().ok_or_else(|| {
        format!("{}: build.json names no chart_dir (the Cilium module); {}", bins.operator.path.display(), binaries::install_hint(version))
    })?;
    // chart_dir is <module>/install/kubernetes/cilium.
    let cilium_dir = chart.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_default();
    let go_mod_path = cilium_dir.join("go.mod");
    let go_mod = crate::input::read_text(&go_mod_path, crate::input::CASE_FILE)
        .map_err(|e| format!("{e} (the Cilium module at the tag, from the operator's build.json chart_dir)"))?;
    let suite = suite_version(&go_mod)
        .ok_or_else(|| format!("{}: requires no sigs.k8s.io/gateway-api: no conformance suite to run", go_mod_path.display()))?;
    let binary = binaries::conformance_suite(pins, version, &suite)?;
    let suite_dir = binary.build.suite_dir.clone().ok_or_else(|| {
        format!("{}: build.json names no suite_dir; {}", binary.path.display(), binaries::conformance_install_hint(version))
    })?;
    Ok(Suite { version: suite, binary, suite_dir, cilium_dir })
}

/// The helper the suite's setup waits with (`NamespacesMustBeReady`), in the suite's sources.
pub const READY_HELPER: &str = "utils/kubernetes/helpers.go";

/// Whether the suite's setup waits for pods: from v1.5 its `NamespacesMustBeReady` refuses a
/// base namespace that holds no pod ("No pods deployed yet",
/// `gateway-api/conformance@v1.6.1:utils/kubernetes/helpers.go`); v1.4.0-rc.2 accepted an empty
/// one. Read from the suite's own sources, so a suite that needs pods is never run without them.
pub fn needs_pods(suite_dir: &Path) -> Result<bool, String> {
    let file = suite_dir.join(READY_HELPER);
    let text = crate::input::read_text(&file, crate::input::DOCUMENT)
        .map_err(|e| format!("{e} (the suite's sources, from its build.json suite_dir)"))?;
    Ok(text.contains("No pods deployed yet"))
}

/// The suite's base manifests (every profile's setup applies them) and its mesh manifests
/// (applied when a MESH profile is run), in the suite's sources.
pub const BASE_MANIFESTS: &str = "base/manifests.yaml";
pub const MESH_MANIFESTS: &str = "mesh/manifests.yaml";

/// Every image the manifests file `rel` (under the suite's sources) names, in order, each once.
pub fn images(suite_dir: &Path, rel: &str) -> Result<Vec<String>, String> {
    let file = suite_dir.join(rel);
    let text = crate::input::read_text(&file, crate::input::DOCUMENT).map_err(|e| e.to_string())?;
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(image) = line.trim().strip_prefix("image:").map(|i| i.trim().trim_matches('"').to_string()) else { continue };
        if !image.is_empty() && !out.contains(&image) {
            out.push(image);
        }
    }
    Ok(out)
}

/// The tags the base manifests name for the image `repository`.
pub fn base_image_tags(suite_dir: &Path, repository: &str) -> Result<Vec<String>, String> {
    Ok(images(suite_dir, BASE_MANIFESTS)?
        .into_iter()
        .filter_map(|i| i.strip_prefix(repository).and_then(|t| t.strip_prefix(':')).map(str::to_string))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_is_the_conformance_module_when_required_else_gateway_api() {
        let v119 = "module github.com/cilium/cilium\n\nrequire (\n\tsigs.k8s.io/gateway-api v1.4.0-rc.2\n)\n";
        assert_eq!(suite_version(v119).as_deref(), Some("v1.4.0-rc.2"));
        let v120 = "require (\n\tsigs.k8s.io/gateway-api v1.6.1\n\tsigs.k8s.io/gateway-api/conformance v1.6.2\n)\n";
        assert_eq!(suite_version(v120).as_deref(), Some("v1.6.2"));
        assert_eq!(suite_version("require sigs.k8s.io/gateway-api v1.3.0\n").as_deref(), Some("v1.3.0"));
        assert_eq!(suite_version("require sigs.k8s.io/gateway-api-inference v1.0.0\n"), None);
    }

    /// The pinned tags, read from the module folders the repository keeps: each Cilium line's
    /// suite has a pinned module (go.mod, go.sum and the one-line test).
    #[test]
    fn every_suite_a_pin_can_name_has_a_pinned_module() {
        let pins = Pins::load_default().unwrap();
        let modules = pins.file.parent().unwrap().join("control-plane/gateway-api-conformance");
        for v in ["v1.4.0-rc.2", "v1.6.1", "v1.6.2"] {
            for f in ["go.mod", "go.sum", "suite_test.go"] {
                assert!(modules.join(v).join(f).is_file(), "{v}/{f}");
            }
            let test = std::fs::read_to_string(modules.join(v).join("suite_test.go")).unwrap();
            assert!(test.contains("conformance.RunConformance(t)"), "{v}: {test}");
        }
    }
}
