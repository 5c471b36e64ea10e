#!/usr/bin/env python3
# Writes harness/tests/data/replay/worked-example-1.19.5/recordings.json: HAND-MADE kind-lane
# recordings (not from a real cluster) of the kind lane's worked-example case on Cilium 1.19.5,
# in the shapes the lane records (lanes/kind/one_case.rs): every watched object version with
# its time, the CiliumEnvoyConfig, the exact cilium-dbg output, the raw probe answers. The
# story: a stale Gateway status first, then fresh conditions; the TLSRoute's ResolvedRefs is
# False (the one failing expectation); the api probe answers with the wildcard once before
# converging. Then bless the evidence composed from it:
#   LAYOUT_GATE_BLESS=1 cargo test --lib lanes::kind::replay
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "worked-example-1.19.5")
NS = "ns"
SHA = {"gateway-wildcard": "9a" * 32, "api-backend": "3c" * 32}

def cert(name, sans):
    return {"name": name, "dns_names": sans,
            "leaf": {"subject": f"CN={sans[0]}, O=layout-gate, OU={name}", "issuer": "CN=layout-gate CA 20261201T100000.000Z-kind-1.19.5-handmade, O=layout-gate",
                     "sans": sans, "sha256": SHA[name], "serial": "0" * 31 + "1", "not_after": "2026-12-31T00:00:00Z"}}

def cond(t, s, r, og):
    return {"type": t, "status": s, "reason": r, "message": "", "observedGeneration": og, "lastTransitionTime": "2026-12-01T10:00:00Z"}

def gateway(gen, conds, listeners, addresses=None):
    status = {"conditions": conds, "listeners": [{"name": n, "attachedRoutes": 1, "supportedKinds": [], "conditions": cs} for n, cs in listeners]}
    if addresses:
        status["addresses"] = [{"type": "IPAddress", "value": a} for a in addresses]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": NS, "generation": gen, "resourceVersion": str(100 + gen),
                         "managedFields": [{"manager": "layout-gate"}]},
            "spec": {"gatewayClassName": "cilium"}, "status": status}

def route(kind, name, section, conds, av="gateway.networking.k8s.io/v1"):
    return {"apiVersion": av, "kind": kind, "metadata": {"name": name, "namespace": NS, "generation": 1},
            "status": {"parents": [{"controllerName": "io.cilium/gateway-controller", "parentRef": {"name": "gw", "sectionName": section},
                                    "conditions": conds}]}}

def pod(name, backend, ready):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/managed-by": "layout-gate", "layout-gate.dev/backend": backend}},
            "status": {"phase": "Running" if ready else "Pending", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

def ev(ms, obj=None, event="applied"):
    e = {"at_ms": ms, "at": f"2026-12-01T10:00:{ms // 1000:02d}.{ms % 1000:03d}Z", "event": event}
    if obj is not None:
        e["object"] = obj
    return e

fresh = [cond("Accepted", "True", "Accepted", 2), cond("Programmed", "True", "Programmed", 2)]
listeners = [("http", [cond("Accepted", "True", "Accepted", 2), cond("Programmed", "True", "Programmed", 2)]),
             ("https", [cond("Accepted", "True", "Accepted", 2), cond("Programmed", "True", "Programmed", 2), cond("ResolvedRefs", "True", "ResolvedRefs", 2)]),
             ("tls-api", [cond("Accepted", "True", "Accepted", 2), cond("Programmed", "True", "Programmed", 2)])]
stale = gateway(2, [cond("Accepted", "False", "Pending", 1)], [("https", [cond("Accepted", "False", "Pending", 1)])])
waits = [
    {"what": "backend pods ready (api, web)", "tracker": "backend_pods", "backends": ["api", "web"],
     "events": [ev(0, pod("api-5d8f7c9b4-x2x7q", "api", False)), ev(3, None, "listed"), ev(2100, pod("api-5d8f7c9b4-x2x7q", "api", True)),
                ev(2400, pod("web-6c7d8f9b5-abcde", "web", True))]},
    {"what": "the conditions the case names, settled", "tracker": "conditions",
     "events": [ev(0, stale), ev(2, route("HTTPRoute", "web", "https", [cond("Accepted", "True", "Accepted", 1)])),
                ev(4, route("TLSRoute", "api", "tls-api", [cond("Accepted", "True", "Accepted", 1), cond("ResolvedRefs", "False", "BackendNotFound", 1)], "gateway.networking.k8s.io/v1alpha2")),
                ev(5, None, "listed"), ev(1200, gateway(2, fresh, listeners))]},
    {"what": "Gateway ns/gw has an IP address (LB IPAM + L2 announcement)", "tracker": "gateway_address",
     "events": [ev(0, gateway(2, fresh, listeners)), ev(1, None, "listed"), ev(800, gateway(2, fresh, listeners, ["172.18.255.200"]))]},
]
for w in waits:
    for e in w["events"]:
        if "object" in e:
            e["object"]["metadata"].pop("managedFields", None)

cec = json.load(open(os.path.join(HERE, "..", "envoy-dumps", "cec-worked-example.json")))
cec = json.loads(json.dumps(cec).replace("example.com", "example.test"))
listener = copy.deepcopy([r for r in cec["spec"]["resources"] if r.get("name") == "listener"][0])
full = f"{NS}/cilium-gateway-gw/listener"
listener["name"] = full
dbg = {"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener", "name": full,
                    "active_state": {"version_info": "1", "listener": listener, "last_updated": "2026-12-01T10:00:03Z"}}]}
dbg_text = json.dumps(dbg, indent=2) + "\n"

ADDR = "172.18.255.200:443"
def leaf(name):
    return cert(name, [{"gateway-wildcard": "*.example.test", "api-backend": "api.example.test"}[name]])["leaf"]
def tls(sni, name, ms, http_pod=None):
    hs = {"leaf": leaf(name), "chain_len": 2, "tls_version": "TLSv1.3", "alpn": "http/1.1" if http_pod else None, "cipher": "TLS13_AES_256_GCM_SHA384", "http": None}
    if http_pod:
        body = json.dumps({"pod": http_pod, "namespace": NS})
        hs["http"] = {"result": "answered", "status": 200, "reason": "OK", "headers": {"content-type": "application/json"}, "body": body,
                      "body_truncated": False, "served_by": http_pod}
    return {"addr": ADDR, "sni": sni, "at": f"2026-12-01T10:00:04.{ms:03d}Z", "elapsed_ms": 6, "outcome": {"outcome": "certificate", **hs}}
def reset(sni, ms):
    return {"addr": ADDR, "sni": sni, "at": f"2026-12-01T10:00:04.{ms:03d}Z", "elapsed_ms": 2, "outcome": {"outcome": "reset"}}
probes = [
    {"key": {"port": 443, "sni": None, "http": False}, "address": ADDR, "observations": [reset(None, 10), reset(None, 260), reset(None, 510)]},
    {"key": {"port": 443, "sni": "api.example.test", "http": False}, "address": ADDR,
     "observations": [tls("api.example.test", "gateway-wildcard", 11), tls("api.example.test", "api-backend", 261),
                      tls("api.example.test", "api-backend", 511), tls("api.example.test", "api-backend", 761)]},
    {"key": {"port": 443, "sni": "www.example.test", "http": True}, "address": ADDR,
     "observations": [tls("www.example.test", "gateway-wildcard", n, "web-6c7d8f9b5-abcde") for n in (12, 262, 512)]},
]

rec = {"hand-made": "kind-lane recordings written by hand for the replay tests; not a real cluster",
       # What the kind lane's bring_up records (lanes/kind/lifecycle.rs), for the run the recordings compose;
       # the certificates above are issued by that run's CA (render/certs.rs names it after the run id).
       "environment": {"cilium_chart": "cilium 1.19.5 from https://helm.cilium.io/",
                       "gateway_api_crds": "v1.4.1 experimental https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.4.1/experimental-install.yaml",
                       "helm_values_sha256": "9999999999999999999999999999999999999999999999999999999999999999",
                       "image.cilium-agent": "quay.io/cilium/cilium:v1.19.5 (hand-made)"},
       "cilium": "1.19.5", "certificates": [cert("gateway-wildcard", ["*.example.test"]), cert("api-backend", ["api.example.test"])],
       "recording": {"namespace": NS, "settle_ms": 3000, "waits": waits, "cec": cec,
                     "cilium_dbg": {"pod": "cilium-x7k2p", "container": "cilium-agent",
                                    "command": ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", f"{NS}/cilium-gateway-gw/.*"],
                                    "at": "2026-12-01T10:00:03.500Z", "output": dbg_text, "listener_prefix": f"{NS}/cilium-gateway-gw/"}},
       "probes": probes}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "recordings.json"), "w") as f:
    json.dump(rec, f, indent=2)
    f.write("\n")
