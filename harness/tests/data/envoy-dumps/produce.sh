#!/usr/bin/env bash
# Regenerates the real-Envoy fixtures in this folder (see README.md). Needs Envoy 1.40
# (ENVOY=..., default: the repo's .tools/envoy-venv), openssl, curl, and the folder of input
# configs the dumps were recorded from (SAMPLES=<dir>, required; README.md lists what it must
# hold). Listener ports are the inputs' ports + 10000 and the admin port is picked by Envoy, so
# it can run next to other Envoys on the machine.
#   SAMPLES=<dir> ./produce.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${SAMPLES:-}" ]; then
  echo "produce.sh: set SAMPLES to the folder of input configs (README.md, \"Real Envoy 1.40 output\"):" >&2
  echo "  SAMPLES=<dir> $0" >&2
  exit 2
fi
for f in gen-certs.sh bootstrap-static.yaml bootstrap-lds.yaml lds-good.yaml lds-bad.yaml; do
  [ -f "$SAMPLES/$f" ] || { echo "produce.sh: $SAMPLES/$f is missing (SAMPLES must hold the inputs README.md lists)" >&2; exit 2; }
done
ENVOY=${ENVOY:-$HERE/../../../../.tools/envoy-venv/bin/envoy}
# A fixed work dir keeps certificate paths in the dumps stable between regenerations.
W=/tmp/layout-gate-envoy-fixtures
rm -rf "$W" && mkdir -p "$W/lds"
bash "$SAMPLES/gen-certs.sh" "$W/certs" >/dev/null 2>&1

PID=
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=; fi; }
trap stop EXIT

subst() { # file -> stdout, with placeholders and ports replaced
  sed -e "s|CERT_DIR|$W/certs|g" -e "s|LDS_DIR|$W/lds|g" \
      -e 's/port_value: 1044\([0-9]\)/port_value: 2044\1/' -e 's/port_value: 990[0-9]/port_value: 0/' "$1"
}
start() { # bootstrap
  rm -f "$W/admin.addr"
  "$ENVOY" -c "$1" --disable-hot-restart --admin-address-path "$W/admin.addr" -l warning \
    >"$W/envoy.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do
    if [ -s "$W/admin.addr" ] && curl -fsS "http://$(cat "$W/admin.addr")/ready" >/dev/null 2>&1; then return; fi
    sleep 0.1
  done
  echo "envoy did not become ready; log:" >&2; cat "$W/envoy.log" >&2; exit 1
}
admin() { curl -fsS "http://$(cat "$W/admin.addr")$1"; }
fetch() { admin "$1" >"$HERE/$2"; echo "wrote $2 ($(wc -c <"$HERE/$2") bytes)"; }
push() { # lds file content on stdin; waits until Envoy has handled it (accepted or rejected)
  local before; before=$(admin /stats | awk -F': ' '/^listener_manager.lds.update_(success|rejected):/{s+=$2} END{print s+0}')
  cat >"$W/lds/lds.yaml.tmp" && mv "$W/lds/lds.yaml.tmp" "$W/lds/lds.yaml"
  for _ in $(seq 100); do
    local now; now=$(admin /stats | awk -F': ' '/^listener_manager.lds.update_(success|rejected):/{s+=$2} END{print s+0}')
    [ "$now" -gt "$before" ] && return
    sleep 0.1
  done
  echo "LDS update not handled" >&2; exit 1
}

# 1. Static bootstrap: full dump and the static_listeners resource view.
subst "$SAMPLES/bootstrap-static.yaml" >"$W/static.yaml"
start "$W/static.yaml"
fetch /config_dump envoy-static-full.json
fetch '/config_dump?resource=static_listeners' envoy-static-listeners.json
stop

# 2. File-based LDS, v1 -> v2 -> v3 (each pushed atomically: write lds.yaml.tmp, then mv), then v4.
{ subst "$SAMPLES/bootstrap-lds.yaml"; cat "$HERE/sources/xds-unreachable-cluster.yaml"; } >"$W/lds-bootstrap.yaml"
subst "$SAMPLES/lds-good.yaml" >"$W/lds/lds.yaml"
start "$W/lds-bootstrap.yaml"
fetch '/config_dump?resource=dynamic_listeners' envoy-lds-v1-dynamic.json
subst "$SAMPLES/lds-bad.yaml" | push
fetch '/config_dump?resource=dynamic_listeners' envoy-lds-v2-dynamic.json
fetch /config_dump envoy-lds-v2-full.json
{ subst "$SAMPLES/lds-good.yaml" | sed 's/^version_info: "1"/version_info: "3"/'
  subst "$SAMPLES/lds-bad.yaml" | sed -n '/^resources:/,$p' | tail -n +2 \
    | sed -e 's/name: listener-secure/name: listener-two/' -e 's/port_value: 20445/port_value: 20446/'
} | push
fetch '/config_dump?resource=dynamic_listeners' envoy-lds-v3-dynamic.json
subst "$HERE/sources/lds-v4.yaml" | push
sleep 0.5 # let listener-secure's replacement finish warming so the old one is draining
fetch '/config_dump?resource=dynamic_listeners' envoy-lds-v4-dynamic.json
admin /stats | grep -E '^listener_manager\.(lds\.(version_text|update_)|total_listeners)' >"$W/stats.txt"
cat "$W/stats.txt"
stop
