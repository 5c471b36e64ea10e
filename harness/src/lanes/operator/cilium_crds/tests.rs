use super::*;

fn rendered(config: &[(&str, &str)]) -> Rendered {
    Rendered {
        objects: Vec::new(),
        config: config.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        args: vec!["--config-dir=/tmp/cilium/config-map".into()],
        env: vec![("K8S_NODE_NAME".into(), "n".into())],
        command: vec!["cilium-operator-generic".into()],
    }
}

fn names(r: &Rendered) -> Vec<&'static str> {
    registered(r).into_iter().map(|(n, _)| n).collect()
}

const REGISTER_GO: &str = r#"
package ciliumio

const (
	// CustomResourceDefinitionGroup is the name of the third party resource group
	CustomResourceDefinitionGroup = "cilium.io"

	// CustomResourceDefinitionSchemaVersionKey is key to label which holds the CRD schema version
	CustomResourceDefinitionSchemaVersionKey = "io.cilium.k8s.crd.schema.version"

	CustomResourceDefinitionSchemaVersion = "1.99.3"
)
"#;

#[test]
fn the_label_is_read_from_the_constants_not_assumed() {
    let l = schema_label(REGISTER_GO, "register.go").unwrap();
    assert_eq!(l, SchemaLabel { key: "io.cilium.k8s.crd.schema.version".into(), value: "1.99.3".into() });
    // A tag without the constant, or with a value that is not a version: an error naming the
    // file and the constant, never a default.
    let e = schema_label(&REGISTER_GO.replace("CustomResourceDefinitionSchemaVersion =", "Other ="), "x/register.go").unwrap_err();
    assert_eq!(e.to_string(), "x/register.go: no constant CustomResourceDefinitionSchemaVersion");
    let e = schema_label(&REGISTER_GO.replace("1.99.3", "next"), "r.go").unwrap_err();
    assert!(e.to_string().contains("\"next\" is not a version"), "{e}");
    assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<semver::Error>()), "{e:?}");
}

/// The kind lane's values render these options (enable-envoy-config, enable-gateway-api true;
/// the policy, node and endpoint options at their defaults): the 13 CRDs cilium-operator 1.19.6
/// created itself in the lane's run (its log, 2026-12-02), in its order.
#[test]
fn the_selection_is_the_operators_for_the_kind_lanes_options() {
    let r = rendered(&[("enable-envoy-config", "true"), ("enable-gateway-api", "true"), ("identity-allocation-mode", "crd")]);
    assert_eq!(
        names(&r),
        [
            "ciliumidentities.cilium.io",
            "ciliumpodippools.cilium.io",
            "ciliumendpoints.cilium.io",
            "ciliumnodes.cilium.io",
            "ciliumnetworkpolicies.cilium.io",
            "ciliumclusterwidenetworkpolicies.cilium.io",
            "ciliumcidrgroups.cilium.io",
            "ciliumclusterwideenvoyconfigs.cilium.io",
            "ciliumenvoyconfigs.cilium.io",
            "ciliumloadbalancerippools.cilium.io",
            "ciliuml2announcementpolicies.cilium.io",
            "ciliumgatewayclassconfigs.cilium.io",
            "ciliumnodeconfigs.cilium.io",
        ]
    );
}

#[test]
fn options_follow_the_operator_and_doubt_leaves_the_crd_to_it() {
    let base = names(&rendered(&[]));
    assert!(!base.contains(&"ciliumenvoyconfigs.cilium.io") && !base.contains(&"ciliumgatewayclassconfigs.cilium.io"));
    let bgp = names(&rendered(&[("enable-bgp-control-plane", "True")]));
    assert_eq!(bgp.iter().filter(|n| n.starts_with("ciliumbgp")).count(), 5);
    let no_policy = names(&rendered(&[("enable-cilium-network-policy", "false"), ("enable-cilium-clusterwide-network-policy", "0")]));
    assert!(!no_policy.contains(&"ciliumcidrgroups.cilium.io") && !no_policy.contains(&"ciliumnetworkpolicies.cilium.io"));
    let slices = names(&rendered(&[("enable-cilium-endpoint-slice", "true")]));
    assert!(slices.contains(&"ciliumendpointslices.cilium.io"));
    // The operator may force these back on (pkg/option/config.go Populate,
    // PopulateEnableCiliumNodeCRD): not guessed, left to the operator.
    let forced = names(&rendered(&[("disable-endpoint-crd", "true"), ("enable-ciliumnode-crd", "false")]));
    assert!(!forced.contains(&"ciliumendpoints.cilium.io") && !forced.contains(&"ciliumnodes.cilium.io"));
    // Not a boolean Go reads, or set by the Deployment's flags or environment: not guessed.
    assert!(!names(&rendered(&[("enable-envoy-config", "yes")])).contains(&"ciliumenvoyconfigs.cilium.io"));
    let mut by_flag = rendered(&[("enable-envoy-config", "true")]);
    by_flag.args.push("--enable-envoy-config=false".into());
    assert!(!names(&by_flag).contains(&"ciliumenvoyconfigs.cilium.io"));
    let mut by_env = rendered(&[]);
    by_env.env.push(("CILIUM_ENABLE_CILIUM_NETWORK_POLICY".into(), "false".into()));
    assert!(!names(&by_env).contains(&"ciliumnetworkpolicies.cilium.io"));
}

const CRD_YAML: &str = r#"---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.19.0
  name: ciliumenvoyconfigs.cilium.io
spec:
  group: cilium.io
  names:
    categories:
    - cilium
    kind: CiliumEnvoyConfig
    listKind: CiliumEnvoyConfigList
    plural: ciliumenvoyconfigs
    shortNames:
    - cec
    singular: ciliumenvoyconfig
  scope: Namespaced
  versions:
  - name: v2
    schema:
      openAPIV3Schema:
        type: object
    served: true
    storage: true
    subresources: {}
"#;

#[test]
fn an_object_is_shaped_as_construct_v1_crd_shapes_it() {
    let template: Value = serde_saphyr::from_str(CRD_YAML).unwrap();
    let label = SchemaLabel { key: "io.cilium.k8s.crd.schema.version".into(), value: "1.32.7".into() };
    let o = construct("ciliumenvoyconfigs.cilium.io", &template, &label);
    assert_eq!(o["metadata"], json!({"name": "ciliumenvoyconfigs.cilium.io", "labels": {"io.cilium.k8s.crd.schema.version": "1.32.7"}}));
    assert_eq!(o["spec"]["group"], "cilium.io");
    assert_eq!(
        o["spec"]["names"],
        json!({"categories": ["cilium"], "kind": "CiliumEnvoyConfig", "plural": "ciliumenvoyconfigs", "shortNames": ["cec"], "singular": "ciliumenvoyconfig"})
    );
    assert_eq!(o["spec"]["scope"], "Namespaced");
    assert_eq!(o["spec"]["versions"], template["spec"]["versions"]);
    assert!(o["spec"].get("conversion").is_none());
}

/// A module folder laid out as Cilium's: the selection's file with the digest the rule
/// mirrors is not reproducible here, so only the refusal of another file is checked offline
/// (the real module at 1.19.6 is checked by the e2e trial
/// `operator::1.19.6::proof::ciliums_crds_preinstalled_and_left_alone`).
#[test]
fn a_tag_whose_selection_differs_is_left_to_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    std::fs::create_dir_all(m.join("pkg/k8s/synced")).unwrap();
    std::fs::write(m.join(SELECTION_SOURCE), "package synced // another tag\n").unwrap();
    match plan(m, &rendered(&[])) {
        Preinstall::LeftToOperator(why) => assert!(why.contains("crd.go") && why.contains("is not the file"), "{why}"),
        other => panic!("{other:?}"),
    }
    // No module at all: the same, with the file named.
    match plan(&m.join("absent"), &rendered(&[])) {
        Preinstall::LeftToOperator(why) => assert!(why.contains("absent/pkg/k8s/synced/crd.go"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_module_is_the_charts_grandparent() {
    assert_eq!(
        module_root(Path::new("/m/github.com/cilium/cilium@v1.19.6/install/kubernetes/cilium")).unwrap(),
        Path::new("/m/github.com/cilium/cilium@v1.19.6")
    );
    assert!(module_root(Path::new("/elsewhere/chart")).unwrap_err().to_string().contains("not the chart folder"));
}

const LOG: &str = r#"time=2026-12-02T05:08:19.711741499Z level=info msg="  --disable-endpoint-crd='false'" subsys=cilium-operator-generic
time=2026-12-02T05:08:20.009480859Z level=info msg="Creating CRD (CustomResourceDefinition)..." module=operator.operator-controlplane.leader-lifecycle.create-crds name=ciliumidentities.cilium.io
time=2026-12-02T05:08:21.021625074Z level=info msg="CRD (CustomResourceDefinition) is installed and up-to-date" module=operator.operator-controlplane.leader-lifecycle.create-crds name=ciliumidentities.cilium.io
time=2026-12-02T05:08:21.5Z level=info msg="Updating CRD (CustomResourceDefinition)..." module=operator.operator-controlplane.leader-lifecycle.create-crds name=ciliumnodes.cilium.io
time=2026-12-02T05:08:22.0Z level=info msg="CRD (CustomResourceDefinition) is installed and up-to-date" module=operator.operator-controlplane.leader-lifecycle.create-crds name=ciliumnodes.cilium.io
time=2026-12-02T05:08:22.5Z level=info msg="CRD (CustomResourceDefinition) is installed and up-to-date" module=operator.operator-controlplane.leader-lifecycle.create-crds name=ciliumendpoints.cilium.io
"#;

#[test]
fn the_operators_log_says_what_it_did_with_each_crd() {
    let r = read_log(LOG);
    assert_eq!(r.created, BTreeSet::from(["ciliumidentities.cilium.io".to_string()]));
    assert_eq!(r.updated, BTreeSet::from(["ciliumnodes.cilium.io".to_string()]));
    assert_eq!(r.up_to_date.len(), 3);
    // Found up to date: fine; the one it created itself is said.
    let ok = check(&["ciliumendpoints.cilium.io".to_string()], &r).unwrap();
    assert!(ok.contains("1 pre-installed") && ok.contains("created 1 itself: ciliumidentities.cilium.io"), "{ok}");
    // Nothing pre-installed (left to the operator): said so.
    let none = check(&[], &r).unwrap();
    assert!(none.starts_with("none pre-installed; it created 1 itself"), "{none}");
    // Updated by the operator: its label was wrong.
    let e = check(&["ciliumnodes.cilium.io".to_string()], &r).unwrap_err().to_string();
    assert!(e.contains("updated pre-installed CRDs") && e.contains("ciliumnodes.cilium.io"), "{e}");
    // Never registered by the operator: the selection was wrong.
    let e = check(&["ciliumbgpclusterconfigs.cilium.io".to_string()], &r).unwrap_err().to_string();
    assert!(e.contains("never registered") && e.contains("ciliumbgpclusterconfigs"), "{e}");
}
