//! Preflight: is every tool the lane needs here, which versions, and can this host reach the
//! kind network at all. Looking (PATH, `--version`) is [`gather`]; deciding is the pure
//! [`assess`], so every message is unit-tested. All problems come back in one message, each
//! with how to fix it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::lanes::cluster::tools::Engine;
use crate::versions::Pins;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tool {
    Docker,
    Podman,
    Kind,
    Helm,
    Curl,
}

impl Tool {
    pub fn program(self) -> &'static str {
        match self {
            Tool::Docker => "docker",
            Tool::Podman => "podman",
            Tool::Kind => "kind",
            Tool::Helm => "helm",
            Tool::Curl => "curl",
        }
    }
}

/// What looking for one tool found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Missing,
    /// On PATH, but asking it failed (e.g. the docker daemon is not running).
    Broken(String),
    /// Its version, and for engines what decides reachability (docker's OperatingSystem,
    /// podman's rootless flag).
    Found {
        version: String,
        detail: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    /// `std::env::consts::OS`.
    pub os: String,
    pub tools: BTreeMap<Tool, Probe>,
}

/// Which tools a run needs: creating a cluster needs all; reusing one needs no curl; a cluster
/// given with `--existing-cluster` needs none (only its API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    pub engine: bool,
    pub kind: bool,
    pub helm: bool,
    pub curl: bool,
}

impl Needs {
    pub const CREATE: Needs = Needs { engine: true, kind: true, helm: true, curl: true };
    pub const REUSE: Needs = Needs { engine: true, kind: true, helm: true, curl: false };
    pub const EXISTING: Needs = Needs { engine: false, kind: false, helm: false, curl: false };
}

/// The tools are here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub engine: Engine,
    /// `docker 27.3.1`, `kind v0.33.0`, ...: recorded in evidence.
    pub versions: BTreeMap<String, String>,
    pub warnings: Vec<String>,
}

/// Everything that stops the lane, in one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightError {
    pub problems: Vec<String>,
    pub found: Vec<String>,
}

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "preflight: the kind lane cannot run here ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        if self.found.is_empty() {
            write!(f, "found: none of docker, podman, kind, helm, curl")
        } else {
            write!(f, "found: {}", self.found.join(", "))
        }
    }
}

impl std::error::Error for PreflightError {}

/// How to install each tool, pinned where the versions file pins it.
fn install_hint(tool: Tool, pins: &Pins) -> String {
    match tool {
        Tool::Docker | Tool::Podman => {
            "install Docker Engine (https://docs.docker.com/engine/install/) or Podman (https://podman.io/docs/installation; rootful, see kind-config/README.md)".into()
        }
        Tool::Kind => format!(
            "install kind {v}: `go install sigs.k8s.io/kind@{v}`, or download https://kind.sigs.k8s.io/dl/{v}/kind-linux-amd64 into PATH as `kind`",
            v = pins.kind.version
        ),
        Tool::Helm => format!("install helm {v}: https://github.com/helm/helm/releases/tag/{v} (or `curl -fsSL https://raw.githubusercontent.com/helm/helm/main/scripts/get-helm-3 | bash`)", v = pins.helm.version),
        Tool::Curl => "install curl (`apt-get install curl`, `dnf install curl`); it downloads the Gateway API CRD bundle".into(),
    }
}

const UNREACHABLE_OK: &str = "LAYOUT_GATE_KIND_UNREACHABLE_OK";

/// Decides from what was found. `unreachable_ok` turns the reachability refusal into a warning
/// (for hosts where the user routed the kind network themselves).
pub fn assess(f: &Findings, pins: &Pins, needs: Needs, unreachable_ok: bool) -> Result<Ready, PreflightError> {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut versions = BTreeMap::new();
    let mut found = Vec::new();
    for (tool, probe) in &f.tools {
        if let Probe::Found { version, .. } = probe {
            found.push(format!("{} {version}", tool.program()));
            versions.insert(tool.program().to_string(), version.clone());
        }
    }
    let get = |t: Tool| f.tools.get(&t).cloned().unwrap_or(Probe::Missing);

    let mut engine = None;
    if needs.engine {
        match (get(Tool::Docker), get(Tool::Podman)) {
            (Probe::Found { detail, .. }, _) => {
                engine = Some(Engine::Docker);
                let os = detail.unwrap_or_default();
                if f.os != "linux" || os.contains("Docker Desktop") {
                    let where_ = if f.os != "linux" { format!("on {}", f.os) } else { "with Docker Desktop".to_string() };
                    let msg = format!(
                        "{where_}, containers run inside a VM: the Gateway's address on the kind network is not reachable from this host, so every probe would time out. Run the kind lane on Linux with Docker Engine (a CI runner or a Linux VM), or set {UNREACHABLE_OK}=1 if you routed the kind network yourself"
                    );
                    if unreachable_ok { warnings.push(msg) } else { problems.push(msg) }
                }
            }
            (docker, Probe::Found { detail, .. }) => {
                engine = Some(Engine::Podman);
                if let Probe::Broken(e) = docker {
                    warnings.push(format!("docker is on PATH but not usable ({e}); using podman"));
                }
                if f.os != "linux" || detail.as_deref() == Some("true") {
                    let msg = format!(
                        "podman {}: the kind network lives in a user namespace or VM and its addresses are not reachable from this host; use rootful podman on Linux (`sudo`), Docker Engine, or set {UNREACHABLE_OK}=1",
                        if f.os != "linux" { format!("on {}", f.os) } else { "is rootless".into() }
                    );
                    if unreachable_ok { warnings.push(msg) } else { problems.push(msg) }
                }
            }
            (Probe::Broken(e), _) => problems.push(format!(
                "docker: found, but {e}; start the daemon (`sudo systemctl start docker`) or add your user to the docker group"
            )),
            (_, Probe::Broken(e)) => problems.push(format!("podman: found, but {e}")),
            _ => problems.push(format!("docker or podman: not found; {}", install_hint(Tool::Docker, pins))),
        }
    }
    for (tool, needed) in [(Tool::Kind, needs.kind), (Tool::Helm, needs.helm), (Tool::Curl, needs.curl)] {
        if !needed {
            continue;
        }
        match get(tool) {
            Probe::Missing => problems.push(format!("{}: not found; {}", tool.program(), install_hint(tool, pins))),
            Probe::Broken(e) => problems.push(format!("{}: found, but `{} version` failed: {e}", tool.program(), tool.program())),
            Probe::Found { version, .. } => {
                let pinned = match tool {
                    Tool::Kind => Some(&pins.kind.version),
                    Tool::Helm => Some(&pins.helm.version),
                    _ => None,
                };
                if let Some(p) = pinned
                    && !version.starts_with(p.as_str())
                {
                    // The node images are pinned by the digests kind's release notes publish
                    // for the pinned kind: images built for that release.
                    let images =
                        if tool == Tool::Kind { format!("; the node images are the ones built for kind {p}") } else { String::new() };
                    warnings.push(format!(
                        "{} is {version}; {} pins {p} (it usually works{images}; evidence records the version that ran)",
                        tool.program(),
                        pins.file.display()
                    ));
                }
            }
        }
    }
    if !needs.engine && f.os != "linux" {
        warnings.push(format!("on {}, the Gateway's address may not be reachable from this host", f.os));
    }
    match (problems.is_empty(), engine) {
        (true, Some(engine)) => Ok(Ready { engine, versions, warnings }),
        // An existing cluster needs no engine; docker stands in for the unused field.
        (true, None) => Ok(Ready { engine: Engine::Docker, versions, warnings }),
        (false, _) => Err(PreflightError { problems, found }),
    }
}

/// Whether `LAYOUT_GATE_KIND_UNREACHABLE_OK` is set to 1.
pub fn unreachable_ok_from_env() -> bool {
    std::env::var(UNREACHABLE_OK).is_ok_and(|v| v == "1")
}

pub use crate::child::which;

/// Why a tool did not answer a preflight query (what preflight shows as the tool broken).
#[derive(Debug, thiserror::Error)]
enum AskError {
    /// Starting it or waiting for it failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It ended unsuccessfully: the first line of its stderr.
    #[error("{0}")]
    Said(String),
    #[error("no answer within {}s", .0.as_secs())]
    NoAnswer(Duration),
}

/// Runs one short query with a deadline; the first line of stdout, or why not.
fn ask(program: &str, args: &[&str], limit: Duration) -> Result<String, AskError> {
    let handle =
        crate::child::dies_with_parent(duct::cmd(program, args)).stdin_null().stdout_capture().stderr_capture().unchecked().start()?;
    match handle.wait_timeout(limit)? {
        Some(out) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string()),
        Some(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(AskError::Said(err.lines().find(|l| !l.trim().is_empty()).unwrap_or("exited with an error").trim().to_string()))
        }
        None => {
            let _ = handle.kill();
            Err(AskError::NoAnswer(limit))
        }
    }
}

/// One preflight query: the tool, the arguments that print its version, and for engines the
/// arguments that print what decides reachability.
pub type Query = (Tool, &'static [&'static str], Option<&'static [&'static str]>);

/// The queries preflight makes.
pub const QUERIES: &[Query] = &[
    (Tool::Docker, &["version", "--format", "{{.Server.Version}}"], Some(&["info", "--format", "{{.OperatingSystem}}"])),
    (Tool::Podman, &["version", "--format", "{{.Version}}"], Some(&["info", "--format", "{{.Host.Security.Rootless}}"])),
    // `kind v0.33.0 go1.24 linux/amd64`
    (Tool::Kind, &["version"], None),
    (Tool::Helm, &["version", "--short"], None),
    // `curl 8.5.0 (x86_64-pc-linux-gnu) ...`
    (Tool::Curl, &["--version"], None),
];

/// The preflight queries as shell lines, for the dry run.
pub fn query_lines() -> Vec<String> {
    let q = |p: &str, a: &[&str]| {
        format!("{p} {}", a.iter().map(|x| if x.contains('{') { format!("'{x}'") } else { x.to_string() }).collect::<Vec<_>>().join(" "))
    };
    QUERIES.iter().flat_map(|(t, v, d)| std::iter::once(q(t.program(), v)).chain(d.map(|d| q(t.program(), d)))).collect()
}

/// Looks for every tool (PATH first, so nothing missing is ever spawned).
pub fn gather(limit: Duration) -> Findings {
    let mut tools = BTreeMap::new();
    for (tool, version_args, detail_args) in QUERIES {
        let p = tool.program();
        let probe = if which(p).is_none() {
            Probe::Missing
        } else {
            let version = ask(p, version_args, limit).map(|l| match tool {
                Tool::Kind | Tool::Curl => l.split_whitespace().nth(1).unwrap_or(&l).to_string(),
                _ => l,
            });
            let detail = detail_args.and_then(|a| ask(p, a, limit).ok());
            match version {
                Ok(v) if !v.is_empty() => Probe::Found { version: v, detail },
                Ok(_) => Probe::Broken("printed no version".into()),
                Err(e) => Probe::Broken(e.to_string()),
            }
        };
        tools.insert(*tool, probe);
    }
    Findings { os: std::env::consts::OS.to_string(), tools }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn pins() -> Pins {
        Pins::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::versions::VERSIONS_FILE)).unwrap()
    }
    fn found(v: &str, d: Option<&str>) -> Probe {
        Probe::Found { version: v.into(), detail: d.map(str::to_string) }
    }
    fn findings(os: &str, list: &[(Tool, Probe)]) -> Findings {
        Findings { os: os.into(), tools: list.iter().cloned().collect() }
    }

    #[test]
    fn nothing_installed_names_every_missing_piece_in_one_message() {
        let f = findings(
            "linux",
            &[
                (Tool::Docker, Probe::Missing),
                (Tool::Podman, Probe::Missing),
                (Tool::Kind, Probe::Missing),
                (Tool::Helm, Probe::Missing),
                (Tool::Curl, found("8.5.0", None)),
            ],
        );
        let e = assess(&f, &pins(), Needs::CREATE, false).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.problems.len(), 3, "{text}");
        assert!(text.starts_with("preflight: the kind lane cannot run here (3 problems):"), "{text}");
        assert!(
            text.contains("  - docker or podman: not found; install Docker Engine (https://docs.docker.com/engine/install/)"),
            "{text}"
        );
        assert!(text.contains("  - kind: not found; install kind v0.33.0: `go install sigs.k8s.io/kind@v0.33.0`"), "{text}");
        assert!(text.contains("  - helm: not found; install helm v3.19.0"), "{text}");
        assert!(text.ends_with("found: curl 8.5.0"), "{text}");
    }

    #[test]
    fn everything_present_on_linux_docker() {
        let f = findings(
            "linux",
            &[
                (Tool::Docker, found("27.3.1", Some("Ubuntu 24.04.1 LTS"))),
                (Tool::Podman, Probe::Missing),
                (Tool::Kind, found("v0.33.0", None)),
                (Tool::Helm, found("v3.19.0+g3d8990f", None)),
                (Tool::Curl, found("8.5.0", None)),
            ],
        );
        let r = assess(&f, &pins(), Needs::CREATE, false).unwrap();
        assert_eq!(r.engine, Engine::Docker);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.versions.get("kind").map(String::as_str), Some("v0.33.0"));
    }

    #[test]
    fn docker_desktop_and_macos_are_refused_with_the_reason_unless_overridden() {
        let tools = [
            (Tool::Docker, found("27.3.1", Some("Docker Desktop"))),
            (Tool::Kind, found("v0.33.0", None)),
            (Tool::Helm, found("v3.19.0", None)),
            (Tool::Curl, found("8", None)),
        ];
        let e = assess(&findings("macos", &tools), &pins(), Needs::CREATE, false).unwrap_err();
        assert_eq!(e.problems.len(), 1);
        assert!(
            e.problems[0].starts_with("on macos, containers run inside a VM: the Gateway's address on the kind network is not reachable"),
            "{e}"
        );
        assert!(e.problems[0].contains("LAYOUT_GATE_KIND_UNREACHABLE_OK=1"));
        let e = assess(&findings("linux", &tools), &pins(), Needs::CREATE, false).unwrap_err();
        assert!(e.problems[0].starts_with("with Docker Desktop"), "{e}");
        let r = assess(&findings("macos", &tools), &pins(), Needs::CREATE, true).unwrap();
        assert_eq!(r.warnings.len(), 1);
    }

    #[test]
    fn broken_daemon_rootless_podman_and_version_drift() {
        let f = findings(
            "linux",
            &[
                (Tool::Docker, Probe::Broken("Cannot connect to the Docker daemon".into())),
                (Tool::Kind, found("v0.30.0", None)),
                (Tool::Helm, found("v3.19.0", None)),
            ],
        );
        let e = assess(&f, &pins(), Needs::REUSE, false).unwrap_err();
        assert_eq!(e.problems, vec!["docker: found, but Cannot connect to the Docker daemon; start the daemon (`sudo systemctl start docker`) or add your user to the docker group".to_string()]);
        let f = findings(
            "linux",
            &[
                (Tool::Docker, Probe::Broken("no daemon".into())),
                (Tool::Podman, found("5.2.0", Some("true"))),
                (Tool::Kind, found("v0.30.0", None)),
                (Tool::Helm, found("v3.19.0", None)),
            ],
        );
        let e = assess(&f, &pins(), Needs::REUSE, false).unwrap_err();
        assert!(e.problems[0].starts_with("podman is rootless"), "{e}");
        let f = findings(
            "linux",
            &[(Tool::Podman, found("5.2.0", Some("false"))), (Tool::Kind, found("v0.30.0", None)), (Tool::Helm, found("v3.19.0", None))],
        );
        let r = assess(&f, &pins(), Needs::REUSE, false).unwrap();
        assert_eq!(r.engine, Engine::Podman);
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].starts_with("kind is v0.30.0; "), "{:?}", r.warnings);
        assert!(r.warnings[0].contains("the node images are the ones built for kind v0.33.0"), "{:?}", r.warnings);
    }

    #[test]
    fn an_existing_cluster_needs_no_tools() {
        // With no tool at all, an existing cluster is still ready, with nothing to warn about ...
        let r = assess(&findings("linux", &[]), &pins(), Needs::EXISTING, false).expect("ready");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(r.versions.is_empty(), "{:?}", r.versions);
        // ... while creating one on the same machine is refused for the missing tools.
        let e = assess(&findings("linux", &[]), &pins(), Needs::CREATE, false).expect_err("nothing installed").to_string();
        assert!(e.contains("kind") && e.contains("helm"), "{e}");
    }

    #[test]
    fn gather_never_panics_and_finds_what_is_missing_here() {
        // On any machine: every tool is classified; a tool that is absent is Missing, not Broken.
        let f = gather(Duration::from_secs(5));
        assert_eq!(f.tools.len(), 5);
        for (tool, probe) in &f.tools {
            if which(tool.program()).is_none() {
                assert_eq!(probe, &Probe::Missing);
            }
        }
    }
}
