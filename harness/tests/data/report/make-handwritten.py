#!/usr/bin/env python3
# Writes the hand-written evidence fixtures of the report tests: kind-lane runs of four Cilium
# versions (1.20.1 in two shards), a model-lane run on 1.19.6, and the bad inputs in bad/.
# They are NOT real runs (their environment says so); the story they tell is made up to give
# the report differences between versions, a disagreement, a refused listener and inferences a
# cluster contradicts. Run it from anywhere; then re-bless the goldens:
#   LAYOUT_GATE_BLESS=1 cargo test --lib report::tests::golden
import json, hashlib, os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "handwritten")
DNS_HASH = hashlib.sha256(b"dns01-default hand-written fixture").hexdigest()
HTTP_HASH = hashlib.sha256(b"http01-default hand-written fixture").hexdigest()
DNS_SUMMARY = ("dns01 default layout: *.{apex} and {apex} terminate beside three exact passthrough listeners on 443. "
               "Which certificate answers each name, and what 1.19.6 and 1.20 do to it.")
DNS_REFS = ["cozystack#3912", "cozystack#3342", "cilium#46917", "cilium#47306", "cilium#47457", "cilium#48092"]
HTTP_SUMMARY = "http01 layout (hand-written for the report tests): one wildcard terminate listener on 443 beside plain HTTP on 80."

def fp(name, run):
    return hashlib.sha256(f"{name}/{run}".encode()).hexdigest()

def prov(kind, ref=None, note=None):
    p = {"kind": kind}
    if ref: p["ref"] = ref
    if note: p["note"] = note
    return p

P_INF_195 = prov("inferred", "cilium-gateway.md §9")
P_REP_3342 = prov("reported", "cozystack#3342", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_SRC_3342 = prov("source", "cozystack#3342", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_SRC_9 = prov("source", "cilium-gateway.md §9", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_REP_3912 = prov("reported", "cozystack#3912")
P_INF_46917 = prov("inferred", "cilium#46917")
P_REP_47590 = prov("reported", "cilium#47590")
P_INF_47306 = prov("inferred", "cilium#47306")

def cond(aspect, subject, expected, observed, p, ok=None):
    if ok is None:
        ok = observed == expected or observed.split("/")[0] == expected
    detail = f"{observed} as expected" if ok else f"expected {expected}, got {observed}"
    if expected == "absent" and observed == "absent":
        detail = "absent, as expected"
    return {"aspect": aspect, "subject": subject, "expected": expected, "observed": observed,
            "outcome": "pass" if ok else "fail", "provenance": p, "detail": detail}

def probe_verdict(subject, expected, observed_name, run, p, served_by=None, how=None):
    if observed_name.startswith("nothing"):
        obs = observed_name
    else:
        obs = f"{observed_name} (sha256 {fp(observed_name, run)[:12]}…)"
    if served_by:
        obs += f", served by {served_by}"
    exp = expected + (f", served by {served_by}" if served_by and not expected.startswith("nothing") else "")
    want = exp
    got_plain = observed_name + (f", served by {served_by}" if served_by else "")
    ok = want == got_plain
    detail = f"{want} in 3 of 3 consecutive observations (3 in all)" if ok else f"expected {want}, got {obs} in 3 of 3 observations"
    return {"aspect": "probe", "subject": subject, "expected": exp, "observed": obs,
            "outcome": "pass" if ok else "fail", "provenance": p, "detail": detail}

def envoy_verdicts(chains, expected_chains, names, expected_names, p):
    out = []
    if expected_chains is not None:
        ok = chains == expected_chains
        out.append({"aspect": "envoy", "subject": "envoy listener filter_chains", "expected": str(expected_chains), "observed": str(chains),
                    "outcome": "pass" if ok else "fail", "provenance": p,
                    "detail": f"{expected_chains} filter chains as expected" if ok else f"expected {expected_chains} filter chains, got {chains}"})
    if expected_names is not None:
        line = lambda c: ", ".join(sorted(c)) if c else "(no server_names)"
        want = sorted(line(c) for c in expected_names)
        got = sorted(line(c) for c in names)
        ok = want == got
        out.append({"aspect": "envoy", "subject": "envoy listener server_names", "expected": " | ".join(want), "observed": " | ".join(got),
                    "outcome": "pass" if ok else "fail", "provenance": p,
                    "detail": f"{len(want)} chains with the expected server_names" if ok else "server_names per chain differ"})
    return out

def probe_record(port, sni, run, answer, served_by=None, http=False, addr="172.18.255.200"):
    if answer.startswith("nothing"):
        fact = {"outcome": "reset", "leaf": None, "alert": None, "served_by": None, "http_status": None}
    else:
        fact = {"outcome": "certificate", "leaf": fp(answer, run), "alert": None, "served_by": served_by, "http_status": 200 if served_by else None}
    return {"key": {"port": port, "sni": sni, "http": http}, "address": f"{addr}:{port}", "observations": [], "facts": [fact, fact, fact]}

FULL = [[], ["*.example.test", "example.test"], ["api.example.test"], ["vm-exportproxy.example.test"], ["cdi-uploadproxy.example.test"]]

def dns_case(version, run, lane="kind"):
    verdicts, probes = [], []
    v = tuple(int(x) for x in version.split("."))
    ranges = []
    names = FULL
    answers = {"api": "api-backend", "vm": "vm-exportproxy-backend", "cdi": "cdi-uploadproxy-backend", "www": "gateway-wildcard", "apex": "gateway-wildcard", "other": "nothing (reset)", "none": "nothing (reset)"}
    if version == "1.19.7" and lane == "kind":
        # The hand-written story: the cdi-uploadproxy passthrough chain is gone on 1.19.7.
        names = [c for c in FULL if c != ["cdi-uploadproxy.example.test"]]
        answers["cdi"] = "gateway-wildcard"
    if v < (1, 19, 6):
        ranges.append("<1.19.6")
        verdicts += [cond("gateway", "gateway gw Accepted", "True", "True/Accepted", P_INF_195),
                     cond("gateway", "gateway gw Programmed", "True", "True/Programmed", P_INF_195),
                     cond("listener", "listener http Accepted", "True", "True/Accepted", P_INF_195),
                     cond("listener", "listener https Accepted", "True", "True/Accepted", P_INF_195),
                     cond("listener", "listener https Conflicted", "absent", "absent", P_INF_195),
                     cond("listener", "listener https-apex Accepted", "True", "True/Accepted", P_INF_195),
                     cond("listener", "listener tls-api Accepted", "True", "True/Accepted", P_INF_195),
                     cond("listener", "listener tls-api Conflicted", "absent", "absent", P_INF_195)]
    if v < (1, 20, 0):
        ranges.append("<1.20.0")
        for key, port, sni, exp, p, sb in [("api", 443, "api.example.test", "api-backend", P_REP_3342, None),
                                         ("vm", 443, "vm-exportproxy.example.test", "vm-exportproxy-backend", P_REP_3342, None),
                                         ("cdi", 443, "cdi-uploadproxy.example.test", "cdi-uploadproxy-backend", P_REP_3342, None),
                                         ("www", 443, "www.example.test", "gateway-wildcard", P_SRC_3342, "web"),
                                         ("apex", 443, "example.test", "gateway-wildcard", P_SRC_3342, None),
                                         ("other", 443, "other.invalid", "nothing (reset)", P_SRC_9, None),
                                         ("none", 443, None, "nothing (reset)", P_SRC_9, None)]:
            subject = f"{port} {sni}" if sni else f"{port} (no SNI)"
            verdicts.append(probe_verdict(subject, exp, answers[key], run, p, served_by=sb))
            probes.append(probe_record(port, sni, run, answers[key], served_by=sb, http=sb is not None))
    if v < (1, 19, 6):
        verdicts += envoy_verdicts(len(names), 5, names, FULL, P_INF_195)
    if (1, 19, 6) <= v < (1, 20, 0):
        ranges.append(">=1.19.6, <1.20.0")
        cdi_conflicted = "True/ProtocolConflict" if lane == "kind" else "absent"
        verdicts += [cond("listener", "listener http Accepted", "True", "True/Accepted", P_REP_3912),
                     cond("listener", "listener https Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     cond("listener", "listener https Accepted", "False", "False/Invalid", P_REP_3912),
                     cond("listener", "listener https-apex Accepted", "True", "True/Accepted", P_REP_3912),
                     cond("listener", "listener https-apex Conflicted", "absent", "absent", P_REP_3912),
                     cond("listener", "listener tls-api Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     cond("listener", "listener tls-api Accepted", "False", "False/Invalid", P_REP_3912),
                     cond("listener", "listener tls-vm-exportproxy Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     cond("listener", "listener tls-vm-exportproxy Accepted", "False", "False/Invalid", P_REP_3912),
                     cond("listener", "listener tls-cdi-uploadproxy Conflicted", "True/ProtocolConflict", cdi_conflicted, P_REP_3912),
                     cond("listener", "listener tls-cdi-uploadproxy Accepted", "False", "False/Invalid", P_REP_3912)]
        verdicts += envoy_verdicts(len(names), 5, names, None, P_INF_46917)
    if v >= (1, 20, 0):
        ranges += [">=1.20.0", ">=1.20.0"]
        names = [[], ["example.test"]]
        verdicts += [cond("listener", "listener https Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_47590),
                     cond("listener", "listener https Accepted", "False", "False/Invalid", P_REP_47590),
                     cond("listener", "listener https-apex Accepted", "True", "True/Accepted", P_REP_47590),
                     cond("listener", "listener tls-api Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_47590),
                     cond("listener", "listener tls-api Accepted", "False", "False/Invalid", P_REP_47590)]
        verdicts += envoy_verdicts(2, 2, names, [[], ["example.test"]], P_INF_47306)
        for port, sni, exp, got, sb in [(443, "api.example.test", "nothing (reset)", "nothing (reset)", None),
                                        (443, "www.example.test", "nothing (reset)", "nothing (reset)", None),
                                        (443, "example.test", "gateway-wildcard", "gateway-wildcard", None)]:
            verdicts.append(probe_verdict(f"{port} {sni}", exp, got, run, P_INF_47306))
            probes.append(probe_record(port, sni, run, got))
    outcome = "pass" if all(x["outcome"] == "pass" for x in verdicts) else "fail"
    listeners = [{"name": "listener", "state": "active", "filter_chains": len(names), "server_names": names, "error": None}]
    return {"name": "dns01-default", "summary": DNS_SUMMARY, "refs": DNS_REFS, "hash": DNS_HASH, "ranges": ranges,
            "outcome": outcome, "error": None, "duration_ms": 41234, "verdicts": verdicts,
            "observed": {"gateway": None, "listeners": {}, "routes": {}, "probes": probes, "envoy_listeners": listeners, "envoy_summary": None}}

def http_case(version, run, lane="kind", refused=False):
    p = prov("inferred", "cilium-gateway.md §9")
    verdicts = [cond("listener", "listener https Accepted", "True", "True/Accepted", p),
                probe_verdict("443 www.example.test", "gateway-wildcard", "gateway-wildcard", run, p, served_by="web")]
    if refused:
        listeners = [{"name": "listener", "state": "error", "filter_chains": 0, "server_names": [],
                      "error": "error adding listener '10.96.0.15:443': filter chain 'https' has the same matching rules defined as 'http'"}]
        verdicts += [{"aspect": "envoy", "subject": "envoy listener filter_chains", "expected": "2", "observed": "0", "outcome": "fail", "provenance": p,
                      "detail": "expected 2 filter chains, but the listener exists only as an error: error adding listener '10.96.0.15:443': filter chain 'https' has the same matching rules defined as 'http'"}]
    else:
        listeners = [{"name": "listener", "state": "active", "filter_chains": 2, "server_names": [[], ["*.example.test"]], "error": None}]
        verdicts += envoy_verdicts(2, 2, [[], ["*.example.test"]], None, p)
    outcome = "pass" if all(x["outcome"] == "pass" for x in verdicts) else "fail"
    return {"name": "http01-default", "summary": HTTP_SUMMARY, "refs": ["cilium-gateway.md §9"], "hash": HTTP_HASH, "ranges": ["*"],
            "outcome": outcome, "error": None, "duration_ms": 20111, "verdicts": verdicts,
            "observed": {"gateway": None, "listeners": {}, "routes": {}, "probes": [probe_record(443, "www.example.test", run, "gateway-wildcard", "web", True)],
                         "envoy_listeners": listeners, "envoy_summary": None}}

CHART_DIGEST = {"1.19.5": "1" * 64, "1.19.6": "2" * 64, "1.19.7": "3" * 64, "1.20.1": "4" * 64}
AGENT_DIGEST = {"1.19.5": "5" * 64, "1.19.6": "6" * 64, "1.19.7": "7" * 64, "1.20.1": "8" * 64}
ENVOY_DIGEST = {"1.19.5": "a" * 64, "1.19.6": "a" * 64, "1.19.7": "b" * 64, "1.20.1": "c" * 64}
CRDS = {"1.19.5": "v1.4.1 experimental", "1.19.6": "v1.4.1 experimental", "1.19.7": "v1.4.1 experimental", "1.20.1": "v1.6.1 experimental"}

def kind_env(version):
    # The keys and shapes the kind lane records (lanes/kind/lifecycle.rs, session.rs); the
    # digests are made up.
    crds = {"v1.4.1 experimental": "v1.4.1 experimental https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.4.1/experimental-install.yaml",
            "v1.6.1 experimental": "v1.6.1 experimental https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/experimental-install.yaml"}
    return {
        "hand-written": "kind-lane evidence fixture for the report tests; not a real run",
        "cluster": "kind cluster layout-gate-fixture (created by layout-gate)",
        "kind_node_image": "kindest/node:v1.35.0",
        "cilium_chart": f"cilium {version} from https://helm.cilium.io/",
        "gateway_api_crds": crds[CRDS[version]],
        "helm_values_sha256": "9" * 64,
        "image.cilium-agent": f"quay.io/cilium/cilium:v{version} (quay.io/cilium/cilium@sha256:{AGENT_DIGEST[version]})",
        "image.cilium-envoy": f"quay.io/cilium/cilium-envoy:v{version} (quay.io/cilium/cilium-envoy@sha256:{ENVOY_DIGEST[version]})",
        "image.cilium-operator": f"quay.io/cilium/operator-generic:v{version} (quay.io/cilium/operator-generic@sha256:{CHART_DIGEST[version]})",
        "tool.kind": "kind v0.31.0 go1.25.1 linux/amd64",
        "tool.helm": "v3.19.0+g3d8990f",
    }

def phases(start):
    return [{"name": "cluster", "started_at": start, "duration_ms": 61230},
            {"name": "cilium install", "started_at": start, "duration_ms": 95012},
            {"name": "apply", "started_at": start, "duration_ms": 4120},
            {"name": "probes", "started_at": start, "duration_ms": 3187}]

def evidence(lane, version, run_id, cases, env, start="2026-11-30T02:00:00.000Z", source="LAYOUT_GATE_CILIUM"):
    return {"schema_version": 1, "tool": {"name": "layout-gate", "version": "0.1.0", "git_commit": "0123456789abcdef0123456789abcdef01234567"},
            "run_id": run_id, "lane": lane, "cilium": {"version": version, "source": source},
            "started_at": start, "finished_at": "2026-11-30T02:03:00.000Z", "phases": phases(start) if lane == "kind" else [{"name": "envoy start", "started_at": start, "duration_ms": 420}, {"name": "probes", "started_at": start, "duration_ms": 268}],
            "environment": env, "certificates": [], "cases": cases}

def write(folder, ev):
    d = os.path.join(OUT, folder)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "evidence.json"), "w") as f:
        json.dump(ev, f, indent=2, ensure_ascii=False)
        f.write("\n")

for v in ["1.19.5", "1.19.6", "1.19.7"]:
    rid = f"kind-fixture-{v}"
    write(rid, evidence("kind", v, rid, [dns_case(v, rid)], kind_env(v)))
# 1.20.1 in two shards: dns01-default in shard 1; shard 2 holds http01-default and (overlapping,
# agreeing) dns01-default again.
r1, r2 = "kind-fixture-1.20.1-shard-1of2", "kind-fixture-1.20.1-shard-2of2"
write(r1, evidence("kind", "1.20.1", r1, [dns_case("1.20.1", r1)], kind_env("1.20.1")))
write(r2, evidence("kind", "1.20.1", r2, [dns_case("1.20.1", r2), http_case("1.20.1", r2, refused=True)], kind_env("1.20.1")))
# A hand-written model-lane run on 1.19.6 (the model lane is being built): it misses the
# tls-cdi-uploadproxy conflict, and runs http01-default, which no kind run on 1.19.6 did.
m = "handwritten-model-1.19.6"
write(m, evidence("model", "1.19.6", m, [dns_case("1.19.6", m, lane="model"), http_case("1.19.6", m, lane="model")],
                  {"hand-written": "model-lane evidence fixture for the report tests; not a real run", "envoy": "9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL"},
                  source="kind-config/versions.yaml"))

# Bad input.
BAD = os.path.join(HERE, "bad")
def wbad(folder, name, text):
    d = os.path.join(BAD, folder); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f: f.write(text)
ev = evidence("kind", "1.19.6", "kind-fixture-schema-2", [dns_case("1.19.6", "x")], kind_env("1.19.6"))
ev["schema_version"] = 2
wbad("unknown-schema", "evidence.json", json.dumps(ev, indent=2, ensure_ascii=False) + "\n")
full = json.dumps(evidence("kind", "1.19.6", "kind-fixture-truncated", [dns_case("1.19.6", "y")], kind_env("1.19.6")), indent=2, ensure_ascii=False)
wbad("truncated", "evidence.json", full[: len(full) // 3])
wbad("missing-evidence", "summary.md", "# layout-gate: kind lane, Cilium 1.19.6\n\n(evidence.json of this run is missing on purpose: a report test input)\n")
# A second kind 1.19.6 run that disagrees with runs/kind-fixture-1.19.6 on one answer.
dis = dns_case("1.19.6", "kind-fixture-1.19.6-rerun")
for vd in dis["verdicts"]:
    if vd["subject"] == "443 api.example.test":
        vd["observed"] = "gateway-wildcard (sha256 " + fp("gateway-wildcard", "rerun")[:12] + "…)"
        vd["outcome"] = "fail"
        vd["detail"] = "expected api-backend, got gateway-wildcard in 3 of 3 observations"
dis["outcome"] = "fail"
wbad("disagreeing-rerun", "evidence.json", json.dumps(evidence("kind", "1.19.6", "kind-fixture-1.19.6-rerun", [dis], kind_env("1.19.6")), indent=2, ensure_ascii=False) + "\n")
