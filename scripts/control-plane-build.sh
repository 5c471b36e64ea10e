# shellcheck shell=bash
# Sourced by scripts/e2e.sh and scripts/test.sh (not run on its own): builds the operator
# lane's control plane with scripts/install-control-plane.sh in the background while the Rust
# steps compile, then waits for it before the e2e trials, which need it.
#
#   control_plane_start NAME   start the build for the pins the e2e trials use; say what is built,
#                              whether it was built before, and how long a cold build takes
#   control_plane_wait         wait for it, showing its progress; on failure the last line says
#                              why (also kept in $control_plane_why for an EXIT trap that prints
#                              more), and the function exits the caller with status 1
#   control_plane_stop         stop a build still running (for the caller's EXIT trap)
#   e2e_around_control_plane ARGS...
#                              the e2e trials in two parts: those that do not need the control
#                              plane while it still builds, then (control_plane_wait) the rest;
#                              both parts always run, and it fails when either did
#
# The build keeps every binary whose inputs did not change, so after the first time it checks
# them in seconds. LAYOUT_GATE_CONTROL_PLANE_DIR (honoured by the install script and the trials)
# puts the control plane in another folder.

: "${root:?scripts/control-plane-build.sh is sourced by a script that sets root to the repository}"

# The pins the e2e trials use: the default pin (operator::<version>::*) and 1.19.6
# (check_operator::1.19.6::* and differential::1.19.6::*: a layout that conflicts there). A
# second tag builds in about a minute on the first one's Go build cache.
control_plane_pins() {
  local default_pin
  default_pin="$(sed -n 's/^default:[[:space:]]*\([0-9][0-9.]*\).*/\1/p' "$root/kind-config/versions.yaml" | head -n1)"
  if [[ "$default_pin" == "1.19.6" ]]; then echo "1.19.6"; else echo "$default_pin 1.19.6"; fi
}

control_plane_start() {
  control_plane_caller="$1"
  mkdir -p "$root/target"
  control_plane_log="$root/target/install-control-plane.log"
  local dir="${LAYOUT_GATE_CONTROL_PLANE_DIR:-$root/.tools/control-plane}" pins v built=1
  read -r -a pins <<<"$(control_plane_pins)"
  for v in "${pins[@]}"; do
    [[ -x "$dir/cilium-operator/$v/cilium-operator-generic" ]] || built=0
  done
  [[ -x "$dir/cilium-agent/1.19.6/agent-plane" ]] || built=0
  echo "== $control_plane_caller: building the operator lane's control plane in the background (scripts/install-control-plane.sh ${pins[*]}; log: ${control_plane_log#"$root"/})"
  if [[ $built -eq 1 ]]; then
    echo "   built before in ${dir#"$root"/}: checking each binary against its inputs takes seconds; only a changed input is rebuilt"
  else
    echo "   not built yet in ${dir#"$root"/}: etcd, kube-apiserver, kube-controller-manager, helm, cilium-operator ${pins[*]}, the conformance suite and Cilium's agent control plane 1.19.6 from their pinned Go modules;"
    echo "   a cold build took 17.3 min on 2 cores here (docs/figures.md), beside the Rust build and the trials that need no control plane; needs Go >= 1.26 and the Go module proxy"
  fi
  command -v go >/dev/null || echo "   Go is not on the PATH: the build will fail, and with it the operator trials (https://go.dev/dl/)"
  control_plane_started="$(date +%s)"
  # --conformance: the suite the conformance::<pin>::* trials run (one build serves both pins:
  # every 1.19 tag names suite v1.4.0-rc.2). --no-agent --agent 1.19.6: Cilium's agent control
  # plane only for the operator_agent::1.19.6::* trials (the other operator trials ask for the
  # emulated step; the agent is the biggest build here).
  "$root/scripts/install-control-plane.sh" --conformance --no-agent "${pins[@]}" --agent 1.19.6 >"$control_plane_log" 2>&1 &
  control_plane_pid=$!
}

control_plane_wait() {
  [[ -n "${control_plane_pid:-}" ]] || return 0
  if kill -0 "$control_plane_pid" 2>/dev/null; then
    echo "== $control_plane_caller: waiting for the control plane build (running for $(( $(date +%s) - control_plane_started )) s); its progress:"
    # Its log so far and each line as it comes, until it ends.
    tail -n +1 --pid="$control_plane_pid" -f "$control_plane_log" | grep --line-buffered '^install-control-plane:' | sed -u 's/^/   /' || true
  fi
  if ! wait "$control_plane_pid"; then
    control_plane_pid=
    tail -n 30 "$control_plane_log" >&2
    local why last
    why="$(grep '^install-control-plane:' "$control_plane_log" | tail -n1 | sed 's/^install-control-plane: //')"
    last="$(grep -v '^[[:space:]]*$' "$control_plane_log" | tail -n1)"
    if [[ -n "$last" && "$last" != "install-control-plane: $why" ]]; then why="${why:+$why; }last output: $last"; fi
    control_plane_why="$control_plane_caller: building the operator lane's control plane failed after $(( $(date +%s) - control_plane_started )) s: ${why:-no output} (log: ${control_plane_log#"$root"/})"
    echo "$control_plane_why" >&2
    exit 1
  fi
  control_plane_pid=
  echo "== $control_plane_caller: control plane ready after $(( $(date +%s) - control_plane_started )) s: $(tail -n1 "$control_plane_log")"
}

control_plane_stop() {
  if [[ -n "${control_plane_pid:-}" ]]; then
    pkill -TERM -P "$control_plane_pid" 2>/dev/null || true
    kill "$control_plane_pid" 2>/dev/null || true
  fi
}

e2e_around_control_plane() {
  local rc=0
  if [[ -n "${control_plane_pid:-}" ]] && kill -0 "$control_plane_pid" 2>/dev/null; then
    echo "== $control_plane_caller: the e2e trials that do not need the control plane, while it builds (running for $(( $(date +%s) - control_plane_started )) s)"
  else
    echo "== $control_plane_caller: the e2e trials that do not need the control plane"
  fi
  LAYOUT_GATE_E2E_PART=without-control-plane cargo test --test e2e -- "$@" || rc=$?
  control_plane_wait
  echo "== $control_plane_caller: the e2e trials on Cilium's own operator (they need the control plane)"
  LAYOUT_GATE_E2E_PART=control-plane cargo test --test e2e -- "$@" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "$control_plane_caller: e2e trials failed (see both parts above: the trials without the control plane first)" >&2
  fi
  return $rc
}
