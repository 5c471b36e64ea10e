package main

// The relay end to end, over real gRPC on unix sockets: a stand-in for the agent's ADS server
// (one aggregated stream, as cilium@v1.20.2:pkg/envoy/grpcnew.go serves it), the bridge in ADS
// mode, and a stand-in for Envoy's ADS client. What is checked is what the agent's accounting
// depends on: every request of Envoy's reaches the agent's stream with its type, version and
// nonce unchanged (a NACK with its error), and what Envoy gets carries the agent's version and
// nonce with the bridge's rewrites, per type, on the one stream.

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	clustersvc "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	status "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"layout-gate.local/control-plane/cilium-agent/internal/xdsjson"
)

// scriptedAgent serves one ADS stream: it sends each response in turn, each after the request
// before it, and records every request it got.
type scriptedAgent struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
	responses []*discovery.DiscoveryResponse
	got       chan *discovery.DiscoveryRequest
}

func (a *scriptedAgent) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for _, resp := range a.responses {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		a.got <- req
		if err := s.Send(resp); err != nil {
			return err
		}
	}
	// The answer to the last response.
	req, err := s.Recv()
	if err != nil {
		return err
	}
	a.got <- req
	<-s.Context().Done()
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// serve starts srv on a unix socket in dir and returns the socket's path.
func serve(t *testing.T, srv *grpc.Server, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return path
}

func dial(t *testing.T, path string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(xdsjson.UnixTarget(path), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// startBridge runs the bridge in mode between Envoy's socket (returned) and the agent's.
func startBridge(t *testing.T, agentSock string, mode XDSMode, bs Binds) (string, *lockedBuffer) {
	t.Helper()
	log := &lockedBuffer{}
	b := &bridge{conn: dial(t, agentSock), binds: bs, nodeID: CiliumEnvoyNodeID, log: &jsonLog{enc: json.NewEncoder(log)}}
	srv := grpc.NewServer()
	b.register(srv, mode)
	return serve(t, srv, "bridge.sock"), log
}

func TestADSRelayPassesEveryTypeBothWaysOnOneStream(t *testing.T) {
	cluster := &clusterpb.Cluster{Name: "ns:svc:80"}
	agent := &scriptedAgent{
		responses: []*discovery.DiscoveryResponse{
			response(t, cluster),
			response(t, agentListener(t, "ns/cilium-gateway-gw/listener", 14321)),
		},
		got: make(chan *discovery.DiscoveryRequest, 8),
	}
	agent.responses[0].VersionInfo, agent.responses[0].Nonce = "3", "7"
	agent.responses[1].VersionInfo, agent.responses[1].Nonce = "4", "8"
	agentSrv := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(agentSrv, agent)
	bridgeSock, log := startBridge(t, serve(t, agentSrv, "xds.sock"), ModeADS, binds(t, "14321=127.0.0.7:80"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	envoy, err := discovery.NewAggregatedDiscoveryServiceClient(dial(t, bridgeSock)).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Envoy's first request names its own node; the agent must see cilium-envoy's.
	send := func(r *discovery.DiscoveryRequest) {
		t.Helper()
		if err := envoy.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	send(&discovery.DiscoveryRequest{Node: &core.Node{Id: "envoy-1.40"}, TypeUrl: ClusterType})
	resp, err := envoy.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTypeUrl() != ClusterType || resp.GetVersionInfo() != "3" || resp.GetNonce() != "7" {
		t.Fatalf("CDS to Envoy: %s %s/%s", resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce())
	}
	// Its ACK of CDS, and its first LDS request, on the same stream.
	send(&discovery.DiscoveryRequest{TypeUrl: ClusterType, VersionInfo: "3", ResponseNonce: "7"})
	resp, err = envoy.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTypeUrl() != ListenerType || resp.GetVersionInfo() != "4" || resp.GetNonce() != "8" {
		t.Fatalf("LDS to Envoy: %s %s/%s", resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce())
	}
	l := &listener.Listener{}
	if err := resp.Resources[0].UnmarshalTo(l); err != nil {
		t.Fatal(err)
	}
	if got := describe(l.Address, l.AdditionalAddresses); got != "127.0.0.7:80" || len(l.ListenerFilters) != 1 {
		t.Fatalf("the listener Envoy got is not rewritten: bound at %s, listener filters %v", got, l.ListenerFilters)
	}
	// Envoy refuses it: a NACK keeps the last accepted LDS version (none) and names the nonce.
	nack := &discovery.DiscoveryRequest{TypeUrl: ListenerType, VersionInfo: "", ResponseNonce: "8", ErrorDetail: &status.Status{Code: 3, Message: "filter chain '' has the same matching rules"}}
	send(nack)

	var got []*discovery.DiscoveryRequest
	for len(got) < 3 {
		select {
		case r := <-agent.got:
			got = append(got, r)
		case <-ctx.Done():
			t.Fatalf("the agent got %d of 3 requests", len(got))
		}
	}
	if got[0].GetNode().GetId() != CiliumEnvoyNodeID || got[0].GetTypeUrl() != ClusterType {
		t.Errorf("first request to the agent: node %q type %s", got[0].GetNode().GetId(), got[0].GetTypeUrl())
	}
	if got[1].GetTypeUrl() != ClusterType || got[1].GetVersionInfo() != "3" || got[1].GetResponseNonce() != "7" || got[1].GetErrorDetail() != nil {
		t.Errorf("the CDS ACK reached the agent as %v", got[1])
	}
	if !proto.Equal(got[2], nack) {
		t.Errorf("the LDS NACK reached the agent changed:\n got %v\nwant %v", got[2], nack)
	}

	// The log says it all, the aggregated stream's messages by their own types.
	var events []string
	for _, e := range log.lines(t) {
		s, _ := e["event"].(string)
		if tu, ok := e["type_url"].(string); ok {
			s += " " + tu[strings.LastIndex(tu, ".")+1:]
		}
		if k, ok := e["kind"].(string); ok {
			s += " " + k
		}
		if n, ok := e["nack"].(string); ok {
			s += " nack=" + n
		}
		events = append(events, s)
	}
	joined := strings.Join(events, "\n")
	for _, want := range []string{
		"from_envoy Cluster", "from_agent Cluster", "to_envoy Cluster",
		"from_agent Listener", "rewrite Listener bind", "rewrite Listener strip", "to_envoy Listener",
		"from_envoy Listener nack=filter chain '' has the same matching rules",
		"rewrite Cluster node",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the log lacks %q:\n%s", want, joined)
		}
	}
}

// An Envoy bootstrapped for the other mode is refused, not bridged to a server the agent does
// not run.
func TestEachModeServesOnlyItsOwnServices(t *testing.T) {
	agentSrv := grpc.NewServer()
	agentSock := serve(t, agentSrv, "xds.sock")
	// The other mode's service, asked of a bridge in mode.
	other := map[XDSMode]func(*grpc.ClientConn) opener{
		ModeSplit: func(c *grpc.ClientConn) opener {
			return open(discovery.NewAggregatedDiscoveryServiceClient(c).StreamAggregatedResources)
		},
		ModeADS: func(c *grpc.ClientConn) opener {
			return open(clustersvc.NewClusterDiscoveryServiceClient(c).StreamClusters)
		},
	}
	for mode, ask := range other {
		sock, _ := startBridge(t, agentSock, mode, Binds{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := ask(dial(t, sock))(ctx)
		if err == nil {
			_, err = s.Recv()
		}
		cancel()
		if grpcstatus.Code(err) != codes.Unimplemented {
			t.Errorf("mode %s: the other mode's service answered %v, want Unimplemented", mode, err)
		}
	}
	for _, m := range []string{"split", "ads", "strict-ads"} {
		if _, err := ParseXDSMode(m); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseXDSMode("delta"); err == nil || !strings.Contains(err.Error(), "split, ads or strict-ads") {
		t.Errorf("an unknown mode: %v", err)
	}
}
