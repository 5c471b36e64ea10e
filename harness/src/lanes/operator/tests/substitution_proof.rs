//! `scripts/prove-substitutions.py`, the proofs `scripts/install-control-plane.sh` runs at each
//! 1.20 tag before the module is written and before every build (issue #24), fed made-up package
//! graphs: the substitutions hold only while no Gateway API package reaches gobgp and Cilium
//! uses nothing of mcs-api/controllers but `DerivedServiceAnnotation`, with the value the tag
//! names; otherwise the build fails naming the package.

use std::path::{Path, PathBuf};
use std::process::Command;

const GW: &str = "github.com/cilium/cilium/operator/pkg/gateway-api";
const MCS: &str = "sigs.k8s.io/mcs-api/controllers";
const ANNOTATION: &str = "multicluster.kubernetes.io/derived-service";

/// A made-up world: Cilium's source at a tag (its mcs-api doc and one ServiceImport fixture),
/// the substitute's folder, and Go files for the packages that import mcs-api.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World { dir: tempfile::tempdir().unwrap() };
        let src = w.path("src");
        std::fs::create_dir_all(src.join("Documentation/network/clustermesh")).unwrap();
        std::fs::write(src.join("Documentation/network/clustermesh/mcsapi.rst"), format!("the ``{ANNOTATION}`` annotation\n")).unwrap();
        let fx = src.join("operator/pkg/model/ingestion/testdata/gateway/basic_http");
        std::fs::create_dir_all(&fx).unwrap();
        std::fs::write(fx.join("input-serviceimport.yaml"), format!("annotations:\n  {ANNOTATION}: x\n")).unwrap();
        std::fs::create_dir_all(w.path("mcs")).unwrap();
        std::fs::write(w.path("mcs/common.go"), format!("package controllers\nconst DerivedServiceAnnotation = \"{ANNOTATION}\"\n"))
            .unwrap();
        w
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    /// A package folder holding one Go file with `body`.
    fn package(&self, name: &str, body: &str) -> PathBuf {
        let d = self.path(&format!("pkg/{name}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("a.go"), body).unwrap();
        d
    }
    /// Runs the proof over `deps` (ImportPath|Dir|GoFiles|Imports lines) for both substitutions;
    /// its exit status, stderr and the proofs written.
    fn prove(&self, roots: &[&str], deps: &[String]) -> (bool, String, String) {
        let subs = self.path("substitutions.json");
        std::fs::write(
            &subs,
            serde_json::json!([
                {"module": "github.com/osrg/gobgp/v4", "version": "v4.6.1-x", "substitute": "v4.7.0"},
                {"module": MCS, "version": "v0.5.2", "substitute": "v0.0.0-x"},
            ])
            .to_string(),
        )
        .unwrap();
        let deps_file = self.path("deps");
        std::fs::write(&deps_file, deps.join("\n") + "\n").unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prove-substitutions.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg(&subs)
            .env("PROVE_ROOTS", roots.join(" "))
            .env("PROVE_DEPS", &deps_file)
            .env("PROVE_SRC", self.path("src"))
            .env("PROVE_MCS_DIR", self.path("mcs"))
            .output()
            .expect("python3 (every machine of this project has it)");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned(), std::fs::read_to_string(&subs).unwrap())
    }
}

fn line(ip: &str, dir: &Path, imports: &[&str]) -> String {
    let files = if dir.join("a.go").exists() { "a.go" } else { "" };
    format!("{ip}|{}|{files}|{}", dir.display(), imports.join(","))
}

/// The operator as 1.20 builds it: gobgp reached only through operator/pkg/bgp, mcs-api used
/// for its one constant by the Gateway API helpers.
fn as_built(w: &World, gateway_imports: &[&str]) -> Vec<String> {
    let none = w.path("none");
    let helpers = w.package(
        "helpers",
        &format!("package helpers\nimport (\n\tmcsapicontrollers \"{MCS}\"\n)\nvar A = mcsapicontrollers.DerivedServiceAnnotation\n"),
    );
    let helpers_ip = format!("{GW}/helpers");
    let mut gw_imports: Vec<&str> = vec![&helpers_ip];
    gw_imports.extend_from_slice(gateway_imports);
    vec![
        line("github.com/cilium/cilium/operator", &none, &["github.com/cilium/cilium/operator/pkg/bgp", GW]),
        line("github.com/cilium/cilium/operator/pkg/bgp", &none, &["github.com/osrg/gobgp/v4/pkg/packet/bgp"]),
        line("github.com/osrg/gobgp/v4/pkg/packet/bgp", &none, &[]),
        line(GW, &none, &gw_imports),
        line(&helpers_ip, &helpers, &[MCS]),
        line(MCS, &w.path("mcs"), &[]),
    ]
}

#[test]
fn the_substitutions_hold_when_gateway_api_reaches_neither_more_of_them() {
    let w = World::new();
    let (ok, err, proofs) = w.prove(&[GW], &as_built(&w, &[]));
    assert!(ok, "{err}");
    assert!(proofs.contains("none of the 1 packages") && proofs.contains("github.com/osrg/gobgp/v4/pkg/packet/bgp"), "{proofs}");
    assert!(proofs.contains(&format!("{GW}/helpers")) && proofs.contains(ANNOTATION), "{proofs}");
}

#[test]
fn a_gateway_api_package_reaching_gobgp_fails_naming_it() {
    let w = World::new();
    let mut deps = as_built(&w, &["github.com/cilium/cilium/pkg/bgp/types"]);
    deps.push(line("github.com/cilium/cilium/pkg/bgp/types", &w.path("none"), &["github.com/osrg/gobgp/v4/pkg/packet/bgp"]));
    let (ok, err, _) = w.prove(&[GW], &deps);
    assert!(!ok, "{err}");
    assert!(err.contains(&format!("{GW} imports gobgp")) && err.contains("pkg/bgp/types"), "{err}");
}

#[test]
fn more_of_mcs_api_than_the_one_constant_fails_naming_the_package() {
    let w = World::new();
    let mut deps = as_built(&w, &[]);
    // Another identifier of the root package.
    let other = w.package("other", &format!("package other\nimport c \"{MCS}\"\nvar B = c.ServiceImportReconciler{{}}\n"));
    deps.push(line("github.com/cilium/cilium/pkg/other", &other, &[MCS]));
    let (ok, err, _) = w.prove(&[GW], &deps);
    assert!(!ok && err.contains("github.com/cilium/cilium/pkg/other uses") && err.contains("ServiceImportReconciler"), "{err}");
    // A package below the module's root.
    let mut deps = as_built(&w, &[]);
    deps.push(line("github.com/cilium/cilium/pkg/deeper", &w.path("none"), &[&format!("{MCS}/sub")]));
    let (ok, err, _) = w.prove(&[GW], &deps);
    assert!(!ok && err.contains("github.com/cilium/cilium/pkg/deeper imports sigs.k8s.io/mcs-api/controllers/sub"), "{err}");
}

#[test]
fn another_annotation_value_than_the_tag_names_fails() {
    let w = World::new();
    std::fs::write(w.path("mcs/common.go"), "package controllers\nconst DerivedServiceAnnotation = \"example.test/other\"\n").unwrap();
    let (ok, err, _) = w.prove(&[GW], &as_built(&w, &[]));
    assert!(!ok && err.contains("does not name the annotation example.test/other"), "{err}");
}
