//go:build cilium_v1_20_cells

// The 1.20 line's API (cilium@v1.20.0, v1.20.1, v1.20.2, whose test/controlplane/suite/agent.go
// is one file): the suite provides a nil statedb.RWTable[subnet.SubnetTableEntry] beside its
// other mocks, and the agent's CRD list is a value group, "crd-sync-resource-names", of
// k8sSynced.CRDSyncResourceName, which cilium-agent's Infrastructure module fills with
// k8sSynced.NewCRDSyncResourceNamesOut(k8sSynced.AgentCRDResourceNames()...) (daemon/cmd/cells.go)
// and the composition here does not include; other cells may add to the group.
package main

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	k8sSynced "github.com/cilium/cilium/pkg/k8s/synced"
	"github.com/cilium/cilium/pkg/maps/subnet"
)

// suiteProvides: the suite's nil subnet table (cilium@v1.20.x:test/controlplane/suite/agent.go).
var suiteProvides = []any{
	func() statedb.RWTable[subnet.SubnetTableEntry] { return nil },
}

// agentCRDNames provides the agent's CRD list as cilium@v1.20.x:daemon/cmd/cells.go does.
func agentCRDNames() k8sSynced.CRDSyncResourceNamesOut {
	return k8sSynced.NewCRDSyncResourceNamesOut(k8sSynced.AgentCRDResourceNames()...)
}

// crdNames is the CRD list the sync promise waits for: the whole group, as Cilium's own
// newCRDSyncPromise reads it (pkg/k8s/synced/cell.go).
type crdNames struct {
	cell.In

	Names []k8sSynced.CRDSyncResourceName `group:"crd-sync-resource-names"`
}

func (n crdNames) list() []string {
	out := make([]string, 0, len(n.Names))
	for _, name := range n.Names {
		out = append(out, string(name))
	}
	return out
}
