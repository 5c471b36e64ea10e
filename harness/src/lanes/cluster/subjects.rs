//! The objects whose status a case speaks of, read from its manifests: every Gateway in the
//! case's namespace (the case's own first) and every ListenerSet. The lane watches exactly
//! these, so an expectation on a second Gateway or a ListenerSet is observed, not "never seen".

use super::driver::Gvk;
use crate::case::Case;
use crate::case::manifests::parse_file;
use crate::case::template::Vars;

/// Gateway API's group, where Gateways and (from Gateway API 1.6) ListenerSets live.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// A ListenerSet a case's manifests define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSetRef {
    pub namespace: String,
    pub name: String,
    /// As the manifest writes it (`gateway.networking.k8s.io/v1`).
    pub api_version: String,
}

impl ListenerSetRef {
    pub fn gvk(&self) -> Gvk {
        Gvk::new(&self.api_version, "ListenerSet")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    /// The case's Gateway first, then the others in manifest order.
    pub gateways: Vec<String>,
    pub listener_sets: Vec<ListenerSetRef>,
}

impl Subjects {
    /// Every Gateway of `case` in `namespace` and every ListenerSet, as rendered for that
    /// namespace. A manifest that does not parse adds nothing here (the manifests phase reports
    /// it with its file and line).
    pub fn of(case: &Case, namespace: &str) -> Subjects {
        let vars = Vars { apex: case.apex.clone(), namespace: namespace.to_string(), gateway: case.gateway.clone() };
        let mut s = Subjects { gateways: vec![case.gateway.clone()], listener_sets: Vec::new() };
        for m in &case.manifests {
            for o in parse_file(&m.path, &m.text, &vars).unwrap_or_default() {
                if o.group() != GATEWAY_GROUP {
                    continue;
                }
                let ns = o.namespace.clone().unwrap_or_else(|| namespace.to_string());
                match o.kind.as_str() {
                    "Gateway" if ns == namespace && !s.gateways.contains(&o.name) => s.gateways.push(o.name),
                    "ListenerSet" if !s.listener_sets.iter().any(|l| l.name == o.name && l.namespace == ns) => {
                        s.listener_sets.push(ListenerSetRef { namespace: ns, name: o.name, api_version: o.api_version })
                    }
                    _ => {}
                }
            }
        }
        s
    }

    /// Whether expectations key listeners and parents by Gateway (`<gateway>/<listener>`).
    pub fn several(&self) -> bool {
        self.gateways.len() > 1
    }

    pub fn listener_set_names(&self) -> Vec<String> {
        self.listener_sets.iter().map(|l| l.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_gateway_and_listenerset_of_a_case_is_found() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/kind/cases/two-gateways");
        let case = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
        let s = Subjects::of(&case, "lg-x");
        assert_eq!(s.gateways, ["gw", "second"]);
        assert!(s.several());
        assert_eq!(
            s.listener_sets,
            [ListenerSetRef { namespace: "lg-x".into(), name: "extra".into(), api_version: "gateway.networking.k8s.io/v1".into() }]
        );
        let one = crate::case::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/kind/cases/worked-example")).unwrap();
        let s = Subjects::of(&one, "lg-x");
        assert_eq!(s.gateways, ["gw"]);
        assert!(!s.several() && s.listener_sets.is_empty());
    }
}
