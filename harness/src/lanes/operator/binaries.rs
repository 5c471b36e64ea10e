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
    /// gateway-api-conformance: the suite's source folder in the module cache (its `tests/`).
    #[serde(default)]
    pub suite_dir: Option<PathBuf>,
    /// cilium-operator: the dependencies of the tag built at another version than it requires,
    /// because the Go module proxy refuses the required one (issue #24), each with its proof.
    #[serde(default)]
    pub substitutions: Vec<Substitution>,
    /// cilium-agent: what it composes (Cilium's control-plane suite at the tag) and every way it
    /// differs from it (`kind-config/control-plane/cilium-agent/v<version>/differences.json`).
    #[serde(default)]
    pub composes: Option<String>,
    #[serde(default)]
    pub differences: Vec<SuiteDifference>,
    /// cilium-agent: the digest of the tag's `test/controlplane/suite/agent.go` its differences
    /// were read against (the script refuses a tag whose suite file is another), and the build
    /// tags that pick the tag's API in `src/cmd/agent-plane/api_*.go`.
    #[serde(default)]
    pub suite_sha256: Option<String>,
    #[serde(default)]
    pub api_tags: Vec<String>,
}

/// One way the agent's composition differs from Cilium's own control-plane suite at the tag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SuiteDifference {
    pub id: String,
    pub suite: String,
    pub here: String,
    pub why: String,
}

/// One dependency built at another version than the tag requires, as
/// `scripts/install-control-plane.sh` wrote it into `build.json` (and `substitutions.json` beside
/// the module): which, why, and what the script proved at the tag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Substitution {
    /// The module path, e.g. `github.com/osrg/gobgp/v4`.
    pub module: String,
    /// The version the tag requires (refused by the proxy).
    pub version: String,
    /// The version built instead.
    pub substitute: String,
    /// Where the substitute's checksums come from.
    #[serde(default)]
    pub checksums: String,
    pub why: String,
    /// What the script proved at the tag (`go list -deps`); never empty in a build it accepted.
    pub proof: String,
}

/// The separator between a substitution's head and its reason in [`Substitution::line`].
const BECAUSE: &str = ": because ";

impl Substitution {
    /// One line for evidence and `check`: `module version -> substitute: because why (proof)`.
    pub fn line(&self) -> String {
        let head = format!("{} {} -> {}", self.module, self.version, self.substitute);
        // One line each: a newline inside would split one substitution into two when read back.
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        format!("{head}{BECAUSE}{}; proved at the tag: {}", flat(&self.why), flat(&self.proof))
    }

    /// The lines of `subs`, one per substitution (the evidence's `cilium_operator.substitutions`).
    pub fn lines(subs: &[Substitution]) -> String {
        subs.iter().map(Substitution::line).collect::<Vec<_>>().join("\n")
    }

    /// `(module, required version, substitute)` of a line [`Substitution::line`] wrote, for a
    /// reader of the evidence (`check` prints the head of each); `None` when it is not one.
    pub fn head_of(line: &str) -> Option<(&str, &str, &str)> {
        let head = line.split(BECAUSE).next()?;
        let mut words = head.split(' ');
        let (module, version, arrow, substitute) = (words.next()?, words.next()?, words.next()?, words.next()?);
        (arrow == "->" && words.next().is_none() && !module.is_empty() && !version.is_empty() && !substitute.is_empty())
            .then_some((module, version, substitute))
    }
}

impl Build {
    /// `github.com/cilium/cilium v1.19.6 h1:...`, as evidence names a binary's source.
    pub fn source(&self) -> String {
        format!("{} {} {}", self.module, self.module_version, self.module_sum)
    }
}

/// A build that substitutes a dependency without a proof was not written by the script (or was
/// edited): refused, so evidence never carries a substitution nobody proved.
fn check_substitutions(file: &Path, build: &Build) -> Result<(), String> {
    match build.substitutions.iter().find(|s| s.proof.trim().is_empty() || s.why.trim().is_empty()) {
        Some(s) => Err(format!(
            "{}: substitutions: {} {} -> {} has no {}; rebuild with `scripts/install-control-plane.sh {}`",
            file.display(),
            s.module,
            s.version,
            s.substitute,
            if s.why.trim().is_empty() { "why" } else { "proof" },
            build.version
        )),
        None => Ok(()),
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
    let build: Build = serde_json::from_str(&text).map_err(|e| format!("{}: {e}; {hint}", file.display()))?;
    check_substitutions(&file, &build)?;
    Ok(build)
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

/// Why a version's control plane cannot be found here. Each says what and where, and how to
/// build what is missing; `cli/` and the callers decide what it means for them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinariesError {
    /// The Go module proxy refuses modules the version's operator needs (`blocked`).
    #[error("{}", blocked_message(.version, .refused))]
    Blocked { version: CiliumVersion, refused: Vec<String> },
    /// The operator itself is missing, unreadable, or not what its build.json records.
    #[error("no cilium-operator built for Cilium {version}: {problem}")]
    NoOperator { version: CiliumVersion, problem: String },
    /// The operator's build.json does not name a piece that goes with it.
    #[error("{}: build.json does not say which {piece} goes with it; {hint}", .operator.display())]
    Unnamed { operator: PathBuf, piece: &'static str, hint: String },
    /// Another piece (etcd, kube-apiserver, kube-controller-manager, helm, the Gateway API
    /// bundle) is missing, unreadable, or not what its build.json records: the file and why.
    #[error("{0}")]
    Piece(String),
}

/// The command that builds the agent's pieces for `version`.
pub fn agent_install_hint(version: &CiliumVersion) -> String {
    format!(
        "build them with `scripts/install-control-plane.sh --agent {version}` (needs Go >= 1.26 on the PATH and the Go module proxy; about 12 min cold on 2 cores)"
    )
}

/// Cilium's agent control plane for one version and what stands between it and upstream Envoy,
/// as `scripts/install-control-plane.sh --agent` built them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentBinaries {
    /// `agent-plane`: daemon/cmd.ControlPlane composed as Cilium's control-plane suite does
    /// (its build.json lists every difference from the suite).
    pub agent: Binary,
    /// `xds-bridge`: reads the agent's xDS as cilium-envoy does and serves upstream Envoy.
    pub bridge: Binary,
}

/// Why the agent's pieces for a version cannot be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Cilium {version}'s agent control plane is not built here: {problem}")]
pub struct NoAgent {
    pub version: CiliumVersion,
    pub problem: String,
}

/// Finds the agent's pieces for `version` (`<root>/cilium-agent/<version>/`,
/// `<root>/xds-bridge/<version>/`), each checked against its record; an agent whose build.json
/// lists no difference from the suite, or does not name the suite file it was checked against,
/// was not written by the script and is refused (every output names them), and so is one
/// substituting a dependency without a proof (`read_build`).
pub fn find_agent(pins: &Pins, version: &CiliumVersion) -> Result<AgentBinaries, NoAgent> {
    find_agent_in(&root(pins), version)
}

fn find_agent_in(root: &Path, version: &CiliumVersion) -> Result<AgentBinaries, NoAgent> {
    let hint = agent_install_hint(version);
    let fail = |problem: String| NoAgent { version: version.clone(), problem };
    let agent = binary_checked(root, "cilium-agent", &version.to_string(), &hint, true).map_err(fail)?;
    if agent.build.differences.is_empty() || agent.build.composes.is_none() || agent.build.suite_sha256.is_none() {
        return Err(fail(format!(
            "{}: build.json does not say what it composes, which suite file it was checked against and how it differs from Cilium's control-plane suite; {hint}",
            agent.path.display()
        )));
    }
    let bridge = binary_checked(root, "xds-bridge", &version.to_string(), &hint, true).map_err(fail)?;
    Ok(AgentBinaries { agent, bridge })
}

/// Callers that only say the error (the e2e trials, phase errors) take its text.
impl From<BinariesError> for String {
    fn from(e: BinariesError) -> String {
        e.to_string()
    }
}

/// Finds every piece for `version`, checking each binary against its record.
pub fn find(pins: &Pins, version: &CiliumVersion) -> Result<ControlPlaneBinaries, BinariesError> {
    find_with(pins, version, true)
}

/// Finds every piece for `version` by its record alone, its bytes not read (a warm plane
/// compares the records, sizes and times with those it was started with, which `find` checked).
pub fn find_recorded(pins: &Pins, version: &CiliumVersion) -> Result<ControlPlaneBinaries, BinariesError> {
    find_with(pins, version, false)
}

fn find_with(pins: &Pins, version: &CiliumVersion, verify: bool) -> Result<ControlPlaneBinaries, BinariesError> {
    let binary = |root: &Path, component: &str, version: &str, hint: &str| {
        binary_checked(root, component, version, hint, verify).map_err(BinariesError::Piece)
    };
    if let Some(refused) = blocked(pins, version) {
        return Err(BinariesError::Blocked { version: version.clone(), refused });
    }
    let hint = install_hint(version);
    let root = root(pins);
    let operator = binary_checked(&root, "cilium-operator", &version.to_string(), &hint, verify)
        .map_err(|problem| BinariesError::NoOperator { version: version.clone(), problem })?;
    let need = |what: &Option<String>, piece: &'static str| {
        what.clone().ok_or_else(|| BinariesError::Unnamed { operator: operator.path.clone(), piece, hint: hint.clone() })
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
        gateway_api: read_build(&root.join("gateway-api").join(&gateway_api), &hint).map_err(BinariesError::Piece)?,
        operator,
    })
}

/// The command that builds the conformance suite Cilium `version`'s go.mod names.
pub fn conformance_install_hint(version: &CiliumVersion) -> String {
    format!(
        "build it with `scripts/install-control-plane.sh --only-conformance {version}` (needs Go >= 1.26 on the PATH and the Go module proxy)"
    )
}

/// The conformance suite `suite` (a version such as `v1.4.0-rc.2`) as
/// `scripts/install-control-plane.sh --conformance` built it, its bytes checked against its
/// record; `version` names the Cilium pin it is for (in the hint).
pub fn conformance_suite(pins: &Pins, version: &CiliumVersion, suite: &str) -> Result<Binary, String> {
    binary_checked(&root(pins), "gateway-api-conformance", suite, &conformance_install_hint(version), true)
}

/// A program the operator lane's pod stand-in runs for an image (`component` `echo-basic` or
/// `coredns`, at `version`), as `scripts/install-control-plane.sh --conformance` built it beside
/// the suite, its bytes checked against its record; `version_for` names the Cilium pin (in the
/// hint).
pub fn pod_program(pins: &Pins, version_for: &CiliumVersion, component: &str, version: &str) -> Result<Binary, String> {
    binary_checked(&root(pins), component, version, &conformance_install_hint(version_for), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILD: &str = r#"{
      "component": "cilium-operator", "version": "1.20.2", "binary": "cilium-operator-generic",
      "module": "github.com/cilium/cilium", "module_version": "v1.20.2", "module_sum": "h1:x=",
      "substitutions": [
        {"module": "github.com/osrg/gobgp/v4", "version": "v4.6.1-0.20260630022313-d6dee8360046", "substitute": "v4.7.0",
         "checksums": "the checksum database", "why": "the proxy refuses\n it", "proof": "no package of Gateway API translation imports gobgp"},
        {"module": "sigs.k8s.io/mcs-api/controllers", "version": "v0.5.2", "substitute": "v0.0.0-20260403094305-4b9911b73f14",
         "checksums": "cilium@v1.19.7:go.sum", "why": "one identifier", "proof": "only DerivedServiceAnnotation"}
      ]
    }"#;

    #[test]
    fn a_builds_substitutions_are_read_and_each_printed_on_one_line_whose_head_reads_back() {
        let b: Build = serde_json::from_str(BUILD).unwrap();
        assert_eq!(b.substitutions.len(), 2);
        let lines = Substitution::lines(&b.substitutions);
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "github.com/osrg/gobgp/v4 v4.6.1-0.20260630022313-d6dee8360046 -> v4.7.0: because the proxy refuses it; proved at the tag: no package of Gateway API translation imports gobgp"
        );
        assert_eq!(
            Substitution::head_of(lines[1]),
            Some(("sigs.k8s.io/mcs-api/controllers", "v0.5.2", "v0.0.0-20260403094305-4b9911b73f14"))
        );
        assert_eq!(Substitution::head_of("cilium 1.19.6 built from the tag"), None);
    }

    #[test]
    fn a_build_without_substitutions_has_none_and_one_without_a_proof_is_refused() {
        let plain: Build = serde_json::from_str(
            r#"{"component": "cilium-operator", "version": "1.19.6", "module": "github.com/cilium/cilium", "module_sum": "h1:x="}"#,
        )
        .unwrap();
        assert!(plain.substitutions.is_empty());
        assert_eq!(Substitution::lines(&plain.substitutions), "");
        let mut b: Build = serde_json::from_str(BUILD).unwrap();
        assert_eq!(check_substitutions(Path::new("build.json"), &b), Ok(()));
        b.substitutions[1].proof = " ".into();
        let e = check_substitutions(Path::new("build.json"), &b).unwrap_err();
        assert!(
            e.contains("sigs.k8s.io/mcs-api/controllers v0.5.2")
                && e.contains("has no proof")
                && e.contains("install-control-plane.sh 1.20.2"),
            "{e}"
        );
    }

    fn write_build(dir: &Path, component: &str, binary: &str, bytes: &[u8], extra: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(binary), bytes).unwrap();
        let sha = crate::types::sha256_hex(bytes);
        std::fs::write(
            dir.join("build.json"),
            format!(
                r#"{{"component": "{component}", "version": "1.19.6", "binary": "{binary}", "module": "github.com/cilium/cilium",
                    "module_version": "v1.19.6", "module_sum": "h1:x=", "binary_sha256": "{sha}"{extra}}}"#
            ),
        )
        .unwrap();
    }

    /// The agent's pieces are found by their records; an agent whose record lists no difference
    /// from Cilium's suite, or a bridge whose bytes changed, is refused naming the file and the
    /// command that builds them.
    #[test]
    fn the_agents_pieces_are_found_checked_and_must_name_their_differences() {
        let tmp = tempfile::tempdir().unwrap();
        let v = CiliumVersion::parse("1.19.6").unwrap();
        let diffs = r#", "composes": "cilium@v1.19.6:test/controlplane/suite/agent.go", "suite_sha256": "5493d0",
            "differences": [{"id": "client", "suite": "a fake clientset", "here": "k8sClient.Cell", "why": "a real API server"}]"#;
        write_build(&tmp.path().join("cilium-agent/1.19.6"), "cilium-agent", "agent-plane", b"agent", diffs);
        write_build(&tmp.path().join("xds-bridge/1.19.6"), "xds-bridge", "xds-bridge", b"bridge", "");
        let found = find_agent_in(tmp.path(), &v);
        std::fs::write(tmp.path().join("xds-bridge/1.19.6/xds-bridge"), b"changed").unwrap();
        let changed = find_agent_in(tmp.path(), &v);
        write_build(&tmp.path().join("cilium-agent/1.19.6"), "cilium-agent", "agent-plane", b"agent", "");
        let undeclared = find_agent_in(tmp.path(), &v);
        write_build(
            &tmp.path().join("cilium-agent/1.19.6"),
            "cilium-agent",
            "agent-plane",
            b"agent",
            &diffs.replace(r#""suite_sha256": "5493d0","#, ""),
        );
        let unchecked = find_agent_in(tmp.path(), &v);
        let unproved = r#", "substitutions": [{"module": "github.com/osrg/gobgp/v4", "version": "v4.6.1-x", "substitute": "v4.7.0", "why": "refused", "proof": ""}]"#;
        write_build(&tmp.path().join("cilium-agent/1.19.6"), "cilium-agent", "agent-plane", b"agent", &format!("{diffs}{unproved}"));
        let substituted = find_agent_in(tmp.path(), &v);

        let found = found.unwrap();
        assert_eq!(found.agent.build.differences[0].id, "client");
        assert!(found.bridge.path.ends_with("xds-bridge/1.19.6/xds-bridge"));
        let e = changed.unwrap_err().to_string();
        assert!(e.contains("does not match its build.json") && e.contains("install-control-plane.sh --agent 1.19.6"), "{e}");
        let e = undeclared.unwrap_err().to_string();
        assert!(e.contains("how it differs from Cilium's control-plane suite"), "{e}");
        let e = unchecked.unwrap_err().to_string();
        assert!(e.contains("which suite file it was checked against"), "{e}");
        let e = substituted.unwrap_err().to_string();
        assert!(e.contains("github.com/osrg/gobgp/v4 v4.6.1-x -> v4.7.0 has no proof"), "{e}");
    }

    /// Every pin has an agent module (`cilium-agent/v<version>/`) holding only its go.mod, go.sum,
    /// differences.json and (where it substitutes) substitutions.json: the programs are committed
    /// once, in `cilium-agent/src/`. Each lists its differences from Cilium's control-plane suite
    /// at its own tag (what `build.json` carries), names the suite file's digest, and only build
    /// tags some `src/cmd/agent-plane/api_*.go` selects on; the operator lane's docs name each
    /// difference: a difference added to the composition without its row fails here.
    #[test]
    fn every_pin_has_an_agent_module_whose_differences_from_the_suite_are_in_the_docs() {
        #[derive(Deserialize)]
        struct Differences {
            composes: String,
            suite_sha256: String,
            tags: Vec<String>,
            differences: Vec<SuiteDifference>,
        }
        let pins = Pins::load_default().unwrap();
        let kind_config = pins.file.parent().unwrap();
        let docs = std::fs::read_to_string(kind_config.parent().unwrap().join("docs/operator-lane.md")).unwrap();
        let agent = kind_config.join("control-plane/cilium-agent");
        let api: String = std::fs::read_dir(agent.join("src/cmd/agent-plane"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("api_"))
            .map(|p| std::fs::read_to_string(p).unwrap().lines().next().unwrap_or_default().to_string() + "\n")
            .collect();
        let mut folders: Vec<String> =
            std::fs::read_dir(&agent).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        folders.sort();
        let mut want: Vec<String> = pins.versions().iter().map(|v| format!("v{v}")).collect();
        want.push("src".into());
        want.sort();
        assert_eq!(folders, want, "one module per pin, and src/");
        for v in pins.versions() {
            let dir = agent.join(format!("v{v}"));
            for e in std::fs::read_dir(&dir).unwrap() {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                assert!(
                    ["go.mod", "go.sum", "differences.json", "substitutions.json"].contains(&name.as_str()),
                    "{}: {name} (the programs are committed once, in src/)",
                    dir.display()
                );
            }
            let file = dir.join("differences.json");
            let d: Differences = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert!(d.composes.contains(&format!("cilium@v{v}:test/controlplane/suite/agent.go")), "{}", file.display());
            assert_eq!(d.suite_sha256.len(), 64, "{}", file.display());
            for t in &d.tags {
                assert!(api.contains(&format!("//go:build {t}\n")), "{}: tag {t} selects no api_*.go", file.display());
            }
            assert!(!d.differences.is_empty(), "{}", file.display());
            for x in &d.differences {
                assert!(!x.suite.is_empty() && !x.here.is_empty() && !x.why.is_empty(), "{}: {x:?}", file.display());
                assert!(docs.contains(&format!("| `{}` |", x.id)), "docs/operator-lane.md has no row for difference `{}`", x.id);
            }
        }
    }

    /// The repository's own modules, the operator's and the agent's: every 1.20 pin builds from
    /// the Go module proxy with exactly the two substitutions issue #24 names, each a `replace` in
    /// go.mod with its reason in a comment above it and a proof in substitutions.json (the
    /// agent's gobgp proof showing its server stays off, issue #37); no 1.19 pin substitutes
    /// anything.
    #[test]
    fn the_pinned_1_20_modules_substitute_exactly_the_two_named_dependencies_and_say_why() {
        let pins = Pins::load_default().unwrap();
        let control_plane = pins.file.parent().unwrap().join("control-plane");
        for (v, dir) in pins
            .versions()
            .into_iter()
            .flat_map(|v| ["cilium-operator", "cilium-agent"].map(|c| (v.clone(), control_plane.join(c).join(format!("v{v}")))))
        {
            assert_eq!(blocked(&pins, &v), None, "{v} is blocked");
            let subs = dir.join("substitutions.json");
            if v.to_string().starts_with("1.19.") {
                assert!(!subs.exists(), "{v} substitutes: {}", subs.display());
                continue;
            }
            let subs: Vec<Substitution> = serde_json::from_str(&std::fs::read_to_string(&subs).unwrap()).unwrap();
            let heads: Vec<(&str, &str, &str)> =
                subs.iter().map(|s| (s.module.as_str(), s.version.as_str(), s.substitute.as_str())).collect();
            assert_eq!(
                heads,
                [
                    ("github.com/osrg/gobgp/v4", "v4.6.1-0.20260630022313-d6dee8360046", "v4.7.0"),
                    ("sigs.k8s.io/mcs-api/controllers", "v0.5.2", "v0.0.0-20260403094305-4b9911b73f14"),
                ],
                "{v}"
            );
            let go_mod = std::fs::read_to_string(dir.join("go.mod")).unwrap();
            let lines: Vec<&str> = go_mod.lines().collect();
            let replaces: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("replace ")).collect();
            for s in &subs {
                assert!(s.proof.contains("go list -deps") && !s.why.is_empty(), "{v}: {s:?}");
                if dir.to_string_lossy().contains("cilium-agent") && s.module == "github.com/osrg/gobgp/v4" {
                    assert!(s.proof.contains("no gobgp server is created"), "{v}: {s:?}");
                }
                let want = format!("replace {} => {} {}", s.module, s.module, s.substitute);
                let at = lines.iter().position(|l| *l == want).unwrap_or_else(|| panic!("{v}: no `{want}` in go.mod"));
                assert!(lines[at - 1].starts_with("// "), "{v}: `{want}` has no comment above it");
            }
            // The substitutions and Cilium's own replaces; nothing else.
            let own = replaces.iter().filter(|l| !subs.iter().any(|s| l.starts_with(&format!("replace {} ", s.module)))).count();
            assert_eq!(own + subs.len(), replaces.len(), "{v}: {replaces:?}");
        }
    }
}
