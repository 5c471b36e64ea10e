#!/usr/bin/env bash
# Installs what the report trials need to look at the report the way others will:
#   * Chromium (Debian package `chromium`), which loads report.html headless, dumps the DOM it
#     rendered and takes screenshots; installed with apt-get when missing (needs root, as in CI);
#   * junitparser (PyPI), a JUnit reader that is not ours, into .tools/report-tools-venv; the
#     e2e suite parses every junit.xml it wrote with it (scripts/check-junit.py).
# Idempotent. Prints the venv's python on its last line.
set -euo pipefail

JUNITPARSER_VERSION="${JUNITPARSER_VERSION:-5.0.3}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/report-tools-venv"
log() { echo "install-report-tools: $*" >&2; }

# Debian's chromium; chromium-browser or google-chrome (as on hosted CI images) do as well.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
  sudo=""
  [[ "$(id -u)" -eq 0 ]] || { sudo -n true 2>/dev/null && sudo="sudo -n"; }
  if { [[ "$(id -u)" -eq 0 ]] || [[ -n "$sudo" ]]; } && command -v apt-get >/dev/null; then
    log "apt-get install chromium"
    $sudo apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >&2
  else
    log "Chromium is missing: install it as root with: apt-get update && apt-get install -y chromium"
    exit 1
  fi
fi

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('junitparser') != '$JUNITPARSER_VERSION')" 2>/dev/null; then
  log "junitparser==$JUNITPARSER_VERSION already installed"
else
  python="${PYTHON:-python3}"
  command -v "$python" >/dev/null || { log "python3 not found: install Python 3.9+ with venv (Debian: apt-get install python3-venv)"; exit 1; }
  [[ -x "$venv/bin/pip" ]] || "$python" -m venv "$venv"
  log "pip install junitparser==$JUNITPARSER_VERSION"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "junitparser==$JUNITPARSER_VERSION"
fi
echo "$venv/bin/python"
