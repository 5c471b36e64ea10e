#!/usr/bin/env bash
# Renders a report and photographs it in headless Chromium, to look at what a reader sees.
#
#   scripts/screenshot-report.sh [EVIDENCE_DIR...]
#
# Without arguments: fresh model-lane runs of the whole catalogue on every pinned version
# (needs Envoy: scripts/install-envoy.sh). Writes into target/layout-gate-report/: report.*
# from `layout-gate report --out`, merged.xml from `--junit`, report.png (the page, 1400 px
# wide), report-svg.png (report.svg alone) and dom.html (the DOM Chromium rendered).
# Chromium: scripts/install-report-tools.sh. Set HEIGHT for a taller page shot (default 2400).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/target/layout-gate-report"
mkdir -p "$out"

chromium="${LAYOUT_GATE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[[ -n "$chromium" ]] || { echo "screenshot-report: Chromium not found; install it with scripts/install-report-tools.sh (apt-get install -y chromium)" >&2; exit 1; }

cargo build --quiet
bin="$root/target/debug/layout-gate"
if [[ $# -eq 0 ]]; then
  export ENVOY_BIN="${ENVOY_BIN:-$("$root/scripts/install-envoy.sh")}"
  rm -rf "$out/evidence"
  "$bin" run --lane model --evidence-dir "$out/evidence" >/dev/null
  set -- "$out/evidence"
fi
"$bin" report "$@" --out "$out" --junit "$out/merged.xml" --allow-problems >/dev/null

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
shot() {
  "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$profile" "$@" 2>/dev/null
}
shot --dump-dom "file://$out/report.html" >"$out/dom.html"
shot --window-size="1400,${HEIGHT:-2400}" --screenshot="$out/report.png" "file://$out/report.html" >/dev/null
shot --window-size="1400,${HEIGHT:-2400}" --screenshot="$out/report-svg.png" "file://$out/report.svg" >/dev/null
cells="$(grep -o 'data-case=' "$out/dom.html" | wc -l)"
echo "screenshot-report: $cells matrix cells rendered; $out/report.png, $out/report-svg.png"
