#!/usr/bin/env bash
# Starts Cilium's agent control plane (agent-plane, as `scripts/install-control-plane.sh --agent
# VERSION` built it) once against the warm operator-lane control plane of the same pin
# (`layout-gate operator up --cilium VERSION`), with the `cilium-config` that plane's chart render
# gave its operator, and checks, while it runs:
#
#   - it prints its ready line and serves GET /statedb/dump/envoy-resources and GET /redirects on
#     its dump socket;
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

python3 - "$work" "$v" "$agent_pid" "$ready" "$ready_ms" "$status" <<'PY'
import ipaddress, json, re, sys
work, v, pid, ready, ready_ms, status = sys.argv[1:]
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
    "envoy_resources_bytes": len(open(f"{work}/envoy-resources.json", "rb").read()),
    "gobgp_server_goroutines": 0,
    "tcp_listeners": listens,
    "sockets": socks,
    "exit_status": int(status),
}))
PY
