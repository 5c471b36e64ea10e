#!/usr/bin/env bash
# Mutation testing of the verdict path: every mutant cargo-mutants makes in these modules is a
# wrong answer (a verdict, a dump fact, a probe class, a route match) that some test must reject.
#   judge/                      verdicts from expectations and observations
#   observe/envoy_dump/         config dump -> facts the judge compares
#   observe/probe/classify.rs   handshake outcome -> reset/alert/closed/timeout/refused
#   lanes/model/hostnames.rs    the model's route <-> listener hostname rules
#   lanes/model/translate.rs    the model's listeners and filter chains
# Runs the library tests only (the e2e trials need Envoy and minutes per mutant). Extra
# arguments go to cargo-mutants, e.g. `scripts/mutants.sh --list` or `-F route_matches`.
# Results land in mutants.out/ (caught.txt, missed.txt, unviable.txt, timeout.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-mutants >/dev/null 2>&1; then
    echo "scripts/mutants.sh: cargo-mutants is not installed; install it with: cargo install --locked cargo-mutants" >&2
    exit 2
fi

# The envoy/ library tests start a real Envoy; cargo-mutants builds in a copy of the tree, so
# hand it the binary by absolute path (scripts/install-envoy.sh installs one).
if [ -z "${ENVOY_BIN:-}" ] && [ -x .tools/envoy-venv/bin/envoy ]; then
    export ENVOY_BIN="$PWD/.tools/envoy-venv/bin/envoy"
fi

files=(
    --file 'harness/src/judge/*.rs'
    --file 'harness/src/observe/envoy_dump/*.rs'
    --file harness/src/observe/probe/classify.rs
    --file harness/src/lanes/model/hostnames.rs
    --file harness/src/lanes/model/translate.rs
    # Tests and golden harnesses are not the code under test.
    --exclude '**/tests.rs'
    --exclude '**/tests/*.rs'
)

exec cargo mutants --no-shuffle \
    --jobs "${MUTANTS_JOBS:-1}" \
    --timeout "${MUTANTS_TIMEOUT:-300}" \
    --cargo-test-arg=--lib \
    "${files[@]}" "$@"
