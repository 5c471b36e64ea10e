//! The pinned versions in `kind-config/versions.yaml`: every Cilium version the lanes know, with
//! its chart and Gateway API CRD bundle, plus kind, helm and the echo backend image. One file is
//! the source of truth for the model lane, the kind lane and the nightly matrix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::case::load::short_yaml_message;
use crate::case::{CiliumVersion, Problem};

pub const VERSIONS_FILE: &str = "kind-config/versions.yaml";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindPin {
    pub version: String,
    pub node_image: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmPin {
    pub version: String,
    pub repo: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdBundle {
    pub key: String,
    pub version: String,
    pub channel: String,
    pub url: String,
    /// The TLSRoute version this bundle stores (`v1alpha2`, `v1`): the kind lane applies a
    /// case's TLSRoutes at this version, whichever of the served ones the case wrote.
    pub tlsroute: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiliumPin {
    pub version: CiliumVersion,
    pub chart: String,
    pub gateway_api: CrdBundle,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pins {
    pub file: PathBuf,
    pub default: CiliumVersion,
    pub kind: KindPin,
    pub helm: HelmPin,
    pub echo_image: String,
    /// In ascending version order.
    pub cilium: Vec<CiliumPin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPins {
    default: Spanned<String>,
    kind: RawKind,
    helm: RawHelm,
    gateway_api: BTreeMap<String, RawBundle>,
    echo_image: String,
    cilium: Vec<Spanned<RawCilium>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKind {
    version: String,
    node_image: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHelm {
    version: String,
    repo: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBundle {
    version: String,
    channel: String,
    url: String,
    tlsroute: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCilium {
    version: Spanned<String>,
    chart: String,
    gateway_api: Spanned<String>,
}

impl Pins {
    /// The repository's versions file, found from the current folder upwards, else from where
    /// the harness was built.
    pub fn locate() -> PathBuf {
        if let Ok(cwd) = std::env::current_dir() {
            for dir in cwd.ancestors() {
                let candidate = dir.join(VERSIONS_FILE);
                if candidate.is_file() {
                    return candidate;
                }
            }
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE)
    }

    pub fn load_default() -> Result<Pins, Vec<Problem>> {
        Pins::load(&Pins::locate())
    }

    pub fn load(path: &Path) -> Result<Pins, Vec<Problem>> {
        let problem = |line: u64, column: u64, field: &str, message: String| Problem {
            file: path.to_path_buf(),
            line,
            column,
            field: field.into(),
            message,
        };
        let text = crate::input::read_text(path, crate::input::CASE_FILE)
            .map_err(|e| vec![problem(0, 0, "versions", format!("cannot read: {}", e.reason()))])?;
        let raw: RawPins = serde_saphyr::from_str(&text).map_err(|e| {
            let (l, c) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            vec![problem(l, c, "versions", short_yaml_message(&e))]
        })?;
        let mut problems = Vec::new();
        let bundles: BTreeMap<String, CrdBundle> = raw
            .gateway_api
            .into_iter()
            .map(|(key, b)| (key.clone(), CrdBundle { key, version: b.version, channel: b.channel, url: b.url, tlsroute: b.tlsroute }))
            .collect();
        let mut cilium = Vec::new();
        for (i, c) in raw.cilium.iter().enumerate() {
            let version = match CiliumVersion::parse(&c.value.version.value) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(problem(
                        c.value.version.referenced.line(),
                        c.value.version.referenced.column(),
                        &format!("cilium[{i}].version"),
                        e.0,
                    ));
                    continue;
                }
            };
            let Some(bundle) = bundles.get(&c.value.gateway_api.value) else {
                let loc = &c.value.gateway_api.referenced;
                let known: Vec<&str> = bundles.keys().map(String::as_str).collect();
                problems.push(problem(
                    loc.line(),
                    loc.column(),
                    &format!("cilium[{i}].gateway_api"),
                    format!("{:?} is not a bundle under gateway_api (known: {})", c.value.gateway_api.value, known.join(", ")),
                ));
                continue;
            };
            if cilium.iter().any(|p: &CiliumPin| p.version == version) {
                problems.push(problem(
                    c.referenced.line(),
                    c.referenced.column(),
                    &format!("cilium[{i}]"),
                    format!("{version} is listed twice"),
                ));
                continue;
            }
            cilium.push(CiliumPin { version, chart: c.value.chart.clone(), gateway_api: bundle.clone() });
        }
        cilium.sort_by(|a, b| a.version.cmp(&b.version));
        let default = match CiliumVersion::parse(&raw.default.value) {
            Ok(v) if cilium.iter().any(|p| p.version == v) => Some(v),
            Ok(v) => {
                problems.push(problem(
                    raw.default.referenced.line(),
                    raw.default.referenced.column(),
                    "default",
                    format!("{v} is not one of the pinned cilium versions"),
                ));
                None
            }
            Err(e) => {
                problems.push(problem(raw.default.referenced.line(), raw.default.referenced.column(), "default", e.0));
                None
            }
        };
        match default {
            Some(default) if problems.is_empty() => Ok(Pins {
                file: path.to_path_buf(),
                default,
                kind: KindPin { version: raw.kind.version, node_image: raw.kind.node_image },
                helm: HelmPin { version: raw.helm.version, repo: raw.helm.repo },
                echo_image: raw.echo_image,
                cilium,
            }),
            _ => Err(problems),
        }
    }

    pub fn get(&self, v: &CiliumVersion) -> Option<&CiliumPin> {
        self.cilium.iter().find(|p| &p.version == v)
    }

    pub fn versions(&self) -> Vec<CiliumVersion> {
        self.cilium.iter().map(|p| p.version.clone()).collect()
    }

    /// A pinned version by its text, or an error listing the pinned ones.
    pub fn pick(&self, text: &str) -> Result<&CiliumPin, String> {
        let v = CiliumVersion::parse(text).map_err(|e| e.0)?;
        self.get(&v).ok_or_else(|| {
            let known: Vec<String> = self.cilium.iter().map(|p| p.version.to_string()).collect();
            format!("Cilium {v} is not pinned in {}; pinned: {}", self.file.display(), known.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_file_loads() {
        let pins = Pins::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE)).unwrap_or_else(|p| panic!("{p:#?}"));
        let v: Vec<String> = pins.versions().iter().map(|v| v.to_string()).collect();
        assert_eq!(&v[..3], &["1.19.5", "1.19.6", "1.19.7"]);
        assert!(v[3].starts_with("1.20."));
        assert_eq!(pins.default.to_string(), "1.19.5");
        assert_eq!(pins.pick("1.19.6").unwrap().gateway_api.channel, "experimental");
        assert!(pins.pick("1.18.0").unwrap_err().contains("pinned: 1.19.5"));
    }

    #[test]
    fn bad_files_name_the_field() {
        let tmp = tempfile::tempdir().unwrap();
        let good = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE)).unwrap();
        let p = tmp.path().join("v.yaml");
        std::fs::write(
            &p,
            good.replacen("gateway_api: v1.4.1-experimental\n  - version: 1.19.6", "gateway_api: v9\n  - version: 1.19.6", 1),
        )
        .unwrap();
        let e = Pins::load(&p).unwrap_err();
        assert_eq!(e[0].field, "cilium[0].gateway_api");
        std::fs::write(&p, good.replacen("default: 1.19.5", "default: 1.18.0", 1)).unwrap();
        assert_eq!(Pins::load(&p).unwrap_err()[0].field, "default");
        std::fs::write(&p, good.replacen("echo_image:", "echo_imag:", 1)).unwrap();
        assert!(Pins::load(&p).unwrap_err()[0].message.contains("unknown field"));
    }
}
