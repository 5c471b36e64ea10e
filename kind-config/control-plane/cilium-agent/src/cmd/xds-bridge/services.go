package main

// The services the bridge serves Envoy, one set per envoy-xds-mode of the agent. Every one joins
// Envoy's stream to a stream of the same service to the agent through pipe (main.go), so both
// modes share the relay, the log and the rewrites.

import (
	"context"
	"fmt"

	cluster "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secret "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"google.golang.org/grpc"
)

// XDSMode is the agent's envoy-xds-mode, as the bridge serves it.
type XDSMode string

const (
	// ModeSplit: one gRPC stream per resource type (cilium@v1.19.6:pkg/envoy/grpc.go; at 1.20
	// envoy-xds-mode split).
	ModeSplit XDSMode = "split"
	// ModeADS: one Aggregated Discovery Service stream for every type
	// (cilium@v1.20.2:pkg/envoy/grpcnew.go, for envoy-xds-mode ads and strict-ads alike: strict
	// only adds the agent's own snapshot consistency check, pkg/envoy/xds_server_ads.go).
	ModeADS XDSMode = "ads"

	// adsStream names the aggregated stream in the log (its messages carry their own type URLs).
	adsStream = "ads"
)

// ParseXDSMode reads the agent's envoy-xds-mode as cilium-config spells it.
func ParseXDSMode(s string) (XDSMode, error) {
	switch s {
	case "split":
		return ModeSplit, nil
	case "ads", "strict-ads":
		return ModeADS, nil
	}
	return "", fmt.Errorf("--xds-mode %q: the agent's envoy-xds-mode is split, ads or strict-ads", s)
}

// register serves Envoy the services of the agent's mode, and only those: an Envoy bootstrapped
// for the other mode is refused (Unimplemented) rather than bridged to a server the agent does
// not run.
func (b *bridge) register(srv *grpc.Server, mode XDSMode) {
	if mode == ModeADS {
		discovery.RegisterAggregatedDiscoveryServiceServer(srv, ads{b: b})
		return
	}
	listener.RegisterListenerDiscoveryServiceServer(srv, lds{b: b})
	cluster.RegisterClusterDiscoveryServiceServer(srv, cds{b: b})
	route.RegisterRouteDiscoveryServiceServer(srv, rds{b: b})
	endpoint.RegisterEndpointDiscoveryServiceServer(srv, eds{b: b})
	secret.RegisterSecretDiscoveryServiceServer(srv, sds{b: b})
}

// ads joins Envoy's one aggregated stream to one aggregated stream to the agent. What the agent
// sends on it is rewritten per response by the response's type URL (RewriteResponse), as on the
// split streams; Envoy's ACKs and NACKs of each type go back on it unchanged.
type ads struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
	b *bridge
}

func (s ads) StreamAggregatedResources(down discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return s.b.pipe(adsStream, down, func(ctx context.Context) (upstream, error) {
		return discovery.NewAggregatedDiscoveryServiceClient(s.b.conn).StreamAggregatedResources(ctx)
	})
}

// One server type per service: Envoy opens each type's stream with its own RPC, as with
// cilium-envoy (no ADS: the agent's split mode does not serve it, cilium@v1.19.6:pkg/envoy/grpc.go).
type lds struct {
	listener.UnimplementedListenerDiscoveryServiceServer
	b *bridge
}

func (s lds) StreamListeners(down listener.ListenerDiscoveryService_StreamListenersServer) error {
	return s.b.pipe(ListenerType, down, func(ctx context.Context) (upstream, error) {
		return listener.NewListenerDiscoveryServiceClient(s.b.conn).StreamListeners(ctx)
	})
}

type cds struct {
	cluster.UnimplementedClusterDiscoveryServiceServer
	b *bridge
}

func (s cds) StreamClusters(down cluster.ClusterDiscoveryService_StreamClustersServer) error {
	return s.b.pipe(ClusterType, down, func(ctx context.Context) (upstream, error) {
		return cluster.NewClusterDiscoveryServiceClient(s.b.conn).StreamClusters(ctx)
	})
}

type rds struct {
	route.UnimplementedRouteDiscoveryServiceServer
	b *bridge
}

func (s rds) StreamRoutes(down route.RouteDiscoveryService_StreamRoutesServer) error {
	return s.b.pipe("type.googleapis.com/envoy.config.route.v3.RouteConfiguration", down, func(ctx context.Context) (upstream, error) {
		return route.NewRouteDiscoveryServiceClient(s.b.conn).StreamRoutes(ctx)
	})
}

type eds struct {
	endpoint.UnimplementedEndpointDiscoveryServiceServer
	b *bridge
}

func (s eds) StreamEndpoints(down endpoint.EndpointDiscoveryService_StreamEndpointsServer) error {
	return s.b.pipe("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", down, func(ctx context.Context) (upstream, error) {
		return endpoint.NewEndpointDiscoveryServiceClient(s.b.conn).StreamEndpoints(ctx)
	})
}

type sds struct {
	secret.UnimplementedSecretDiscoveryServiceServer
	b *bridge
}

func (s sds) StreamSecrets(down secret.SecretDiscoveryService_StreamSecretsServer) error {
	return s.b.pipe("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", down, func(ctx context.Context) (upstream, error) {
		return secret.NewSecretDiscoveryServiceClient(s.b.conn).StreamSecrets(ctx)
	})
}
