//! The pinned versions in `kind-config/versions.yaml`: every Cilium version the lanes know, with
//! its chart, Gateway API CRD bundle and kind node image, plus kind, helm and the echo backend
//! image. One file is the source of truth for the model lane, the kind lane and the nightly
//! matrix.

mod node;
pub mod upstream;

pub use node::{KindNode, KubeMinor, NodeImage, NodeRefusal, Tested};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::case::problem::short_yaml_message;
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

/// The pins compiled into the binary: `kind-config/versions.yaml` as it was when layout-gate was
/// built, so a copied or `cargo install`ed binary answers with its own pins instead of reading
/// whichever checkout it happens to run in.
pub const EMBEDDED: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kind-config/versions.yaml"));

/// How [`EMBEDDED`] is named where a file name would be.
pub const EMBEDDED_LABEL: &str = "kind-config/versions.yaml (embedded in layout-gate at build time)";

/// Where the pins a command uses came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinsSource {
    /// `--versions-file FILE`.
    Flag(PathBuf),
    /// `kind-config/versions.yaml` found from the current folder upwards (a checkout).
    Found(PathBuf),
    /// [`EMBEDDED`].
    Embedded,
}

/// The `--versions-file` of this process's command, set once by the command line so every
/// reader of pins below it (a lane's session, `--record`) reads the same file.
static VERSIONS_FILE_FLAG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes `--versions-file FILE` the pins of every later [`Pins::load_default`] in this process.
pub fn use_versions_file(path: &Path) {
    let _ = VERSIONS_FILE_FLAG.set(path.to_path_buf());
}

impl PinsSource {
    /// `--versions-file FILE` (given here or to [`use_versions_file`]), else
    /// `kind-config/versions.yaml` from the current folder upwards, else the pins embedded at
    /// build time.
    pub fn choose(flag: Option<&Path>) -> PinsSource {
        if let Some(f) = flag.or(VERSIONS_FILE_FLAG.get().map(PathBuf::as_path)) {
            return PinsSource::Flag(f.to_path_buf());
        }
        match Pins::locate() {
            Some(p) => PinsSource::Found(p),
            None => PinsSource::Embedded,
        }
    }

    /// What to say on standard error: which pins, unless they are the embedded ones.
    pub fn note(&self) -> Option<String> {
        match self {
            PinsSource::Flag(p) => Some(format!("pins: {} (--versions-file)", p.display())),
            // Relative to the current folder (it was found from there): no local absolute path
            // in an output someone pastes.
            PinsSource::Found(p) => Some(format!(
                "pins: {} (found from the current folder; the binary's own pins are used outside a checkout, --versions-file FILE picks another)",
                std::env::current_dir()
                    .ok()
                    .and_then(|d| p.strip_prefix(&d).ok().map(Path::to_path_buf))
                    .unwrap_or_else(|| p.clone())
                    .display()
            )),
            PinsSource::Embedded => None,
        }
    }

    pub fn load(&self) -> Result<Pins, Vec<Problem>> {
        match self {
            PinsSource::Flag(p) | PinsSource::Found(p) => Pins::load(p),
            PinsSource::Embedded => Pins::parse(Path::new(EMBEDDED_LABEL), EMBEDDED),
        }
    }
}

impl Pins {
    /// The repository's versions file, found from the current folder upwards.
    pub fn locate() -> Option<PathBuf> {
        let cwd = std::env::current_dir().ok()?;
        cwd.ancestors().map(|dir| dir.join(VERSIONS_FILE)).find(|candidate| candidate.is_file())
    }

    /// The pins file as evidence names it: relative to the repository when it is the
    /// repository's own (a path of this machine says nothing to a reader elsewhere).
    pub fn file_label(&self) -> String {
        if self.file.ends_with(VERSIONS_FILE) || self.file == Path::new(EMBEDDED_LABEL) {
            VERSIONS_FILE.to_string()
        } else {
            self.file.display().to_string()
        }
    }

    /// The repository's pins found from the current folder, else the embedded ones.
    pub fn load_default() -> Result<Pins, Vec<Problem>> {
        PinsSource::choose(None).load()
    }

    pub fn load(path: &Path) -> Result<Pins, Vec<Problem>> {
        let text = crate::input::read_text(path, crate::input::CASE_FILE).map_err(|e| {
            vec![Problem {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                field: "versions".into(),
                message: format!("cannot read: {}", e.reason()),
            }]
        })?;
        Pins::parse(path, &text)
    }

    /// Pins from `text`, problems located in `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Pins, Vec<Problem>> {
        let problem = |line: u64, column: u64, field: &str, message: String| Problem {
            file: path.to_path_buf(),
            line,
            column,
            field: field.into(),
            message,
        };
        let raw: RawPins = serde_saphyr::from_str(text).map_err(|e| {
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
        let facts = NodeFacts { kind: &raw.kind, images: &images, tested: &tested };
        let mut cilium = Vec::new();
        // Entries refused after their version was read: already reported, so the default
        // naming one of them is not a second problem.
        let mut refused = Vec::new();
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
                refused.push(version);
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
            let Some(node) = entry_node(i, &c.value, &version, &facts, &mut problems, &problem) else {
                refused.push(version);
                continue;
            };
            cilium.push(CiliumPin { version, chart: c.value.chart.clone(), gateway_api: bundle.clone(), node });
        }
        cilium.sort_by(|a, b| a.version.cmp(&b.version));
        let default = match CiliumVersion::parse(&raw.default.value) {
            Ok(v) if cilium.iter().any(|p| p.version == v) => Some(v),
            Ok(v) if refused.contains(&v) => None,
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
            format!(
                "Cilium {v} is not pinned in {}; pinned: {}. To pin it, add an entry for it under `cilium:` in a copy of the versions file (chart, gateway_api, node_image, kubernetes, as the others) and pass --versions-file FILE",
                self.file_label(),
                known.join(", ")
            )
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
) -> BTreeMap<String, (Option<Tested>, u64)> {
    let mut out = BTreeMap::new();
    for (line, t) in raw {
        let (l, c) = (t.referenced.line(), t.referenced.column());
        let field = format!("kubernetes_tested.{line:?}");
        let Ok(parsed) = KubeMinor::parse(line).map(|m| m.to_string()) else {
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
                if minors.is_empty() {
                    problems.push(problem(
                        l,
                        c,
                        &format!("{field}.minors"),
                        "an empty list tests nothing; write `unknown: <why>` instead".into(),
                    ));
                }
                (ms.len() == minors.len() && !ms.is_empty()).then(|| Tested::Known { minors: ms, source: source.trim().to_string() })
            }
            (None, None, Some(why)) if !why.trim().is_empty() => Some(Tested::Unknown { why: why.trim().to_string() }),
            _ => {
                problems.push(problem(
                    l,
                    c,
                    &field,
                    "write either `minors` (the Kubernetes minors the line is e2e tested on) with `source` (where that list is published), or `unknown: <why>`".into(),
                ));
                None
            }
        };
        // A line whose list is wrong is kept as `None`: its entries are refused without a
        // second problem each.
        out.insert(parsed, (tested, l));
    }
    out
}

/// What an entry's node image is checked against: kind's published images and the lines'
/// tested lists.
struct NodeFacts<'a> {
    kind: &'a RawKind,
    images: &'a [NodeImage],
    tested: &'a BTreeMap<String, (Option<Tested>, u64)>,
}

/// An entry's node image and Kubernetes minor, checked against `facts`.
fn entry_node(
    i: usize,
    c: &RawCilium,
    version: &CiliumVersion,
    facts: &NodeFacts<'_>,
    problems: &mut Vec<Problem>,
    problem: &MakeProblem<'_>,
) -> Option<KindNode> {
    let NodeFacts { kind, images, tested } = facts;
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
    let Some((t, declared_at)) = tested.get(&line) else {
        problems.push(problem(
            c.version.referenced.line(),
            c.version.referenced.column(),
            &format!("cilium[{i}].version"),
            format!("no kubernetes_tested entry for the Cilium {line} line: add the Kubernetes minors it is e2e tested on (`minors`, `source`), or `unknown: <why>`"),
        ));
        return None;
    };
    // Reported where the line is declared.
    let t = t.as_ref()?;
    match KindNode::new(image, declared, &line, t.clone()) {
        Ok(n) => Some(n),
        Err(NodeRefusal::TagMinor(e)) => {
            problems.push(at_image(e));
            None
        }
        Err(NodeRefusal::NotTested(e)) => {
            problems.push(at_k8s(format!("{e} (kubernetes_tested.\"{line}\", line {declared_at})")));
            None
        }
    }
}

/// The repository's versions file with one version's node image and Kubernetes minor replaced
/// (loaded from a temporary copy), for tests of what a different image changes.
#[cfg(test)]
pub(crate) fn pins_with_node(version: &str, image: &str, minor: &str) -> Result<Pins, Vec<Problem>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| vec![Problem { file: path.clone(), line: 0, column: 0, field: "versions".into(), message: e.to_string() }])?;
    let mut out = String::new();
    let mut inside = false;
    for l in text.lines() {
        if let Some(v) = l.strip_prefix("  - version: ") {
            inside = v.split_whitespace().next() == Some(version);
        }
        match l.trim_start() {
            t if inside && t.starts_with("node_image:") => out.push_str(&format!("    node_image: {image}")),
            t if inside && t.starts_with("kubernetes:") => out.push_str(&format!("    kubernetes: \"{minor}\"")),
            _ => out.push_str(l),
        }
        out.push('\n');
    }
    let dir = tempfile::tempdir()
        .map_err(|e| vec![Problem { file: path.clone(), line: 0, column: 0, field: "versions".into(), message: e.to_string() }])?;
    let copy = dir.path().join("versions.yaml");
    std::fs::write(&copy, out)
        .map_err(|e| vec![Problem { file: copy.clone(), line: 0, column: 0, field: "versions".into(), message: e.to_string() }])?;
    Pins::load(&copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMG_135: &str = "kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0";
    const IMG_134: &str = "kindest/node:v1.34.11@sha256:44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d";
    const IMG_136: &str = "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed";

    fn repo_text() -> String {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE)).unwrap()
    }

    /// The repository file with the `n`th (0-based) cilium entry's `from` (a whole line's
    /// content after the indent) replaced by `to`, and the 1-based line it is on.
    fn entry_edit(n: usize, from: &str, to: &str) -> (String, u64) {
        let text = repo_text();
        let start = text.match_indices("\n  - version: ").nth(n).unwrap().0 + 1;
        let at = start + text[start..].find(from).unwrap_or_else(|| panic!("{from:?} not in entry {n}"));
        let line = text[..at].matches('\n').count() as u64 + 1;
        (format!("{}{to}{}", &text[..at], &text[at + from.len()..]), line)
    }

    fn load_text(text: &str) -> Result<Pins, Vec<Problem>> {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("versions.yaml");
        std::fs::write(&p, text).unwrap();
        Pins::load(&p)
    }

    /// The one problem loading `text` gives.
    fn refusal(text: &str) -> Problem {
        let mut e = load_text(text).map(|_| ()).unwrap_err();
        assert_eq!(e.len(), 1, "{e:#?}");
        e.remove(0)
    }

    #[test]
    fn the_repository_file_loads() {
        let pins = Pins::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSIONS_FILE)).unwrap_or_else(|p| panic!("{p:#?}"));
        let v: Vec<String> = pins.versions().iter().map(|v| v.to_string()).collect();
        assert_eq!(&v[..3], &["1.19.5", "1.19.6", "1.19.7"]);
        assert!(v[3].starts_with("1.20."));
        assert_eq!(pins.default.to_string(), "1.19.5");
        assert_eq!(pins.pick("1.19.6").unwrap().gateway_api.channel, "experimental");
        assert!(pins.pick("1.18.0").unwrap_err().contains("pinned: 1.19.5"));
        for c in &pins.cilium {
            assert!(pins.kind.images.contains(c.node.image()), "{}: {}", c.version, c.node.image());
            // Both lines' tested lists are known (compatibility.rst at v1.19.3 and v1.20.2), and
            // every pin runs Kubernetes 1.35, which both test.
            assert!(c.node.is_tested_pairing(), "{}", c.version);
        }
    }

    #[test]
    fn a_node_image_without_a_full_digest_is_refused_where_it_is_written() {
        let (text, line) = entry_edit(0, IMG_135, "kindest/node:v1.35.8");
        let p = refusal(&text);
        assert_eq!((p.field.as_str(), p.line), ("cilium[0].node_image", line));
        assert!(p.message.contains("no digest"), "{p}");
        assert!(p.to_string().starts_with(&format!("{}:{line}:", p.file.display())), "{p}");
        let (text, line) = entry_edit(1, IMG_135, &IMG_135[..IMG_135.len() - 1]);
        let p = refusal(&text);
        assert_eq!((p.field.as_str(), p.line), ("cilium[1].node_image", line));
        assert!(p.message.contains("64 lowercase hex"), "{p}");
        // kind.images are held to the same form.
        let p = refusal(&repo_text().replacen(&format!("    - {IMG_134}"), "    - kindest/node:v1.34.11", 1));
        assert_eq!(p.field, "kind.images[3]");
    }

    #[test]
    fn a_node_image_of_another_minor_than_declared_is_refused() {
        let (text, _) = entry_edit(2, "kubernetes: \"1.35\"", "kubernetes: \"1.34\"");
        let (text, line) = {
            let start = text.match_indices("\n  - version: ").nth(2).unwrap().0;
            let at = start + text[start..].find("node_image:").unwrap();
            (text.clone(), text[..at].matches('\n').count() as u64 + 1)
        };
        let p = refusal(&text);
        assert_eq!((p.field.as_str(), p.line), ("cilium[2].node_image", line));
        assert!(p.message.contains("is Kubernetes 1.35 (its tag), not the declared 1.34"), "{p}");
    }

    #[test]
    fn a_minor_the_line_is_not_tested_on_is_refused() {
        let (text, _) = entry_edit(0, IMG_135, IMG_136);
        let (text, line) = {
            let start = text.match_indices("\n  - version: ").next().unwrap().0;
            let at = start + text[start..].find("kubernetes: \"1.35\"").unwrap();
            let t = format!("{}kubernetes: \"1.36\"{}", &text[..at], &text[at + "kubernetes: \"1.35\"".len()..]);
            (t, text[..at].matches('\n').count() as u64 + 1)
        };
        let p = refusal(&text);
        assert_eq!((p.field.as_str(), p.line), ("cilium[0].kubernetes", line));
        assert!(p.message.contains("Kubernetes 1.36 is not one Cilium 1.19 is e2e tested on (1.32, 1.33, 1.34, 1.35;"), "{p}");
        assert!(p.message.contains("compatibility.rst"), "the refusal names the list's source: {p}");
    }

    #[test]
    fn an_unknown_tested_list_accepts_the_pairing_and_says_it_is_untested() {
        let (text, _) = entry_edit(3, IMG_135, IMG_136);
        let known = "    minors: [\"1.33\", \"1.34\", \"1.35\", \"1.36\"]\n    source: cilium@v1.20.2:Documentation/network/kubernetes/compatibility.rst";
        assert!(text.contains(known), "the 1.20 line's list moved");
        let text = text.replacen(known, "    unknown: not read at the pinned tag", 1);
        let (text, _) = {
            let start = text.match_indices("\n  - version: ").nth(3).unwrap().0;
            let at = start + text[start..].find("kubernetes: \"1.35\"").unwrap();
            (format!("{}kubernetes: \"1.36\"{}", &text[..at], &text[at + "kubernetes: \"1.35\"".len()..]), 0)
        };
        let pins = load_text(&text).unwrap_or_else(|p| panic!("{p:#?}"));
        let n = &pins.cilium[3].node;
        assert_eq!(n.image().as_str(), IMG_136);
        assert!(!n.is_tested_pairing());
        assert!(n.pairing().contains("UNTESTED/UNKNOWN") && n.label().contains("UNTESTED/UNKNOWN"), "{}", n.pairing());
    }

    #[test]
    fn a_node_image_kind_does_not_publish_for_its_version_is_refused() {
        // kind v0.31.0's default image: a real digest, but not one built for kind v0.33.0.
        let old = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f";
        let (text, line) = entry_edit(1, IMG_135, old);
        let p = refusal(&text);
        assert_eq!((p.field.as_str(), p.line), ("cilium[1].node_image", line));
        assert!(p.message.contains("not one of the node images kind v0.33.0's release notes publish"), "{p}");
    }

    #[test]
    fn every_line_needs_a_tested_list_or_a_reason_it_is_unknown() {
        let text = repo_text();
        // Each 1.20 entry is named (three pins of the line).
        let e = load_text(&text.replacen("  \"1.20\":\n", "  \"1.21\":\n", 1)).map(|_| ()).unwrap_err();
        assert_eq!(e.iter().map(|p| p.field.as_str()).collect::<Vec<_>>(), ["cilium[3].version", "cilium[4].version", "cilium[5].version"]);
        assert!(e[0].message.contains("no kubernetes_tested entry for the Cilium 1.20 line"), "{}", e[0]);
        let both = text.replacen("    source: cilium@v1.19.3", "    unknown: maybe\n    source: cilium@v1.19.3", 1);
        assert_eq!(refusal(&both).field, "kubernetes_tested.\"1.19\"");
        let empty = text.replacen("minors: [\"1.32\", \"1.33\", \"1.34\", \"1.35\"]", "minors: []", 1);
        assert_eq!(refusal(&empty).field, "kubernetes_tested.\"1.19\".minors");
        let bad = text.replacen("\"1.33\", \"1.34\"", "\"1.33\", \"1.34.2\"", 1);
        assert_eq!(refusal(&bad).field, "kubernetes_tested.\"1.19\".minors[2]");
    }

    #[test]
    fn unquoted_minors_keep_their_digits() {
        // A YAML float would read 1.30 as 1.3; the minors are read as the text written.
        let text = repo_text().replacen("minors: [\"1.32\", \"1.33\", \"1.34\", \"1.35\"]", "minors: [1.30, 1.35]", 1);
        let pins = load_text(&text.replace("kubernetes: \"1.35\"", "kubernetes: 1.35")).unwrap_or_else(|p| panic!("{p:#?}"));
        let Tested::Known { minors, .. } = pins.cilium[0].node.tested() else { panic!("known") };
        assert_eq!(minors.iter().map(ToString::to_string).collect::<Vec<_>>(), ["1.30", "1.35"]);
    }

    #[test]
    fn two_versions_get_the_images_the_file_gives_them() {
        let pins = pins_with_node("1.19.6", IMG_134, "1.34").unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(pins.pick("1.19.5").unwrap().node.image().as_str(), IMG_135);
        assert_eq!(pins.pick("1.19.6").unwrap().node.image().as_str(), IMG_134);
        assert_eq!(pins.pick("1.19.6").unwrap().node.minor().to_string(), "1.34");
    }

    #[test]
    fn bad_files_name_the_field() {
        let tmp = tempfile::tempdir().unwrap();
        let good = repo_text();
        let p = tmp.path().join("v.yaml");
        std::fs::write(&p, good.replacen("gateway_api: v1.4.1-experimental\n", "gateway_api: v9\n", 1)).unwrap();
        let e = Pins::load(&p).unwrap_err();
        assert_eq!(e[0].field, "cilium[0].gateway_api");
        std::fs::write(&p, good.replacen("default: 1.19.5", "default: 1.18.0", 1)).unwrap();
        assert_eq!(Pins::load(&p).unwrap_err()[0].field, "default");
        std::fs::write(&p, good.replacen("echo_image:", "echo_imag:", 1)).unwrap();
        assert!(Pins::load(&p).unwrap_err()[0].message.contains("unknown field"));
    }
}
