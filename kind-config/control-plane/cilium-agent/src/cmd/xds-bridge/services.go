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

	RouteType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	SecretType   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
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
	s := services{b: b}
	if mode == ModeADS {
		discovery.RegisterAggregatedDiscoveryServiceServer(srv, s)
		return
	}
	listener.RegisterListenerDiscoveryServiceServer(srv, s)
	cluster.RegisterClusterDiscoveryServiceServer(srv, s)
	route.RegisterRouteDiscoveryServiceServer(srv, s)
	endpoint.RegisterEndpointDiscoveryServiceServer(srv, s)
	secret.RegisterSecretDiscoveryServiceServer(srv, s)
}

// services answers each of Envoy's streams by joining it to a stream of the same service to the
// agent. In split mode one per type, as with cilium-envoy (cilium@v1.19.6:pkg/envoy/grpc.go). In
// ADS the one aggregated stream: what the agent sends on it is rewritten per response by the
// response's type URL (RewriteResponse), as on the split streams, and Envoy's ACKs and NACKs of
// each type go back on it unchanged.
type services struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
	listener.UnimplementedListenerDiscoveryServiceServer
	cluster.UnimplementedClusterDiscoveryServiceServer
	route.UnimplementedRouteDiscoveryServiceServer
	endpoint.UnimplementedEndpointDiscoveryServiceServer
	secret.UnimplementedSecretDiscoveryServiceServer
	b *bridge
}

// opener opens the agent's side of a stream.
type opener func(context.Context) (upstream, error)

// open is the agent's side of one service: its client's stream method, for any service's client.
func open[U upstream](stream func(context.Context, ...grpc.CallOption) (U, error)) opener {
	return func(ctx context.Context) (upstream, error) { return stream(ctx) }
}

func (s services) StreamAggregatedResources(down discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return s.b.pipe(adsStream, down, open(discovery.NewAggregatedDiscoveryServiceClient(s.b.conn).StreamAggregatedResources))
}

func (s services) StreamListeners(down listener.ListenerDiscoveryService_StreamListenersServer) error {
	return s.b.pipe(ListenerType, down, open(listener.NewListenerDiscoveryServiceClient(s.b.conn).StreamListeners))
}

func (s services) StreamClusters(down cluster.ClusterDiscoveryService_StreamClustersServer) error {
	return s.b.pipe(ClusterType, down, open(cluster.NewClusterDiscoveryServiceClient(s.b.conn).StreamClusters))
}

func (s services) StreamRoutes(down route.RouteDiscoveryService_StreamRoutesServer) error {
	return s.b.pipe(RouteType, down, open(route.NewRouteDiscoveryServiceClient(s.b.conn).StreamRoutes))
}

func (s services) StreamEndpoints(down endpoint.EndpointDiscoveryService_StreamEndpointsServer) error {
	return s.b.pipe(EndpointType, down, open(endpoint.NewEndpointDiscoveryServiceClient(s.b.conn).StreamEndpoints))
}

func (s services) StreamSecrets(down secret.SecretDiscoveryService_StreamSecretsServer) error {
	return s.b.pipe(SecretType, down, open(secret.NewSecretDiscoveryServiceClient(s.b.conn).StreamSecrets))
}
