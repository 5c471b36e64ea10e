package main

// The bridge's only changes to what Cilium's agent serves. Two kinds, nothing else:
//
//  1. Cilium's own extensions are removed (upstream Envoy does not have them): every listener
//     filter, network filter, HTTP filter, upstream HTTP filter and transport socket whose name
//     starts with "cilium." or whose typed config is a "cilium." message.
//  2. Each listener is bound where the agent's redirect sends the Gateway's Service: the caller
//     maps the listener's proxy port (the port the agent allocated and put in the listener's
//     address, pkg/ciliumenvoyconfig/cec_resource_parser.go) to loopback addresses. A listener
//     whose port is not mapped is bound to 127.0.0.1 port 0, which nothing is sent to.
//     `transparent` is cleared: it asks for IP_TRANSPARENT (CAP_NET_ADMIN), which only
//     cilium-agent's TPROXY datapath uses.
//
// Every change is returned as a Rewrite, for the caller to log.

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	ListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

	hcmType           = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	httpProtocolOpts  = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	ciliumNamePrefix  = "cilium."
	ciliumTypePrefix  = "type.googleapis.com/cilium."
	unmappedAddress   = "127.0.0.1"
	rewriteStrip      = "strip"
	rewriteBind       = "bind"
	rewriteTransparen = "transparent"
)

// Rewrite is one change the bridge made, logged as a JSON line.
type Rewrite struct {
	TypeURL  string `json:"type_url"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
}

// Binds maps a listener's proxy port to the loopback addresses it is bound to instead.
type Binds map[uint32][]netip.AddrPort

// ParseBind reads "PORT=ADDR:PORT[,ADDR:PORT...]"; every address must be loopback, so nothing
// the bridge hands Envoy listens outside 127.0.0.0/8 or ::1.
func (b Binds) ParseBind(s string) error {
	port, addrs, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("--bind %q: want PROXYPORT=ADDR:PORT[,ADDR:PORT...]", s)
	}
	var p uint32
	if _, err := fmt.Sscanf(port, "%d", &p); err != nil || p == 0 || p > 65535 {
		return fmt.Errorf("--bind %q: proxy port %q is not a port", s, port)
	}
	for _, a := range strings.Split(addrs, ",") {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return fmt.Errorf("--bind %q: %w", s, err)
		}
		if !ap.Addr().IsLoopback() {
			return fmt.Errorf("--bind %q: %s is not a loopback address (nothing may listen outside 127.0.0.0/8 and ::1)", s, ap.Addr())
		}
		b[p] = append(b[p], ap)
	}
	return nil
}

func isCilium(name string, typed *anypb.Any) bool {
	return strings.HasPrefix(name, ciliumNamePrefix) || (typed != nil && strings.HasPrefix(typed.GetTypeUrl(), ciliumTypePrefix))
}

func socketAddress(ap netip.AddrPort) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address:       ap.Addr().String(),
		PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(ap.Port())},
	}}}
}

// RewriteResponse returns the response Envoy gets for one the agent sent, and every change made.
// Only listeners and clusters change; other types pass unchanged. The response's version and
// nonce are kept, so Envoy's ACK or NACK of it is an answer to the agent's own version.
func RewriteResponse(resp *discovery.DiscoveryResponse, binds Binds) (*discovery.DiscoveryResponse, []Rewrite, error) {
	out := proto.Clone(resp).(*discovery.DiscoveryResponse)
	var rws []Rewrite
	for i, res := range out.Resources {
		switch res.GetTypeUrl() {
		case ListenerType:
			l := &listener.Listener{}
			if err := res.UnmarshalTo(l); err != nil {
				return nil, nil, fmt.Errorf("listener %d of version %s: %w", i, resp.GetVersionInfo(), err)
			}
			rs, err := rewriteListener(l, binds)
			if err != nil {
				return nil, nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
			}
			rws = append(rws, rs...)
			if out.Resources[i], err = anypb.New(l); err != nil {
				return nil, nil, err
			}
		case ClusterType:
			c := &cluster.Cluster{}
			if err := res.UnmarshalTo(c); err != nil {
				return nil, nil, fmt.Errorf("cluster %d of version %s: %w", i, resp.GetVersionInfo(), err)
			}
			rs, err := rewriteCluster(c)
			if err != nil {
				return nil, nil, fmt.Errorf("cluster %s: %w", c.GetName(), err)
			}
			rws = append(rws, rs...)
			if out.Resources[i], err = anypb.New(c); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, rws, nil
}

func rewriteListener(l *listener.Listener, binds Binds) ([]Rewrite, error) {
	var rws []Rewrite
	note := func(kind, detail string) {
		rws = append(rws, Rewrite{TypeURL: ListenerType, Resource: l.GetName(), Kind: kind, Detail: detail})
	}
	// Internal listeners have no address to move.
	if l.GetInternalListener() == nil {
		port := l.GetAddress().GetSocketAddress().GetPortValue()
		from := describe(l.GetAddress(), l.GetAdditionalAddresses())
		if to, ok := binds[port]; ok && len(to) > 0 {
			l.Address = socketAddress(to[0])
			l.AdditionalAddresses = nil
			for _, a := range to[1:] {
				l.AdditionalAddresses = append(l.AdditionalAddresses, &listener.AdditionalAddress{Address: socketAddress(a)})
			}
			note(rewriteBind, fmt.Sprintf("%s -> %s (the addresses the caller gave the agent's redirect to proxy port %d)", from, describe(l.Address, l.AdditionalAddresses), port))
		} else {
			l.Address = socketAddress(netip.AddrPortFrom(netip.MustParseAddr(unmappedAddress), 0))
			l.AdditionalAddresses = nil
			note(rewriteBind, fmt.Sprintf("%s -> %s:0 (no redirect sends to proxy port %d)", from, unmappedAddress, port))
		}
	}
	if l.GetTransparent() != nil && l.GetTransparent().GetValue() {
		l.Transparent = wrapperspb.Bool(false)
		note(rewriteTransparen, "transparent true -> false (IP_TRANSPARENT is the TPROXY datapath's, which DryMode does not have)")
	}
	kept := l.ListenerFilters[:0]
	for _, f := range l.ListenerFilters {
		if isCilium(f.GetName(), f.GetTypedConfig()) {
			note(rewriteStrip, "listener filter "+f.GetName())
			continue
		}
		kept = append(kept, f)
	}
	l.ListenerFilters = kept
	for ci, fc := range l.FilterChains {
		chain := fc.GetName()
		if chain == "" {
			chain = fmt.Sprintf("#%d", ci)
		}
		filters := fc.Filters[:0]
		for _, f := range fc.Filters {
			if isCilium(f.GetName(), f.GetTypedConfig()) {
				note(rewriteStrip, fmt.Sprintf("network filter %s of chain %s", f.GetName(), chain))
				continue
			}
			if f.GetTypedConfig().GetTypeUrl() == hcmType {
				m := &hcm.HttpConnectionManager{}
				if err := f.GetTypedConfig().UnmarshalTo(m); err != nil {
					return nil, fmt.Errorf("chain %s: %w", chain, err)
				}
				hf := m.HttpFilters[:0]
				stripped := false
				for _, h := range m.HttpFilters {
					if isCilium(h.GetName(), h.GetTypedConfig()) {
						note(rewriteStrip, fmt.Sprintf("HTTP filter %s of chain %s", h.GetName(), chain))
						stripped = true
						continue
					}
					hf = append(hf, h)
				}
				m.HttpFilters = hf
				if stripped {
					a, err := anypb.New(m)
					if err != nil {
						return nil, err
					}
					f.ConfigType = &listener.Filter_TypedConfig{TypedConfig: a}
				}
			}
			filters = append(filters, f)
		}
		fc.Filters = filters
		if ts := fc.GetTransportSocket(); ts != nil && isCilium(ts.GetName(), ts.GetTypedConfig()) {
			note(rewriteStrip, fmt.Sprintf("transport socket %s of chain %s", ts.GetName(), chain))
			fc.TransportSocket = nil
		}
	}
	return rws, nil
}

func rewriteCluster(c *cluster.Cluster) ([]Rewrite, error) {
	var rws []Rewrite
	note := func(detail string) {
		rws = append(rws, Rewrite{TypeURL: ClusterType, Resource: c.GetName(), Kind: rewriteStrip, Detail: detail})
	}
	if ts := c.GetTransportSocket(); ts != nil && isCilium(ts.GetName(), ts.GetTypedConfig()) {
		note("transport socket " + ts.GetName())
		c.TransportSocket = nil
	}
	for key, opts := range c.GetTypedExtensionProtocolOptions() {
		if !strings.HasSuffix(key, httpProtocolOpts) && !strings.HasSuffix(opts.GetTypeUrl(), httpProtocolOpts) {
			continue
		}
		o := &upstreamhttp.HttpProtocolOptions{}
		if err := opts.UnmarshalTo(o); err != nil {
			return nil, fmt.Errorf("protocol options %s: %w", key, err)
		}
		kept := o.HttpFilters[:0]
		stripped := false
		for _, h := range o.HttpFilters {
			if isCilium(h.GetName(), h.GetTypedConfig()) {
				note("upstream HTTP filter " + h.GetName())
				stripped = true
				continue
			}
			kept = append(kept, h)
		}
		o.HttpFilters = kept
		if stripped {
			a, err := anypb.New(o)
			if err != nil {
				return nil, err
			}
			c.TypedExtensionProtocolOptions[key] = a
		}
	}
	return rws, nil
}

func describe(a *core.Address, more []*listener.AdditionalAddress) string {
	s := func(a *core.Address) string {
		sa := a.GetSocketAddress()
		if sa == nil {
			return "(no socket address)"
		}
		return net.JoinHostPort(sa.GetAddress(), fmt.Sprint(sa.GetPortValue()))
	}
	out := s(a)
	for _, m := range more {
		out += "," + s(m.GetAddress())
	}
	return out
}
