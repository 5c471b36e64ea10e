//! Names the kind lane gives things, and the labels that mark them as its own. One place, so
//! the safety checks and the objects they check agree.

use std::fmt;

use crate::case::CiliumVersion;

/// Every cluster the harness creates starts with this; nothing else is ever deleted.
pub const CLUSTER_PREFIX: &str = "layout-gate-";
/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "layout-gate";
/// The marker ConfigMap (in kube-system) a harness-created cluster carries.
pub const MARKER_NAME: &str = "layout-gate-cluster";
pub const MARKER_NAMESPACE: &str = "kube-system";
/// Label on everything the harness creates.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "layout-gate");
/// Label naming the case a namespace belongs to.
pub const CASE_LABEL: &str = "layout-gate.dev/case";
/// Label naming the run that created a namespace.
pub const RUN_LABEL: &str = "layout-gate.dev/run";
/// Label naming the backend a Deployment, Service and pod belong to.
pub const BACKEND_LABEL: &str = "layout-gate.dev/backend";

/// A kind cluster name the harness made: `layout-gate-1-19-5`. Only [`ClusterName::for_version`]
/// and [`ClusterName::parse_own`] build one, so holding it means the name carries the prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterName(String);

impl ClusterName {
    /// The name encodes the Cilium version, so clusters of two versions never collide and
    /// `kind get clusters` says what each one runs.
    pub fn for_version(v: &CiliumVersion) -> Self {
        let v = v.to_string().replace(['.', '+'], "-").to_ascii_lowercase();
        ClusterName(format!("{CLUSTER_PREFIX}{v}"))
    }

    /// A name given with `--reuse-cluster`: it must be one the harness could have made.
    pub fn parse_own(s: &str) -> Result<Self, NotOurCluster> {
        let ok = s.starts_with(CLUSTER_PREFIX)
            && s.len() > CLUSTER_PREFIX.len()
            && s.len() <= 50
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok { Ok(ClusterName(s.to_string())) } else { Err(NotOurCluster { given: s.to_string() }) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The kubeconfig context kind writes for it.
    pub fn context(&self) -> String {
        format!("kind-{}", self.0)
    }
}

/// A `--reuse-cluster` name the harness could not have made: it is never touched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given:?} is not a cluster layout-gate creates (names start with {CLUSTER_PREFIX:?}, e.g. layout-gate-1-19-5); \
     for any other cluster use --existing-cluster CONTEXT"
)]
pub struct NotOurCluster {
    pub given: String,
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How much of a namespace name a case's other namespaces add to its own (`{namespace}-web`):
/// a dash and up to 15 characters.
pub const FAMILY_SUFFIX_ROOM: usize = 16;

/// A case's namespace: `lg-<case>-<suffix>`, a valid DNS label short enough that the case's
/// other namespaces (`<it>-web`, within [`FAMILY_SUFFIX_ROOM`]) are still at most 63 characters.
/// The suffix keeps two runs (or a kept namespace) from colliding; the dry run uses `dryrun`.
pub fn namespace_for(case: &str, suffix: &str) -> String {
    let suffix: String = suffix.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
    let room = (63 - FAMILY_SUFFIX_ROOM).saturating_sub("lg-".len() + 1 + suffix.len());
    let full: String = case.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let mut body = if full.len() <= room {
        full
    } else {
        // Cut short, two cases sharing a long prefix (`...reference-grant-specific` and
        // `...reference-grant-all-in-namespace`) would share a namespace, and one would apply
        // into the other's while it is being deleted: the cut name ends with a hash of the
        // whole case name.
        let tag = &run_suffix(case)[..5];
        let mut cut: String = full.chars().take(room.saturating_sub(tag.len() + 1)).collect();
        while cut.ends_with('-') {
            cut.pop();
        }
        format!("{cut}-{tag}")
    };
    while body.ends_with('-') {
        body.pop();
    }
    format!("lg-{body}-{suffix}")
}

/// A short suffix from a run id: the last 6 hex digits of its hash, stable for one run.
pub fn run_suffix(run_id: &str) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(run_id.as_bytes());
    h.iter().take(3).map(|b| format!("{b:02x}")).collect()
}

/// A label value from free text (run ids contain `.`, which labels allow; `:` they do not).
pub fn label_value(s: &str) -> String {
    let mut v: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' }).take(63).collect();
    while v.ends_with(['-', '_', '.']) {
        v.pop();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_encode_the_version_and_carry_the_prefix() {
        let v = CiliumVersion::parse("1.19.5").unwrap();
        let n = ClusterName::for_version(&v);
        assert_eq!(n.as_str(), "layout-gate-1-19-5");
        assert_eq!(n.context(), "kind-layout-gate-1-19-5");
        assert_eq!(ClusterName::parse_own("layout-gate-1-20-1").unwrap().as_str(), "layout-gate-1-20-1");
        assert_eq!(
            ClusterName::parse_own("kind").unwrap_err().to_string(),
            r#""kind" is not a cluster layout-gate creates (names start with "layout-gate-", e.g. layout-gate-1-19-5); for any other cluster use --existing-cluster CONTEXT"#
        );
        assert!(ClusterName::parse_own("layout-gate-").is_err());
        assert!(ClusterName::parse_own("layout-gate-X").is_err());
    }

    #[test]
    fn namespaces_are_dns_labels() {
        assert_eq!(namespace_for("dns01-default", "dryrun"), "lg-dns01-default-dryrun");
        let long = namespace_for(&"a".repeat(100), "abc123");
        assert!(long.len() <= 63, "{long}");
        // A case's other namespaces fit too (found by the operator lane: `<ns>-web` of a long
        // case name was 67 characters, which the API server refuses).
        assert!(format!("{long}-{}", "w".repeat(FAMILY_SUFFIX_ROOM - 1)).len() <= 63, "{long}");
        let real = namespace_for("cilium/gateway-secret-reference-grant-all-in-namespace", "3c9a9c");
        assert!(format!("{real}-web").len() <= 63, "{real}");
        assert!(long.ends_with("-abc123"));
        assert_eq!(namespace_for("Odd_Name-", "1"), "lg-odd-name-1");
        // Two long names that share their first 40 characters get two namespaces (they shared
        // one, found by the operator lane: one case applied into the other's terminating
        // namespace).
        let (a, b) = (
            namespace_for("cilium/gateway-secret-reference-grant-all-in-namespace", "b5e520"),
            namespace_for("cilium/gateway-secret-reference-grant-specific", "b5e520"),
        );
        assert_ne!(a, b);
        assert!(a.len() <= 63 - FAMILY_SUFFIX_ROOM && b.len() <= 63 - FAMILY_SUFFIX_ROOM, "{a} {b}");
        assert_eq!(run_suffix("x").len(), 6);
        assert_eq!(run_suffix("x"), run_suffix("x"));
        assert_eq!(label_value("20261130T120501Z-kind-1.19.5"), "20261130T120501Z-kind-1.19.5");
        assert_eq!(label_value("a:b/"), "a-b");
    }
}
