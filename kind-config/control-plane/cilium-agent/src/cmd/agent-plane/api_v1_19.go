//go:build !cilium_v1_20_cells

// The 1.19 line's API (cilium@v1.19.5, v1.19.6, v1.19.7): the suite provides nothing beyond the
// list in main.go (test/controlplane/suite/agent.go at each of these tags is the same file), and
// the agent's CRD list is one value, k8sSynced.CRDSyncResourceNames, which cilium-agent's
// Infrastructure module provides (daemon/cmd/cells.go) and the composition here does not include.
package main

import (
	"github.com/cilium/hive/cell"

	k8sSynced "github.com/cilium/cilium/pkg/k8s/synced"
)

// suiteProvides: none at 1.19.
var suiteProvides = []any{}

// agentCRDNames provides the agent's CRD list as cilium@v1.19.x:daemon/cmd/cells.go does.
func agentCRDNames() k8sSynced.CRDSyncResourceNames { return k8sSynced.AgentCRDResourceNames() }

// crdNames is the CRD list the sync promise waits for.
type crdNames struct {
	cell.In

	Names k8sSynced.CRDSyncResourceNames
}

func (n crdNames) list() []string { return n.Names }
