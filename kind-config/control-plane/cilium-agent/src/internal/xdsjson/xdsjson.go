// Package xdsjson renders xDS resources as JSON for the bridge's log and the dump: every type
// Cilium's Gateway API translation writes is linked, and private keys are never written.
package xdsjson

import (
	"encoding/json"
	"path/filepath"

	_ "github.com/cilium/proxy/go/cilium/api"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// Redacted stands in for a private key's bytes.
const Redacted = "(private key not recorded)"

// Resources renders each resource of a response; one this program cannot read is recorded by
// its type URL and size.
func Resources(resp *discovery.DiscoveryResponse) []json.RawMessage {
	out := []json.RawMessage{}
	for _, r := range resp.GetResources() {
		m, err := r.UnmarshalNew()
		if err == nil {
			if s, ok := m.(*tlspb.Secret); ok && s.GetTlsCertificate().GetPrivateKey() != nil {
				s.GetTlsCertificate().PrivateKey = &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: Redacted}}
			}
			if j, err2 := protojson.Marshal(m); err2 == nil {
				out = append(out, j)
				continue
			}
		}
		j, _ := json.Marshal(map[string]any{"@type": r.GetTypeUrl(), "unreadable_bytes": len(r.GetValue())})
		out = append(out, j)
	}
	return out
}

// UnixTarget is gRPC's target for a unix socket path, relative or not ("unix://" takes an
// absolute path only; a relative one would be read as an authority).
func UnixTarget(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "unix://" + path
}
