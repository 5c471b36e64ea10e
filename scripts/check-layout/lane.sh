#!/usr/bin/env bash
# check-layout workflow, step "The manifests as a case, on the lane": `case new` writes
# $LG_MANIFESTS as the case `platform` into layout-gate-cases/, then `run --lane $LG_LANE` runs it
# with evidence in $LG_EVIDENCE. The workflow's kind job sets LG_LANE=kind (real Cilium on kind);
# a test of this script runs it on the model lane.
set -euo pipefail
: "${LG_MANIFESTS:?LG_MANIFESTS (the manifests input) is not set}"
: "${LG_LANE:?LG_LANE is not set}"
: "${LG_EVIDENCE:?LG_EVIDENCE is not set}"
pins=()
if [[ -n "${LG_VERSIONS_FILE:-}" ]]; then pins=(--versions-file "$LG_VERSIONS_FILE"); fi
mkdir -p layout-gate-cases
layout-gate case new platform --cases layout-gate-cases --from "$LG_MANIFESTS" "${pins[@]}"
layout-gate run --lane "$LG_LANE" --cases layout-gate-cases --evidence-dir "$LG_EVIDENCE" "${pins[@]}"
