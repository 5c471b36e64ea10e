#!/usr/bin/env bash
# Starts Cilium's agent control plane (agent-plane, as `scripts/install-control-plane.sh --agent
# VERSION` built it) once against the warm operator-lane control plane of the same pin
# (`layout-gate operator up --cilium VERSION`), with the `cilium-config` that plane's chart render
# gave its operator, and checks, while it runs:
#
#   - it prints its ready line and serves GET /statedb/dump/envoy-resources and GET /redirects on
#     its dump socket;
#   - it reads the CiliumEnvoyConfig Cilium's operator wrote for a Gateway (namespace agent-check:
#     a Gateway with one HTTP listener on port 80, an HTTPRoute to a Service without endpoints,
#     applied first and deleted at the end): the CEC's entry in envoy-resources holds a listener;
#     xds-dump (built beside it) reads what the agent serves from its xDS socket, in the xDS mode
#     the cilium-config names (envoy-xds-mode: ads from 1.20, one stream per type before), and
#     ACKs it as Envoy does, after which the entry is Done and the agent's redirect sends the Gateway's
#     Service port to a proxy port (GET /redirects);
#   - no gobgp server runs in it: its goroutine stacks (GET /goroutines) hold no frame of gobgp's
#     pkg/server (a started BgpServer runs its Serve loop), sampled at the ready line and again
#     after a 5 s observation window, no log line of the agent names gobgp's server component, and
#     the lane's cilium-config does not turn enable-bgp-control-plane on (the run-time half of the
#     1.20 substitution proof, scripts/bgp_server_off.py being the source half);
#   - nothing of the agent binds or talks outside loopback: every TCP and UDP socket of its
#     process (ss -tunap) is on 127.0.0.0/8 or ::1, and it listens on no TCP port at all;
#   - SIGTERM stops it with exit status 0.
#
# The Node it runs as (agent-node: spec.podCIDR 10.244.0.0/24 and InternalIP 10.244.0.10, which
# its kubernetes IPAM reads; nothing is sent to them, DryMode's fake datapath has no device) is
# created first and deleted at the end. The agent runs in a private mount namespace with a bpffs
# of its own (the fake datapath pins a few real maps), which goes with it.
#
# Prints one JSON line (start time, RSS, sockets, the checks) on stdout; exits non-zero naming the
# check that failed. Needs: root (unshare, mount), kubectl, curl, ss, /usr/bin/time, python3.
#
#   scripts/agent-plane-check.sh VERSION
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "agent-plane-check: $*" >&2; }
die() { log "$*"; exit 1; }

[[ $# -eq 1 ]] || die "usage: scripts/agent-plane-check.sh VERSION"
v="${1#v}"
cp_dir="${LAYOUT_GATE_CONTROL_PLANE_DIR:-$root/.tools/control-plane}"
warm_dir="${LAYOUT_GATE_WARM_DIR:-$root/.tools/warm}"
for tool in kubectl curl ss unshare python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || die "$tool is not on the PATH"
done

agent="$cp_dir/cilium-agent/$v/agent-plane"
xds_dump="$cp_dir/xds-dump/$v/xds-dump"
[[ -x "$xds_dump" ]] || die "no xds-dump built for $v in $cp_dir/xds-dump/$v: run scripts/install-control-plane.sh --agent $v"
[[ -x "$agent" && -f "$cp_dir/cilium-agent/$v/build.json" ]] || die "no agent-plane built for $v in $cp_dir/cilium-agent/$v: run scripts/install-control-plane.sh --agent $v"
want="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["binary_sha256"])' "$cp_dir/cilium-agent/$v/build.json")"
[[ "$(sha256sum "$agent" | cut -d' ' -f1)" == "$want" ]] || die "$agent does not match its build.json: rebuild it"
state="$warm_dir/v$v/state.json"
[[ -f "$state" ]] || die "no warm control plane for $v ($state): start one with \`layout-gate operator up --cilium $v\`"
kubeconfig="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kubeconfig"])' "$state")"
plane="$(dirname "$kubeconfig")"
config="$plane/operator-config"
[[ -f "$kubeconfig" && -d "$config" ]] || die "$state names $kubeconfig, but $plane has no admin.kubeconfig and operator-config: is the plane still up (\`layout-gate operator status\`)?"
k() { kubectl --kubeconfig "$kubeconfig" --request-timeout=20s "$@"; }

# The lane's configuration: the chart renders enable-bgp-control-plane only when BGP is on.
bgp_key="$config/enable-bgp-control-plane"
if [[ -f "$bgp_key" && "$(tr -d '[:space:]' <"$bgp_key")" != "false" ]]; then
  die "$bgp_key is $(cat "$bgp_key"): the lane's cilium-config turns the BGP control plane on"
fi

work="$(mktemp -d /tmp/agent-plane-check.XXXXXX)"
time_pid=""
cleanup() {
  if [[ -n "$time_pid" ]] && kill -0 "$time_pid" 2>/dev/null; then
    local a
    a="$(cat /proc/"$time_pid"/task/*/children 2>/dev/null | tr ' ' '\n' | head -n1)"
    [[ -n "$a" ]] && kill -TERM "$a" 2>/dev/null || true
    sleep 2
    kill -KILL "$time_pid" 2>/dev/null || true
  fi
  k delete node agent-node --ignore-not-found >/dev/null 2>&1 || true
  k delete namespace agent-check --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: agent-node
spec:
  podCIDR: 10.244.0.0/24
  podCIDRs: [10.244.0.0/24]
EOF
k patch node agent-node --subresource=status --type=merge \
  -p '{"status":{"addresses":[{"type":"InternalIP","address":"10.244.0.10"},{"type":"Hostname","address":"agent-node"}]}}' >/dev/null

# A Gateway for the operator to translate, and its CEC, before the agent starts.
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: agent-check
---
apiVersion: v1
kind: Service
metadata:
  name: backend
  namespace: agent-check
spec:
  ports:
  - port: 8080
    protocol: TCP
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: agent-check
spec:
  gatewayClassName: cilium
  listeners:
  - name: http
    port: 80
    protocol: HTTP
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: route
  namespace: agent-check
spec:
  parentRefs:
  - name: gw
  rules:
  - backendRefs:
    - name: backend
      port: 8080
EOF
cec=""
for _ in $(seq 1 120); do
  cec="$(k -n agent-check get ciliumenvoyconfigs.cilium.io cilium-gateway-gw -o name 2>/dev/null || true)"
  [[ -n "$cec" ]] && break
  sleep 0.5
done
[[ -n "$cec" ]] || die "Cilium's operator wrote no CiliumEnvoyConfig agent-check/cilium-gateway-gw in 60 s"

mkdir -p "$work/state"
sock="$work/dump.sock"
started="$(date +%s%N)"
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private sh -c 'mount -t bpf bpf /sys/fs/bpf && exec /usr/bin/time -v -o "$0" "$@"' "$work/time.txt" \
  "$agent" --k8s-kubeconfig-path="$kubeconfig" --config-dir="$config" --plane-node-name=agent-node \
  --plane-state-dir="$work/state" --plane-dump-socket="$sock" --disable-envoy-version-check=true \
  --envoy-policy-restore-timeout=1s --enable-health-checking=false --enable-endpoint-health-checking=false \
  --enable-hubble=false >"$work/out" 2>"$work/err" &
time_pid=$!

# The ready line, at most 120 s.
ready=""
for _ in $(seq 1 600); do
  ready="$(grep -m1 '"event":"ready"' "$work/out" 2>/dev/null || true)"
  [[ -n "$ready" ]] && break
  kill -0 "$time_pid" 2>/dev/null || { tail -n 20 "$work/err" >&2; die "agent-plane $v exited before its ready line (log above)"; }
  sleep 0.2
done
[[ -n "$ready" ]] || { tail -n 20 "$work/err" >&2; die "agent-plane $v printed no ready line in 120 s"; }
ready_ms=$(( ($(date +%s%N) - started) / 1000000 ))
agent_pid="$(cat /proc/"$time_pid"/task/*/children 2>/dev/null | tr ' ' '\n' | head -n1)"
[[ -n "$agent_pid" ]] || die "cannot find agent-plane's pid (the child of /usr/bin/time, pid $time_pid)"

get() { curl -sS --max-time 10 --unix-socket "$sock" -o "$2" -w '%{http_code}' "http://agent-plane$1"; }
[[ "$(get /statedb/dump/envoy-resources "$work/envoy-resources.json")" == 200 ]] || die "GET /statedb/dump/envoy-resources on $sock did not answer 200"
[[ "$(get /redirects "$work/redirects.json")" == 200 ]] || die "GET /redirects on $sock did not answer 200"
# The CEC's entry (origin "cec") in the agent's envoy-resources table and the Gateway Service's
# redirect for port 80, in one line: `<status> listeners=N proxy_ports=P,...`.
cec_state() {
  get /statedb/dump/envoy-resources "$work/er.json" >/dev/null || true
  get /redirects "$work/rd.json" >/dev/null || true
  python3 "$work/cec_state.py" "$work/er.json" "$work/rd.json"
}
cat >"$work/cec_state.py" <<'PY'
import json, sys
try:
    er = json.load(open(sys.argv[1]))["envoy-resources"]
    rd = json.load(open(sys.argv[2]))
except (OSError, ValueError, KeyError, TypeError):
    print("unread")
    sys.exit()
e = next((e for e in er if e["Name"]["Origin"] == "cec" and e["Name"]["Namespace"] == "agent-check"
          and e["Name"]["Name"] == "cilium-gateway-gw"), None)
ports = sorted({r["proxy_port"] for r in rd
                if r["service"] == "agent-check/cilium-gateway-gw" and r["service_port"] == 80 and r["proxy_port"]})
listeners = len(((e or {}).get("Resources") or {}).get("Listeners") or {})
kind = (e or {}).get("Status", {}).get("kind", "absent")
print(f"{kind} listeners={listeners} proxy_ports={','.join(map(str, ports)) or 'none'}")
PY
has_listener() { [[ "$1" != unread && "$1" != absent* && "$1" != *" listeners=0 "* ]]; }
# Its listener, at most 30 s.
cec_seen="$(cec_state)"
for _ in $(seq 1 150); do
  has_listener "$cec_seen" && break
  sleep 0.2
  cec_seen="$(cec_state)"
done
has_listener "$cec_seen" || die "the agent holds no listener for the CEC agent-check/cilium-gateway-gw in 30 s (envoy-resources: $cec_seen)"
cec_before_ack="$cec_seen"
# What it serves, read and ACKed as Envoy does; then Done with the redirect, at most 30 s.
# The lane's cilium-config names the agent's xDS mode from 1.20 (ads: one ADS stream); absent,
# the agent serves one stream per type (split).
xds_mode=split
[[ -f "$config/envoy-xds-mode" ]] && xds_mode="$(tr -d '[:space:]' <"$config/envoy-xds-mode")"
timeout 60 "$xds_dump" -mode "$xds_mode" -agent "$work/state/envoy/sockets/xds.sock" >"$work/xds-dump.json" 2>"$work/xds-dump.err" \
  || { tail -n 5 "$work/xds-dump.err" >&2; die "xds-dump could not read the agent's xDS ($work/state/envoy/sockets/xds.sock)"; }
xds_served="$xds_mode: $(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(t + "=" + str(len(v.get("resources") or [])) for t, v in sorted(d.items())))' "$work/xds-dump.json" 2>/dev/null || echo unread)"
done_with_redirect() { [[ "$1" == Done*proxy_ports=[0-9]* ]]; }
cec_seen="$(cec_state)"
for _ in $(seq 1 150); do
  done_with_redirect "$cec_seen" && break
  sleep 0.2
  cec_seen="$(cec_state)"
done
done_with_redirect "$cec_seen" || die "after xds-dump's ACKs the CEC is not Done with a redirect in 30 s (envoy-resources: $cec_seen)"
[[ "$(get /goroutines "$work/goroutines.0")" == 200 ]] || die "GET /goroutines on $sock did not answer 200"
sleep 5 # the observation window: a BGP control plane that is on starts its server within it
[[ "$(get /goroutines "$work/goroutines.1")" == 200 ]] || die "GET /goroutines on $sock did not answer 200"
ss -H -tunap >"$work/ss.txt"
ss -H -ltnp >"$work/listen.txt"

kill -TERM "$agent_pid"
for _ in $(seq 1 200); do kill -0 "$time_pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$time_pid" 2>/dev/null && die "agent-plane $v did not stop within 40 s of SIGTERM"
wait "$time_pid" && status=0 || status=$?
time_pid=""

python3 - "$work" "$v" "$agent_pid" "$ready" "$ready_ms" "$status" "$cec_before_ack" "$cec_seen" "$xds_served" <<'PY'
import ipaddress, json, re, sys
work, v, pid, ready, ready_ms, status, before_ack, after_ack, xds = sys.argv[1:]
def fail(msg):
    print(f"agent-plane-check: {v}: {msg}", file=sys.stderr)
    sys.exit(1)
gor = [open(f"{work}/goroutines.{i}").read() for i in (0, 1)]
for i, g in enumerate(gor):
    # The dump must show the agent itself, or an empty answer would pass the next check.
    if "github.com/cilium/hive" not in g:
        fail(f"goroutine dump {i} shows no hive goroutine: it cannot tell what runs")
    m = re.search(r"github\.com/osrg/gobgp/v\d+/pkg/server\.[^\s]+", g)
    if m:
        fail(f"a gobgp server runs in agent-plane: goroutine frame {m.group(0)} (dump {i})")
err = open(f"{work}/err").read()
if re.search(r"gobgp-server", err):
    fail("agent-plane's log names the gobgp-server component (a BgpServer was created)")
def addr(s):
    host = s.rsplit(":", 1)[0].strip("[]").split("%")[0]
    return host
def loopback(h):
    if h in ("*", "0.0.0.0", "::"):
        return False
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
socks = []
for line in open(f"{work}/ss.txt"):
    if f"pid={pid}," not in line:
        continue
    f = line.split()
    proto, st, local, peer = f[0], f[1], f[4], f[5]
    socks.append(f"{proto} {st} {local} {peer}")
    if not loopback(addr(local)) or (peer not in ("*:*", "0.0.0.0:*", "[::]:*") and not loopback(addr(peer))):
        fail(f"agent-plane has a socket outside loopback: {proto} {st} {local} -> {peer}")
listens = [l.split()[3] for l in open(f"{work}/listen.txt") if f"pid={pid}," in l]
if listens:
    fail(f"agent-plane listens on TCP {', '.join(listens)}")
if status != "0":
    fail(f"agent-plane exited with status {status} after SIGTERM")
t = open(f"{work}/time.txt").read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(json.dumps({
    "version": v,
    "start_ms": json.loads(ready)["start_ms"],
    "exec_to_ready_ms": int(ready_ms),
    "max_rss_kib": rss,
    "cec_before_ack": before_ack,
    "cec_after_ack": after_ack,
    "xds_served": xds,
    "gobgp_server_goroutines": 0,
    "tcp_listeners": listens,
    "sockets": socks,
    "exit_status": int(status),
}))
PY
