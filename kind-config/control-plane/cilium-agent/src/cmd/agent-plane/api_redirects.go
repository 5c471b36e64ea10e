//go:build !cilium_single_proxy_redirect

// From cilium@v1.19.6 a Service holds a set of proxy redirects, one per port or a wildcard
// (pkg/loadbalancer/service.go ProxyRedirects).
package main

import "github.com/cilium/cilium/pkg/loadbalancer"

// proxyPortFor is the proxy port svc redirects port to (0: none), read with ProxyRedirects.ForPort
// as the agent's datapath reconciler reads it (pkg/loadbalancer/reconciler/bpf_reconciler.go).
func proxyPortFor(svc *loadbalancer.Service, port uint16) uint16 {
	if pr := svc.ProxyRedirects.ForPort(port); pr != nil {
		return pr.ProxyPort
	}
	return 0
}

// desiredProxyPort is the proxy port a CiliumEnvoyConfig's desired redirects (envoy-resources'
// Redirects value from cilium@v1.19.6: a ProxyRedirects per Service) send port to (0: none).
func desiredProxyPort(prs loadbalancer.ProxyRedirects, port uint16) uint16 {
	if pr := prs.ForPort(port); pr != nil {
		return pr.ProxyPort
	}
	return 0
}
