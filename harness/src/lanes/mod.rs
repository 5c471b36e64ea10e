//! The lanes: where a case's Gateway runs and where its observations come from. Everything
//! else (case, certificates, probe, dump summary, judge, evidence) is shared.
//!
//! * [`model`]: layout-gate's model of Cilium's Gateway translation per version, rendered into
//!   a real local Envoy. A prediction; its evidence says `lane: model`.
//! * [`kind`]: real Cilium on a kind cluster the harness creates. The gate.
//! * [`operator`]: Cilium's own operator built from the tag, on a local API server; its
//!   CiliumEnvoyConfig served on a real local Envoy through an emulated agent step. The oracle
//!   the model is held to.
//!
//! [`cluster`] is what the lanes that run Cilium on an API server share: everything a case does
//! against the API server, written once.

pub mod cluster;
pub mod kind;
pub mod model;
pub mod operator;

#[cfg(test)]
mod tests {
    /// Lower stages never import higher ones: the lanes take their own options types
    /// (`model::ModelOptions`, `kind::KindOptions`) and `cli/` maps its flags onto them.
    #[test]
    fn no_lane_imports_the_cli() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    walk(&p, found);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for (i, line) in text.lines().enumerate() {
                        if line.contains(concat!("crate::", "cli")) || line.contains(concat!("super::super::", "cli")) {
                            found.push(format!("{}:{}: {line}", p.display(), i + 1));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/src/lanes"), &mut found);
        assert!(found.is_empty(), "lanes/ imports cli/:\n{}", found.join("\n"));
    }
}
