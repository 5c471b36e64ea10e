#!/usr/bin/env bash
# check-layout workflow, step "Verdict": the job's status from check's ($LG_OUT/status, written by
# check.sh): 0 passes, 1 (a --fail-on kind happened) fails, anything else (check could not check
# the layouts) fails with that status.
set -euo pipefail
: "${LG_OUT:?LG_OUT is not set}"
[[ -r "$LG_OUT/status" ]] || { echo "layout-gate check did not run (no $LG_OUT/status; see the step above)" >&2; exit 2; }
status="$(cat "$LG_OUT/status")"
case "$status" in
  0) echo "layout-gate check: no --fail-on kind happened" ;;
  1) echo "layout-gate check: a --fail-on kind happened (see the job summary)"; exit 1 ;;
  *) echo "layout-gate check could not check the layouts (exit $status; see the step above)"; exit "$status" ;;
esac
