#!/usr/bin/env bash
# Starts a local Envoy for `layout-gate probe` to probe, the way Cilium lays out a Gateway
# listener: one TLS listener on 127.0.0.1, SNI api.example.test and *.example.test each
# terminated with its own certificate (a throwaway CA made here with openssl), and no default
# filter chain, so any other SNI (or none) is reset. Prints the port and a probe command, then
# serves until Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT), and removes its folder, keys included.
#
#   scripts/local-envoy.sh [PORT]     # PORT default: a free one
#
# Whatever kills it, nothing stays: Envoy dies with the script (the kernel sends it SIGKILL when
# the script ends, SIGKILL included), and the keys live in
# $TMPDIR/layout-gate-local-<pid>.<start time>-XXXXXX, which the next start (or any layout-gate
# run, see harness/src/scratch.rs) removes once that process is gone.
#
# Envoy: $ENVOY_BIN, else .tools/envoy-venv/bin/envoy (scripts/install-envoy.sh), else `envoy`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
envoy="${ENVOY_BIN:-}"
if [[ -z "$envoy" ]]; then
  if [[ -x "$root/.tools/envoy-venv/bin/envoy" ]]; then envoy="$root/.tools/envoy-venv/bin/envoy"
  elif command -v envoy >/dev/null; then envoy="$(command -v envoy)"
  else echo "local-envoy.sh: no Envoy; install it with scripts/install-envoy.sh or set ENVOY_BIN" >&2; exit 2; fi
fi
command -v openssl >/dev/null || { echo "local-envoy.sh: openssl is needed (apt-get install openssl)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "local-envoy.sh: python3 is needed (apt-get install python3)" >&2; exit 2; }
port="${1:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"

# The fields of /proc/PID/stat after `(comm)`: state first, the start time 20th (field 22).
stat_fields() { local s; s="$(<"/proc/$1/stat")" || return 1; printf '%s\n' "${s##*) }"; }
tmp="${TMPDIR:-/tmp}"
# Folders of earlier starts whose owner (pid and start time: a reused pid is another process)
# is gone; only our own, never through a symbolic link.
for d in "$tmp"/layout-gate-local-*; do
  [[ -d "$d" && ! -L "$d" && -O "$d" ]] || continue
  owner="${d##*/layout-gate-local-}"; owner="${owner%%-*}"
  opid="${owner%%.*}"; ostart="${owner#*.}"
  [[ "$opid" =~ ^[0-9]+$ && "$ostart" =~ ^[0-9]+$ ]] || continue
  if f="$(stat_fields "$opid" 2>/dev/null)"; then
    read -r -a a <<<"$f"
    [[ "${a[0]}" != Z && "${a[19]:-}" == "$ostart" ]] && continue
  fi
  rm -rf "$d"
done
read -r -a self <<<"$(stat_fields $$)"
dir="$(mktemp -d "$tmp/layout-gate-local-$$.${self[19]}-XXXXXX")"
chmod 700 "$dir"
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 131' QUIT

cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=local-envoy Test CA" \
  -keyout ca.key -out ca.crt 2>/dev/null
leaf() { # name CN SAN
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
leaf api api.example.test api.example.test
leaf wild '*.example.test' '*.example.test'

chain() { # sni cert
  cat <<YAML
    - filter_chain_match: {server_names: ["$1"]}
      transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          common_tls_context:
            tls_certificates: [{certificate_chain: {filename: $dir/$2.crt}, private_key: {filename: $dir/$2.key}}]
      filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: $2
          http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
          route_config:
            virtual_hosts: [{name: $2, domains: ["*"], routes: [{match: {prefix: "/"}, direct_response: {status: 200, body: {inline_string: "$2\n"}}}]}]
YAML
}
{
  cat <<YAML
static_resources:
  listeners:
  - name: listener
    address: {socket_address: {address: 127.0.0.1, port_value: $port}}
    listener_filters:
    - name: envoy.filters.listener.tls_inspector
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}
    filter_chains:
YAML
  chain api.example.test api
  chain '*.example.test' wild
} > envoy.yaml

# Between fork and exec, python3 asks the kernel to SIGKILL Envoy when this script ends
# (prctl PR_SET_PDEATHSIG; 1 and 9 are PR_SET_PDEATHSIG and SIGKILL), and refuses to start if
# the script is already gone; then it becomes Envoy. No hot restart: no shared memory left.
dies_with_script='import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0) != 0: sys.exit("local-envoy.sh: prctl(PR_SET_PDEATHSIG) failed")
if os.getppid() != int(sys.argv[1]): sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])'
python3 -c "$dies_with_script" $$ "$envoy" -c envoy.yaml --log-level warn --disable-hot-restart >envoy.log 2>&1 &
pid=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { cat envoy.log >&2; exit 1; }
  sleep 0.1
done
echo "Envoy $("$envoy" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1) serving TLS on 127.0.0.1:$port (api.example.test and *.example.test terminated, no default chain)"
echo "probe it:  layout-gate probe 127.0.0.1:$port --sni api.example.test --sni www.example.test --sni other.invalid --no-sni"
echo "Ctrl-C stops it and removes $dir"
wait "$pid"
