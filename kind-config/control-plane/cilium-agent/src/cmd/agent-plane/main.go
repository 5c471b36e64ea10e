// agent-plane composes Cilium's agent control plane (daemon/cmd.ControlPlane) the way Cilium's own
// control-plane test suite does at the pinned tag (cilium@v<version>:test/controlplane/suite/agent.go):
// DryMode, Cilium's fake datapath, the same mocked infrastructure cells. It contains no Cilium
// logic. Every way it differs from the suite is listed in each pin's differences.json
// (../../../v<version>/differences.json) and marked "difference" below; the operator lane's docs
// list them too (docs/operator-lane.md). The few Cilium APIs that changed between the pins are in
// the api_*.go files, chosen by the pin's build tags (differences.json `tags`).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	statedbReconciler "github.com/cilium/statedb/reconciler"
	"github.com/spf13/cobra"

	"github.com/cilium/cilium/api/v1/server"
	"github.com/cilium/cilium/daemon/cmd"
	cnicell "github.com/cilium/cilium/daemon/cmd/cni"
	fakecni "github.com/cilium/cilium/daemon/cmd/cni/fake"
	"github.com/cilium/cilium/daemon/cmd/legacy"
	"github.com/cilium/cilium/pkg/ciliumenvoyconfig"
	fakeDatapath "github.com/cilium/cilium/pkg/datapath/fake"
	"github.com/cilium/cilium/pkg/datapath/linux/route/reconciler"
	"github.com/cilium/cilium/pkg/datapath/neighbor"
	"github.com/cilium/cilium/pkg/datapath/prefilter"
	datapathTables "github.com/cilium/cilium/pkg/datapath/tables"
	"github.com/cilium/cilium/pkg/dial"
	"github.com/cilium/cilium/pkg/hive"
	ipamOption "github.com/cilium/cilium/pkg/ipam/option"
	k8sClient "github.com/cilium/cilium/pkg/k8s/client"
	k8sSynced "github.com/cilium/cilium/pkg/k8s/synced"
	"github.com/cilium/cilium/pkg/kvstore"
	"github.com/cilium/cilium/pkg/kvstore/store"
	"github.com/cilium/cilium/pkg/labelsfilter"
	"github.com/cilium/cilium/pkg/loadbalancer"
	"github.com/cilium/cilium/pkg/logging"
	"github.com/cilium/cilium/pkg/maps/ctmap"
	"github.com/cilium/cilium/pkg/maps/policymap"
	"github.com/cilium/cilium/pkg/metrics"
	monitorAgent "github.com/cilium/cilium/pkg/monitor/agent"
	nodeTypes "github.com/cilium/cilium/pkg/node/types"
	"github.com/cilium/cilium/pkg/option"
	"github.com/cilium/cilium/pkg/promise"
)

// Flags of this program (not Cilium's; every Cilium flag is accepted as cilium-agent accepts it).
const (
	flagNodeName   = "plane-node-name"
	flagStateDir   = "plane-state-dir"
	flagDumpSocket = "plane-dump-socket"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "agent-plane: %s\n", err)
		os.Exit(1)
	}
}

// view is what the dump endpoint reads; filled by an Invoke once the hive is built.
type view struct {
	db        *statedb.DB
	frontends statedb.Table[*loadbalancer.Frontend]
}

func run() error {
	var v view
	h := hive.New(
		// Provide the mocked infrastructure and datapath components: the suite's list, except
		// the two marked "difference".
		cell.Provide(
			func() (_ statedbReconciler.Reconciler[*reconciler.DesiredRoute]) { return nil },
			func() cnicell.CNIConfigManager { return &fakecni.FakeCNIConfigManager{} },
			func() ctmap.GCRunner { return ctmap.NewFakeGCRunner() },
			func() policymap.Factory { return nil },
			func() *server.Server { return nil },
			func() *loadbalancer.TestConfig { return &loadbalancer.TestConfig{} },
		),
		// What the suite provides beyond the list above at this pin's API (api_*.go).
		cell.Provide(suiteProvides...),
		cell.Provide(
			// difference "crd-sync": the suite rejects the CRD-sync promise (its fake clientset
			// has no CRDs to wait for), and so does Cilium's own promise in DryMode. Against a
			// real API server the CEC and node watchers need it resolved, so it is resolved by
			// Cilium's exported synced.SyncCRDs for the agent's own CRD list.
			newCRDSyncPromise,
			// The agent's CRD list, as its Infrastructure module provides it (api_*.go).
			agentCRDNames,
		),
		// difference "client": Cilium's real Kubernetes client cell (the agent's Infrastructure
		// cell k8sClient.Cell, configured by --k8s-kubeconfig-path) in place of the suite's fake
		// clientset.
		k8sClient.Cell,
		cell.Config(k8sSynced.DefaultCRDSyncConfig),
		kvstore.Cell(kvstore.DisabledBackendName),
		fakeDatapath.Cell,
		neighbor.ForwardableIPCell,
		reconciler.TableCell,
		cell.Provide(neighbor.NewCommonTestConfig(true, false, 100)),
		prefilter.Cell,
		monitorAgent.Cell,
		metrics.Cell,
		store.Cell,
		dial.ServiceResolverCell,
		cmd.ControlPlane,
		cell.Invoke(func(_ legacy.DaemonInitialization) {
			// As in the suite: with DryMode it is enough to depend on DaemonInitialization.
		}),
		// difference "dump": read-only access to the agent's tables for the dump endpoint.
		cell.Invoke(func(db *statedb.DB, fes statedb.Table[*loadbalancer.Frontend]) {
			v.db = db
			v.frontends = fes
		}),
	)

	root := &cobra.Command{Use: "agent-plane", SilenceUsage: true}
	h.RegisterFlags(root.Flags())
	// slogloggercheck-free: Cilium's global flags, as cilium-agent and the suite register them.
	cmd.InitGlobalFlags(logging.DefaultSlogLogger, root, h.Viper())
	root.Flags().String(flagNodeName, "", "name of the Node object this agent runs as (required)")
	root.Flags().String(flagStateDir, "", "folder for the agent's run and state files, its xDS socket under envoy/sockets/ (required)")
	root.Flags().String(flagDumpSocket, "", "unix socket serving the read-only dump (GET /redirects, GET /statedb/dump/{table}, GET /goroutines) (required)")

	root.RunE = func(c *cobra.Command, _ []string) error {
		nodeName, _ := c.Flags().GetString(flagNodeName)
		stateDir, _ := c.Flags().GetString(flagStateDir)
		dumpSocket, _ := c.Flags().GetString(flagDumpSocket)
		for name, val := range map[string]string{flagNodeName: nodeName, flagStateDir: stateDir, flagDumpSocket: dumpSocket} {
			if val == "" {
				return fmt.Errorf("--%s is required", name)
			}
		}
		// As the suite: test0 is a device of the fake datapath's (pkg/datapath/fake), not of
		// this machine.
		hive.AddConfigOverride(h, func(c *datapathTables.DirectRoutingDeviceConfig) {
			c.DirectRoutingDevice = "test0"
		})
		// As the suite's SetupEnvironment: the node name is set before the agent starts.
		nodeTypes.SetName(nodeName)
		// difference "config-dir": cilium-agent's own reading of --config-dir (the ConfigMap the
		// chart renders) before the options are populated; the suite has no ConfigMap.
		option.InitConfig(logging.DefaultSlogLogger, c, "agent-plane", "cilium", h.Viper())()
		populate(h, stateDir)
		// difference "labels-filter": cilium-agent's initEnv parses the identity-relevant label
		// prefixes before the hive starts (daemon/cmd/daemon_main.go); the suite never meets a
		// labelled namespace, a real API server does (kube-system, the case's namespaces).
		if err := labelsfilter.ParseLabelPrefixCfg(logging.DefaultSlogLogger, option.Config.Labels, option.Config.NodeLabels, option.Config.LabelPrefixFile); err != nil {
			return fmt.Errorf("label prefixes: %w", err)
		}
		// cilium-envoy's sockets folder (pkg/envoy/sockets.go): the agent binds its xDS and
		// access-log sockets there; cilium-agent's embedded Envoy start creates it, which an
		// external Envoy never runs (difference "run-dir").
		if err := os.MkdirAll(filepath.Join(stateDir, "envoy", "sockets"), 0o700); err != nil {
			return err
		}
		return serve(h, &v, dumpSocket)
	}
	return root.Execute()
}

// populate mirrors the suite's populateCiliumAgentOptions, with the differences marked.
func populate(h *hive.Hive, stateDir string) {
	log := logging.DefaultSlogLogger
	option.Config.Populate(log, h.Viper())

	option.Config.RunDir = stateDir
	option.Config.StateDir = stateDir

	option.Config.IdentityAllocationMode = option.IdentityAllocationModeCRD
	option.Config.DryMode = true
	option.Config.IPAM = ipamOption.IPAMKubernetes
	option.Config.Opts = option.NewIntOptions(&option.DaemonMutableOptionLibrary)
	option.Config.Opts.SetBool(option.DropNotify, true)
	option.Config.Opts.SetBool(option.TraceNotify, true)
	option.Config.Opts.SetBool(option.PolicyVerdictNotify, true)
	option.Config.EnableIPv6 = false
	option.Config.K8sRequireIPv6PodCIDR = false
	// difference "l7-proxy": the suite sets EnableL7Proxy=false (its cases need no proxy); the
	// agent's Envoy side is the point here, so the flag's value (cilium-agent's default, true)
	// stands. Debug is the flag's value too (the suite forces it on).

	h.Viper().Set(option.EndpointGCInterval, 0)
}

type crdSyncParams struct {
	cell.In

	Logger    *slog.Logger
	JobGroup  job.Group
	Clientset k8sClient.Clientset
	Resources *k8sSynced.Resources
	APIGroups *k8sSynced.APIGroups
	Names     crdNames
	Config    k8sSynced.CRDSyncConfig
}

// newCRDSyncPromise resolves the promise with Cilium's own synced.SyncCRDs (see "crd-sync").
func newCRDSyncPromise(p crdSyncParams) promise.Promise[k8sSynced.CRDSync] {
	resolver, prom := promise.New[k8sSynced.CRDSync]()
	p.JobGroup.Add(job.OneShot("plane-sync-crds", func(ctx context.Context, _ cell.Health) error {
		err := k8sSynced.SyncCRDs(ctx, p.Logger, p.Clientset, p.Names.list(), p.Resources, p.APIGroups, p.Config)
		if err != nil {
			resolver.Reject(err)
		} else {
			resolver.Resolve(k8sSynced.CRDSync{})
		}
		return err
	}))
	return prom
}

// serve starts the hive, the dump endpoint, and waits for SIGTERM/SIGINT.
func serve(h *hive.Hive, v *view, dumpSocket string) error {
	log := logging.DefaultSlogLogger
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.Start(log, ctx); err != nil {
		return fmt.Errorf("starting Cilium's agent control plane: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dumpSocket), 0o700); err != nil {
		return err
	}
	_ = os.Remove(dumpSocket)
	ln, err := net.Listen("unix", dumpSocket)
	if err != nil {
		return fmt.Errorf("dump socket %s: %w", dumpSocket, err)
	}
	srv := &http.Server{Handler: dumpHandler(v), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	// One line the caller waits for: the hive has started and the dump answers.
	fmt.Fprintf(os.Stdout, "{\"event\":\"ready\",\"start_ms\":%d}\n", time.Since(started).Milliseconds())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = srv.Close()
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := h.Stop(log, stopCtx); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	return nil
}

// Redirect is one frontend of the agent's Table[Frontend] with the proxy port its Service
// redirects the frontend's port to (proxyPortFor, as the agent's own datapath reconciler reads it
// at the tag: api_redirect*.go).
type Redirect struct {
	Service     string `json:"service"`
	Address     string `json:"address"`
	ServicePort uint16 `json:"service_port"`
	Type        string `json:"type"`
	ProxyPort   uint16 `json:"proxy_port"`
	Status      string `json:"status"`
}

func dumpHandler(v *view) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /binds", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v.binds())
	})
	mux.HandleFunc("GET /redirects", func(w http.ResponseWriter, _ *http.Request) {
		txn := v.db.ReadTxn()
		out := []Redirect{}
		for fe := range v.frontends.All(txn) {
			r := Redirect{
				Service:     fe.ServiceName.String(),
				Address:     fe.Address.String(),
				ServicePort: fe.ServicePort,
				Type:        string(fe.Type),
				Status:      fe.Status.String(),
			}
			if fe.Service != nil {
				r.ProxyPort = proxyPortFor(fe.Service, fe.ServicePort)
			}
			out = append(out, r)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	// The process's own goroutine stacks (runtime/pprof, aggregated): what runs in it, e.g. that
	// no gobgp server was started (scripts/agent-plane-check.sh).
	mux.HandleFunc("GET /goroutines", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_ = pprof.Lookup("goroutine").WriteTo(w, 1)
	})
	// Read-only: only statedb's table dump is exposed, not its query or change streams.
	stdb := v.db.HTTPHandler()
	mux.HandleFunc("GET /statedb/dump/{table}", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/statedb")
		r2.SetPathValue("table", r.PathValue("table"))
		stdb.ServeHTTP(w, r2)
	})
	return mux
}

// Bind is where a proxy port's listener is reached: a LoadBalancer frontend (the Gateway's
// address and a port of its Service) whose Service the agent redirects, or is about to redirect,
// to that proxy port.
type Bind struct {
	ProxyPort   uint16 `json:"proxy_port"`
	Address     string `json:"address"`
	Service     string `json:"service"`
	ServicePort uint16 `json:"service_port"`
	// The CiliumEnvoyConfig whose desired redirect names the port.
	CEC string `json:"cec"`
	// Whether the agent has installed the redirect on the frontend (after Envoy's ACK), or
	// only holds it as desired.
	Installed bool `json:"installed"`
}

// binds answers, for every LoadBalancer frontend of a Service some CiliumEnvoyConfig redirects,
// the proxy port the agent sends it to: the CEC's desired redirects from the agent's own
// envoy-resources table (kept before Envoy's ACK, pkg/ciliumenvoyconfig/tables.go), resolved
// for the frontend's port with Cilium's own reading of the pin's redirect type
// (desiredProxyPort, per API), exactly as the frontend's redirect is resolved once installed
// (proxyPortFor). The envoy-resources table is private to its
// cell, so it is read through statedb's any-typed access by its name.
func (v *view) binds() []Bind {
	out := []Bind{}
	txn := v.db.ReadTxn()
	var resources statedb.AnyTable
	for _, meta := range v.db.GetTables(txn) {
		if meta.Name() == ciliumenvoyconfig.EnvoyResourcesTableName {
			resources = statedb.AnyTable{Meta: meta}
		}
	}
	if resources.Meta == nil {
		return out
	}
	for obj := range resources.All(txn) {
		res, ok := obj.(*ciliumenvoyconfig.EnvoyResource)
		if !ok || res.Name.Origin != ciliumenvoyconfig.EnvoyResourceOriginCEC {
			continue
		}
		for svc, redirects := range res.Redirects.All() {
			for fe := range v.frontends.All(txn) {
				if fe.ServiceName != svc || fe.Type != loadbalancer.SVCTypeLoadBalancer {
					continue
				}
				port := desiredProxyPort(redirects, fe.ServicePort)
				if port == 0 {
					continue
				}
				b := Bind{
					ProxyPort:   port,
					Address:     netip.AddrPortFrom(fe.Address.Addr(), fe.Address.Port()).String(),
					Service:     svc.String(),
					ServicePort: fe.ServicePort,
					CEC:         res.Name.Namespace + "/" + res.Name.Name,
				}
				if fe.Service != nil && proxyPortFor(fe.Service, fe.ServicePort) == port {
					b.Installed = true
				}
				out = append(out, b)
			}
		}
	}
	return out
}
