#!/usr/bin/env python3
# Writes the hand-written evidence fixtures of the report tests: kind-lane runs of four Cilium
# versions (1.20.1 in two shards), a model-lane run on 1.19.6, and the bad inputs in bad/.
# They are NOT real runs (their environment says so); the story they tell is made up to give
# the report differences between versions, a disagreement, a refused listener and inferences a
# cluster contradicts. It writes expectations and observations only (raw probe answers, and for
# kind runs the raw recordings: the watched Gateway versions and the exact cilium-dbg output),
# shaped as each lane writes them (kind: the run's CA, the Gateway address, kind-only
# environment keys; model: a CA per case, loopback probes, the model's environment key), so
# `report`'s consistency checks pass on them. The replay of the recordings gives the conditions
# and Envoy facts, the judge the verdicts, and the digest seals each file when blessed:
#   LAYOUT_GATE_BLESS=1 cargo test --lib report::tests::fixtures
# Run it from anywhere; then re-bless the goldens:
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

P_INF_195 = prov("inferred", "docs/cilium-translation.md §9")
P_REP_3342 = prov("reported", "cozystack#3342", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_SRC_3342 = prov("source", "cozystack#3342", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_SRC_9 = prov("source", "docs/cilium-translation.md §9", "seen with openssl s_client on a live 1.19.5 cluster; 1.19.6 keeps translating conflicted listeners (cilium#46917)")
P_REP_3912 = prov("reported", "cozystack#3912")
P_INF_46917 = prov("inferred", "cilium#46917")
P_REP_47590 = prov("reported", "cilium#47590")
P_INF_47306 = prov("inferred", "cilium#47306")

def want(expected):
    if expected == "absent":
        return "absent"
    st, _, reason = expected.partition("/")
    return {"status": {"status": st, "reason": reason or None}}

class Builder:
    """One case's expectations (as evidence stores them) and observations (raw and reduced).
    The verdicts are not written here: the judge makes them (see the bless step above)."""
    def __init__(self, run, lane="kind", issuer=None):
        # A kind run probes the Gateway's address; the model lane its local Envoy.
        self.run, self.lane = run, lane
        self.addr = "172.18.255.200" if lane == "kind" else "127.0.0.1"
        self.issuer = issuer or f"CN=layout-gate CA {run}, O=layout-gate"
        self.gateway, self.listeners, self.probes, self.envoy = [], [], [], []
        self.gw_obs, self.l_obs, self.records = None, {}, []

    def cond(self, aspect, subject, expected, observed, p):
        parts = subject.split(" ")
        ce = {"type": parts[-1], "want": want(expected)}
        if aspect == "gateway":
            self.gateway.append([ce, p])
            if self.gw_obs is None:
                self.gw_obs = []
            target = self.gw_obs
        else:
            self.listeners.append([parts[1], ce, p])
            target = self.l_obs.setdefault(parts[1], [])
        if observed != "absent" and not any(c["type"] == parts[-1] for c in target):
            st, _, reason = observed.partition("/")
            target.append({"type": parts[-1], "status": st, "reason": reason, "message": ""})

    def probe(self, port, sni, expected, got, p, served_by=None):
        http = served_by is not None
        key = {"port": port, "sni": sni, "http": http}
        answer = {"nothing": {"how": "reset", "alert": None}} if expected.startswith("nothing") else {"cert": expected}
        self.probes.append({"key": key, "answer": answer, "served_by": served_by if "cert" in answer else None, "status": None,
                            "provenance": p, "line": 1})
        if any(r["key"] == key for r in self.records):
            return
        a = f"{self.addr}:{port}"
        obs, facts = [], []
        for i in range(3):
            at = f"2026-11-30T02:01:0{i}.000Z"
            if got.startswith("nothing"):
                obs.append({"addr": a, "sni": sni, "at": at, "elapsed_ms": 3, "outcome": {"outcome": "reset"}})
                facts.append({"outcome": "reset", "leaf": None, "alert": None, "served_by": None, "http_status": None})
                continue
            hs = {"outcome": "certificate", "leaf": leaf(got, self.run, self.issuer), "chain_len": 2, "tls_version": "TLSv1.3",
                  "alpn": "http/1.1" if http else None, "cipher": "TLS13_AES_256_GCM_SHA384", "http": None}
            if http:
                hs["http"] = {"result": "answered", "status": 200, "reason": "OK", "headers": {}, "body": "", "body_truncated": False,
                              "served_by": served_by}
            obs.append({"addr": a, "sni": sni, "at": at, "elapsed_ms": 7, "outcome": hs})
            facts.append({"outcome": "certificate", "leaf": fp(got, self.run), "alert": None, "served_by": served_by,
                          "http_status": 200 if http else None})
        self.records.append({"key": key, "address": a, "observations": obs, "facts": facts})

    def conds(self, items):
        for c in items:
            self.cond(*c)

    def envoy_listener(self, expected_chains, expected_names, p):
        self.envoy.append(["listener", {"filter_chains": expected_chains, "server_names": expected_names, "error_contains": None,
                                        "absent": False, "provenance": p, "line": 1}])

    def case(self, name, summary, refs, hash_, ranges, listeners, duration):
        expectations = {"ranges": ranges, "gateway": self.gateway, "listeners": self.listeners, "routes": [], "probes": self.probes,
                        "envoy": self.envoy}
        summary_listeners = [{"name": f"lg-{name}/cilium-gateway-gw/{l['name']}", "source": "dynamic", "state": l["state"],
                              "version_info": "1", "addresses": [],
                              "filter_chains": [{"name": None, "filter_chain_match": {"server_names": n, "transport_protocol": None, "destination_port": None},
                                                 "action": {"kind": "other", "filters": []}, "tls": None} for n in l["server_names"]],
                              "default_filter_chain": None, "error": l["error"]} for l in listeners]
        c = {"name": name, "summary": summary, "refs": refs, "hash": hash_, "ranges": ranges,
             "outcome": "fail", "error": None, "duration_ms": duration, "verdicts": [],
             "observed": {"gateway": self.gw_obs, "listeners": self.l_obs, "routes": {}, "probes": self.records,
                          "envoy_listeners": listeners, "envoy_summary": {"listeners": summary_listeners}},
             "gateway": "gw", "expectations": expectations, "consecutive": 3, "case_files": {"case.yaml": hash_}}
        if self.lane == "kind":
            c["recording"] = self.recording(name, listeners)
        else:
            c["certificates"] = [{"name": n, "dns_names": SANS[n], "leaf": leaf(n, self.run, self.issuer)} for n in SANS]
        return c

    def recording(self, name, listeners):
        """What the kind lane records for replay: the Gateway's watched versions (its conditions
        as observed) and the exact cilium-dbg output (the listeners as observed). The bless step
        takes the conditions and Envoy facts the evidence judges from their replay."""
        ns = f"lg-{name}"
        def conds(cs):
            return [{"type": c["type"], "status": c["status"], "reason": c["reason"], "message": "", "observedGeneration": 1,
                     "lastTransitionTime": "2026-11-30T02:00:20Z"} for c in cs]
        status = {"listeners": [{"name": l, "attachedRoutes": 1, "supportedKinds": [], "conditions": conds(cs)} for l, cs in self.l_obs.items()]}
        if self.gw_obs is not None:
            status["conditions"] = conds(self.gw_obs)
        gw = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
              "metadata": {"name": "gw", "namespace": ns, "generation": 1, "resourceVersion": "101"},
              "spec": {"gatewayClassName": "cilium"}, "status": status}
        full = f"{ns}/cilium-gateway-gw/listener"
        configs = []
        for l in listeners:
            lst = {"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": full,
                   "filter_chains": [{"filter_chain_match": {"server_names": n} if n else {}} for n in l["server_names"]]}
            if l["error"]:
                configs.append({"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener", "name": full,
                                "error_state": {"failed_configuration": lst, "last_update_attempt": "2026-11-30T02:00:30Z", "details": l["error"]}})
            else:
                configs.append({"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener", "name": full,
                                "active_state": {"version_info": "1", "listener": lst, "last_updated": "2026-11-30T02:00:30Z"}})
        return {"namespace": ns, "settle_ms": 3000, "gateways": ["gw"],
                "waits": [{"what": "the conditions the case names, settled", "tracker": "conditions",
                           "events": [{"at_ms": 0, "at": "2026-11-30T02:00:20.000Z", "event": "applied", "object": gw},
                                      {"at_ms": 5, "at": "2026-11-30T02:00:20.005Z", "event": "listed"}]}],
                "cilium_dbg": {"pod": "cilium-x7k2p", "container": "cilium-agent",
                               "command": ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", f"{ns}/cilium-gateway-gw/.*"],
                               "at": "2026-11-30T02:00:30.000Z", "output": json.dumps({"configs": configs}, indent=2) + "\n",
                               "listener_prefix": f"{ns}/cilium-gateway-gw/"}}

SANS = {"api-backend": ["api.example.test"], "vm-exportproxy-backend": ["vm-exportproxy.example.test"],
        "cdi-uploadproxy-backend": ["cdi-uploadproxy.example.test"], "gateway-wildcard": ["*.example.test", "example.test"]}

def leaf(name, run, issuer=None):
    return {"subject": f"CN={SANS[name][0]}, O=layout-gate, OU={name}", "issuer": issuer or f"CN=layout-gate CA {run}, O=layout-gate",
            "sans": SANS[name], "sha256": fp(name, run), "serial": "01", "not_after": "2026-12-30T02:00:00Z"}

def certificates(run):
    return [{"name": n, "dns_names": SANS[n], "leaf": leaf(n, run)} for n in SANS]

FULL = [[], ["*.example.test", "example.test"], ["api.example.test"], ["vm-exportproxy.example.test"], ["cdi-uploadproxy.example.test"]]

def model_ca(case, version):
    return f"CN=layout-gate CA model {case} {version}, O=layout-gate"

def dns_case(version, run, lane="kind", override=None):
    b = Builder(run, lane, model_ca("dns01-default", version) if lane == "model" else None)
    v = tuple(int(x) for x in version.split("."))
    ranges = []
    names = FULL
    answers = {"api": "api-backend", "vm": "vm-exportproxy-backend", "cdi": "cdi-uploadproxy-backend", "www": "gateway-wildcard", "apex": "gateway-wildcard", "other": "nothing (reset)", "none": "nothing (reset)"}
    if version == "1.19.7" and lane == "kind":
        # The hand-written story: the cdi-uploadproxy passthrough chain is gone on 1.19.7.
        names = [c for c in FULL if c != ["cdi-uploadproxy.example.test"]]
        answers["cdi"] = "gateway-wildcard"
    answers.update(override or {})
    if v < (1, 19, 6):
        ranges.append("<1.19.6")
        b.conds([("gateway", "gateway gw Accepted", "True", "True/Accepted", P_INF_195),
                     ("gateway", "gateway gw Programmed", "True", "True/Programmed", P_INF_195),
                     ("listener", "listener http Accepted", "True", "True/Accepted", P_INF_195),
                     ("listener", "listener https Accepted", "True", "True/Accepted", P_INF_195),
                     ("listener", "listener https Conflicted", "absent", "absent", P_INF_195),
                     ("listener", "listener https-apex Accepted", "True", "True/Accepted", P_INF_195),
                     ("listener", "listener tls-api Accepted", "True", "True/Accepted", P_INF_195),
                     ("listener", "listener tls-api Conflicted", "absent", "absent", P_INF_195)])
    if v < (1, 20, 0):
        ranges.append("<1.20.0")
        for key, port, sni, exp, p, sb in [("api", 443, "api.example.test", "api-backend", P_REP_3342, None),
                                         ("vm", 443, "vm-exportproxy.example.test", "vm-exportproxy-backend", P_REP_3342, None),
                                         ("cdi", 443, "cdi-uploadproxy.example.test", "cdi-uploadproxy-backend", P_REP_3342, None),
                                         ("www", 443, "www.example.test", "gateway-wildcard", P_SRC_3342, "web"),
                                         ("apex", 443, "example.test", "gateway-wildcard", P_SRC_3342, None),
                                         ("other", 443, "other.invalid", "nothing (reset)", P_SRC_9, None),
                                         ("none", 443, None, "nothing (reset)", P_SRC_9, None)]:
            b.probe(port, sni, exp, answers[key], p, served_by=sb)
    if v < (1, 19, 6):
        b.envoy_listener(5, FULL, P_INF_195)
    if (1, 19, 6) <= v < (1, 20, 0):
        ranges.append(">=1.19.6, <1.20.0")
        cdi_conflicted = "True/ProtocolConflict" if lane == "kind" else "absent"
        b.conds([("listener", "listener http Accepted", "True", "True/Accepted", P_REP_3912),
                     ("listener", "listener https Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     ("listener", "listener https Accepted", "False", "False/Invalid", P_REP_3912),
                     ("listener", "listener https-apex Accepted", "True", "True/Accepted", P_REP_3912),
                     ("listener", "listener https-apex Conflicted", "absent", "absent", P_REP_3912),
                     ("listener", "listener tls-api Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     ("listener", "listener tls-api Accepted", "False", "False/Invalid", P_REP_3912),
                     ("listener", "listener tls-vm-exportproxy Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_3912),
                     ("listener", "listener tls-vm-exportproxy Accepted", "False", "False/Invalid", P_REP_3912),
                     ("listener", "listener tls-cdi-uploadproxy Conflicted", "True/ProtocolConflict", cdi_conflicted, P_REP_3912),
                     ("listener", "listener tls-cdi-uploadproxy Accepted", "False", "False/Invalid", P_REP_3912)])
        b.envoy_listener(5, None, P_INF_46917)
    if v >= (1, 20, 0):
        ranges += [">=1.20.0", ">=1.20.0"]
        names = [[], ["example.test"]]
        b.conds([("listener", "listener https Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_47590),
                     ("listener", "listener https Accepted", "False", "False/Invalid", P_REP_47590),
                     ("listener", "listener https-apex Accepted", "True", "True/Accepted", P_REP_47590),
                     ("listener", "listener tls-api Conflicted", "True/ProtocolConflict", "True/ProtocolConflict", P_REP_47590),
                     ("listener", "listener tls-api Accepted", "False", "False/Invalid", P_REP_47590)])
        b.envoy_listener(2, [[], ["example.test"]], P_INF_47306)
        for port, sni, exp, got, sb in [(443, "api.example.test", "nothing (reset)", "nothing (reset)", None),
                                        (443, "www.example.test", "nothing (reset)", "nothing (reset)", None),
                                        (443, "example.test", "gateway-wildcard", "gateway-wildcard", None)]:
            b.probe(port, sni, exp, got, P_INF_47306)
    listeners = [{"name": "listener", "state": "active", "filter_chains": len(names), "server_names": names, "error": None}]
    return b.case("dns01-default", DNS_SUMMARY, DNS_REFS, DNS_HASH, ranges, listeners, 41234)

def http_case(version, run, lane="kind", refused=False):
    p = prov("inferred", "docs/cilium-translation.md §9")
    b = Builder(run, lane, model_ca("http01-default", version) if lane == "model" else None)
    b.cond("listener", "listener https Accepted", "True", "True/Accepted", p)
    b.probe(443, "www.example.test", "gateway-wildcard", "gateway-wildcard", p, served_by="web")
    b.envoy_listener(2, None, p)
    if refused:
        listeners = [{"name": "listener", "state": "error", "filter_chains": 0, "server_names": [],
                      "error": "error adding listener '10.96.0.15:443': filter chain 'https' has the same matching rules defined as 'http'"}]
    else:
        listeners = [{"name": "listener", "state": "active", "filter_chains": 2, "server_names": [[], ["*.example.test"]], "error": None}]
    return b.case("http01-default", HTTP_SUMMARY, ["docs/cilium-translation.md §9"], HTTP_HASH, ["*"], listeners, 20111)

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
    return {"schema_version": 2, "status": "ran", "tool": {"name": "layout-gate", "version": "0.1.0", "git_commit": "0123456789abcdef0123456789abcdef01234567"},
            "run_id": run_id, "lane": lane, "cilium": {"version": version, "source": source},
            "started_at": start, "finished_at": "2026-11-30T02:03:00.000Z", "phases": phases(start) if lane == "kind" else [{"name": "envoy start", "started_at": start, "duration_ms": 420}, {"name": "probes", "started_at": start, "duration_ms": 268}],
            "environment": env, "certificates": certificates(run_id) if lane == "kind" else [], "cases": cases,
            "selected": sorted(c["name"] for c in cases), "digest": None}

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
                  {"hand-written": "model-lane evidence fixture for the report tests; not a real run", "envoy": "9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL",
                   "model": "layout-gate 0.1.0 model of Cilium 1.19.6"},
                  source="kind-config/versions.yaml"))

# Bad input.
BAD = os.path.join(HERE, "bad")
def wbad(folder, name, text):
    d = os.path.join(BAD, folder); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f: f.write(text)
ev = evidence("kind", "1.19.6", "kind-fixture-schema-3", [dns_case("1.19.6", "x")], kind_env("1.19.6"))
ev["schema_version"] = 3
wbad("unknown-schema", "evidence.json", json.dumps(ev, indent=2, ensure_ascii=False) + "\n")
full = json.dumps(evidence("kind", "1.19.6", "kind-fixture-truncated", [dns_case("1.19.6", "y")], kind_env("1.19.6")), indent=2, ensure_ascii=False)
wbad("truncated", "evidence.json", full[: len(full) // 3])
wbad("missing-evidence", "summary.md", "# layout-gate: kind lane, Cilium 1.19.6\n\n(evidence.json of this run is missing on purpose: a report test input)\n")
# A second kind 1.19.6 run that disagrees with runs/kind-fixture-1.19.6 on one answer.
dis = dns_case("1.19.6", "kind-fixture-1.19.6-rerun", override={"api": "gateway-wildcard"})
wbad("disagreeing-rerun", "evidence.json", json.dumps(evidence("kind", "1.19.6", "kind-fixture-1.19.6-rerun", [dis], kind_env("1.19.6")), indent=2, ensure_ascii=False) + "\n")
