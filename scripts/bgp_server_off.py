"""The proof that the gobgp BGP server Cilium's agent links stays disabled with the operator lane's
configuration (issue #37), read off the tag's source: used by prove-substitutions.py when the
program it proves (PROVE_MAIN) links gobgp's server package, as agent-plane does from 1.20 with
the substituted github.com/osrg/gobgp/v4.

The chain it checks, each link at the tag, failing with the file and what changed:
  1. the only linked package importing gobgp's pkg/server is Cilium's pkg/bgp/gobgp, where
     server.NewBgpServer is called only by NewGoBGPServer, which only (*RouterProvider).NewRouter
     calls; gobgp.NewRouterProvider is referenced only by pkg/bgp (its hive cell);
  2. a types.RouterProvider is held only by pkg/bgp/manager (NewBGPRouterManager, which returns
     an empty manager, without the provider, before it reads it when
     !BGPControlPlaneEnabled()) and passed on only to pkg/bgp/manager/instance.NewBGPInstance as
     the manager's routerProvider; NewRouter is called only there; pkg/bgp/agent's NewController
     (what reconciles instances) returns nil first when the control plane is disabled;
  3. BGPControlPlaneEnabled() is the option enable-bgp-control-plane, a flag defaulting to false
     (daemon/cmd/daemon_main.go), and the chart's cilium-config names it only when
     bgpControlPlane.enabled, false in the chart's values.yaml and not set by the lane's values.
"""
import os
import re

SERVER = "github.com/osrg/gobgp/v4/pkg/server"
CILIUM = "github.com/cilium/cilium/"
GOBGP_PKG = CILIUM + "pkg/bgp/gobgp"
MANAGER = CILIUM + "pkg/bgp/manager"
INSTANCE = CILIUM + "pkg/bgp/manager/instance"
BGP_CELL = CILIUM + "pkg/bgp"
AGENT_CTRL = CILIUM + "pkg/bgp/agent"


class Failed(Exception):
    pass


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _funcs(text):
    """(line index, enclosing top-level func name) for every line of a Go file."""
    name = None
    out = []
    for line in text.splitlines():
        m = re.match(r"func\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)", line)
        if m:
            name = m.group(1)
        out.append(name)
    return out


def _uses(pkgs, pattern, only=None, importing=None):
    """Every (package, file, enclosing func, line) of the linked Cilium packages (only `only`;
    only those importing `importing`) whose line matches `pattern` (comments skipped)."""
    rx = re.compile(pattern)
    hits = []
    for ip, (d, files, imps) in sorted(pkgs.items()):
        if not ip.startswith(CILIUM) or (only and ip != only) or (importing and importing not in imps):
            continue
        for f in files:
            text = _read(os.path.join(d, f))
            encl = _funcs(text)
            for i, line in enumerate(text.splitlines()):
                if line.lstrip().startswith("//"):
                    continue
                if rx.search(line):
                    hits.append((ip, f, encl[i], line.strip()))
    return hits


def _expect(hits, allowed, what):
    """Each hit's (package, func) is allowed; a func of "*" allows the whole package."""
    for ip, f, fn, line in hits:
        if (ip, fn) not in allowed and (ip, "*") not in allowed:
            raise Failed(f"{ip} ({f}, func {fn}): `{line}`: {what}")


def _body(text, func):
    """The text of top-level func `func` (to the next top-level `}`)."""
    m = re.search(r"(?m)^func\s+(?:\([^)]*\)\s*)?" + re.escape(func) + r"\b.*$", text)
    if not m:
        return None
    end = re.search(r"(?m)^\}", text[m.end():])
    return text[m.start(): m.end() + (end.end() if end else len(text))]


def _guard_first(body, use):
    """True when `if !<...>.BGPControlPlaneEnabled() { return ... }` comes before `use`."""
    g = re.search(r"if\s+!\s*[A-Za-z_.]+\.BGPControlPlaneEnabled\(\)\s*\{\s*return\b[^\n]*\n\s*\}", body)
    u = body.find(use) if use else len(body)
    return g is not None and (u < 0 or g.start() < u)


def prove(pkgs, main, src, values):
    """The proof text, or Failed naming what no longer holds. `pkgs`: import path -> (dir, Go
    files, imports) of `main`'s linked packages; `src`: Cilium at the tag; `values`: the lane's
    chart values file."""
    importers = sorted(p for p, (_, _, imps) in pkgs.items() if SERVER in imps and not p.startswith("github.com/osrg/gobgp/"))
    if not importers:
        return f"{main} links no gobgp server ({SERVER} is not among its packages)"
    if importers != [GOBGP_PKG]:
        raise Failed(f"{', '.join(importers)} import {SERVER}: more than Cilium's {GOBGP_PKG} can create a gobgp server")
    if MANAGER not in pkgs or INSTANCE not in pkgs:
        raise Failed(f"{main} links {GOBGP_PKG} but not {MANAGER} and {INSTANCE}: the chain this proof reads is not the tag's")

    # 1. Who creates a server.
    _expect(_uses(pkgs, r"\bNewBgpServer\("), {(GOBGP_PKG, "NewGoBGPServer")}, "creates a gobgp server outside NewGoBGPServer")
    _expect([h for h in _uses(pkgs, r"\bNewGoBGPServer\(") if not h[3].startswith("func ")],
            {(GOBGP_PKG, "NewRouter")}, "calls NewGoBGPServer outside (*RouterProvider).NewRouter")
    _expect([h for h in _uses(pkgs, r"\bNewRouterProvider\b") if not h[3].startswith("func ")],
            {(BGP_CELL, "*")}, "references gobgp.NewRouterProvider outside pkg/bgp's cell")
    _expect([h for h in _uses(pkgs, r"\bRouterProvider\{") if h[0] != CILIUM + "pkg/bgp/fake"],
            {(GOBGP_PKG, "NewRouterProvider")}, "builds a gobgp RouterProvider outside NewRouterProvider")

    # 2. Who holds the provider, and when.
    holders = sorted({h[0] for h in _uses(pkgs, r"\btypes\.RouterProvider\b")} - {GOBGP_PKG, CILIUM + "pkg/bgp/fake"})
    if holders != sorted([MANAGER, INSTANCE]):
        raise Failed(f"types.RouterProvider is held by {', '.join(holders)}: expected only {MANAGER} and {INSTANCE}")
    _expect(_uses(pkgs, r"\.NewRouter\(", importing=CILIUM + "pkg/bgp/types"), {(INSTANCE, "NewBGPInstance")}, "asks a RouterProvider for a router outside NewBGPInstance")
    calls = [h for h in _uses(pkgs, r"\bNewBGPInstance\(") if not h[3].startswith("func ")]
    for ip, f, fn, line in calls:
        if ip != MANAGER or "m.routerProvider" not in line:
            raise Failed(f"{ip} ({f}, func {fn}): `{line}`: NewBGPInstance is given another provider than the manager's")
    _expect(_uses(pkgs, r"routerProvider\s*(:|=[^=])", only=MANAGER), {(MANAGER, "NewBGPRouterManager")},
            "sets the manager's routerProvider outside NewBGPRouterManager")
    mgr_dir, mgr_files, _ = pkgs[MANAGER]
    mgr = next((b for b in (_body(_read(os.path.join(mgr_dir, f)), "NewBGPRouterManager") for f in mgr_files) if b), None)
    if not mgr or not _guard_first(mgr, "params.RouterProvider"):
        raise Failed(f"{MANAGER}: NewBGPRouterManager no longer returns before reading params.RouterProvider when !BGPControlPlaneEnabled()")
    ctl_dir, ctl_files, _ = pkgs.get(AGENT_CTRL, ("", [], []))
    ctl = next((b for b in (_body(_read(os.path.join(ctl_dir, f)), "NewController") for f in ctl_files) if b), None)
    if not ctl or not _guard_first(ctl, None):
        raise Failed(f"{AGENT_CTRL}: NewController no longer returns first when !BGPControlPlaneEnabled()")

    # 3. The option, its flag, and the lane's configuration.
    config = _read(os.path.join(src, "pkg/option/config.go"))
    if not re.search(r'EnableBGPControlPlane\s*=\s*"enable-bgp-control-plane"', config) or not re.search(
        r"func \(c \*DaemonConfig\) BGPControlPlaneEnabled\(\) bool \{\s*return c\.EnableBGPControlPlane\s*\}", config
    ) or not re.search(r"c\.EnableBGPControlPlane\s*=\s*vp\.GetBool\(EnableBGPControlPlane\)", config):
        raise Failed("pkg/option/config.go: BGPControlPlaneEnabled() is no longer the option enable-bgp-control-plane")
    if not re.search(r"flags\.Bool\(option\.EnableBGPControlPlane,\s*false,", _read(os.path.join(src, "daemon/cmd/daemon_main.go"))):
        raise Failed("daemon/cmd/daemon_main.go: the flag enable-bgp-control-plane no longer defaults to false")
    chart = os.path.join(src, "install/kubernetes/cilium")
    vals = _read(os.path.join(chart, "values.yaml"))
    if not re.search(r"(?m)^bgpControlPlane:\n(?:[ \t]+#[^\n]*\n)*[ \t]+enabled:\s*false\b", vals):
        raise Failed("install/kubernetes/cilium/values.yaml: bgpControlPlane.enabled is no longer false by default")
    cm = _read(os.path.join(chart, "templates/cilium-configmap.yaml"))
    lines = [i for i, l in enumerate(cm.splitlines()) if "enable-bgp-control-plane:" in l]
    cml = cm.splitlines()
    if not lines or any(not any(".Values.bgpControlPlane.enabled" in cml[j] and "if" in cml[j] for j in range(max(0, i - 3), i)) for i in lines):
        raise Failed("templates/cilium-configmap.yaml: enable-bgp-control-plane is rendered other than under `if .Values.bgpControlPlane.enabled`")
    if re.search(r"(?m)^bgpControlPlane\s*:", _read(values)):
        raise Failed(f"{values}: the lane's values set bgpControlPlane; the proof assumes the chart's default")
    return (
        f"go list -deps (tags as built) and the tag's source: {main} links gobgp's server only through {GOBGP_PKG}, where "
        f"NewBgpServer is called only by NewGoBGPServer, called only by (*RouterProvider).NewRouter; the provider is held only "
        f"by pkg/bgp/manager, whose NewBGPRouterManager returns an empty manager before reading it when "
        f"!BGPControlPlaneEnabled(), and used only by pkg/bgp/manager/instance.NewBGPInstance (given the manager's); "
        f"pkg/bgp/agent.NewController returns nil first when disabled; BGPControlPlaneEnabled() is enable-bgp-control-plane, "
        f"a flag defaulting to false, which the chart's cilium-config renders only when bgpControlPlane.enabled (false in its "
        f"values.yaml, not set by {os.path.basename(values)}): with the lane's cilium-config no gobgp server is created"
    )
