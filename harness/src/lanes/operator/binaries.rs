//! The control plane's binaries, as `scripts/install-control-plane.sh` built them from the
//! pinned Go modules under `kind-config/control-plane/`: each beside a `build.json` naming its
//! module, version and module sum. A binary that is missing, or whose bytes no longer match its
//! record, is an error that says how to build it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::case::CiliumVersion;
use crate::versions::Pins;

/// The environment variable naming another control-plane folder.
pub const DIR_ENV: &str = "LAYOUT_GATE_CONTROL_PLANE_DIR";

/// The command that builds what is missing.
pub fn install_hint(version: &CiliumVersion) -> String {
    format!("build it with `scripts/install-control-plane.sh {version}` (needs Go >= 1.26 on the PATH and the Go module proxy)")
}

/// One binary's `build.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Build {
    pub component: String,
    pub version: String,
    #[serde(default)]
    pub binary: String,
    pub module: String,
    #[serde(default)]
    pub module_version: String,
    pub module_sum: String,
    #[serde(default)]
    pub module_folder: String,
    #[serde(default)]
    pub go: String,
    #[serde(default)]
    pub tags: String,
    #[serde(default)]
    pub binary_sha256: String,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub build_seconds: u64,
    /// cilium-operator: the chart folder inside the Cilium module, and the commit of the tag.
    #[serde(default)]
    pub chart_dir: Option<PathBuf>,
    #[serde(default)]
    pub commit: Option<String>,
    /// cilium-operator: the components it goes with.
    #[serde(default)]
    pub kubernetes: Option<String>,
    #[serde(default)]
    pub etcd: Option<String>,
    #[serde(default)]
    pub helm: Option<String>,
    #[serde(default)]
    pub gateway_api: Option<String>,
    /// gateway-api: the CRD folder of the module.
    #[serde(default)]
    pub crd_dir: Option<PathBuf>,
}

impl Build {
    /// `github.com/cilium/cilium v1.19.6 h1:...`, as evidence names a binary's source.
    pub fn source(&self) -> String {
        format!("{} {} {}", self.module, self.module_version, self.module_sum)
    }
}

/// A built binary: its path and its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    pub path: PathBuf,
    pub build: Build,
}

/// Every piece the operator lane needs for one Cilium version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlPlaneBinaries {
    pub etcd: Binary,
    pub apiserver: Binary,
    /// Its namespace controller finishes a deleted namespace (and the garbage collector what
    /// Gateways own), as in any cluster.
    pub controller_manager: Binary,
    pub helm: Binary,
    pub operator: Binary,
    /// The Gateway API CRD bundle (not a binary: `crd_dir` is what is read).
    pub gateway_api: Build,
}

/// Where the builds are: `LAYOUT_GATE_CONTROL_PLANE_DIR`, else `.tools/control-plane` of the
/// repository the pins file belongs to.
pub fn root(pins: &Pins) -> PathBuf {
    if let Some(d) = std::env::var_os(DIR_ENV) {
        return PathBuf::from(d);
    }
    let repo = pins.file.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    repo.join(".tools/control-plane")
}

fn read_build(dir: &Path, hint: &str) -> Result<Build, String> {
    let file = dir.join("build.json");
    let text = crate::input::read_text(&file, crate::input::CASE_FILE).map_err(|e| format!("{e}; {hint}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}; {hint}", file.display()))
}

/// A binary and its record; its bytes hashed and compared with the record when `verify`.
fn binary_checked(root: &Path, component: &str, version: &str, hint: &str, verify: bool) -> Result<Binary, String> {
    let dir = root.join(component).join(version);
    let build = read_build(&dir, hint)?;
    let path = dir.join(&build.binary);
    if !verify {
        std::fs::metadata(&path).map_err(|e| format!("{}: {e}; {hint}", path.display()))?;
        return Ok(Binary { path, build });
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}; {hint}", path.display()))?;
    let digest = crate::types::sha256_hex(&bytes);
    if digest != build.binary_sha256 {
        return Err(format!(
            "{} does not match its build.json (sha256 {digest}, recorded {}); {hint}",
            path.display(),
            build.binary_sha256
        ));
    }
    Ok(Binary { path, build })
}

/// Why `version`'s operator cannot be built from the Go module proxy, when
/// `scripts/install-control-plane.sh --update-modules` found it so: the refused modules it wrote
/// to `kind-config/control-plane/cilium-operator/v<version>/blocked`, one `path@version (status)`
/// per line.
pub fn blocked(pins: &Pins, version: &CiliumVersion) -> Option<Vec<String>> {
    let dir = pins.file.parent()?.join("control-plane/cilium-operator").join(format!("v{version}"));
    let text = crate::input::read_text(&dir.join("blocked"), crate::input::CASE_FILE).ok()?;
    Some(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect())
}

/// The message for a blocked version.
pub fn blocked_message(version: &CiliumVersion, refused: &[String]) -> String {
    format!(
        "Cilium {version}'s operator cannot be built here: the Go module proxy refuses {} (kind-config/control-plane/cilium-operator/v{version}/blocked); run `scripts/install-control-plane.sh --update-modules {version}` again once it serves them",
        refused.join(", ")
    )
}

/// Finds every piece for `version`, checking each binary against its record.
pub fn find(pins: &Pins, version: &CiliumVersion) -> Result<ControlPlaneBinaries, String> {
    find_with(pins, version, true)
}

/// Finds every piece for `version` by its record alone, its bytes not read (a warm plane
/// compares the records, sizes and times with those it was started with, which `find` checked).
pub fn find_recorded(pins: &Pins, version: &CiliumVersion) -> Result<ControlPlaneBinaries, String> {
    find_with(pins, version, false)
}

fn find_with(pins: &Pins, version: &CiliumVersion, verify: bool) -> Result<ControlPlaneBinaries, String> {
    let binary = |root: &Path, component: &str, version: &str, hint: &str| binary_checked(root, component, version, hint, verify);
    if let Some(refused) = blocked(pins, version) {
        return Err(blocked_message(version, &refused));
    }
    let hint = install_hint(version);
    let root = root(pins);
    let operator = binary(&root, "cilium-operator", &version.to_string(), &hint)
        .map_err(|e| format!("no cilium-operator built for Cilium {version}: {e}"))?;
    let need = |what: &Option<String>, name: &str| {
        what.clone().ok_or_else(|| format!("{}: build.json does not say which {name} goes with it; {hint}", operator.path.display()))
    };
    let kubernetes = need(&operator.build.kubernetes, "kube-apiserver")?;
    let etcd = need(&operator.build.etcd, "etcd")?;
    let helm = need(&operator.build.helm, "helm")?;
    let gateway_api = need(&operator.build.gateway_api, "Gateway API bundle")?;
    Ok(ControlPlaneBinaries {
        etcd: binary(&root, "etcd", &etcd, &hint)?,
        apiserver: binary(&root, "kube-apiserver", &kubernetes, &hint)?,
        controller_manager: binary(&root, "kube-controller-manager", &kubernetes, &hint)?,
        helm: binary(&root, "helm", &helm, &hint)?,
        gateway_api: read_build(&root.join("gateway-api").join(&gateway_api), &hint)?,
        operator,
    })
}
