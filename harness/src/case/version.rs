//! Cilium versions and the ranges expectations are grouped by.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::types::InvalidValue;

/// A Cilium release, e.g. `1.19.6`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CiliumVersion(semver::Version);

impl CiliumVersion {
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let t = s.trim().trim_start_matches('v');
        semver::Version::parse(t).map(CiliumVersion).map_err(|e| InvalidValue(format!("{s:?} is not a Cilium version like 1.19.6: {e}")))
    }
    pub fn semver(&self) -> &semver::Version {
        &self.0
    }

    /// (major, minor, patch).
    pub fn parts(&self) -> (u64, u64, u64) {
        (self.0.major, self.0.minor, self.0.patch)
    }
}

impl fmt::Display for CiliumVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for CiliumVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CiliumVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        CiliumVersion::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A semver range such as `<1.19.6` or `>=1.19.6, <1.20.0`, or `*` for every version.
///
/// A bare version (`1.19.5`) is refused: semver reads it as `^1.19.5`, which would silently
/// include 1.19.6 and every later 1.x. Write `=1.19.5` for one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    text: String,
    req: semver::VersionReq,
}

impl VersionRange {
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let text = s.trim().to_string();
        if text.is_empty() {
            return Err(InvalidValue("empty version range; use \"*\" for every version".into()));
        }
        for part in text.split(',') {
            let p = part.trim();
            if p.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(InvalidValue(format!(
                    "version range {s:?}: {p:?} has no operator; write \"={p}\" for exactly that version or \">={p}\" for it and later"
                )));
            }
            if p.starts_with('^') || p.starts_with('~') {
                return Err(InvalidValue(format!(
                    "version range {s:?}: {p:?} uses {} which is easy to misread; write explicit bounds like \">=1.19.6, <1.20.0\"",
                    &p[..1]
                )));
            }
        }
        let req = semver::VersionReq::parse(&text).map_err(|e| InvalidValue(format!("version range {s:?}: {e}")))?;
        Ok(VersionRange { text, req })
    }
    pub fn matches(&self, v: &CiliumVersion) -> bool {
        self.req.matches(&v.0)
    }
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The smallest version both ranges match, if any. A non-empty intersection of bounds has
    /// a least element, and it is one of the candidates the bounds give: 0.0.0, a bound's
    /// version, or the next patch, minor or major after one (`>1.19.5` starts at 1.19.6,
    /// `>1.19` at 1.20.0). So two groups that share any version are found to, whatever the
    /// pinned versions are.
    pub fn shared_with(&self, other: &VersionRange) -> Option<CiliumVersion> {
        let mut candidates = vec![semver::Version::new(0, 0, 0)];
        for c in self.req.comparators.iter().chain(&other.req.comparators) {
            let (major, minor, patch) = (c.major, c.minor.unwrap_or(0), c.patch.unwrap_or(0));
            candidates.extend([
                semver::Version::new(major, minor, patch),
                semver::Version::new(major, minor, patch + 1),
                semver::Version::new(major, minor + 1, 0),
                semver::Version::new(major + 1, 0, 0),
            ]);
        }
        candidates.sort();
        candidates.into_iter().map(CiliumVersion).find(|v| self.matches(v) && other.matches(v))
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for VersionRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> CiliumVersion {
        CiliumVersion::parse(s).unwrap()
    }

    #[test]
    fn ranges_select_the_right_versions() {
        let before = VersionRange::parse("<1.19.6").unwrap();
        assert!(before.matches(&v("1.19.5")));
        assert!(!before.matches(&v("1.19.6")));
        let mid = VersionRange::parse(">=1.19.6, <1.20.0").unwrap();
        assert!(mid.matches(&v("1.19.7")));
        assert!(!mid.matches(&v("1.20.1")));
        let exact = VersionRange::parse("=1.19.5").unwrap();
        assert!(exact.matches(&v("1.19.5")) && !exact.matches(&v("1.19.6")));
        assert!(VersionRange::parse("*").unwrap().matches(&v("1.20.1")));
        assert!(v("v1.19.5") == v("1.19.5"));
    }

    #[test]
    fn the_least_shared_version_of_two_ranges_is_found() {
        let r = |s: &str| VersionRange::parse(s).unwrap();
        let shared = |a: &str, b: &str| r(a).shared_with(&r(b)).map(|v| v.to_string());
        assert_eq!(shared("<1.20.0", ">=1.19.6").as_deref(), Some("1.19.6"));
        assert_eq!(shared(">1.19.5", "<1.19.7").as_deref(), Some("1.19.6"));
        assert_eq!(shared(">1.19", "*").as_deref(), Some("1.20.0"));
        assert_eq!(shared("*", "*").as_deref(), Some("0.0.0"));
        assert_eq!(shared("=1.19.5", ">=1.19.5, <1.19.6").as_deref(), Some("1.19.5"));
        assert_eq!(shared("<1.19.6", ">=1.19.6"), None);
        assert_eq!(shared("<1.20.0", ">=1.20.0"), None);
        assert_eq!(shared(">=1.19.6, <1.20.0", ">=1.20.0"), None);
    }

    #[test]
    fn ambiguous_or_broken_ranges_are_refused() {
        let e = VersionRange::parse("1.19.5").unwrap_err();
        assert!(e.0.contains("=1.19.5"), "{e}");
        assert!(VersionRange::parse("^1.19").is_err());
        assert!(VersionRange::parse(">=banana").is_err());
        assert!(VersionRange::parse("").is_err());
    }
}
