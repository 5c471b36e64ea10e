#!/usr/bin/env bash
# check-layout workflow, step "Check the layouts": `layout-gate check` on $LG_MANIFESTS against
# $LG_BASELINE (empty: the pins' default) failing on $LG_FAIL_ON (empty: every kind). Writes
# $LG_OUT/check.json (uploaded), $LG_OUT/check.md (also appended to the job summary) and
# $LG_OUT/status (check's exit status, which the Verdict step turns into the job's), and the
# step outputs `status` and `json`. Exits 0 when check ran, whatever it found.
set -euo pipefail
: "${LG_MANIFESTS:?LG_MANIFESTS (the manifests input) is not set}"
: "${LG_OUT:?LG_OUT is not set}"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set (this runs as a GitHub Actions step)}"
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set (this runs as a GitHub Actions step)}"
mkdir -p "$LG_OUT"
args=("$LG_MANIFESTS")
if [[ -n "${LG_BASELINE:-}" ]]; then args+=(--baseline "$LG_BASELINE"); fi
if [[ -n "${LG_FAIL_ON:-}" ]]; then args+=(--fail-on "$LG_FAIL_ON"); fi
if [[ -n "${LG_VERSIONS_FILE:-}" ]]; then args+=(--versions-file "$LG_VERSIONS_FILE"); fi
status=0
layout-gate check "${args[@]}" --format json > "$LG_OUT/check.json" || status=$?
markdown_status=0
layout-gate check "${args[@]}" --format markdown > "$LG_OUT/check.md" || markdown_status=$?
if [[ "$markdown_status" != "$status" ]]; then
  echo "check-layout: the JSON run exited $status and the Markdown run $markdown_status; the verdict follows the JSON run" >&2
fi
cat "$LG_OUT/check.md" >> "$GITHUB_STEP_SUMMARY"
echo "$status" > "$LG_OUT/status"
{
  echo "status=$status"
  echo "json=$LG_OUT/check.json"
} >> "$GITHUB_OUTPUT"
