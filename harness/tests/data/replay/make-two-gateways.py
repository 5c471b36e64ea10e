#!/usr/bin/env python3
# Writes harness/tests/data/replay/two-gateways-1.20.1/recordings.json: HAND-MADE kind-lane
# recordings (not from a real cluster) of the kind lane's two-gateways case on Cilium 1.20.1, in
# the shapes the lane records (lanes/kind/one_case.rs, envoy_view.rs): every watched object
# version with its time, both Gateways' CiliumEnvoyConfigs (a List), the exact cilium-dbg output
# holding both Gateways' listeners, the raw probe answers at each Gateway's own address. The
# story: the case's Gateway `gw` is programmed first; the ListenerSet `extra` shows a stale
# status (generation 1 of 2) before its fresh one; the second Gateway `second` comes last, and
# gets its address after `gw`. Every expectation holds. Then bless the evidence composed from it:
#   LAYOUT_GATE_BLESS=1 cargo test --lib lanes::kind::replay
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "two-gateways-1.20.1")
NS = "ns"
APEX = "example.test"
SHA = "5e" * 32
ADDR = {"gw": "172.18.255.200", "second": "172.18.255.201"}
PODS = {"web": "web-6c7d8f9b5-abcde", "api": "api-5d8f7c9b4-x2x7q"}

def cond(t, s, r, og):
    return {"type": t, "status": s, "reason": r, "message": "", "observedGeneration": og, "lastTransitionTime": "2026-12-01T10:00:00Z"}

def ok(og, *extra):
    return [cond("Accepted", "True", "Accepted", og), cond("Programmed", "True", "Programmed", og)] + [cond(t, "True", t, og) for t in extra]

def status_of(conds, listeners, addresses=None):
    s = {"conditions": conds, "listeners": [{"name": n, "attachedRoutes": 1, "supportedKinds": [], "conditions": cs} for n, cs in listeners]}
    if addresses:
        s["addresses"] = [{"type": "IPAddress", "value": a} for a in addresses]
    return s

def gateway(name, gen, conds, listeners, addresses=None):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": NS, "generation": gen, "resourceVersion": str(100 + gen)},
            "spec": {"gatewayClassName": "cilium"}, "status": status_of(conds, listeners, addresses)}

def listener_set(gen, conds, listeners):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
            "metadata": {"name": "extra", "namespace": NS, "generation": gen},
            "spec": {"parentRef": {"name": "gw"}}, "status": status_of(conds, listeners)}

def route(name, parent, conds):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": name, "namespace": NS, "generation": 1},
            "status": {"parents": [{"controllerName": "io.cilium/gateway-controller", "parentRef": parent, "conditions": conds}]}}

def pod(name, backend):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/managed-by": "layout-gate", "layout-gate.dev/backend": backend}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}

def ev(ms, obj=None, event="applied"):
    e = {"at_ms": ms, "at": f"2026-12-01T10:00:{ms // 1000:02d}.{ms % 1000:03d}Z", "event": event}
    if obj is not None:
        e["object"] = obj
    return e

gw_listeners = [("http", ok(1, "ResolvedRefs"))]
second_listeners = [("https", ok(1, "ResolvedRefs"))]
routes_ok = [cond("Accepted", "True", "Accepted", 1), cond("ResolvedRefs", "True", "ResolvedRefs", 1)]
waits = [
    {"what": "backend pods ready (api, web)", "tracker": "backend_pods", "backends": ["api", "web"],
     "events": [ev(0, pod(PODS["api"], "api")), ev(1, pod(PODS["web"], "web")), ev(2, None, "listed")]},
    {"what": "the conditions the case names, settled", "tracker": "conditions",
     "events": [ev(0, gateway("gw", 1, ok(1), gw_listeners)),
                ev(1, route("paths", {"name": "gw", "sectionName": "http"}, routes_ok)),
                ev(2, route("alt", {"group": "gateway.networking.k8s.io", "kind": "ListenerSet", "name": "extra", "sectionName": "alt"}, routes_ok)),
                ev(3, route("secure", {"name": "second", "sectionName": "https"}, routes_ok)),
                # Re-applied at generation 2; the status still speaks of generation 1.
                ev(4, listener_set(2, [cond("Accepted", "False", "Pending", 1)], [("alt", [cond("Accepted", "False", "Pending", 1)])])),
                ev(5, None, "listed"),
                ev(900, listener_set(2, ok(2), [("alt", ok(2, "ResolvedRefs"))])),
                ev(1500, gateway("second", 1, ok(1), second_listeners))]},
    {"what": "Gateways ns/gw, ns/second have IP addresses (LB IPAM + L2 announcement)", "tracker": "gateway_address", "gateways": ["gw", "second"],
     "events": [ev(0, gateway("gw", 1, ok(1), gw_listeners)), ev(1, gateway("second", 1, ok(1), second_listeners)), ev(2, None, "listed"),
                ev(300, gateway("gw", 1, ok(1), gw_listeners, [ADDR["gw"]])),
                ev(800, gateway("second", 1, ok(1), second_listeners, [ADDR["second"]]))]},
]

# Both CECs, built from the worked example's chains: `gw` plain HTTP only (its ListenerSet's
# 8080 rides on the same listener), `second` the plain chain beside the wildcard's terminating one.
template = json.load(open(os.path.join(HERE, "..", "envoy-dumps", "cec-worked-example.json")))
tl = [r for r in template["spec"]["resources"] if r.get("name") == "listener"][0]
plain, secure = copy.deepcopy(tl["filterChains"][0]), copy.deepcopy(tl["filterChains"][1])
secure["filterChainMatch"]["serverNames"] = [f"*.{APEX}"]
secure["transportSocket"]["typedConfig"]["commonTlsContext"]["tlsCertificateSdsSecretConfigs"] = [{"name": f"cilium-secrets/{NS}-wild"}]

def cec(gw, chains):
    listener = copy.deepcopy(tl)
    listener["filterChains"] = chains
    meta = copy.deepcopy(template["metadata"])
    meta.update({"name": f"cilium-gateway-{gw}", "namespace": NS, "labels": {"gateway.networking.k8s.io/gateway-name": gw}})
    meta["ownerReferences"][0]["name"] = gw
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumEnvoyConfig", "metadata": meta, "spec": {"resources": [listener]}}

cecs = [cec("gw", [plain]), cec("second", [plain, secure])]
configs = []
for c in cecs:
    full = f"{NS}/{c['metadata']['name']}/listener"
    l = copy.deepcopy(c["spec"]["resources"][0])
    l["name"] = full
    configs.append({"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener", "name": full,
                    "active_state": {"version_info": "1", "listener": l, "last_updated": "2026-12-01T10:00:03Z"}})
dbg_text = json.dumps({"configs": configs}, indent=2) + "\n"

LEAF = {"subject": f"CN=*.{APEX}, O=layout-gate, OU=wild", "issuer": "CN=layout-gate CA 20261201T100000.000Z-kind-1.20.1-handmade, O=layout-gate",
        "sans": [f"*.{APEX}"], "sha256": SHA, "serial": "0" * 31 + "1", "not_after": "2026-12-31T00:00:00Z"}

def answer(status, pod=None):
    body = json.dumps({"pod": pod, "namespace": NS}) if pod else ""
    return {"status": status, "reason": {200: "OK", 301: "Moved Permanently", 404: "Not Found"}[status],
            "headers": {"content-type": "application/json"} if pod else {}, "body": body, "body_truncated": False, "served_by": pod}

def plain_obs(gw, port, host, status, pod, n):
    return {"addr": f"{ADDR[gw]}:{port}", "host": host, "at": f"2026-12-01T10:00:04.{n:03d}Z", "elapsed_ms": 3,
            "outcome": {"outcome": "answered", **answer(status, pod)}}

def tls_obs(sni, status, pod, n):
    hs = {"leaf": LEAF, "chain_len": 2, "tls_version": "TLSv1.3", "alpn": "http/1.1", "cipher": "TLS13_AES_256_GCM_SHA384",
          "http": {"result": "answered", **answer(status, pod)}}
    return {"addr": f"{ADDR['second']}:443", "sni": sni, "at": f"2026-12-01T10:00:04.{n:03d}Z", "elapsed_ms": 6, "outcome": {"outcome": "certificate", **hs}}

www = f"www.{APEX}"
probes = []
for path, status, pod_name in [(None, 200, PODS["web"]), ("/api/v1", 200, PODS["api"]), ("/apix", 200, PODS["web"]), ("/old/page", 301, None)]:
    key = {"port": 80, "sni": www, "http": True, "plain": True, "gateway": "gw"}
    if path:
        key["path"] = path
    probes.append({"key": key, "address": f"{ADDR['gw']}:80", "observations": [plain_obs("gw", 80, www, status, pod_name, n) for n in (10, 260, 510)]})
probes.append({"key": {"port": 8080, "sni": f"alt.{APEX}", "http": True, "plain": True, "gateway": "gw"}, "address": f"{ADDR['gw']}:8080",
               "observations": [plain_obs("gw", 8080, f"alt.{APEX}", 200, PODS["api"], n) for n in (11, 261, 511)]})
for sni, status, pod_name in [(www, 200, PODS["web"]), (f"api.{APEX}", 404, None)]:
    probes.append({"key": {"port": 443, "sni": sni, "http": True, "gateway": "second"}, "address": f"{ADDR['second']}:443",
                   "observations": [tls_obs(sni, status, pod_name, n) for n in (12, 262, 512)]})

rec = {"hand-made": "kind-lane recordings written by hand for the replay tests; not a real cluster",
       # What the kind lane's bring_up records (lanes/kind/lifecycle.rs), for the run the recordings compose;
       # the certificates above are issued by that run's CA (render/certs.rs names it after the run id).
       "environment": {"cilium_chart": "cilium 1.20.1 from https://helm.cilium.io/",
                       "gateway_api_crds": "v1.6.1 experimental https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/experimental-install.yaml",
                       "helm_values_sha256": "9999999999999999999999999999999999999999999999999999999999999999",
                       "image.cilium-agent": "quay.io/cilium/cilium:v1.20.1 (hand-made)"},
       "cilium": "1.20.1", "certificates": [{"name": "wild", "dns_names": [f"*.{APEX}"], "leaf": LEAF}],
       "recording": {"namespace": NS, "settle_ms": 3000, "gateways": ["gw", "second"], "listener_sets": ["extra"], "waits": waits,
                     "cec": {"apiVersion": "v1", "kind": "List", "items": cecs},
                     "cilium_dbg": {"pod": "cilium-x7k2p", "container": "cilium-agent",
                                    "command": ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", f"{NS}/cilium-gateway-.*"],
                                    "at": "2026-12-01T10:00:03.500Z", "output": dbg_text,
                                    "listener_prefix": f"{NS}/cilium-gateway-gw/", "other_prefixes": [f"{NS}/cilium-gateway-second/"]}},
       "probes": probes}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "recordings.json"), "w") as f:
    json.dump(rec, f, indent=2)
    f.write("\n")
