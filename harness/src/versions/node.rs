//! The Kubernetes a kind-lane cluster runs for one Cilium version: a kind node image pinned by
//! digest, the Kubernetes minor it is, and whether that Cilium release line is e2e tested on
//! that minor. Only [`KindNode::new`] builds one, and it refuses a pairing the tested list
//! rules out, so a loaded pin is either a tested pairing or one whose tested list is unknown
//! (and says so wherever it is shown).

use std::fmt;

/// A Kubernetes minor release such as `1.35`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeMinor {
    pub major: u64,
    pub minor: u64,
}

impl KubeMinor {
    /// `1.35` (or `v1.35`); a patch version is refused: the tested lists are per minor.
    pub fn parse(s: &str) -> Result<KubeMinor, String> {
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let bad = || format!("{s:?} is not a Kubernetes minor version like 1.35");
        let (major, minor) = t.split_once('.').ok_or_else(bad)?;
        let num = |p: &str| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p == "0" || !p.starts_with('0')) {
                p.parse::<u64>().map_err(|_| bad())
            } else {
                Err(bad())
            }
        };
        Ok(KubeMinor { major: num(major)?, minor: num(minor)? })
    }
}

impl fmt::Display for KubeMinor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A kind node image pinned by digest, `kindest/node:v1.35.8@sha256:<64 hex>`. kind's release
/// notes say the digest is what selects the image built for that kind release: a tag alone may
/// name an image built for another one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    reference: String,
    kubernetes: semver::Version,
}

impl NodeImage {
    pub fn parse(s: &str) -> Result<NodeImage, String> {
        let s = s.trim();
        let (name_tag, digest) = s.split_once('@').ok_or_else(|| {
            format!("{s:?} has no digest; pin it as kind's release notes publish it, `kindest/node:vX.Y.Z@sha256:<64 hex>`")
        })?;
        let hex = digest.strip_prefix("sha256:").ok_or_else(|| format!("{s:?}: the digest must be `sha256:<64 hex>`, got {digest:?}"))?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(format!(
                "{s:?}: the sha256 digest must be 64 lowercase hex digits, got {} character{}",
                hex.len(),
                if hex.len() == 1 { "" } else { "s" }
            ));
        }
        let (_, tag) = name_tag
            .rsplit_once(':')
            .filter(|(name, _)| !name.is_empty() && !name.ends_with('/'))
            .ok_or_else(|| format!("{s:?} has no tag; kind node images are tagged with their Kubernetes version, `kindest/node:vX.Y.Z`"))?;
        let version = tag
            .strip_prefix('v')
            .and_then(|v| semver::Version::parse(v).ok())
            .filter(|v| v.pre.is_empty() && v.build.is_empty())
            .ok_or_else(|| format!("{s:?}: the tag {tag:?} is not a Kubernetes release like v1.35.8"))?;
        Ok(NodeImage { reference: s.to_string(), kubernetes: version })
    }

    /// The whole reference, digest included: what `kind create cluster --image` gets.
    pub fn as_str(&self) -> &str {
        &self.reference
    }

    /// The Kubernetes release the tag names (`1.35.8`).
    pub fn kubernetes(&self) -> &semver::Version {
        &self.kubernetes
    }

    pub fn minor(&self) -> KubeMinor {
        KubeMinor { major: self.kubernetes.major, minor: self.kubernetes.minor }
    }
}

impl fmt::Display for NodeImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reference)
    }
}

/// The Kubernetes minors a Cilium release line is e2e tested on, with where that list is
/// published, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tested {
    Known { minors: Vec<KubeMinor>, source: String },
    Unknown { why: String },
}

/// One Cilium version's cluster Kubernetes. See the module comment for the invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindNode {
    image: NodeImage,
    line: String,
    tested: Tested,
}

/// Why [`KindNode::new`] refused: which of its inputs is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRefusal {
    /// The image's tag is another minor than the one declared.
    TagMinor(String),
    /// The declared minor is not one the line is tested on.
    NotTested(String),
}

impl KindNode {
    /// `declared` is the minor the versions file says the image is; `line` the Cilium release
    /// line (`1.19`) whose `tested` list applies.
    pub fn new(image: NodeImage, declared: KubeMinor, line: &str, tested: Tested) -> Result<KindNode, NodeRefusal> {
        if image.minor() != declared {
            return Err(NodeRefusal::TagMinor(format!(
                "the node image {image} is Kubernetes {} (its tag), not the declared {declared}",
                image.minor()
            )));
        }
        if let Tested::Known { minors, source } = &tested
            && !minors.contains(&declared)
        {
            return Err(NodeRefusal::NotTested(format!(
                "Kubernetes {declared} is not one Cilium {line} is e2e tested on ({}; {source}); pick a node image of a tested minor",
                join(minors)
            )));
        }
        Ok(KindNode { image, line: line.to_string(), tested })
    }

    pub fn image(&self) -> &NodeImage {
        &self.image
    }

    pub fn minor(&self) -> KubeMinor {
        self.image.minor()
    }

    pub fn tested(&self) -> &Tested {
        &self.tested
    }

    /// True when the Cilium line's tested list is known (and so, by construction, holds this
    /// minor).
    pub fn is_tested_pairing(&self) -> bool {
        matches!(self.tested, Tested::Known { .. })
    }

    /// One sentence for evidence, the dry run and `versions`: the pairing and its source, or
    /// that it is untested/unknown and why.
    pub fn pairing(&self) -> String {
        let k = self.image.kubernetes();
        match &self.tested {
            Tested::Known { minors, source } => {
                format!("Kubernetes {k}: Cilium {} is e2e tested on Kubernetes {} ({source})", self.line, join(minors))
            }
            Tested::Unknown { why } => {
                format!(
                    "Kubernetes {k}: UNTESTED/UNKNOWN pairing, the Kubernetes versions Cilium {} is e2e tested on are unknown ({why})",
                    self.line
                )
            }
        }
    }

    /// A few words for a job name or a table cell.
    pub fn label(&self) -> String {
        let k = self.image.kubernetes();
        if self.is_tested_pairing() {
            format!("k8s {k} (tested by Cilium {})", self.line)
        } else {
            format!("k8s {k} (UNTESTED/UNKNOWN with Cilium {})", self.line)
        }
    }
}

fn join(minors: &[KubeMinor]) -> String {
    minors.iter().map(KubeMinor::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0";

    fn img(tag: &str) -> NodeImage {
        NodeImage::parse(&format!("kindest/node:{tag}@sha256:{D}")).unwrap()
    }

    fn m(s: &str) -> KubeMinor {
        KubeMinor::parse(s).unwrap()
    }

    #[test]
    fn minors_parse_strictly() {
        assert_eq!(m("1.35"), KubeMinor { major: 1, minor: 35 });
        assert_eq!(m("v1.9").to_string(), "1.9");
        assert!(m("1.9") < m("1.35"), "numeric, not textual, order");
        for bad in ["1", "1.35.8", "1.x", "", "1.035", " . "] {
            assert!(KubeMinor::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn node_images_need_a_full_digest_and_a_release_tag() {
        let i = img("v1.35.8");
        assert_eq!(i.minor(), m("1.35"));
        assert_eq!(i.kubernetes().to_string(), "1.35.8");
        assert_eq!(i.as_str(), format!("kindest/node:v1.35.8@sha256:{D}"));
        let e = |s: &str| NodeImage::parse(s).unwrap_err();
        assert!(e("kindest/node:v1.35.8").contains("no digest"));
        assert!(e(&format!("kindest/node:v1.35.8@sha512:{D}")).contains("sha256:<64 hex>"));
        assert!(e(&format!("kindest/node:v1.35.8@sha256:{}", &D[..63])).contains("got 63 characters"));
        assert!(e(&format!("kindest/node:v1.35.8@sha256:{}", D.to_uppercase())).contains("lowercase hex"));
        assert!(e(&format!("kindest/node:v1.35.8@sha256:{}g", &D[..63])).contains("64 lowercase hex"));
        assert!(e(&format!("kindest/node@sha256:{D}")).contains("no tag"));
        assert!(e(&format!("kindest/node:latest@sha256:{D}")).contains("not a Kubernetes release"));
        assert!(e(&format!("kindest/node:v1.36.0-rc.1@sha256:{D}")).contains("not a Kubernetes release"));
    }

    #[test]
    fn a_pairing_is_tested_unknown_or_refused() {
        let tested = Tested::Known { minors: vec![m("1.34"), m("1.35")], source: "src".into() };
        let ok = KindNode::new(img("v1.35.8"), m("1.35"), "1.19", tested.clone()).unwrap();
        assert!(ok.is_tested_pairing());
        assert_eq!(ok.pairing(), "Kubernetes 1.35.8: Cilium 1.19 is e2e tested on Kubernetes 1.34, 1.35 (src)");
        assert_eq!(ok.label(), "k8s 1.35.8 (tested by Cilium 1.19)");
        assert_eq!(
            KindNode::new(img("v1.35.8"), m("1.34"), "1.19", tested.clone()).unwrap_err(),
            NodeRefusal::TagMinor(
                "the node image kindest/node:v1.35.8@sha256:".to_string() + D + " is Kubernetes 1.35 (its tag), not the declared 1.34"
            )
        );
        assert!(
            matches!(KindNode::new(img("v1.36.4"), m("1.36"), "1.19", tested).unwrap_err(), NodeRefusal::NotTested(e) if e.contains("1.34, 1.35; src"))
        );
        let unknown = KindNode::new(img("v1.36.4"), m("1.36"), "1.20", Tested::Unknown { why: "not published".into() }).unwrap();
        assert!(!unknown.is_tested_pairing());
        assert!(unknown.pairing().contains("UNTESTED/UNKNOWN") && unknown.pairing().contains("not published"), "{}", unknown.pairing());
        assert!(unknown.label().contains("UNTESTED/UNKNOWN"));
    }
}
