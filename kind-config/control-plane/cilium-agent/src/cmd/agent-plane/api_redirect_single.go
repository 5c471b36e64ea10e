//go:build cilium_single_proxy_redirect

// Before cilium@v1.19.6 (the pin 1.19.5) a Service holds at most one proxy redirect
// (pkg/loadbalancer/service.go Service.ProxyRedirect, limited to its Ports when they are set).
package main

import "github.com/cilium/cilium/pkg/loadbalancer"

// proxyPortFor is the proxy port svc redirects port to (0: none), read as the agent's datapath
// reconciler reads it at cilium@v1.19.5 (pkg/loadbalancer/reconciler/bpf_reconciler.go:
// ProxyRedirect.Redirects, then its ProxyPort).
func proxyPortFor(svc *loadbalancer.Service, port uint16) uint16 {
	if svc.ProxyRedirect.Redirects(port) {
		return svc.ProxyRedirect.ProxyPort
	}
	return 0
}

// desiredProxyPort is the proxy port a CiliumEnvoyConfig's desired redirect (envoy-resources'
// Redirects value at cilium@v1.19.5: one *ProxyRedirect per Service) sends port to (0: none).
func desiredProxyPort(pr *loadbalancer.ProxyRedirect, port uint16) uint16 {
	if pr.Redirects(port) {
		return pr.ProxyPort
	}
	return 0
}
