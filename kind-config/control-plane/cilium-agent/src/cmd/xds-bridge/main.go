// xds-bridge stands between Cilium's agent (agent-plane) and upstream Envoy. It reads the agent's
// xDS as cilium-envoy does (one gRPC stream per resource type, cilium-envoy's node id, the
// ConfigSource shape of cilium@v1.19.6:pkg/envoy/xds_server.go CiliumXDSConfigSource), hands
// every response to Envoy after the rewrites of rewrite.go, and hands every request of Envoy's
// (its ACKs and NACKs, version and nonce untouched) back to the agent, so the agent's own
// accounting (pkg/envoy/xds/ack.go) and its revert on a NACK are what run.
//
// It speaks the agent's envoy-xds-mode (--xds-mode): "split" (one stream per type, the only mode
// before 1.20, cilium@v1.19.6:pkg/envoy/grpc.go) or "ads" / "strict-ads" (one Aggregated Discovery
// Service stream carrying every type: from 1.20 the chart's cilium-config sets envoy-xds-mode to
// ads and the agent then serves only ADS, from a separate server on go-control-plane's snapshot
// cache, cilium@v1.20.2:pkg/envoy/grpcnew.go). Both modes go through the one relay (pipe) and the
// one set of rewrites (rewrite.go): in ADS each response is rewritten by its own type URL, and
// each of Envoy's requests (an ACK or NACK of one type) reaches the agent's stream as it came.
// The same facts at 1.20 are in pkg/envoy/standalone_envoy.go (node id) and
// pkg/envoy/util/sockets.go (sockets folder).
//
// Every message in either direction and every rewrite is one JSON line in --log: what the agent
// sent, what Envoy got, and what Envoy answered are all recorded.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"layout-gate.local/control-plane/cilium-agent/internal/xdsjson"
)

// CiliumEnvoyNodeID is the node id cilium-agent writes into cilium-envoy's bootstrap
// (cilium@v1.19.6:pkg/envoy/embedded_envoy.go); the agent reads the proxy's IP out of it.
const CiliumEnvoyNodeID = "host~127.0.0.1~no-id~localdomain"

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "xds-bridge: %s\n", err)
		os.Exit(1)
	}
}

func run() error {
	agentSock := flag.String("agent", "", "the agent's xDS unix socket (<state dir>/envoy/sockets/xds.sock) (required)")
	listen := flag.String("listen", "", "unix socket Envoy's xDS cluster connects to (required)")
	logPath := flag.String("log", "", "JSON-lines log of every message and rewrite (required)")
	nodeID := flag.String("node-id", CiliumEnvoyNodeID, "the node id the agent is told (cilium-envoy's)")
	var bindFlags multiFlag
	flag.Var(&bindFlags, "bind", "PROXYPORT=ADDR:PORT[,ADDR:PORT...]: bind the listener on that proxy port at these loopback addresses (repeatable)")
	mode := flag.String("xds-mode", "split", "the agent's envoy-xds-mode: split (one stream per type) or ads / strict-ads (one aggregated stream)")
	bindsFrom := flag.String("binds-from", "", "the agent-plane dump socket: bind each listener at the loopback LoadBalancer frontends the agent redirects to its proxy port, read again for every listener update")
	flag.Parse()
	if *agentSock == "" || *listen == "" || *logPath == "" {
		return errors.New("--agent, --listen and --log are required")
	}
	xdsMode, err := ParseXDSMode(*mode)
	if err != nil {
		return err
	}
	binds := Binds{}
	for _, b := range bindFlags {
		if err := binds.ParseBind(b); err != nil {
			return err
		}
	}
	lf, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("--log %s: %w", *logPath, err)
	}
	defer lf.Close()
	conn, err := grpc.NewClient(xdsjson.UnixTarget(*agentSock), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("the agent's socket %s: %w", *agentSock, err)
	}
	defer conn.Close()
	b := &bridge{conn: conn, binds: binds, bindsFrom: *bindsFrom, nodeID: *nodeID, log: &jsonLog{enc: json.NewEncoder(lf)}}

	_ = os.Remove(*listen)
	ln, err := net.Listen("unix", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	srv := grpc.NewServer()
	b.register(srv, xdsMode)
	b.log.write(map[string]any{"event": "ready", "listen": *listen, "agent": *agentSock, "xds_mode": string(xdsMode), "binds": binds})
	fmt.Println(`{"event":"ready"}`)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		done := make(chan struct{})
		go func() { srv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
	}()
	return srv.Serve(ln)
}

type jsonLog struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (l *jsonLog) write(v map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v["at"] = time.Now().UTC().Format(time.RFC3339Nano)
	_ = l.enc.Encode(v)
}

type bridge struct {
	conn  *grpc.ClientConn
	binds Binds
	// The agent-plane dump socket the binds are read from for every listener update ("" : the
	// --bind entries only).
	bindsFrom string
	nodeID    string
	log       *jsonLog
}

// bindsFor is the binds a listener update is rewritten with: the agent's (--binds-from) read
// now, with the --bind entries over them. A failed read is an error of the stream: a listener
// bound nowhere would make every probe of it look refused by Cilium.
func (b *bridge) bindsFor(version string) (Binds, error) {
	if b.bindsFrom == "" {
		return b.binds, nil
	}
	entries, err := FetchAgentBinds(b.bindsFrom)
	if err != nil {
		return nil, err
	}
	agent, refused := BindsFromAgent(entries)
	for _, r := range refused {
		b.log.write(map[string]any{"event": "bind_refused", "version_info": version, "detail": r})
	}
	b.log.write(map[string]any{"event": "agent_binds", "version_info": version, "binds": entries})
	return agent.Merged(b.binds), nil
}

// Envoy's side of a stream (the bridge serves it) and the agent's (the bridge is its client).
type downstream interface {
	Send(*discovery.DiscoveryResponse) error
	Recv() (*discovery.DiscoveryRequest, error)
	Context() context.Context
}

type upstream interface {
	Send(*discovery.DiscoveryRequest) error
	Recv() (*discovery.DiscoveryResponse, error)
	CloseSend() error
}

// pipe joins one of Envoy's streams to a new stream of the same service to the agent: one type's
// stream in split mode, the aggregated stream (every type, each message naming its own) in ADS.
// typeURL names the stream in the log.
func (b *bridge) pipe(typeURL string, down downstream, open opener) error {
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	up, err := open(ctx)
	if err != nil {
		b.log.write(map[string]any{"event": "error", "type_url": typeURL, "error": "opening the agent's stream: " + err.Error()})
		return err
	}
	errc := make(chan error, 2)
	go func() {
		for {
			req, err := down.Recv()
			if err != nil {
				errc <- err
				return
			}
			if n := req.GetNode(); n != nil && n.GetId() != b.nodeID {
				b.log.write(map[string]any{"event": "rewrite", "stream": typeURL, "type_url": req.GetTypeUrl(), "kind": "node", "detail": fmt.Sprintf("node id %q -> %q (cilium-envoy's)", n.GetId(), b.nodeID)})
				req = proto.Clone(req).(*discovery.DiscoveryRequest)
				req.Node = proto.Clone(n).(*core.Node)
				req.Node.Id = b.nodeID
			}
			ev := map[string]any{"event": "from_envoy", "type_url": req.GetTypeUrl(), "version_info": req.GetVersionInfo(),
				"response_nonce": req.GetResponseNonce(), "resource_names": req.GetResourceNames()}
			if d := req.GetErrorDetail(); d != nil {
				ev["nack"] = d.GetMessage()
			}
			b.log.write(ev)
			if err := up.Send(req); err != nil {
				errc <- fmt.Errorf("to the agent: %w", err)
				return
			}
		}
	}()
	go func() {
		for {
			resp, err := up.Recv()
			if err != nil {
				errc <- fmt.Errorf("from the agent: %w", err)
				return
			}
			b.log.write(map[string]any{"event": "from_agent", "type_url": resp.GetTypeUrl(), "version_info": resp.GetVersionInfo(),
				"nonce": resp.GetNonce(), "resources": xdsjson.Resources(resp)})
			binds := b.binds
			if resp.GetTypeUrl() == ListenerType {
				if binds, err = b.bindsFor(resp.GetVersionInfo()); err != nil {
					b.log.write(map[string]any{"event": "error", "type_url": resp.GetTypeUrl(), "version_info": resp.GetVersionInfo(), "error": err.Error()})
					errc <- err
					return
				}
			}
			out, rws, err := RewriteResponse(resp, binds)
			if err != nil {
				b.log.write(map[string]any{"event": "error", "type_url": resp.GetTypeUrl(), "version_info": resp.GetVersionInfo(), "error": err.Error()})
				errc <- err
				return
			}
			for _, r := range rws {
				b.log.write(map[string]any{"event": "rewrite", "type_url": r.TypeURL, "resource": r.Resource, "kind": r.Kind, "detail": r.Detail, "version_info": resp.GetVersionInfo()})
			}
			b.log.write(map[string]any{"event": "to_envoy", "type_url": out.GetTypeUrl(), "version_info": out.GetVersionInfo(),
				"nonce": out.GetNonce(), "resources": xdsjson.Resources(out)})
			if err := down.Send(out); err != nil {
				errc <- fmt.Errorf("to Envoy: %w", err)
				return
			}
		}
	}()
	err = <-errc
	_ = up.CloseSend()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	b.log.write(map[string]any{"event": "stream_end", "type_url": typeURL, "error": err.Error()})
	return err
}
