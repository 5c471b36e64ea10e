package main

// Binds read from the agent itself (--binds-from): for each LoadBalancer frontend of a Service a
// CiliumEnvoyConfig redirects, the proxy port the agent sends it to (agent-plane's GET /binds,
// which resolves the CEC's desired redirects with Cilium's own ProxyRedirects.ForPort). The
// bridge binds each listener at the frontends redirected to its proxy port: the Gateway's
// address and its Service's ports, as a node's TPROXY would deliver them. Read again for every
// listener update, because the agent allocates a proxy port when it parses a CEC, just before it
// sends the listener.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"time"
)

// AgentBind is one entry of agent-plane's GET /binds.
type AgentBind struct {
	ProxyPort   uint16 `json:"proxy_port"`
	Address     string `json:"address"`
	Service     string `json:"service"`
	ServicePort uint16 `json:"service_port"`
	CEC         string `json:"cec"`
	Installed   bool   `json:"installed"`
}

// maxBindsBytes bounds the answer read from the agent's dump socket.
const maxBindsBytes = 16 << 20

// FetchAgentBinds asks the agent's dump socket for its binds.
func FetchAgentBinds(socket string) ([]AgentBind, error) {
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}},
	}
	resp, err := client.Get("http://agent/binds")
	if err != nil {
		return nil, fmt.Errorf("the agent's dump socket %s: %w", socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the agent's dump socket %s: GET /binds: %s", socket, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBindsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("the agent's dump socket %s: reading /binds: %w", socket, err)
	}
	if len(body) > maxBindsBytes {
		return nil, fmt.Errorf("the agent's dump socket %s: /binds is larger than %d bytes", socket, maxBindsBytes)
	}
	var out []AgentBind
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("the agent's dump socket %s: /binds: %w", socket, err)
	}
	return out, nil
}

// BindsFromAgent turns the agent's binds into the bridge's: each proxy port to every frontend
// address redirected to it, sorted. A frontend address that is not loopback is never bound
// (nothing may listen outside 127.0.0.0/8 and ::1): it is returned in refused, for the log.
func BindsFromAgent(entries []AgentBind) (binds Binds, refused []string) {
	binds = Binds{}
	seen := map[uint32]map[netip.AddrPort]bool{}
	for _, e := range entries {
		ap, err := netip.ParseAddrPort(e.Address)
		if err != nil {
			refused = append(refused, fmt.Sprintf("%s of Service %s: not an address and port (%v)", e.Address, e.Service, err))
			continue
		}
		if !ap.Addr().IsLoopback() {
			refused = append(refused, fmt.Sprintf("%s of Service %s (proxy port %d): not a loopback address, not bound", e.Address, e.Service, e.ProxyPort))
			continue
		}
		p := uint32(e.ProxyPort)
		if seen[p] == nil {
			seen[p] = map[netip.AddrPort]bool{}
		}
		if !seen[p][ap] {
			seen[p][ap] = true
			binds[p] = append(binds[p], ap)
		}
	}
	for p := range binds {
		sort.Slice(binds[p], func(i, j int) bool { return binds[p][i].Compare(binds[p][j]) < 0 })
	}
	return binds, refused
}

// Merged is the agent's binds with the caller's --bind entries over them (a proxy port given by
// --bind keeps exactly the caller's addresses).
func (b Binds) Merged(over Binds) Binds {
	out := Binds{}
	for p, a := range b {
		out[p] = a
	}
	for p, a := range over {
		out[p] = a
	}
	return out
}
