//! Whether a case's objects stay inside the case: every namespaced object in one of the case's
//! namespaces (`{namespace}`, or a Namespace the case creates, named `{namespace}-<suffix>`),
//! and no cluster-scoped object unless the case declares its kind under `cluster_scoped:` and
//! names it after its namespace. The kind lane applies every manifest and deletes only what it
//! registered (the case's namespaces, and the declared cluster-scoped objects): a manifest in
//! `kube-system`, or a ClusterRoleBinding nobody declared, would be applied to the cluster
//! (with `--existing-cluster`, one layout-gate does not own) and never deleted.
//!
//! Which kinds are cluster-scoped is read from the typed APIs, not re-typed: the Kubernetes
//! kinds from k8s-openapi's `Resource::Scope`, the Gateway API kinds from the pinned CRD
//! bundles' `spec.scope` (see [`super::api_schema`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};

use super::manifests::Object;
use super::problem::Problem;

/// Whether a scope marker is the cluster's.
trait Clustered {
    const CLUSTER: bool;
}
impl Clustered for ClusterResourceScope {
    const CLUSTER: bool = true;
}
impl Clustered for NamespaceResourceScope {
    const CLUSTER: bool = false;
}

fn row<T: Resource>() -> (&'static str, &'static str, bool)
where
    T::Scope: Clustered,
{
    (T::GROUP, T::KIND, <T::Scope as Clustered>::CLUSTER)
}

macro_rules! rows {
    ($($t:ty),* $(,)?) => { vec![$(row::<$t>()),*] };
}

/// (group, kind, cluster-scoped) of the Kubernetes kinds a manifest may hold.
fn kubernetes_kinds() -> Vec<(&'static str, &'static str, bool)> {
    use k8s_openapi::api::*;
    rows![
        core::v1::Namespace,
        core::v1::Node,
        core::v1::PersistentVolume,
        core::v1::ConfigMap,
        core::v1::Secret,
        core::v1::Service,
        core::v1::ServiceAccount,
        core::v1::Pod,
        core::v1::Endpoints,
        core::v1::PersistentVolumeClaim,
        core::v1::LimitRange,
        core::v1::ResourceQuota,
        core::v1::ReplicationController,
        core::v1::PodTemplate,
        apps::v1::Deployment,
        apps::v1::DaemonSet,
        apps::v1::StatefulSet,
        apps::v1::ReplicaSet,
        batch::v1::Job,
        batch::v1::CronJob,
        rbac::v1::ClusterRole,
        rbac::v1::ClusterRoleBinding,
        rbac::v1::Role,
        rbac::v1::RoleBinding,
        networking::v1::NetworkPolicy,
        networking::v1::Ingress,
        networking::v1::IngressClass,
        discovery::v1::EndpointSlice,
        policy::v1::PodDisruptionBudget,
        storage::v1::StorageClass,
        storage::v1::CSIDriver,
        storage::v1::VolumeAttachment,
        scheduling::v1::PriorityClass,
        node::v1::RuntimeClass,
        coordination::v1::Lease,
        certificates::v1::CertificateSigningRequest,
        autoscaling::v2::HorizontalPodAutoscaler,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    ]
}

/// Whether `group`/`kind` is cluster-scoped; `None` when layout-gate does not know the kind.
pub fn cluster_scoped(group: &str, kind: &str) -> Option<bool> {
    if let Some((_, _, c)) = kubernetes_kinds().into_iter().find(|(g, k, _)| *g == group && *k == kind) {
        return Some(c);
    }
    let facts = super::api_schema::facts().ok()?;
    facts.scope(group, kind).map(|s| s == "Cluster")
}

/// Every object reaching outside the case. `namespace`: the namespace the manifests were
/// rendered with (shown as `{namespace}`); `declared`: the kinds under `cluster_scoped:`;
/// `implied`: the case's other namespaces its backends and certificates live in
/// (`namespace_suffix:`, `certificate_namespaces:`), which the cluster lanes create and delete
/// like a declared Namespace; `texts`: the rendered manifests by file, to locate values.
pub fn check(
    objects: &[Object],
    texts: &BTreeMap<PathBuf, String>,
    namespace: &str,
    declared: &[String],
    implied: &[String],
) -> Vec<Problem> {
    let own_prefix = format!("{namespace}-");
    let is_own = |n: &str| n == namespace || n.starts_with(&own_prefix);
    let shown = |n: &str| n.replacen(namespace, "{namespace}", 1);
    let mut own: BTreeSet<String> = BTreeSet::from([namespace.to_string()]);
    own.extend(objects.iter().filter(|o| o.kind == "Namespace" && o.group().is_empty() && is_own(&o.name)).map(|o| o.name.clone()));
    own.extend(implied.iter().filter(|n| is_own(n)).cloned());
    let own_list = || own.iter().map(|n| shown(n)).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    for o in objects.iter().filter(|o| o.kind != "List") {
        let text = texts.get(&o.file);
        let mut problem = |needle: &str, field: String, message: String| {
            let (line, column) = text.map(|t| super::problem::locate(t, o.line, needle)).unwrap_or((o.line, 1));
            out.push(Problem { file: o.file.clone(), line, column, field, message });
        };
        let what = format!("{} {}", o.kind, shown(&o.name));
        if o.kind == "Namespace" && o.group().is_empty() {
            if !is_own(&o.name) {
                problem(
                    &o.name,
                    format!("{what}: metadata.name"),
                    format!(
                        "{:?} is not the case's: a Namespace the case creates is named after it: {{namespace}} or {{namespace}}-<suffix> (the kind lane deletes those with the case)",
                        o.name
                    ),
                );
            }
            continue;
        }
        let cluster = cluster_scoped(o.group(), &o.kind);
        let unknown_without_namespace = cluster.is_none() && o.namespace.is_none();
        if cluster == Some(true) || unknown_without_namespace {
            if !declared.iter().any(|k| k == &o.kind) {
                let why = if unknown_without_namespace {
                    format!(
                        "layout-gate cannot tell whether {} {} is namespaced: give it `namespace: {{namespace}}` if it is; if it is cluster-scoped, declare its kind under `cluster_scoped:` in case.yaml",
                        o.api_version, o.kind
                    )
                } else {
                    "cluster-scoped: declare its kind under `cluster_scoped:` in case.yaml (the kind lane then deletes it with the case), or leave it out".into()
                };
                problem(&o.name, what, why);
            } else if !o.name.contains(namespace) {
                problem(
                    &o.name,
                    what,
                    "a cluster-scoped object is shared by every run on the cluster: name it after the case's namespace ({namespace}-<suffix>) so each run has its own".into(),
                );
            }
            continue;
        }
        if let Some(ns) = &o.namespace
            && !own.contains(ns)
        {
            problem(
                ns,
                format!("{what}: metadata.namespace"),
                format!(
                    "{ns:?} is not one of the case's namespaces ({}); the kind lane creates and deletes only those, so an object elsewhere would outlive the run",
                    own_list()
                ),
            );
        }
    }
    out
}

/// [`check`] over a loaded case's manifests, rendered as lint renders them.
pub fn check_case(case: &super::model::Case) -> Vec<Problem> {
    let vars = super::template::Vars { apex: case.apex.clone(), namespace: LINT_NAMESPACE.into(), gateway: case.gateway.clone() };
    let mut objects = Vec::new();
    let mut texts = BTreeMap::new();
    for m in case.all_manifests() {
        // A manifest that does not render or parse was refused when the case loaded.
        let Ok(text) = super::template::render(&m.text, &vars) else { continue };
        objects.extend(super::manifests::parse_text(&m.path, &text).unwrap_or_default());
        texts.insert(m.path.clone(), text);
    }
    let mut implied: Vec<String> = case.backends.keys().map(|b| case.backend_namespace(b, LINT_NAMESPACE)).collect();
    implied.extend(case.certificates.iter().map(|c| case.certificate_namespace(&c.name, LINT_NAMESPACE)));
    check(&objects, &texts, LINT_NAMESPACE, &case.cluster_scoped, &implied)
}

/// The namespace lint renders `{namespace}` with.
pub const LINT_NAMESPACE: &str = "layout-gate-lint";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_the_typed_apis() {
        assert_eq!(cluster_scoped("rbac.authorization.k8s.io", "ClusterRoleBinding"), Some(true));
        assert_eq!(cluster_scoped("", "Namespace"), Some(true));
        assert_eq!(cluster_scoped("", "Secret"), Some(false));
        assert_eq!(cluster_scoped("gateway.networking.k8s.io", "GatewayClass"), Some(true));
        assert_eq!(cluster_scoped("gateway.networking.k8s.io", "TLSRoute"), Some(false));
        assert_eq!(cluster_scoped("cilium.io", "CiliumClusterwideNetworkPolicy"), None);
    }
}
