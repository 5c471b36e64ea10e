#!/usr/bin/env python3
"""The substitution proofs of scripts/install-control-plane.sh (issue #24), apart so a unit test
(harness/src/lanes/operator/tests/substitution_proof.rs) can feed them made-up package graphs.

Usage: prove-substitutions.py SUBSTITUTIONS_JSON, with the environment
  PROVE_ROOTS    the packages Gateway API translation is made of, space-separated;
  PROVE_DEPS     a file of `go list -deps -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}'`
                 lines for the operator and those roots (tags as built);
  PROVE_SRC      Cilium's source at the tag;
  PROVE_MCS_DIR  the folder of the sigs.k8s.io/mcs-api/controllers substitute;
  PROVE_MAIN     the program built (default the operator, github.com/cilium/cilium/operator);
  PROVE_VALUES   the lane's chart values (kind-config/cilium-values.yaml), read when the program
                 links gobgp's server (the agent): bgp_server_off.py proves it stays disabled.
Writes each substitution's `proof` into the file; exits 1 naming the package when one fails.
"""
import json, os, re, sys
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bgp_server_off  # noqa: E402 (beside this file)

path = sys.argv[1]
subs = json.load(open(path))
roots = [r for r in os.environ["PROVE_ROOTS"].split() if r]
pkgs = {}
for line in open(os.environ["PROVE_DEPS"]).read().splitlines():
    ip, d, files, imports = line.split("|", 3)
    pkgs[ip] = (d, [f for f in files.split(",") if f], [i for i in imports.split(",") if i])

def path_to(start, hit):
    """The import chain from `start` to the first package `hit` accepts, or None."""
    prev = {start: None}
    q = deque([start])
    while q:
        p = q.popleft()
        if hit(p):
            chain = []
            while p is not None:
                chain.append(p)
                p = prev[p]
            return list(reversed(chain))
        for i in pkgs.get(p, ("", [], []))[2]:
            if i not in prev:
                prev[i] = p
                q.append(i)
    return None

def fail(msg):
    print("install-control-plane: substitution proof failed: " + msg, file=sys.stderr)
    sys.exit(1)

operator = os.environ.get("PROVE_MAIN") or "github.com/cilium/cilium/operator"
for s in subs:
    m = s["module"]
    if m == "github.com/osrg/gobgp/v4":
        is_gobgp = lambda p: p.startswith("github.com/osrg/gobgp/")
        for r in roots:
            chain = path_to(r, is_gobgp)
            if chain:
                fail(f"{r} imports gobgp ({' -> '.join(chain)}): Gateway API translation reaches the substituted {m}")
        reach = set()
        q = deque([operator])
        while q:
            p = q.popleft()
            if p in reach:
                continue
            reach.add(p)
            q.extend(pkgs.get(p, ("", [], []))[2])
        linked = sorted(p for p in reach if is_gobgp(p))
        via = path_to(operator, is_gobgp) or []
        s["proof"] = (f"go list -deps (tags as built): none of the {len(roots)} packages of "
                      f"{' and '.join(os.environ.get('PROVE_ROOT_NAMES', 'operator/pkg/gateway-api/..., operator/pkg/model/...|pkg/ciliumenvoyconfig').split('|'))} "
                      f"imports gobgp; {'the operator' if operator.endswith('/operator') else operator} links "
                      f"{', '.join(linked) or 'no gobgp package'}" + (f" (through {' -> '.join(via)})" if via else ""))
        # A program linking gobgp's server (the agent): that the server stays disabled with the
        # lane's configuration, read off the tag's source.
        if bgp_server_off.SERVER in linked:
            try:
                s["proof"] += "; " + bgp_server_off.prove(pkgs, operator, os.environ["PROVE_SRC"], os.environ["PROVE_VALUES"])
            except bgp_server_off.Failed as e:
                fail(f"the gobgp server {operator} links is not shown disabled: {e}")
    elif m == "sigs.k8s.io/mcs-api/controllers":
        # A package of the module below its root (controllers/...) is more of it than the one
        # constant: refused outright, before the root's identifiers are read.
        for p, (_, _, imps) in sorted(pkgs.items()):
            deeper = sorted(i for i in imps if i.startswith(m + "/"))
            if deeper and not p.startswith(m):
                fail(f"{p} imports {deeper[0]}: Cilium now uses more of the substituted {m} than DerivedServiceAnnotation")
        users = sorted(p for p, (_, _, imps) in pkgs.items() if m in imps)
        if not users and not any(p == m or p.startswith(m + "/") for p in pkgs):
            # Linked not at all (the agent): only its go.mod takes part in version selection.
            s["proof"] = (f"go list -deps (tags as built): {operator} links no package of {m}; only its go.mod "
                          f"takes part in the module graph")
            continue
        used = {}
        for p in users:
            d, files, _ = pkgs[p]
            for f in files:
                text = open(os.path.join(d, f)).read()
                im = re.search(r'(?m)^\s*(?:import\s+)?([A-Za-z_][A-Za-z0-9_]*|\.|_)?\s*"' + re.escape(m) + '"', text)
                if not im:
                    continue
                alias = im.group(1) or "controllers"
                if alias in (".", "_"):
                    fail(f"{p} ({f}) imports {m} as {alias!r}: its use can no longer be read off the identifiers it names")
                for ident in re.findall(r'\b' + re.escape(alias) + r'\.([A-Za-z_][A-Za-z0-9_]*)', text):
                    used.setdefault(ident, set()).add(p)
        other = {i: ps for i, ps in used.items() if i != "DerivedServiceAnnotation"}
        if other:
            i, ps = sorted(other.items())[0]
            fail(f"{sorted(ps)[0]} uses {m}.{i}: Cilium now uses more of the substituted module than DerivedServiceAnnotation")
        mcs_dir = os.environ["PROVE_MCS_DIR"]
        common = os.path.join(mcs_dir, "common.go") if mcs_dir else ""
        vm = re.search(r'DerivedServiceAnnotation\s*=\s*"([^"]+)"', open(common).read() if common and os.path.exists(common) else "")
        if not vm:
            fail(f"no DerivedServiceAnnotation constant in {m}@{s['substitute']} (common.go)")
        value = vm.group(1)
        src = os.environ["PROVE_SRC"]
        doc = os.path.join(src, "Documentation/network/clustermesh/mcsapi.rst")
        if f"``{value}``" not in (open(doc).read() if os.path.exists(doc) else ""):
            fail(f"the tag's Documentation/network/clustermesh/mcsapi.rst does not name the annotation {value}: "
                 f"its value in {m}@{s['version']} is not shown to be the same")
        fixtures = []
        base = os.path.join(src, "operator/pkg/model/ingestion/testdata/gateway")
        for d, _, fs in os.walk(base):
            for f in fs:
                if f == "input-serviceimport.yaml" and f"{value}:" in open(os.path.join(d, f)).read():
                    fixtures.append(os.path.relpath(os.path.join(d, f), src))
        if not fixtures:
            fail(f"no ServiceImport fixture of the tag's operator/pkg/model/ingestion/testdata carries {value}")
        s["proof"] = (f"go list -deps (tags as built): {'the operator' if operator.endswith('/operator') else operator}'s packages importing it are {', '.join(users) or 'none'}, "
                      f"and they use only DerivedServiceAnnotation; its value is {value!r} in {m}@{s['substitute']} (common.go), "
                      f"the annotation the tag's Documentation/network/clustermesh/mcsapi.rst names and its "
                      f"{len(fixtures)} ServiceImport fixtures (e.g. {sorted(fixtures)[0]}) carry, built against {s['version']}")
    else:
        fail(f"no proof is written for a substitution of {m}")

with open(path + ".tmp", "w") as f:
    json.dump(subs, f, indent=2)
    f.write("\n")
os.replace(path + ".tmp", path)
for s in subs:
    print(f"install-control-plane: {s['module']} {s['version']} -> {s['substitute']}: {s['proof']}", file=sys.stderr)
