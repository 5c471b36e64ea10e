// xds-dump asks the agent's xDS socket for what it serves, as cilium-envoy would ask for it
// (cilium-envoy's node id; clusters and listeners by wildcard, then the route configurations,
// endpoints and secrets they name), ACKs each answer as Envoy does, and prints one JSON document:
// per type, the version and every resource (protojson). -mode is the agent's envoy-xds-mode:
// "split" (one stream per type, the only mode before 1.20 and the agent's default) or "ads" /
// "strict-ads" (one Aggregated Discovery Service stream for every type: from 1.20 the chart's
// cilium-config sets envoy-xds-mode to ads, cilium@v1.20.x:install/kubernetes/cilium/values.yaml
// envoy.xdsMode, and the agent then serves ADS only, pkg/envoy/grpcnew.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	clustersvc "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointsvc "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenersvc "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routesvc "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretsvc "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"layout-gate.local/control-plane/cilium-agent/internal/xdsjson"
)

type stream interface {
	Send(*discovery.DiscoveryRequest) error
	Recv() (*discovery.DiscoveryResponse, error)
	CloseSend() error
}

type answer struct {
	TypeURL   string            `json:"type_url"`
	Version   string            `json:"version"`
	Resources []json.RawMessage `json:"resources"`
}

func main() {
	sock := flag.String("agent", "", "the agent's xDS unix socket (required)")
	nodeID := flag.String("node-id", "host~127.0.0.1~no-id~localdomain", "node id (cilium-envoy's)")
	wait := flag.Duration("timeout", 10*time.Second, "how long each type's first answer may take")
	mode := flag.String("mode", "split", "the agent's envoy-xds-mode: split, ads or strict-ads")
	flag.Parse()
	if err := run(*sock, *nodeID, *mode, *wait); err != nil {
		fmt.Fprintf(os.Stderr, "xds-dump: %s\n", err)
		os.Exit(1)
	}
}

func run(sock, nodeID, mode string, wait time.Duration) error {
	if sock == "" {
		return errors.New("--agent is required")
	}
	if mode != "split" && mode != "ads" && mode != "strict-ads" {
		return fmt.Errorf("--mode %q: the agent's envoy-xds-mode is split, ads or strict-ads", mode)
	}
	conn, err := grpc.NewClient(xdsjson.UnixTarget(sock), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	node := &core.Node{Id: nodeID, Cluster: "ingress-cluster"}
	ask := func(typeURL string, names []string, open func(context.Context) (stream, error)) (*discovery.DiscoveryResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		s, err := open(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names}); err != nil {
			// A stream the agent ended at once: Send sees only EOF, its status says why.
			if _, rerr := s.Recv(); rerr != nil {
				return nil, fmt.Errorf("%s: %w", typeURL, rerr)
			}
			return nil, err
		}
		resp, err := s.Recv()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", typeURL, err)
		}
		// ACK, as Envoy does, so the agent's accounting sees the version taken.
		_ = s.Send(&discovery.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names, VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()})
		time.Sleep(100 * time.Millisecond)
		_ = s.CloseSend()
		return resp, nil
	}
	if mode != "split" {
		ads, err := newADS(conn, node, wait)
		if err != nil {
			return err
		}
		defer ads.close()
		// One stream for every type: each type asked on it in turn, as Envoy's ADS client does.
		ask = func(typeURL string, names []string, _ func(context.Context) (stream, error)) (*discovery.DiscoveryResponse, error) {
			return ads.ask(typeURL, names)
		}
	}
	out := map[string]answer{}
	record := func(key string, r *discovery.DiscoveryResponse) {
		out[key] = answer{TypeURL: r.GetTypeUrl(), Version: r.GetVersionInfo(), Resources: xdsjson.Resources(r)}
	}

	// Clusters first, as Envoy asks: the agent answers a listener stream only once the
	// first cluster version is ACKed (cilium@v1.19.6:pkg/envoy/grpc.go StreamListeners).
	cds, err := ask("type.googleapis.com/envoy.config.cluster.v3.Cluster", nil, func(ctx context.Context) (stream, error) {
		return clustersvc.NewClusterDiscoveryServiceClient(conn).StreamClusters(ctx)
	})
	if err != nil {
		return err
	}
	record("cds", cds)
	lds, err := ask("type.googleapis.com/envoy.config.listener.v3.Listener", nil, func(ctx context.Context) (stream, error) {
		return listenersvc.NewListenerDiscoveryServiceClient(conn).StreamListeners(ctx)
	})
	if err != nil {
		return err
	}
	record("lds", lds)

	routes, secrets, eds := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range lds.GetResources() {
		l := &listenerpb.Listener{}
		if r.UnmarshalTo(l) != nil {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m := &hcm.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(m) == nil && m.GetRds() != nil {
					routes[m.GetRds().GetRouteConfigName()] = true
				}
			}
			tc := &tlspb.DownstreamTlsContext{}
			if fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(tc) == nil {
				for _, s := range tc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					secrets[s.GetName()] = true
				}
			}
		}
	}
	for _, r := range cds.GetResources() {
		c := &clusterpb.Cluster{}
		if r.UnmarshalTo(c) == nil && c.GetType() == clusterpb.Cluster_EDS {
			name := c.GetEdsClusterConfig().GetServiceName()
			if name == "" {
				name = c.GetName()
			}
			eds[name] = true
		}
	}
	keys := func(m map[string]bool) []string {
		s := make([]string, 0, len(m))
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return s
	}
	if len(routes) > 0 {
		r, err := ask("type.googleapis.com/envoy.config.route.v3.RouteConfiguration", keys(routes), func(ctx context.Context) (stream, error) {
			return routesvc.NewRouteDiscoveryServiceClient(conn).StreamRoutes(ctx)
		})
		if err != nil {
			return err
		}
		record("rds", r)
	}
	if len(eds) > 0 {
		r, err := ask("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", keys(eds), func(ctx context.Context) (stream, error) {
			return endpointsvc.NewEndpointDiscoveryServiceClient(conn).StreamEndpoints(ctx)
		})
		if err != nil {
			return err
		}
		record("eds", r)
	}
	if len(secrets) > 0 {
		r, err := ask("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", keys(secrets), func(ctx context.Context) (stream, error) {
			return secretsvc.NewSecretDiscoveryServiceClient(conn).StreamSecrets(ctx)
		})
		if err != nil {
			return err
		}
		record("sds", r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// adsClient asks every type on one Aggregated Discovery Service stream and ACKs each answer.
type adsClient struct {
	s      discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	node   *core.Node
	wait   time.Duration
	first  bool
	// The names each type was asked for: an ACK repeats them (in state-of-the-world xDS every
	// request replaces the type's subscription).
	names map[string][]string
}

func newADS(conn *grpc.ClientConn, node *core.Node, wait time.Duration) (*adsClient, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &adsClient{s: s, cancel: cancel, node: node, wait: wait, first: true, names: map[string][]string{}}, nil
}

func (a *adsClient) close() {
	_ = a.s.CloseSend()
	a.cancel()
}

// ask sends one request of typeURL and waits (at most the -timeout) for its answer, ACKing it;
// an answer of another type meanwhile (a push) is ACKed too and passed over.
func (a *adsClient) ask(typeURL string, names []string) (*discovery.DiscoveryResponse, error) {
	req := &discovery.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names}
	a.names[typeURL] = names
	if a.first {
		req.Node = a.node
		a.first = false
	}
	if err := a.s.Send(req); err != nil {
		if _, rerr := a.s.Recv(); rerr != nil {
			return nil, fmt.Errorf("ADS %s: %w", typeURL, rerr)
		}
		return nil, err
	}
	type got struct {
		r   *discovery.DiscoveryResponse
		err error
	}
	deadline := time.After(a.wait)
	for {
		ch := make(chan got, 1)
		go func() {
			r, err := a.s.Recv()
			ch <- got{r, err}
		}()
		select {
		case <-deadline:
			return nil, fmt.Errorf("ADS %s: no answer in %s", typeURL, a.wait)
		case g := <-ch:
			if g.err != nil {
				return nil, fmt.Errorf("ADS %s: %w", typeURL, g.err)
			}
			ack := &discovery.DiscoveryRequest{TypeUrl: g.r.GetTypeUrl(), VersionInfo: g.r.GetVersionInfo(), ResponseNonce: g.r.GetNonce(),
				ResourceNames: a.names[g.r.GetTypeUrl()]}
			if err := a.s.Send(ack); err != nil {
				return nil, fmt.Errorf("ADS %s: ACK: %w", typeURL, err)
			}
			if g.r.GetTypeUrl() == typeURL {
				return g.r, nil
			}
		}
	}
}
