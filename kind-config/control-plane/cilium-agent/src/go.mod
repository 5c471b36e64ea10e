// The one committed copy of the agent's programs (cmd/agent-plane, cmd/xds-bridge, cmd/xds-dump,
// internal/xdsjson), for every pin. This file only marks the module root: every go command runs
// with a pin's module, -modfile=../v<version>/go.mod (its go.sum beside it), and that pin's build
// tags (../v<version>/differences.json `tags`), as scripts/install-control-plane.sh --agent does:
//   go vet -modfile=../v1.19.6/go.mod ./...
//   go test -modfile=../v1.19.6/go.mod ./cmd/xds-bridge/
module layout-gate.local/control-plane/cilium-agent

go 1.25.0
