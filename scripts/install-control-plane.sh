#!/usr/bin/env bash
# Builds the operator lane's control plane from pinned Go modules, into .tools/control-plane/:
#
#   etcd            go.etcd.io/etcd/server/v3       the version Kubernetes names for its release
#   kube-apiserver, k8s.io/kubernetes               the patch release of the node image's minor
#   kube-controller-manager                         (its namespace and garbage-collector controllers)
#   helm            helm.sh/helm/v3                 versions.yaml `helm.version`
#   cilium-operator github.com/cilium/cilium        the exact tag, built as cilium-operator-generic
#   gateway-api     sigs.k8s.io/gateway-api         the CRD bundle versions.yaml pins (not built: its
#                                                   folder in the module cache is recorded)
#   gateway-api-conformance (only with --conformance) the upstream Gateway API conformance suite at
#                   the version the Cilium tag's go.mod names (sigs.k8s.io/gateway-api/conformance,
#                   else sigs.k8s.io/gateway-api), built with `go test -c` as its own test runs it
#   echo-basic      (with the suite) its conformance/echo-basic backend, from the same module: the
#                   program the operator lane's pod stand-in runs for the suite's echo-basic pods
#   coredns         (with the suite, when its base manifests run CoreDNS) github.com/coredns/coredns at
#                   the tag the manifests' image names: the stand-in's program for that pod
#
# for each Cilium version named (default: versions.yaml `default:`). Every build is a module kept
# in the repository under kind-config/control-plane/<component>/<version>/ with its go.mod and
# go.sum, so the source of every binary is pinned and checksummed; nothing of their source is
# copied into the repository. Only the Go module proxy is used. A dependency of a Cilium tag that
# the proxy refuses is substituted only as an issue names it (substitution_rows: the 1.20 line's
# gobgp/v4 and mcs-api/controllers, issue #24), each proved at the tag with `go list -deps` before
# the module is written and before every build, and recorded in substitutions.json beside the
# module and in build.json (`substitutions`).
#
# Idempotent: a binary whose inputs (go.mod, go.sum, Go version, flags) did not change is not
# rebuilt. Each build writes build.json beside its binary (module, version, module sum, inputs
# digest, binary digest, size, build seconds) for the evidence. Prints the control-plane folder
# on its last line.
#
#   scripts/install-control-plane.sh [--conformance] [--no-agent] [CILIUM_VERSION...] [--agent CILIUM_VERSION]...
#   scripts/install-control-plane.sh --update-modules [--conformance] [CILIUM_VERSION...]
#       (maintainers: write the modules for the pins; needs the Go module proxy and the checksum
#       database)
#   scripts/install-control-plane.sh --update-modules --agent CILIUM_VERSION  (the agent's module:
#       go.mod, go.sum and, at 1.20, substitutions.json with the agent's proofs; its Go sources,
#       cilium-agent/src/, and the pin's differences.json are the repository's, written first)
#
# --conformance also builds (or writes the module of), for each version, the conformance suite
# `layout-gate conformance` runs (an extra component: the lanes do not need it);
# --only-conformance builds only that suite (the control plane is left as it is).
#
# Each CILIUM_VERSION's agent is built with it (the operator lane's default agent step is
# Cilium's own agent); --no-agent builds the agent only for the versions --agent names.
# --agent builds, beside the operator's pieces, Cilium's agent control plane composed as Cilium's
# own control-plane suite composes it (cmd/agent-plane; its differences from the suite in the
# pin's differences.json, copied into build.json), the bridge to upstream Envoy (cmd/xds-bridge)
# and a read-only xDS client (cmd/xds-dump): $out/{cilium-agent,xds-bridge,xds-dump}/<version>/.
# The programs are committed once (kind-config/control-plane/cilium-agent/src/) and built with
# the pin's module (-modfile) and build tags; at 1.20 with the operator's two substitutions, the
# gobgp one proved for the agent (scripts/bgp_server_off.py: its gobgp server stays off with the
# lane's cilium-config; scripts/agent-plane-check.sh checks it at run time).
#
# Needs Go >= 1.26 on the PATH (https://go.dev/dl/, or the distribution's golang package).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modules="$root/kind-config/control-plane"
versions="$root/kind-config/versions.yaml"
out="${LAYOUT_GATE_CONTROL_PLANE_DIR:-$root/.tools/control-plane}"

log() { echo "install-control-plane: $*" >&2; }
die() { log "$*"; exit 1; }

update=0
conformance=0
# `--agent VERSION` (repeatable): also build Cilium's agent control plane for that pin
# (kind-config/control-plane/cilium-agent/v<version>/: agent-plane, xds-bridge, xds-dump). Every
# version named is built with its agent unless --no-agent: the agent is the biggest build here
# (about 20 min cold on 2 cores), and a caller that runs only the emulated step (CI's trials at
# the pins other than 1.19.6) leaves it out.
agents=()
no_agent=0
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --update-modules) update=1; shift ;;
    --conformance) conformance=1; shift ;;
    --only-conformance) conformance=2; shift ;;
    --no-agent) no_agent=1; shift ;;
    --agent) [[ $# -ge 2 ]] || die "--agent needs a Cilium version"; agents+=("${2#v}"); shift 2 ;;
    --agent=*) agents+=("${1#--agent=}"); agents[-1]="${agents[-1]#v}"; shift ;;
    --*) die "unknown option $1 (usage: scripts/install-control-plane.sh [--update-modules] [--conformance|--only-conformance] [--no-agent] [CILIUM_VERSION...] [--agent CILIUM_VERSION]...)" ;;
    *) args+=("$1"); shift ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"

command -v go >/dev/null || die "Go is not on the PATH: install Go >= 1.26 (https://go.dev/dl/, Debian: apt-get install golang-1.26) and run again"
go_version="$(go env GOVERSION)"
case "$go_version" in
  go1.2[6-9]*|go1.[3-9][0-9]*) ;;
  *) die "Go $go_version is too old: the pinned Cilium and Kubernetes modules need Go >= 1.26" ;;
esac
command -v python3 >/dev/null || die "python3 is not on the PATH (it reads go's JSON output): install Python 3"
# Never a toolchain download, never a module outside go.sum: what is built is what is committed.
export GOTOOLCHAIN=local CGO_ENABLED=0
if [[ $update -eq 1 ]]; then export GOFLAGS=-mod=mod; else export GOFLAGS=-mod=readonly; fi
# The generic operator's build tags (see the build below); the substitution proofs list packages
# with the same tags, so they see what is linked.
operator_tags="osusergo,ipam_provider_operator"

# --- versions.yaml ---------------------------------------------------------------------------

yaml_default() { sed -n 's/^default:[[:space:]]*\([0-9][0-9.]*\).*/\1/p' "$versions" | head -n1; }
# The value of `key:` in the `cilium:` entry whose version is $1.
yaml_pin_field() {
  awk -v want="$1" -v key="$2" '
    /^cilium:/ { in_list = 1; next }
    in_list && /^[^[:space:]#]/ { in_list = 0 }
    in_list && $1 == "-" && $2 == "version:" { current = $3; next }
    in_list && current == want && $1 == key":" { v = $2; gsub(/"/, "", v); print v; exit }
  ' "$versions"
}
yaml_helm_version() { awk '/^helm:/ { h = 1; next } h && /^[^[:space:]]/ { h = 0 } h && $1 == "version:" { print $2; exit }' "$versions"; }
# The Gateway API version of bundle key $1 (`gateway_api: <key>: version:`).
yaml_bundle_version() {
  awk -v want="$1" '
    /^gateway_api:/ { g = 1; next }
    g && /^[^[:space:]#]/ { g = 0 }
    g && $1 == want":" { in_b = 1; next }
    g && in_b && $1 == "version:" { print $2; exit }
  ' "$versions"
}

# --- helpers ---------------------------------------------------------------------------------

sha256() { sha256sum "$1" | cut -d' ' -f1; }
json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); v=d
for k in sys.argv[1].split("."): v=(v or {}).get(k)
print(v if v is not None else "")' "$1"; }

# The modules a failed `go` call's stderr ($1) says the proxy refused: `path@version (status)`.
refused_modules() {
  grep -oE '[A-Za-z0-9._~/-]+@v[0-9][^: ]*: (reading|verifying) [^ ]+: (403|404|410).*' "$1" \
    | sed -E 's/: (reading|verifying) [^ ]+: / (/; s/$/)/' | sort -u || true
}

# Explains a failed `go` call: every module the proxy does not serve is named exactly.
go_failed() {
  local what="$1" err="$2"
  local missing
  missing="$(refused_modules "$err")"
  if [[ -n "$missing" ]]; then
    log "$what: the Go module proxy does not serve:"
    while IFS= read -r m; do log "  $m"; done <<<"$missing"
    die "$what: cannot build from the Go module proxy (the modules above are refused there)"
  fi
  log "$what failed:"
  tail -n 30 "$err" >&2
  exit 1
}

# `go mod download -json MODULE@VERSION` inside module folder $1; prints the JSON.
mod_json() {
  local dir="$1" mod="$2" err
  err="$(mktemp)"
  if ! (cd "$dir" && go mod download -json "$mod") 2>"$err"; then
    go_failed "downloading $mod" "$err"
  fi
  rm -f "$err"
}

# Builds package $5 (of module $4) in module folder $1 into $out/$2/$3/$6 with tags $7 and
# ldflags $8; extra build.json fields as JSON object text in $9. build_src (set by the caller for
# this call): the folder holding the package's sources, built with -modfile=$1/go.mod (the agent's
# programs, committed once for every pin).
build() {
  local dir="$1" component="$2" version="$3" pkg_module="$4" pkg="$5" binary="$6" tags="$7" ldflags="$8" extra="${9:-{\}}"
  [[ -f "$dir/go.mod" && -f "$dir/go.sum" ]] || die "no pinned module for $component $version in ${dir#"$root"/}: run scripts/install-control-plane.sh --update-modules"
  local dest="$out/$component/$version"
  local inputs
  # The module's own Go files (the conformance suite's one-line test at its root; the agent's
  # sources under cmd/ and internal/) are inputs too. A module with neither keeps the digest it had.
  local own_go src_dir="${build_src:-$dir}" modfile=()
  [[ -n "${build_src:-}" ]] && modfile=("-modfile=$dir/go.mod")
  own_go="$(find "$src_dir" -maxdepth 1 -name '*.go' | sort)"
  inputs="$( { cat "$dir/go.mod" "$dir/go.sum"; if [[ -f "$dir/substitutions.json" ]]; then cat "$dir/substitutions.json"; fi; if [[ -n "$own_go" ]]; then xargs cat <<<"$own_go"; fi
    find "$src_dir" -mindepth 2 -name '*.go' -not -name '*_test.go' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sed "s#  $src_dir/#  #"; echo "$go_version $(go env GOOS)/$(go env GOARCH) tags=$tags ldflags=$ldflags pkg=$pkg"; } | sha256sum | cut -d' ' -f1)"
  if [[ -x "$dest/$binary" && -f "$dest/build.json" ]] \
     && [[ "$(json_field inputs_sha256 < "$dest/build.json")" == "$inputs" ]] \
     && [[ "$(json_field binary_sha256 < "$dest/build.json")" == "$(sha256 "$dest/$binary")" ]]; then
    log "$component $version: up to date ($dest/$binary)"
    return 0
  fi
  mkdir -p "$dest"
  log "$component $version: downloading modules"
  local err
  err="$(mktemp)"
  (cd "$dir" && go mod download) 2>"$err" || go_failed "$component $version: go mod download" "$err"
  # build_mode=test (set by the caller for this call): the package's test binary (`go test -c`),
  # for the conformance suite, which upstream runs as a Go test.
  local verb=build
  if [[ "${build_mode:-}" == "test" ]]; then verb="test -c"; fi
  log "$component $version: go $verb $pkg (tags: ${tags:-none}); a cold build takes minutes"
  local start end
  start="$(date +%s)"
  # shellcheck disable=SC2086 # $verb is `build` or `test -c`
  (cd "$src_dir" && go $verb "${modfile[@]+"${modfile[@]}"}" -trimpath -tags "$tags" -ldflags "$ldflags" -o "$dest/$binary.tmp" "$pkg") 2>"$err" \
    || go_failed "$component $version: go $verb" "$err"
  end="$(date +%s)"
  rm -f "$err"
  mv -f "$dest/$binary.tmp" "$dest/$binary"
  local module mversion msum
  module="$(cd "$dir" && go list -m -f '{{.Path}}' "$pkg_module")"
  mversion="$(cd "$dir" && go list -m -f '{{.Version}}' "$pkg_module")"
  msum="$(awk -v m="$module" -v v="$mversion" '$1 == m && $2 == v { print $3; exit }' "$dir/go.sum")"
  # Values go through the environment, never into Python source: ldflags hold quotes.
  BJ_COMPONENT="$component" BJ_VERSION="$version" BJ_BINARY="$binary" BJ_PACKAGE="$pkg" BJ_MODULE="$module" \
  BJ_MODULE_VERSION="$mversion" BJ_MODULE_SUM="$msum" BJ_MODULE_FOLDER="${dir#"$root"/}" BJ_GO="$go_version" BJ_TAGS="$tags" \
  BJ_LDFLAGS="$ldflags" BJ_INPUTS="$inputs" BJ_BINARY_SHA256="$(sha256 "$dest/$binary")" BJ_BYTES="$(stat -c %s "$dest/$binary")" \
  BJ_SECONDS="$((end - start))" BJ_EXTRA="$extra" python3 - "$dest/build.json.tmp" <<'PY'
import json, os, sys
e = os.environ
doc = {
    "component": e["BJ_COMPONENT"],
    "version": e["BJ_VERSION"],
    "binary": e["BJ_BINARY"],
    "package": e["BJ_PACKAGE"],
    "module": e["BJ_MODULE"],
    "module_version": e["BJ_MODULE_VERSION"],
    "module_sum": e["BJ_MODULE_SUM"],
    "module_folder": e["BJ_MODULE_FOLDER"],
    "go": e["BJ_GO"],
    "tags": e["BJ_TAGS"],
    "ldflags": e["BJ_LDFLAGS"],
    "inputs_sha256": e["BJ_INPUTS"],
    "binary_sha256": e["BJ_BINARY_SHA256"],
    "bytes": int(e["BJ_BYTES"]),
    "build_seconds": int(e["BJ_SECONDS"]),
}
doc.update(json.loads(e["BJ_EXTRA"]))
with open(sys.argv[1], "w") as f:
    json.dump(doc, f, indent=2, sort_keys=True)
    f.write("\n")
PY
  mv -f "$dest/build.json.tmp" "$dest/build.json"
  log "$component $version: built in $((end - start)) s, $(( $(stat -c %s "$dest/$binary") / 1048576 )) MiB"
}

# --- the modules -------------------------------------------------------------------------------

# Writes go.mod for a module folder (header comments, the requirement, replaces, the tool if any), then
# fills go.sum: first with the pinned module's own go.sum lines (its authors' checksums), then
# `go mod tidy` for whatever else the build needs. tidy_src (set by the caller for this call): the
# folder of the sources the module builds, tidied with -modfile=$1/go.mod (the agent's).
write_module() {
  local dir="$1" header="$2" require="$3" replaces="$4" tool="$5" seed_sum="${6:-}"
  mkdir -p "$dir"
  {
    printf '%s\n' "$header" | sed 's#^#// #'
    echo "module layout-gate.local/control-plane/$(basename "$(dirname "$dir")")"
    echo
    echo "go 1.25.0"
    echo
    echo "require $require"
    if [[ -n "$replaces" ]]; then
      echo
      printf '%s\n' "$replaces"
    fi
    if [[ -n "$tool" ]]; then
      echo
      echo "tool $tool"
    fi
  } >"$dir/go.mod"
  : >"$dir/go.sum"
  if [[ -n "$seed_sum" ]]; then cp "$seed_sum" "$dir/go.sum"; fi
  local err
  err="$(mktemp)"
  # Modules the checksum database has not seen (Cilium's forks) are verified against the seeded
  # go.sum lines, which come from the pinned module's own go.sum.
  rm -f "$dir/blocked"
  local tidy_dir="${tidy_src:-$dir}" modfile=()
  [[ -n "${tidy_src:-}" ]] && modfile=("-modfile=$dir/go.mod")
  if ! (cd "$tidy_dir" && GONOSUMDB="${GONOSUMDB:-github.com/cilium/*}" go mod tidy "${modfile[@]+"${modfile[@]}"}") 2>"$err"; then
    local missing
    missing="$(refused_modules "$err")"
    [[ -n "$missing" ]] || go_failed "go mod tidy in ${dir#"$root"/}" "$err"
    # A dependency the proxy refuses: no module is kept, and `blocked` says exactly why, for the
    # build (and the operator lane) to repeat.
    rm -f "$dir/go.mod" "$dir/go.sum" "$err"
    {
      echo "# Written by scripts/install-control-plane.sh --update-modules on $(date -u +%Y-%m-%d): this build's"
      echo "# dependencies include modules the Go module proxy refuses, so it cannot be built from the proxy."
      printf '%s\n' "$missing"
    } >"$dir/blocked"
    log "${dir#"$root"/}: blocked, the Go module proxy does not serve:"
    while IFS= read -r m; do log "  $m"; done <<<"$missing"
    return 0
  fi
  rm -f "$err"
  log "wrote ${dir#"$root"/}/go.mod and go.sum"
}

# --- substitutions -------------------------------------------------------------------------------
#
# A module a tag requires that the Go module proxy does not serve is replaced only as an issue of
# this project names it (issue #24), one line each: module | the version the tag requires | the
# served version used instead | the Cilium tag whose go.sum gives its checksums ("-": the
# checksum database) | why | why, for the agent's module ("-": the same). A row applies to a tag only when the tag requires exactly that
# version, so a future tag that moves either dependency is built from the proxy or blocked, never
# substituted by accident. Every substitution is proved at each tag (prove_substitutions) and
# recorded in build.json and the operator lane's evidence.
substitution_rows() {
  cat <<'EOF'
github.com/osrg/gobgp/v4|v4.6.1-0.20260630022313-d6dee8360046|v4.7.0|-|the proxy refuses the tag's pseudo-version; v4.7.0 is the release published the same day (2026-06-30) that the proxy serves. The operator links only gobgp's pkg/packet/bgp (through operator/pkg/bgp and pkg/bgp/types), and no package of Gateway API translation (operator/pkg/gateway-api, operator/pkg/model, pkg/ciliumenvoyconfig) imports gobgp at all|the proxy refuses the tag's pseudo-version; v4.7.0 is the release published the same day (2026-06-30) that the proxy serves. The agent links gobgp's BGP server (pkg/bgp/gobgp, through Cilium's BGP control plane cell), which Cilium creates only with enable-bgp-control-plane on; the proof shows from the tag's source that it stays off with the lane's cilium-config (scripts/bgp_server_off.py), and scripts/agent-plane-check.sh shows at run time that no gobgp server runs
sigs.k8s.io/mcs-api/controllers|v0.5.2|v0.0.0-20260403094305-4b9911b73f14|1.19.7|the proxy refuses v0.5.2; this is the version every Cilium 1.19.x pins (checksums from cilium@v1.19.7:go.sum). Cilium uses one identifier of it, the constant DerivedServiceAnnotation (operator/pkg/gateway-api/helpers/serviceimport.go and pkg/clustermesh/mcsapi), whose value is the same in both versions|-
EOF
}

# The rows that apply to the Cilium module folder $1 (its go.mod's requirements), with the
# agent's why when $2 is "agent".
substitutions_for() {
  local src="$1" for="${2:-}" module refused substitute sums why agent_why
  while IFS='|' read -r module refused substitute sums why agent_why; do
    if [[ "$for" == agent && "$agent_why" != "-" ]]; then why="$agent_why"; fi
    if grep -qE "^[[:space:]]*(require[[:space:]]+)?$module[[:space:]]+$refused([[:space:]]|$)" "$src/go.mod"; then
      printf '%s|%s|%s|%s|%s\n' "$module" "$refused" "$substitute" "$sums" "$why"
    fi
  done < <(substitution_rows)
}

# Proves, in module folder $1 (built with tags $2, Cilium's source at $3), that every substitution
# in $1/substitutions.json changes no code Gateway API reaches:
#   gobgp: no package of operator/pkg/gateway-api/..., operator/pkg/model/... or
#     pkg/ciliumenvoyconfig imports any gobgp package, directly or not (`go list -deps`);
#   mcs-api/controllers: every package of the operator that imports it uses only the identifier
#     DerivedServiceAnnotation, and its value in the substitute is the annotation Cilium's own
#     documentation and Gateway API fixtures at the tag name (v0.5.2's source is not served).
# On success rewrites each entry's `proof`; on failure names the package and exits non-zero.
prove_substitutions() {
  local dir="$1" tags="$2" src="$3"
  [[ -f "$dir/substitutions.json" ]] || return 0
  local roots deps err
  err="$(mktemp)"
  deps="$(mktemp)"
  roots="$(cd "$dir" && go list -tags "$tags" -f '{{.ImportPath}}' \
    github.com/cilium/cilium/operator/pkg/gateway-api/... github.com/cilium/cilium/operator/pkg/model/... \
    github.com/cilium/cilium/pkg/ciliumenvoyconfig 2>"$err")" || go_failed "go list (the packages Gateway API translation is made of) in ${dir#"$root"/}" "$err"
  # shellcheck disable=SC2086 # one argument per package
  (cd "$dir" && go list -deps -tags "$tags" -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}' \
    github.com/cilium/cilium/operator $roots) >"$deps" 2>"$err" || go_failed "go list -deps in ${dir#"$root"/}" "$err"
  local mcs_dir
  mcs_dir="$(cd "$dir" && go list -m -f '{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}' sigs.k8s.io/mcs-api/controllers 2>/dev/null || true)"
  rm -f "$err"
  # The package list is megabytes: read from a file, not the environment.
  local proved=0
  PROVE_ROOTS="$roots" PROVE_DEPS="$deps" PROVE_SRC="$src" PROVE_MCS_DIR="$mcs_dir" \
    python3 "$root/scripts/prove-substitutions.py" "$dir/substitutions.json" || proved=$?
  rm -f "$deps"
  return "$proved"
}

# What a module built from github.com/cilium/cilium@v$1 needs, into the caller's variables: src
# (the tag's folder), replaces (Cilium's own, then each substitution with its reason), subs (the
# substitution rows that apply; their agent's why when $2 is "agent"), seed (a go.sum to start
# from: the tag's, plus the substitutes' checksums; the caller removes it) and note (for the
# go.mod header).
cilium_module_parts() {
  local v="$1" info
  info="$(cd /tmp && go mod download -json "github.com/cilium/cilium@v$v")" || go_failed "downloading github.com/cilium/cilium@v$v" /dev/null
  src="$(json_field Dir <<<"$info")"
  [[ -n "$src" ]] || die "the Go module proxy does not serve github.com/cilium/cilium@v$v"
  replaces="$(awk '/^replace[[:space:]]*\(/ { b = 1; next } b && /^\)/ { b = 0; next } b { print "replace " $0; next } /^replace / { print }' "$src/go.mod" | sed 's/^replace[[:space:]]*/replace /')"
  # The substitutions that apply to this tag: a replace each with its reason above it, and the
  # substitute's checksums from the Cilium tag the row names (else the checksum database's).
  note=""
  subs="$(substitutions_for "$src" "${2:-}")"
  seed="$(mktemp)"
  cp "$src/go.sum" "$seed"
  if [[ -n "$subs" ]]; then
    note="
Substituted (issue #24; each proved at the tag by the script, see substitutions.json):"
    local module refused substitute sums why
    while IFS='|' read -r module refused substitute sums why; do
      note+="
  $module $refused -> $substitute"
      replaces+="

// Substituted (issue #24): $module $refused -> $substitute: because
$(fold -s -w 96 <<<"$why" | sed 's#^#// #')
replace $module => $module $substitute"
      if [[ "$sums" != "-" ]]; then
        local sinfo ssrc
        sinfo="$(cd /tmp && go mod download -json "github.com/cilium/cilium@v$sums")" || go_failed "downloading github.com/cilium/cilium@v$sums" /dev/null
        ssrc="$(json_field Dir <<<"$sinfo")"
        grep -E "^$module $substitute(/go.mod)? " "$ssrc/go.sum" >>"$seed" \
          || die "cilium@v$sums:go.sum has no checksum for $module $substitute"
      fi
    done <<<"$subs"
  fi
}

update_operator() {
  local v="$1" dir="$modules/cilium-operator/v$1"
  local src replaces subs seed note
  cilium_module_parts "$v"
  rm -f "$dir/substitutions.json"
  write_module "$dir" "cilium-operator-generic at github.com/cilium/cilium v$v. Written by scripts/install-control-plane.sh --update-modules.
The replace directives are Cilium's own (cilium@v$v:go.mod): a dependency's replaces do not apply
to the module that requires it, so the build needs them here. go.sum starts from cilium@v$v:go.sum.$note" \
    "github.com/cilium/cilium v$v" "$replaces" "github.com/cilium/cilium/operator" "$seed"
  rm -f "$seed"
  [[ -n "$subs" && -f "$dir/go.mod" ]] || return 0
  write_substitutions "$dir/substitutions.json" "$subs"
  prove_substitutions "$dir" "$operator_tags" "$src" || {
    rm -f "$dir/go.mod" "$dir/go.sum" "$dir/substitutions.json"
    die "cilium-operator $v: a substitution no longer holds at the tag (above); no module written"
  }
}

# substitutions.json ($1) of the rows $2 (substitutions_for's lines), each proof still empty.
write_substitutions() {
  SUBS="$2" python3 - "$1" <<'PY'
import json, os, sys
rows = []
for line in os.environ["SUBS"].splitlines():
    module, version, substitute, sums, why = line.split("|", 4)
    rows.append({"module": module, "version": version, "substitute": substitute,
                 "checksums": "the checksum database" if sums == "-" else f"cilium@v{sums}:go.sum",
                 "why": why, "proof": ""})
with open(sys.argv[1], "w") as f:
    json.dump(rows, f, indent=2)
    f.write("\n")
PY
}

# --- the agent (--agent) ---------------------------------------------------------------------------
#
# The agent's programs are committed once, in kind-config/control-plane/cilium-agent/src/ (a Go
# tree whose go.mod only marks its root); each pin's folder v<version>/ holds its module (go.mod,
# go.sum), its differences.json (what it composes, every difference from Cilium's control-plane
# suite at the tag, the build tags that pick the tag's API in src/cmd/agent-plane/api_*.go, and the
# digest of the suite's agent.go those were read against) and, at 1.20, substitutions.json. Every
# go command builds src/ with -modfile=v<version>/go.mod.
agent_src="$modules/cilium-agent/src"

# The build tags differences.json $1 names for agent-plane (comma-separated; may be empty).
agent_tags() { python3 -c 'import json, sys; print(",".join(json.load(open(sys.argv[1])).get("tags", [])))' "$1"; }

# The suite's agent.go at the tag (Cilium's source in $1) must be the one the pin's
# differences.json ($2) was read against: a tag that composes the agent differently is refused
# until its differences (and api_*.go) are read again.
check_agent_suite() {
  local src="$1" diffs="$2" want got
  want="$(json_field suite_sha256 < "$diffs")"
  [[ -f "$src/test/controlplane/suite/agent.go" ]] || die "${src}: no test/controlplane/suite/agent.go: the agent's composition has nothing to follow at this tag"
  got="$(sha256 "$src/test/controlplane/suite/agent.go")"
  [[ -n "$want" && "$want" == "$got" ]] || die "${diffs#"$root"/}: suite_sha256 ${want:-missing}, but the tag's test/controlplane/suite/agent.go is $got: read it against the composition (src/cmd/agent-plane) and this pin's differences again, then record its digest"
}

# A copy of src/ in $2 with only the files the build tags $1 select (go mod tidy reads every file
# whatever its tags, and a file for another pin's API imports packages this tag does not have).
agent_tree() {
  local tags="$1" dest="$2" excluded
  cp -r "$agent_src/." "$dest/"
  excluded="$(cd "$agent_src" && GOFLAGS=-mod=mod GOPROXY=off go list -e -tags "$tags" -f '{{$d := .Dir}}{{range .IgnoredGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' ./... 2>/dev/null)"
  while IFS= read -r f; do
    [[ -n "$f" ]] && rm -f "$dest/${f#"$agent_src"/}"
  done <<<"$excluded"
  return 0
}

# Proves the agent's substitutions (module folder $1, agent-plane's build tags $2, Cilium's source
# at $3): the operator's proofs over agent-plane's packages, with Gateway API's agent side
# (pkg/ciliumenvoyconfig, pkg/envoy/...) as the roots that must not reach gobgp, and, since the
# agent links gobgp's server, bgp_server_off.py's proof that the server stays disabled.
prove_agent_substitutions() {
  local dir="$1" tags="$2" src="$3" roots deps err tree proved=0
  [[ -f "$dir/substitutions.json" ]] || return 0
  tree="$(mktemp -d)"
  agent_tree "$tags" "$tree"
  err="$(mktemp)"
  deps="$(mktemp)"
  roots="$(cd "$tree" && go list -modfile="$dir/go.mod" -tags "$tags" -f '{{.ImportPath}}' \
    github.com/cilium/cilium/pkg/ciliumenvoyconfig github.com/cilium/cilium/pkg/envoy/... 2>"$err")" || go_failed "go list (the agent's Envoy side) for ${dir#"$root"/}" "$err"
  # shellcheck disable=SC2086 # one argument per package
  (cd "$tree" && go list -modfile="$dir/go.mod" -deps -tags "$tags" -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}' \
    ./cmd/agent-plane $roots) >"$deps" 2>"$err" || go_failed "go list -deps (agent-plane) for ${dir#"$root"/}" "$err"
  local mcs_dir
  mcs_dir="$(cd "$dir" && go list -m -f '{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}' sigs.k8s.io/mcs-api/controllers 2>/dev/null || true)"
  rm -rf "$err" "$tree"
  PROVE_ROOTS="$roots" PROVE_DEPS="$deps" PROVE_SRC="$src" PROVE_MCS_DIR="$mcs_dir" \
    PROVE_MAIN=layout-gate.local/control-plane/cilium-agent/cmd/agent-plane PROVE_ROOT_NAMES="pkg/ciliumenvoyconfig|pkg/envoy/..." \
    PROVE_VALUES="$root/kind-config/cilium-values.yaml" \
    python3 "$root/scripts/prove-substitutions.py" "$dir/substitutions.json" || proved=$?
  rm -f "$deps"
  return "$proved"
}

# The agent's module: the tag's requirement, Cilium's own replaces, go.sum from the tag's, tidied
# over src/ as the pin's build tags select it; at 1.20 the operator's two substitutions, each
# proved for the agent before the module is kept.
update_agent() {
  local v="$1" dir="$modules/cilium-agent/v$1"
  local src replaces subs seed note tags tree
  [[ -f "$agent_src/cmd/agent-plane/main.go" ]] || die "${agent_src#"$root"/}/cmd/agent-plane/main.go is missing: the agent's module is written around its sources"
  [[ -f "$dir/differences.json" ]] || die "${dir#"$root"/}/differences.json is missing: write it first (what the pin composes, its differences from cilium@v$v:test/controlplane/suite/agent.go, its build tags)"
  tags="$(agent_tags "$dir/differences.json")"
  cilium_module_parts "$v" agent
  check_agent_suite "$src" "$dir/differences.json"
  rm -f "$dir/substitutions.json"
  tree="$(mktemp -d)"
  agent_tree "$tags" "$tree"
  tidy_src="$tree" write_module "$dir" "Cilium's agent control plane (cmd/agent-plane, composed as cilium@v$v:test/controlplane/suite/agent.go
composes it), the bridge to upstream Envoy (cmd/xds-bridge) and an xDS client (cmd/xds-dump), at
github.com/cilium/cilium v$v; their sources are ../src/, built with -modfile=<this file>.
Written by scripts/install-control-plane.sh --update-modules --agent.
The replace directives are Cilium's own (cilium@v$v:go.mod): a dependency's replaces do not apply
to the module that requires it, so the build needs them here. go.sum starts from cilium@v$v:go.sum.$note" \
    "github.com/cilium/cilium v$v" "$replaces" "" "$seed"
  rm -rf "$seed" "$tree"
  [[ -n "$subs" && -f "$dir/go.mod" ]] || return 0
  write_substitutions "$dir/substitutions.json" "$subs"
  prove_agent_substitutions "$dir" "osusergo${tags:+,$tags}" "$src" || {
    rm -f "$dir/go.mod" "$dir/go.sum" "$dir/substitutions.json"
    die "cilium-agent $v: a substitution is not proved for the agent at the tag (above); no module written"
  }
}

update_kubernetes() {
  local tag="$1" dir="$modules/kubernetes/$1"
  local minor="${tag%.*}" patch="${tag##*.}" served="" info src
  # The node image's patch release, or the nearest earlier one of its minor the proxy serves.
  for ((p = patch; p >= 0; p--)); do
    if info="$(cd /tmp && go mod download -json "k8s.io/kubernetes@$minor.$p" 2>/dev/null)" && [[ -n "$(json_field Dir <<<"$info")" ]]; then
      served="$minor.$p"
      break
    fi
  done
  [[ -n "$served" ]] || die "the Go module proxy serves no k8s.io/kubernetes $minor.x up to $tag"
  [[ "$served" == "$tag" ]] || log "k8s.io/kubernetes@$tag is not served; building the nearest served patch release $served (recorded in go.mod)"
  src="$(json_field Dir <<<"$info")"
  local staging="v0.${minor#v1.}.${served##*.}"
  local etcd
  etcd="$(awk '/- name: "etcd"$/ { e = 1; next } e && $1 == "version:" { print "v" $2; exit }' "$src/build/dependencies.yaml")"
  [[ -n "$etcd" ]] || die "no etcd version in k8s.io/kubernetes@$served:build/dependencies.yaml"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with its own
  # staging folders (kubernetes/kubernetes#79384): a module that builds it replaces each with the
  # published release of the same patch.
  local replaces
  replaces="replace ($(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\n\t\1 => \1 '"$staging"'#p' "$src/go.mod" | tr -d '\r')
)"
  write_module "$dir" "kube-apiserver and kube-controller-manager for the node image's Kubernetes $tag: k8s.io/kubernetes $served.
etcd: $etcd (k8s.io/kubernetes@$served:build/dependencies.yaml)
Written by scripts/install-control-plane.sh --update-modules; go.sum starts from k8s.io/kubernetes@$served:go.sum." \
    "k8s.io/kubernetes $served" "$replaces" "(
	k8s.io/kubernetes/cmd/kube-apiserver
	k8s.io/kubernetes/cmd/kube-controller-manager
)" "$src/go.sum"
}

update_simple() {
  local component="$1" version="$2" module="$3" tool="$4" why="$5"
  local dir="$modules/$component/$version"
  local info src
  info="$(cd /tmp && go mod download -json "$module@$version")" || die "the Go module proxy does not serve $module@$version"
  src="$(json_field Dir <<<"$info")"
  local seed=""
  [[ -f "$src/go.sum" ]] && seed="$src/go.sum"
  write_module "$dir" "$component $version: $module $version ($why).
Written by scripts/install-control-plane.sh --update-modules." "$module $version" "" "$tool" "$seed"
}

# The Gateway API CRDs are read, not built: a module that requires the bundle's version, with the
# two checksums the proxy and the checksum database gave for it.
update_crds() {
  local version="$1" dir="$modules/gateway-api/$1" info
  info="$(cd /tmp && go mod download -json "sigs.k8s.io/gateway-api@$version")" || die "the Go module proxy does not serve sigs.k8s.io/gateway-api@$version"
  mkdir -p "$dir"
  printf '%s\n' "// The Gateway API CRD bundle $version, read from config/crd/ of the module (not downloaded from a" \
    "// release page). Written by scripts/install-control-plane.sh --update-modules." \
    "module layout-gate.local/control-plane/gateway-api" "" "go 1.25.0" "" "require sigs.k8s.io/gateway-api $version" >"$dir/go.mod"
  printf 'sigs.k8s.io/gateway-api %s %s\nsigs.k8s.io/gateway-api %s/go.mod %s\n' \
    "$version" "$(json_field Sum <<<"$info")" "$version" "$(json_field GoModSum <<<"$info")" >"$dir/go.sum"
  log "wrote ${dir#"$root"/}/go.mod and go.sum"
}

# --- the conformance suite (--conformance) -------------------------------------------------------
#
# The suite a Cilium tag builds its own conformance test against: the version of
# sigs.k8s.io/gateway-api/conformance its go.mod requires (a module of its own from v1.5), else of
# sigs.k8s.io/gateway-api (the suite is its conformance/ package). Prints
# `suite_version|requirement`, the requirements as the tag's go.mod has them.
conformance_of() {
  local src="$1" api suite
  api="$(awk '$1 == "sigs.k8s.io/gateway-api" { print $2; exit }' "$src/go.mod")"
  suite="$(awk '$1 == "sigs.k8s.io/gateway-api/conformance" { print $2; exit }' "$src/go.mod")"
  [[ -n "$api" ]] || die "$src/go.mod requires no sigs.k8s.io/gateway-api: no conformance suite to build"
  if [[ -n "$suite" ]]; then
    printf '%s|(\n\tsigs.k8s.io/gateway-api %s\n\tsigs.k8s.io/gateway-api/conformance %s\n)\n' "$suite" "$api" "$suite"
  else
    printf '%s|sigs.k8s.io/gateway-api %s\n' "$api" "$api"
  fi
}

# The module's one Go file. Upstream's own conformance_test.go runs the suite with
# conformance.RunConformance (every option from the suite's own flags), and so does this one; it
# exists only so that `go test -c` builds the suite inside this pinned module.
conformance_test_go() {
  cat <<'EOF'
// The upstream Gateway API conformance suite, run exactly as upstream's own conformance_test.go
// runs it: conformance.RunConformance takes every option from the suite's own flags. Nothing of
// the suite is copied; this file only lets `go test -c` build it inside this pinned module.
// Written by scripts/install-control-plane.sh --update-modules --conformance.
package conformance_test

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

func TestConformance(t *testing.T) {
	conformance.RunConformance(t)
}
EOF
}

update_conformance() {
  local v="$1" info src row suite require dir seed module
  info="$(cd /tmp && go mod download -json "github.com/cilium/cilium@v$v")" || die "the Go module proxy does not serve github.com/cilium/cilium@v$v"
  src="$(json_field Dir <<<"$info")"
  row="$(conformance_of "$src")"
  suite="${row%%|*}"
  require="${row#*|}"
  dir="$modules/gateway-api-conformance/$suite"
  mkdir -p "$dir"
  conformance_test_go >"$dir/suite_test.go"
  # go.sum starts from the suite module's own go.sum (its authors' checksums).
  module=sigs.k8s.io/gateway-api
  if [[ "$require" == *"gateway-api/conformance"* ]]; then module=sigs.k8s.io/gateway-api/conformance; fi
  seed="$(cd /tmp && go mod download -json "$module@$suite" | json_field Dir)/go.sum"
  write_module "$dir" "The Gateway API conformance suite $suite ($module): the version cilium@v$v:go.mod requires
(Cilium's own conformance test, operator/pkg/gateway-api/conformance_test.go, is built against it).
Written by scripts/install-control-plane.sh --update-modules --conformance; go.sum starts from $module@$suite:go.sum." \
    "$require" "" "" "$seed"
  update_coredns "$(mod_json "$dir" "$module@$suite" | json_field Dir)"
}

# The CoreDNS release the suite's base manifests run (registry.k8s.io/coredns/coredns:<tag>; suite
# folder $1), or nothing when they run none. Every suite version needs it: from v1.5 the status
# run's setup refuses a namespace without pods (utils/kubernetes/helpers.go, "No pods deployed
# yet"), and `conformance --traffic` runs every pod of the base manifests at every version, whose
# setup then waits for each to be Ready (v1.4.0-rc.2's too).
coredns_of() {
  local suite_dir="$1" manifests
  [[ -f "$suite_dir/base/manifests.yaml" ]] || suite_dir="$suite_dir/conformance"
  manifests="$suite_dir/base/manifests.yaml"
  sed -n 's#^[[:space:]]*image:[[:space:]]*registry.k8s.io/coredns/coredns:\(v[0-9][0-9.]*\)[[:space:]]*$#\1#p' "$manifests" | head -n1
}

# The module that builds CoreDNS at the release the suite's base manifests name (suite folder $1):
# its coredns Deployment is a pod the suite's setup waits for, and the operator lane's pod
# stand-in runs this program for its image.
update_coredns() {
  local tag
  tag="$(coredns_of "$1")"
  [[ -n "$tag" ]] || return 0
  update_simple coredns "$tag" github.com/coredns/coredns github.com/coredns/coredns \
    "the image registry.k8s.io/coredns/coredns:$tag the conformance suite's base manifests run"
}

# Builds the suite cilium@v$1 names (the tag's source in $2) into $out/gateway-api-conformance/<suite>/,
# its build.json naming the suite's source folder (`suite_dir`: its tests/ are read by the command).
build_conformance() {
  local v="$1" src="$2" row suite dir module suite_dir
  row="$(conformance_of "$src")"
  suite="${row%%|*}"
  dir="$modules/gateway-api-conformance/$suite"
  [[ -f "$dir/go.mod" && -f "$dir/suite_test.go" ]] || die "no pinned module builds the conformance suite $suite (cilium@v$v:go.mod): run scripts/install-control-plane.sh --update-modules --conformance $v"
  module=sigs.k8s.io/gateway-api
  if [[ "${row#*|}" == *"gateway-api/conformance"* ]]; then module=sigs.k8s.io/gateway-api/conformance; fi
  suite_dir="$(mod_json "$dir" "$module@$suite" | json_field Dir)"
  [[ "$module" == */conformance ]] || suite_dir="$suite_dir/conformance"
  [[ -d "$suite_dir/tests" ]] || die "$module@$suite has no conformance tests folder ($suite_dir/tests)"
  build_mode="test" build "$dir" gateway-api-conformance "$suite" "$module" layout-gate.local/control-plane/gateway-api-conformance \
    gateway-api-conformance "" "-s -w" "{\"suite_dir\": \"$suite_dir\"}"
  # The suite's own backend, the program its manifests' echo-basic image runs
  # (conformance/echo-basic, package main, in the same module at the same version): the operator
  # lane's pod stand-in runs it for each of the suite's pods, so it is built from the suite's
  # module, pinned by the same go.mod and go.sum, never pulled as an image.
  build "$dir" echo-basic "$suite" "$module" sigs.k8s.io/gateway-api/conformance/echo-basic echo-basic "" "-s -w" \
    "{\"image\": \"registry.k8s.io/gateway-api/echo-basic\"}"
  # CoreDNS, when the suite's base manifests run it (its setup waits for that pod too).
  local coredns
  coredns="$(coredns_of "$suite_dir")"
  if [[ -n "$coredns" ]]; then
    [[ -f "$modules/coredns/$coredns/go.mod" ]] || die "no pinned module builds CoreDNS $coredns (the suite $suite's base manifests run it): run scripts/install-control-plane.sh --update-modules --only-conformance $v"
    build "$modules/coredns/$coredns" coredns "$coredns" github.com/coredns/coredns github.com/coredns/coredns coredns "" "-s -w" \
      "{\"image\": \"registry.k8s.io/coredns/coredns:$coredns\"}"
  fi
}

# --- what to build -------------------------------------------------------------------------------

wanted=("$@")
if [[ ${#wanted[@]} -eq 0 && ${#agents[@]} -gt 0 ]]; then
  # `--agent V` alone: the agent's own version's control plane (the lane runs them together).
  wanted=("${agents[@]}")
elif [[ ${#wanted[@]} -eq 0 ]]; then
  d="$(yaml_default)"
  [[ -n "$d" ]] || die "no default: in ${versions#"$root"/}"
  wanted=("$d")
fi

# Each version's agent with it, unless --no-agent (or only the suite is built, or the modules
# written: an agent's module is written only when --agent names it).
if [[ $update -eq 0 && $no_agent -eq 0 && $conformance -ne 2 ]]; then
  for v in "${wanted[@]}"; do
    [[ " ${agents[*]+"${agents[*]}"} " == *" $v "* ]] || agents+=("$v")
  done
fi

helm_version="$(yaml_helm_version)"
[[ -n "$helm_version" ]] || die "no helm: version: in ${versions#"$root"/}"

blocked=()
for v in "${wanted[@]}"; do
  v="${v#v}"
  node="$(yaml_pin_field "$v" node_image)"
  [[ -n "$node" ]] || die "Cilium $v is not pinned in ${versions#"$root"/} (no cilium: entry with a node_image); pin it there first"
  k8s_tag="$(sed -n 's#^[^:]*:\(v[0-9]*\.[0-9]*\.[0-9]*\)@.*#\1#p' <<<"$node")"
  [[ -n "$k8s_tag" ]] || die "Cilium $v: cannot read a Kubernetes version from node_image $node"
  bundle="$(yaml_pin_field "$v" gateway_api)"
  gw_version="$(yaml_bundle_version "$bundle")"
  [[ -n "$gw_version" ]] || die "Cilium $v: no version for Gateway API bundle $bundle in ${versions#"$root"/}"

  if [[ $update -eq 1 && $conformance -eq 2 ]]; then
    update_conformance "$v"
    continue
  fi
  if [[ $conformance -eq 2 ]]; then
    op_dir="$modules/cilium-operator/v$v"
    [[ -f "$op_dir/go.mod" ]] || die "no pinned module for cilium-operator $v (its go.mod names the Cilium tag whose go.mod names the suite)"
    build_conformance "$v" "$(mod_json "$op_dir" "github.com/cilium/cilium@v$v" | json_field Dir)"
    continue
  fi
  if [[ $update -eq 1 ]]; then
    update_operator "$v"
    if [[ -f "$modules/cilium-operator/v$v/blocked" ]]; then
      blocked+=("$v")
      continue
    fi
    update_kubernetes "$k8s_tag"
    etcd_version="$(sed -n 's#^// etcd: \(v[0-9.]*\) .*#\1#p' "$modules/kubernetes/$k8s_tag/go.mod")"
    update_simple etcd "$etcd_version" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 "the release k8s.io/kubernetes names"
    update_simple helm "$helm_version" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "versions.yaml helm.version"
    update_crds "$gw_version"
    if [[ $conformance -ne 0 ]]; then update_conformance "$v"; fi
    continue
  fi

  # Before building anything for it.
  op_dir="$modules/cilium-operator/v$v"
  if [[ -f "$op_dir/blocked" ]]; then
    log "cilium-operator $v cannot be built from the Go module proxy (${op_dir#"$root"/}/blocked); it refuses:"
    grep -v '^#' "$op_dir/blocked" | while IFS= read -r m; do log "  $m"; done
    die "cilium-operator $v: blocked (run --update-modules $v again once the proxy serves them)"
  fi
  api_dir="$modules/kubernetes/$k8s_tag"
  [[ -f "$api_dir/go.mod" ]] || die "no pinned module builds kube-apiserver for Kubernetes $k8s_tag (Cilium $v's node image): run scripts/install-control-plane.sh --update-modules $v"
  etcd_version="$(sed -n 's#^// etcd: \(v[0-9.]*\) .*#\1#p' "$api_dir/go.mod")"
  [[ -n "$etcd_version" ]] || die "${api_dir#"$root"/}/go.mod does not say which etcd goes with it (// etcd: line)"

  build "$modules/etcd/$etcd_version" etcd "$etcd_version" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 etcd "" \
    "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$etcd_version"

  k8s_built="$(cd "$api_dir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  k8s_minor="${k8s_built#v}"; k8s_minor="${k8s_minor#*.}"; k8s_minor="${k8s_minor%%.*}"
  # The version stamp hack/lib/version.sh gives Kubernetes' own builds.
  k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_built -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$k8s_minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$k8s_built"
  for k8s_bin in kube-apiserver kube-controller-manager; do
    build "$api_dir" "$k8s_bin" "$k8s_tag" k8s.io/kubernetes "k8s.io/kubernetes/cmd/$k8s_bin" "$k8s_bin" "" "$k8s_ldflags" \
      "{\"kubernetes\": \"$k8s_built\", \"node_image_kubernetes\": \"$k8s_tag\"}"
  done

  build "$modules/helm/$helm_version" helm "$helm_version" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm helm "" \
    "-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"

  op_dir="$modules/cilium-operator/v$v"
  [[ -f "$op_dir/go.mod" ]] || die "no pinned module builds cilium-operator $v: run scripts/install-control-plane.sh --update-modules $v"
  cilium_info="$(mod_json "$op_dir" "github.com/cilium/cilium@v$v")"
  chart_dir="$(json_field Dir <<<"$cilium_info")/install/kubernetes/cilium"
  commit="$(json_field Origin.Hash <<<"$cilium_info")"
  [[ -f "$chart_dir/Chart.yaml" ]] || die "github.com/cilium/cilium@v$v has no chart at install/kubernetes/cilium"
  # A substituted dependency is proved again before every build (the proof reads the pinned
  # module, not a record of it), and goes into build.json with its proof.
  subs_json="[]"
  if [[ -f "$op_dir/substitutions.json" ]]; then
    prove_substitutions "$op_dir" "$operator_tags" "$(json_field Dir <<<"$cilium_info")" \
      || die "cilium-operator $v: a substitution no longer holds at the tag (above); not built"
    subs_json="$(cat "$op_dir/substitutions.json")"
  fi
  op_extra="$(SUBS_JSON="$subs_json" python3 -c 'import json, os, sys
print(json.dumps({"chart_dir": sys.argv[1], "commit": sys.argv[2], "kubernetes": sys.argv[3], "etcd": sys.argv[4],
                  "helm": sys.argv[5], "gateway_api": sys.argv[6], "substitutions": json.loads(os.environ["SUBS_JSON"])}))' \
    "$chart_dir" "$commit" "$k8s_tag" "$etcd_version" "$helm_version" "$gw_version")"
  # The generic operator, as Cilium's operator/Makefile builds it: tags osusergo (Makefile.defs)
  # and ipam_provider_operator (cilium-operator-generic), CGO off, the version stamped in.
  build "$op_dir" cilium-operator "$v" github.com/cilium/cilium github.com/cilium/cilium/operator cilium-operator-generic "$operator_tags" \
    "-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=$v ${commit:0:10}'" "$op_extra"

  if [[ $conformance -ne 0 ]]; then build_conformance "$v" "$(json_field Dir <<<"$cilium_info")"; fi

  gw_dir="$modules/gateway-api/$gw_version"
  [[ -f "$gw_dir/go.mod" ]] || die "no pinned module for the Gateway API CRDs $gw_version: run scripts/install-control-plane.sh --update-modules $v"
  gw_info="$(mod_json "$gw_dir" "sigs.k8s.io/gateway-api@$gw_version")"
  crds="$(json_field Dir <<<"$gw_info")/config/crd"
  [[ -d "$crds/experimental" ]] || die "sigs.k8s.io/gateway-api@$gw_version has no config/crd/experimental"
  mkdir -p "$out/gateway-api/$gw_version"
  printf '{\n  "component": "gateway-api",\n  "version": "%s",\n  "module": "sigs.k8s.io/gateway-api",\n  "module_sum": "%s",\n  "crd_dir": "%s"\n}\n' \
    "$gw_version" "$(json_field Sum <<<"$gw_info")" "$crds" >"$out/gateway-api/$gw_version/build.json"
done

# The agent's pieces, for the versions --agent names.
for v in "${agents[@]+"${agents[@]}"}"; do
  ag_dir="$modules/cilium-agent/v$v"
  if [[ $update -eq 1 ]]; then
    update_agent "$v"
    continue
  fi
  [[ -f "$ag_dir/go.mod" ]] || die "no pinned module builds Cilium's agent control plane $v (${ag_dir#"$root"/}): run scripts/install-control-plane.sh --update-modules --agent $v"
  [[ -f "$ag_dir/differences.json" ]] || die "${ag_dir#"$root"/}/differences.json is missing: every difference from Cilium's control-plane suite is listed there"
  ag_info="$(mod_json "$ag_dir" "github.com/cilium/cilium@v$v")"
  ag_commit="$(json_field Origin.Hash <<<"$ag_info")"
  ag_src="$(json_field Dir <<<"$ag_info")"
  check_agent_suite "$ag_src" "$ag_dir/differences.json"
  ag_tags="$(agent_tags "$ag_dir/differences.json")"
  # As the operator's: each substitution proved again before every build, from the pinned module.
  ag_subs="[]"
  if [[ -f "$ag_dir/substitutions.json" ]]; then
    prove_agent_substitutions "$ag_dir" "osusergo${ag_tags:+,$ag_tags}" "$ag_src" \
      || die "cilium-agent $v: a substitution is no longer proved for the agent at the tag (above); not built"
    ag_subs="$(cat "$ag_dir/substitutions.json")"
  fi
  ag_extra="$(SUBS_JSON="$ag_subs" python3 -c 'import json, os, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"commit": sys.argv[2], "composes": d["composes"], "differences": d["differences"], "api_tags": d.get("tags", []),
                  "suite_sha256": d["suite_sha256"], "substitutions": json.loads(os.environ["SUBS_JSON"])}))' "$ag_dir/differences.json" "$ag_commit")"
  ag_ldflags="-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=$v ${ag_commit:0:10}'"
  # osusergo as Cilium's Makefile.defs builds cilium-agent; CGO off as above. The sources are
  # src/, built with this pin's go.mod.
  build_src="$agent_src" build "$ag_dir" cilium-agent "$v" github.com/cilium/cilium layout-gate.local/control-plane/cilium-agent/cmd/agent-plane agent-plane "osusergo${ag_tags:+,$ag_tags}" "$ag_ldflags" "$ag_extra"
  build_src="$agent_src" build "$ag_dir" xds-bridge "$v" github.com/cilium/cilium layout-gate.local/control-plane/cilium-agent/cmd/xds-bridge xds-bridge "" "-s -w" "{\"commit\": \"$ag_commit\"}"
  build_src="$agent_src" build "$ag_dir" xds-dump "$v" github.com/cilium/cilium layout-gate.local/control-plane/cilium-agent/cmd/xds-dump xds-dump "" "-s -w" "{\"commit\": \"$ag_commit\"}"
done

if [[ ${#blocked[@]} -gt 0 ]]; then
  die "modules written, except cilium-operator ${blocked[*]}: blocked (see each version's kind-config/control-plane/cilium-operator/v<version>/blocked)"
fi
echo "$out"
