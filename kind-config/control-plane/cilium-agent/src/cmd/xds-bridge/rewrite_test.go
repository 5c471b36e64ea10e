package main

import (
	"net/netip"
	"strings"
	"testing"

	ciliumapi "github.com/cilium/proxy/go/cilium/api"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	upstreamcodec "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	tlsinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func addr(ip string, port uint32) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{Address: ip, PortSpecifier: &core.SocketAddress_PortValue{PortValue: port}}}}
}

// A listener shaped as cilium-agent's CEC parser leaves a Gateway listener: its proxy port on
// 127.0.0.1, transparent, cilium.bpf_metadata first, cilium.network before the HTTP connection
// manager, cilium.l7policy before the router.
func agentListener(t *testing.T, name string, port uint32) *listener.Listener {
	m := &hcm.HttpConnectionManager{
		StatPrefix:     name,
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &routepb.RouteConfiguration{Name: "r"}},
		HttpFilters: []*hcm.HttpFilter{
			{Name: "cilium.l7policy", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &ciliumapi.L7Policy{})}},
			{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &router.Router{})}},
		},
	}
	return &listener.Listener{
		Name:        name,
		Address:     addr("127.0.0.1", port),
		Transparent: wrapperspb.Bool(true),
		ListenerFilters: []*listener.ListenerFilter{
			{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listener.ListenerFilter_TypedConfig{TypedConfig: mustAny(t, &tlsinspector.TlsInspector{})}},
			{Name: "cilium.bpf_metadata", ConfigType: &listener.ListenerFilter_TypedConfig{TypedConfig: mustAny(t, &ciliumapi.BpfMetadata{ProxyId: port})}},
		},
		FilterChains: []*listener.FilterChain{{
			Name: "http",
			Filters: []*listener.Filter{
				{Name: "cilium.network", ConfigType: &listener.Filter_TypedConfig{TypedConfig: mustAny(t, &ciliumapi.NetworkFilter{})}},
				{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listener.Filter_TypedConfig{TypedConfig: mustAny(t, m)}},
			},
		}},
	}
}

func response(t *testing.T, msgs ...proto.Message) *discovery.DiscoveryResponse {
	r := &discovery.DiscoveryResponse{VersionInfo: "7", Nonce: "7"}
	for _, m := range msgs {
		a := mustAny(t, m)
		r.TypeUrl = a.TypeUrl
		r.Resources = append(r.Resources, a)
	}
	return r
}

func binds(t *testing.T, specs ...string) Binds {
	b := Binds{}
	for _, s := range specs {
		if err := b.ParseBind(s); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestListenerStrippedAndBoundWhereTheRedirectSends(t *testing.T) {
	in := response(t, agentListener(t, "ns/cilium-gateway-gw/listener", 14321))
	out, rws, err := RewriteResponse(in, binds(t, "14321=127.0.0.7:80,127.0.0.7:443"))
	if err != nil {
		t.Fatal(err)
	}
	if out.GetVersionInfo() != "7" || out.GetNonce() != "7" {
		t.Fatalf("version/nonce changed: %s/%s", out.GetVersionInfo(), out.GetNonce())
	}
	l := &listener.Listener{}
	if err := out.Resources[0].UnmarshalTo(l); err != nil {
		t.Fatal(err)
	}
	if got := describe(l.Address, l.AdditionalAddresses); got != "127.0.0.7:80,127.0.0.7:443" {
		t.Errorf("bound at %s", got)
	}
	if l.GetTransparent().GetValue() {
		t.Error("transparent kept")
	}
	if len(l.ListenerFilters) != 1 || l.ListenerFilters[0].Name != "envoy.filters.listener.tls_inspector" {
		t.Errorf("listener filters: %v", l.ListenerFilters)
	}
	fs := l.FilterChains[0].Filters
	if len(fs) != 1 || fs[0].Name != "envoy.filters.network.http_connection_manager" {
		t.Fatalf("network filters: %v", fs)
	}
	m := &hcm.HttpConnectionManager{}
	if err := fs[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if len(m.HttpFilters) != 1 || m.HttpFilters[0].Name != "envoy.filters.http.router" {
		t.Errorf("HTTP filters: %v", m.HttpFilters)
	}
	var kinds []string
	for _, r := range rws {
		kinds = append(kinds, r.Kind+": "+r.Detail)
	}
	want := []string{
		"bind: 127.0.0.1:14321 -> 127.0.0.7:80,127.0.0.7:443",
		"transparent: transparent true -> false",
		"strip: listener filter cilium.bpf_metadata",
		"strip: network filter cilium.network of chain http",
		"strip: HTTP filter cilium.l7policy of chain http",
	}
	if len(kinds) != len(want) {
		t.Fatalf("rewrites:\n%s", strings.Join(kinds, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(kinds[i], w) {
			t.Errorf("rewrite %d: %q, want prefix %q", i, kinds[i], w)
		}
	}
	// The input is not changed: what the agent sent is recorded as it sent it.
	orig := &listener.Listener{}
	_ = in.Resources[0].UnmarshalTo(orig)
	if len(orig.ListenerFilters) != 2 || orig.Address.GetSocketAddress().GetPortValue() != 14321 {
		t.Error("the agent's response was modified in place")
	}
}

func TestUnmappedListenerBindsNowhereReachable(t *testing.T) {
	out, rws, err := RewriteResponse(response(t, agentListener(t, "l", 15000)), binds(t, "14321=127.0.0.7:80"))
	if err != nil {
		t.Fatal(err)
	}
	l := &listener.Listener{}
	_ = out.Resources[0].UnmarshalTo(l)
	if got := describe(l.Address, l.AdditionalAddresses); got != "127.0.0.1:0" {
		t.Errorf("unmapped listener bound at %s", got)
	}
	if !strings.Contains(rws[0].Detail, "no redirect sends to proxy port 15000") {
		t.Errorf("rewrite not said: %+v", rws[0])
	}
}

func TestClusterUpstreamCiliumFilterStripped(t *testing.T) {
	opts := &upstreamhttp.HttpProtocolOptions{HttpFilters: []*hcm.HttpFilter{
		{Name: "cilium.l7policy", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &ciliumapi.L7Policy{})}},
		{Name: "envoy.filters.http.upstream_codec", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &upstreamcodec.UpstreamCodec{})}},
	}}
	c := &clusterpb.Cluster{Name: "ns/svc:80", TypedExtensionProtocolOptions: map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, opts),
	}}
	out, rws, err := RewriteResponse(response(t, c), Binds{})
	if err != nil {
		t.Fatal(err)
	}
	got := &clusterpb.Cluster{}
	_ = out.Resources[0].UnmarshalTo(got)
	o := &upstreamhttp.HttpProtocolOptions{}
	_ = got.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(o)
	if len(o.HttpFilters) != 1 || o.HttpFilters[0].Name != "envoy.filters.http.upstream_codec" {
		t.Errorf("upstream filters: %v", o.HttpFilters)
	}
	if len(rws) != 1 || rws[0].Detail != "upstream HTTP filter cilium.l7policy" {
		t.Errorf("rewrites: %+v", rws)
	}
}

func TestOtherTypesPassUnchanged(t *testing.T) {
	in := response(t, &routepb.RouteConfiguration{Name: "r"})
	out, rws, err := RewriteResponse(in, Binds{})
	if err != nil || len(rws) != 0 || !proto.Equal(in, out) {
		t.Fatalf("changed: %v %v", rws, err)
	}
}

func TestBindsOnlyLoopback(t *testing.T) {
	for _, bad := range []string{"80=10.0.0.1:80", "80=192.168.1.1:80", "80=0.0.0.0:80", "x=127.0.0.1:80", "80", "0=127.0.0.1:80", "80=127.0.0.1"} {
		if err := (Binds{}).ParseBind(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b := binds(t, "80=[::1]:8080", "80=127.0.0.9:81")
	if len(b[80]) != 2 {
		t.Errorf("binds: %v", b)
	}
}

func TestBindsFromAgentKeepsLoopbackFrontendsOnly(t *testing.T) {
	binds, refused := BindsFromAgent([]AgentBind{
		{ProxyPort: 16288, Address: "127.18.0.0:443", Service: "demo/cilium-gateway-gw", ServicePort: 443},
		{ProxyPort: 16288, Address: "127.18.0.0:80", Service: "demo/cilium-gateway-gw", ServicePort: 80},
		{ProxyPort: 16288, Address: "127.18.0.0:80", Service: "demo/cilium-gateway-gw", ServicePort: 80},
		{ProxyPort: 17000, Address: "172.18.0.1:443", Service: "demo/other", ServicePort: 443},
	})
	want := []netip.AddrPort{netip.MustParseAddrPort("127.18.0.0:80"), netip.MustParseAddrPort("127.18.0.0:443")}
	if got := binds[16288]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("proxy port 16288 bound at %v, want %v", got, want)
	}
	if _, ok := binds[17000]; ok {
		t.Fatalf("a non-loopback frontend was bound: %v", binds[17000])
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "172.18.0.1:443") {
		t.Fatalf("refused %v", refused)
	}
	merged := binds.Merged(Binds{16288: {netip.MustParseAddrPort("127.0.0.9:8443")}})
	if got := merged[16288]; len(got) != 1 || got[0] != netip.MustParseAddrPort("127.0.0.9:8443") {
		t.Fatalf("--bind did not win: %v", got)
	}
}
