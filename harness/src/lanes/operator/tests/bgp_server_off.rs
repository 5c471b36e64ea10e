//! `scripts/bgp_server_off.py`, the proof `scripts/install-control-plane.sh --agent` runs (through
//! `prove-substitutions.py`) at each 1.20 tag, where the agent links the substituted gobgp's
//! server (issue #37): fed a made-up Cilium whose BGP cells are shaped as at v1.20.x, it holds
//! only while the server is created on the one path the `enable-bgp-control-plane` guard closes,
//! the option defaults to off and the lane's chart values leave it so; otherwise it names what
//! changed.

use std::path::{Path, PathBuf};
use std::process::Command;

const C: &str = "github.com/cilium/cilium";
const SERVER: &str = "github.com/osrg/gobgp/v4/pkg/server";
const AGENT: &str = "layout-gate.local/control-plane/cilium-agent/cmd/agent-plane";

/// The Go files of the made-up Cilium, by package below `github.com/cilium/cilium/`: the shape
/// of cilium@v1.20.2:pkg/bgp (gobgp/server.go, gobgp/provider.go, cell.go, manager/manager.go,
/// manager/instance/instance.go, agent/controller.go), reduced to the lines the proof reads.
fn files() -> Vec<(&'static str, String)> {
    vec![
        (
            "pkg/bgp/gobgp",
            "package gobgp\n\nfunc NewGoBGPServer(ctx context.Context, params types.ServerParameters) (types.Router, error) {\n\ts := server.NewBgpServer()\n\tgo s.Serve()\n\treturn nil, nil\n}\n\ntype RouterProvider struct{}\n\nfunc NewRouterProvider() types.RouterProvider {\n\treturn &RouterProvider{}\n}\n\nfunc (p *RouterProvider) NewRouter(ctx context.Context, params types.ServerParameters) (types.Router, error) {\n\treturn NewGoBGPServer(ctx, params)\n}\n".into(),
        ),
        ("pkg/bgp", "package bgp\n\nvar Cell = cell.Module(\n\tcell.Provide(\n\t\tmanager.NewBGPRouterManager,\n\t\tgobgp.NewRouterProvider,\n\t),\n)\n".into()),
        (
            "pkg/bgp/manager",
            "package manager\n\ntype bgpRouterManagerParams struct {\n\tRouterProvider types.RouterProvider\n}\n\ntype BGPRouterManager struct {\n\trouterProvider types.RouterProvider\n}\n\nfunc NewBGPRouterManager(params bgpRouterManagerParams) *BGPRouterManager {\n\tif !params.DaemonConfig.BGPControlPlaneEnabled() {\n\t\treturn &BGPRouterManager{}\n\t}\n\tm := &BGPRouterManager{\n\t\trouterProvider: params.RouterProvider,\n\t}\n\treturn m\n}\n\nfunc (m *BGPRouterManager) registerBGPServer(ctx context.Context) error {\n\ti, err := instance.NewBGPInstance(ctx, m.routerProvider, c.Name)\n\treturn err\n}\n".into(),
        ),
        (
            "pkg/bgp/manager/instance",
            "package instance\n\nfunc NewBGPInstance(ctx context.Context, routerProvider types.RouterProvider, name string) (*BGPInstance, error) {\n\ts, err := routerProvider.NewRouter(ctx, params)\n\treturn nil, err\n}\n".into(),
        ),
        (
            "pkg/bgp/agent",
            "package agent\n\nfunc NewController(params ControllerParams) (*Controller, error) {\n\t// disabled: nil\n\tif !params.DaemonConfig.BGPControlPlaneEnabled() {\n\t\treturn nil, nil\n\t}\n\treturn &Controller{}, nil\n}\n".into(),
        ),
    ]
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(edit: impl Fn(&str, String) -> String) -> World {
        let w = World { dir: tempfile::tempdir().unwrap() };
        for (pkg, body) in files() {
            let d = w.path(&format!("pkgs/{pkg}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("a.go"), edit(pkg, body)).unwrap();
        }
        let src = w.path("src");
        for (file, body) in [
            (
                "pkg/option/config.go",
                "\tEnableBGPControlPlane = \"enable-bgp-control-plane\"\n\n\tc.EnableBGPControlPlane = vp.GetBool(EnableBGPControlPlane)\n\nfunc (c *DaemonConfig) BGPControlPlaneEnabled() bool {\n\treturn c.EnableBGPControlPlane\n}\n",
            ),
            ("daemon/cmd/daemon_main.go", "\tflags.Bool(option.EnableBGPControlPlane, false, \"Enable the BGP control plane.\")\n"),
            ("install/kubernetes/cilium/values.yaml", "bgpControlPlane:\n  # -- Enables the BGP control plane.\n  enabled: false\n"),
            (
                "install/kubernetes/cilium/templates/cilium-configmap.yaml",
                "{{- if .Values.bgpControlPlane.enabled }}\n  enable-bgp-control-plane: \"true\"\n{{- end }}\n",
            ),
        ] {
            let p = src.join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, edit(file, body.to_string())).unwrap();
        }
        std::fs::write(w.path("values.yaml"), edit("values", "gatewayAPI:\n  enabled: true\n".into())).unwrap();
        w
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    /// `ImportPath|Dir|GoFiles|Imports` lines: agent-plane reaching the BGP cell, the server
    /// imported by pkg/bgp/gobgp.
    fn deps(&self) -> Vec<String> {
        let line = |ip: &str, dir: &Path, imports: &[&str]| format!("{ip}|{}|a.go|{}", dir.display(), imports.join(","));
        let mut out = vec![format!("{AGENT}|{}||{C}/pkg/bgp", self.path("none").display()), format!("{SERVER}|/nowhere||")];
        for (pkg, _) in files() {
            let imports: Vec<String> = match pkg {
                "pkg/bgp/gobgp" => vec![SERVER.into(), format!("{C}/pkg/bgp/types")],
                "pkg/bgp" => vec![format!("{C}/pkg/bgp/gobgp"), format!("{C}/pkg/bgp/manager"), format!("{C}/pkg/bgp/agent")],
                "pkg/bgp/manager" => vec![format!("{C}/pkg/bgp/manager/instance"), format!("{C}/pkg/bgp/types")],
                _ => vec![format!("{C}/pkg/bgp/types")],
            };
            let imports: Vec<&str> = imports.iter().map(String::as_str).collect();
            out.push(line(&format!("{C}/{pkg}"), &self.path(&format!("pkgs/{pkg}")), &imports));
        }
        out
    }
    /// Runs prove-substitutions.py for the gobgp substitution of agent-plane: its success, stderr
    /// and the proof written.
    fn prove(&self) -> (bool, String, String) {
        let subs = self.path("substitutions.json");
        std::fs::write(
            &subs,
            serde_json::json!([{"module": "github.com/osrg/gobgp/v4", "version": "v4.6.1-x", "substitute": "v4.7.0"}]).to_string(),
        )
        .unwrap();
        let deps = self.path("deps");
        std::fs::write(&deps, self.deps().join("\n") + "\n").unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prove-substitutions.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg(&subs)
            .env("PROVE_ROOTS", format!("{C}/pkg/ciliumenvoyconfig"))
            .env("PROVE_DEPS", &deps)
            .env("PROVE_SRC", self.path("src"))
            .env("PROVE_MCS_DIR", "")
            .env("PROVE_MAIN", AGENT)
            .env("PROVE_VALUES", self.path("values.yaml"))
            .output()
            .expect("python3 (every machine of this project has it)");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned(), std::fs::read_to_string(&subs).unwrap())
    }
}

#[test]
fn the_agents_gobgp_server_is_proved_off_only_while_the_one_guarded_path_creates_it() {
    let (ok, err, proof) = World::new(|_, b| b).prove();
    assert!(ok, "{err}");
    assert!(proof.contains("with the lane's cilium-config no gobgp server is created"), "{proof}");

    // Each change that would let a server start with the lane's configuration fails, naming it.
    let cases: [(&str, &str, &str, &str); 7] = [
        (
            "pkg/bgp/manager",
            "\tif !params.DaemonConfig.BGPControlPlaneEnabled() {\n\t\treturn &BGPRouterManager{}\n\t}\n",
            "",
            "NewBGPRouterManager no longer returns",
        ),
        (
            "pkg/bgp/agent",
            "\tif !params.DaemonConfig.BGPControlPlaneEnabled() {\n\t\treturn nil, nil\n\t}\n",
            "",
            "NewController no longer returns",
        ),
        (
            "pkg/bgp/manager/instance",
            "return nil, err\n",
            "server.NewBgpServer()\n\treturn nil, err\n",
            "creates a gobgp server outside NewGoBGPServer",
        ),
        ("pkg/bgp/manager", "m.routerProvider, c.Name", "other, c.Name", "NewBGPInstance is given another provider"),
        ("daemon/cmd/daemon_main.go", "EnableBGPControlPlane, false,", "EnableBGPControlPlane, true,", "no longer defaults to false"),
        ("install/kubernetes/cilium/values.yaml", "enabled: false", "enabled: true", "bgpControlPlane.enabled is no longer false"),
        ("values", "gatewayAPI:", "bgpControlPlane:\n  enabled: true\ngatewayAPI:", "the lane's values set bgpControlPlane"),
    ];
    for (what, from, to, want) in cases {
        let w = World::new(|f, b| if f == what { b.replacen(from, to, 1) } else { b });
        let (ok, err, _) = w.prove();
        assert!(!ok && err.contains(want), "{what}: {from:?} -> {to:?}: {err}");
    }
}

/// A program that links no gobgp server (the operator) needs no such proof.
#[test]
fn a_program_without_gobgps_server_is_not_asked_for_the_proof() {
    let w = World::new(|_, b| b);
    let deps: Vec<String> = w.deps().into_iter().filter(|l| !l.starts_with(SERVER)).map(|l| l.replace(&format!("{SERVER},"), "")).collect();
    std::fs::write(w.path("deps"), deps.join("\n") + "\n").unwrap();
    let subs = w.path("substitutions.json");
    std::fs::write(&subs, serde_json::json!([{"module": "github.com/osrg/gobgp/v4", "version": "v", "substitute": "s"}]).to_string())
        .unwrap();
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prove-substitutions.py"))
        .arg(&subs)
        .env("PROVE_ROOTS", "")
        .env("PROVE_DEPS", w.path("deps"))
        .env("PROVE_SRC", w.path("src"))
        .env("PROVE_MCS_DIR", "")
        .env("PROVE_MAIN", AGENT)
        .env("PROVE_VALUES", "/nonexistent")
        .output()
        .unwrap();
    let proof = std::fs::read_to_string(&subs).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!proof.contains("no gobgp server is created"), "{proof}");
}
