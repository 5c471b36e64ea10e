import json, re, sys
HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
def cilium_network():
    return {"name": "cilium.network", "typedConfig": {"@type": "type.googleapis.com/cilium.NetworkFilter"}}
def hcm(name):
    return {"name": "envoy.filters.network.http_connection_manager", "typedConfig": {
        "@type": HCM,
        "commonHttpProtocolOptions": {"maxStreamDuration": "0s"},
        "httpFilters": [
            {"name": "envoy.filters.http.grpc_web", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb"}},
            {"name": "envoy.filters.http.grpc_stats", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig", "emitFilterState": True, "enableUpstreamStats": True}},
            {"name": "envoy.filters.http.router", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}},
        ],
        "internalAddressConfig": {},
        "rds": {"routeConfigName": name},
        "statPrefix": name,
        "streamIdleTimeout": "300s",
        "upgradeConfigs": [{"upgradeType": "websocket"}],
        "useRemoteAddress": True}}
listener = {
    "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
    "name": "listener",
    "filterChains": [
        {"filterChainMatch": {"transportProtocol": "raw_buffer"},
         "filters": [cilium_network(), hcm("listener-insecure")]},
        {"filterChainMatch": {"serverNames": ["*.example.com"], "transportProtocol": "tls"},
         "filters": [cilium_network(), hcm("listener-secure")],
         "transportSocket": {"name": "envoy.transport_sockets.tls", "typedConfig": {
             "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
             "commonTlsContext": {"tlsCertificateSdsSecretConfigs": [{"name": "cilium-secrets/ns-wild"}]}}}},
        {"filterChainMatch": {"serverNames": ["api.example.com"], "transportProtocol": "tls"},
         "filters": [cilium_network(), {"name": "envoy.filters.network.tcp_proxy", "typedConfig": {
             "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
             "cluster": "ns:api:443", "statPrefix": "tls-passthrough:api.example.com"}}]},
    ],
    "listenerFilters": [
        {"name": "cilium.bpf_metadata", "typedConfig": {"@type": "type.googleapis.com/cilium.BpfMetadata",
            "bpfRoot": "/sys/fs/bpf", "isIngress": True, "useOriginalSourceAddress": False}},
        {"name": "envoy.filters.listener.tls_inspector", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}},
    ],
    "socketOptions": [
        {"description": "Enable TCP keep-alive (default to enabled)", "intValue": "1", "level": "1", "name": "9"},
        {"description": "TCP keep-alive idle time (in seconds) (defaults to 10s)", "intValue": "10", "level": "6", "name": "4"},
    ],
}
def route(name, domains, prefix_cluster=None):
    return {"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "name": name,
            "virtualHosts": [{"name": domains[0], "domains": domains, "routes": [
                {"match": {"prefix": "/"}, "route": {"cluster": "ns:web:80"}}]}]}
cec = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumEnvoyConfig",
    "metadata": {
        "creationTimestamp": "2026-11-30T11:00:00Z",
        "generation": 1,
        "labels": {"cilium.io/use-original-source-address": "false", "gateway.networking.k8s.io/gateway-name": "gw"},
        "name": "cilium-gateway-gw",
        "namespace": "ns",
        "ownerReferences": [{"apiVersion": "gateway.networking.k8s.io/v1", "controller": True, "kind": "Gateway", "name": "gw", "uid": "6f1c8a52-3d0e-4a8e-9d43-2f7c1b9e0a11"}],
        "resourceVersion": "1234",
        "uid": "0b7e2d41-8c55-4f0a-a1e9-5d2c7f3b6e20",
    },
    "spec": {
        "backendServices": [{"name": "api", "namespace": "ns", "number": ["443"]}, {"name": "web", "namespace": "ns", "number": ["80"]}],
        "resources": [
            listener,
            route("listener-insecure", ["*"]),
            route("listener-secure", ["*.example.com", "*.example.com:*"]),
            {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "edsClusterConfig": {"serviceName": "ns/api:443"},
             "name": "ns:api:443", "outlierDetection": {"splitExternalLocalOriginErrors": True}, "type": "EDS"},
            {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "edsClusterConfig": {"serviceName": "ns/web:80"},
             "name": "ns:web:80", "outlierDetection": {"splitExternalLocalOriginErrors": True}, "type": "EDS",
             "typedExtensionProtocolOptions": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                 "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                 "commonHttpProtocolOptions": {"idleTimeout": "60s"}, "useDownstreamProtocolConfig": {"http2ProtocolOptions": {}}}}},
        ],
        "services": [{"listener": "", "name": "cilium-gateway-gw", "namespace": "ns", "ports": [80, 443]}],
    },
}
def y(v, ind):
    pad = "  " * ind
    out = []
    if isinstance(v, dict):
        if not v: return ["{}"]
        for k, x in v.items():
            ks = json.dumps(k) if not re.fullmatch(r"[A-Za-z0-9_.\-/]+", k) else k
            if isinstance(x, (dict, list)) and x:
                out.append(f"{pad}{ks}:")
                out += y(x, ind + 1)
            else:
                out.append(f"{pad}{ks}: {scalar(x)}")
        return out
    for x in v:
        if isinstance(x, (dict, list)) and x:
            sub = y(x, ind + 1)
            out.append(f"{pad}- " + sub[0].lstrip())
            out += sub[1:]
        else:
            out.append(f"{pad}- {scalar(x)}")
    return out
def scalar(x):
    if x is True: return "true"
    if x is False: return "false"
    if isinstance(x, int): return str(x)
    if isinstance(x, dict): return "{}"
    if isinstance(x, list): return "[]"
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-/]*", x) and x not in ("true","false","null","yes","no","on","off"): return x
    return json.dumps(x)
def sort(v):
    if isinstance(v, dict): return {k: sort(v[k]) for k in sorted(v)}
    if isinstance(v, list): return [sort(x) for x in v]
    return v
out = sys.argv[1]
with open(out + "/cec-worked-example.json", "w") as f:
    f.write(json.dumps(sort(cec), indent=4) + "\n")
lst = {"apiVersion": "v1", "items": [sort(cec)], "kind": "List", "metadata": {"resourceVersion": ""}}
with open(out + "/cec-worked-example-list.yaml", "w") as f:
    f.write("\n".join(y(lst, 0)) + "\n")
