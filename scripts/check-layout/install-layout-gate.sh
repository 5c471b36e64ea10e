#!/usr/bin/env bash
# check-layout workflow, step "Install layout-gate": builds layout-gate from the checkout of the
# layout-gate repository the workflow made at the requested ref ($LG_SOURCE) and puts it on the
# job's PATH. With LAYOUT_GATE_BIN set (a test, or a runner that has it already), that binary is
# used instead and nothing is built.
set -euo pipefail
: "${GITHUB_PATH:?GITHUB_PATH is not set (this runs as a GitHub Actions step)}"
if [[ -n "${LAYOUT_GATE_BIN:-}" ]]; then
  [[ -x "$LAYOUT_GATE_BIN" ]] || { echo "LAYOUT_GATE_BIN=$LAYOUT_GATE_BIN is not an executable" >&2; exit 2; }
  echo "install-layout-gate: using $LAYOUT_GATE_BIN (LAYOUT_GATE_BIN), not building" >&2
  bin_dir="$(cd "$(dirname "$LAYOUT_GATE_BIN")" && pwd)"
else
  : "${LG_SOURCE:?LG_SOURCE (the layout-gate checkout) is not set}"
  root="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/layout-gate-install"
  cargo install --locked --path "$LG_SOURCE" --root "$root" layout-gate
  bin_dir="$root/bin"
fi
"$bin_dir/layout-gate" --version
echo "$bin_dir" >> "$GITHUB_PATH"
