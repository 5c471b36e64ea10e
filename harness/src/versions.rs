//! The pinned versions in `kind-config/versions.yaml`: every Cilium version the lanes know, with
//! its chart, Gateway API CRD bundle and kind node image, plus kind, helm and the echo backend
//! image. One file is the source of truth for the model lane, the kind lane and the nightly
//! matrix.

mod node;

pub use node::{KindNode, KubeMinor, NodeImage, NodeRefusal, Tested};

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
    /// The release notes that publish `images`.
    pub release_notes: String,
    /// The node images kind's release notes publish for `version`, by digest: the only ones a
    /// Cilium entry may use.
    pub images: Vec<NodeImage>,
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
    /// The cluster's Kubernetes for this version (kind lane).
    pub node: KindNode,
}

impl CiliumPin {
    /// The release line, `1.19`.
    pub fn line(&self) -> String {
        line_of(&self.version)
    }
}

fn line_of(v: &CiliumVersion) -> String {
    format!("{}.{}", v.semver().major, v.semver().minor)
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
    kubernetes_tested: BTreeMap<String, Spanned<RawTested>>,
    helm: RawHelm,
    gateway_api: BTreeMap<String, RawBundle>,
    echo_image: String,
    cilium: Vec<Spanned<RawCilium>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKind {
    version: String,
    release_notes: String,
    images: Vec<Spanned<String>>,
}

/// Either `minors` with `source`, or `unknown` with why.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTested {
    minors: Option<Vec<Spanned<String>>>,
    source: Option<String>,
    unknown: Option<String>,
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
    node_image: Spanned<String>,
    kubernetes: Spanned<String>,
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
        let images = kind_images(&raw.kind, &mut problems, &problem);
        let tested = tested_lines(&raw.kubernetes_tested, &mut problems, &problem);
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
            let Some(node) = entry_node(i, &c.value, &version, &raw.kind, &images, &tested, &mut problems, &problem) else {
                continue;
            };
            cilium.push(CiliumPin { version, chart: c.value.chart.clone(), gateway_api: bundle.clone(), node });
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
                kind: KindPin { version: raw.kind.version, release_notes: raw.kind.release_notes, images },
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

type MakeProblem<'a> = dyn Fn(u64, u64, &str, String) -> Problem + 'a;

/// `kind.images`, each a digest-pinned node image.
fn kind_images(kind: &RawKind, problems: &mut Vec<Problem>, problem: &MakeProblem<'_>) -> Vec<NodeImage> {
    let mut out = Vec::new();
    for (j, img) in kind.images.iter().enumerate() {
        match NodeImage::parse(&img.value) {
            Ok(i) => out.push(i),
            Err(e) => problems.push(problem(img.referenced.line(), img.referenced.column(), &format!("kind.images[{j}]"), e)),
        }
    }
    out
}

/// `kubernetes_tested`, by Cilium release line (`1.19`), with where each line is declared.
fn tested_lines(
    raw: &BTreeMap<String, Spanned<RawTested>>,
    problems: &mut Vec<Problem>,
    problem: &MakeProblem<'_>,
) -> BTreeMap<String, (Tested, u64)> {
    let mut out = BTreeMap::new();
    for (line, t) in raw {
        let (l, c) = (t.referenced.line(), t.referenced.column());
        let field = format!("kubernetes_tested.{line:?}");
        let Ok(parsed) = KubeMinor::parse(line) else {
            problems.push(problem(l, c, "kubernetes_tested", format!("{line:?} is not a Cilium release line like \"1.19\"")));
            continue;
        };
        let tested = match (&t.value.minors, &t.value.source, &t.value.unknown) {
            (Some(minors), Some(source), None) if !source.trim().is_empty() => {
                let mut ms = Vec::new();
                for (k, m) in minors.iter().enumerate() {
                    match KubeMinor::parse(&m.value) {
                        Ok(m) => ms.push(m),
                        Err(e) => problems.push(problem(m.referenced.line(), m.referenced.column(), &format!("{field}.minors[{k}]"), e)),
                    }
                }
                if ms.is_empty() {
                    problems.push(problem(l, c, &format!("{field}.minors"), "an empty list tests nothing; write `unknown: <why>` instead".into()));
                    continue;
                }
                Tested::Known { minors: ms, source: source.trim().to_string() }
            }
            (None, None, Some(why)) if !why.trim().is_empty() => Tested::Unknown { why: why.trim().to_string() },
            _ => {
                problems.push(problem(
                    l,
                    c,
                    &field,
                    "write either `minors` (the Kubernetes minors the line is e2e tested on) with `source` (where that list is published), or `unknown: <why>`".into(),
                ));
                continue;
            }
        };
        out.insert(parsed.to_string(), (tested, l));
    }
    out
}

/// An entry's node image and Kubernetes minor, checked against kind's published images and the
/// line's tested list.
#[allow(clippy::too_many_arguments)]
fn entry_node(
    i: usize,
    c: &RawCilium,
    version: &CiliumVersion,
    kind: &RawKind,
    images: &[NodeImage],
    tested: &BTreeMap<String, (Tested, u64)>,
    problems: &mut Vec<Problem>,
    problem: &MakeProblem<'_>,
) -> Option<KindNode> {
    let (img, k8s) = (&c.node_image, &c.kubernetes);
    let at_image = |msg: String| problem(img.referenced.line(), img.referenced.column(), &format!("cilium[{i}].node_image"), msg);
    let at_k8s = |msg: String| problem(k8s.referenced.line(), k8s.referenced.column(), &format!("cilium[{i}].kubernetes"), msg);
    let image = NodeImage::parse(&img.value).map_err(|e| problems.push(at_image(e))).ok();
    let declared = KubeMinor::parse(&k8s.value).map_err(|e| problems.push(at_k8s(e))).ok();
    let (image, declared) = (image?, declared?);
    if !images.contains(&image) {
        problems.push(at_image(format!(
            "{image} is not one of the node images kind {}'s release notes publish (kind.images, from {})",
            kind.version, kind.release_notes
        )));
        return None;
    }
    let line = line_of(version);
    let Some((t, _)) = tested.get(&line) else {
        problems.push(problem(
            c.version.referenced.line(),
            c.version.referenced.column(),
            &format!("cilium[{i}].version"),
            format!("no kubernetes_tested entry for the Cilium {line} line: add the Kubernetes minors it is e2e tested on (`minors`, `source`), or `unknown: <why>`"),
        ));
        return None;
    };
    match KindNode::new(image, declared, &line, t.clone()) {
        Ok(n) => Some(n),
        Err(NodeRefusal::TagMinor(e)) => {
            problems.push(at_image(e));
            None
        }
        Err(NodeRefusal::NotTested(e)) => {
            let declared_at = tested.get(&line).map_or(0, |(_, l)| *l);
            problems.push(at_k8s(format!("{e} (kubernetes_tested.\"{line}\", line {declared_at})")));
            None
        }
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
