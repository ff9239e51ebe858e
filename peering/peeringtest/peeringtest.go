// Package peeringtest provides a peering.Transport for tests and examples
// that run several peering Services in one process, as net/http/httptest
// does for HTTP: Network hands each message to the Service registered at
// the address it is sent to, and can take an address down to test how a
// Service behaves when its peer does not answer.
package peeringtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
)

// Network is a peering.Transport between the Services of one process: each
// Service is registered under its addresses, and a message sent to an
// address is handed to that Service's handler. The zero value is ready to
// use and safe for concurrent use.
type Network struct {
	mu    sync.Mutex
	nodes map[string]*peering.Service
	down  map[string]bool
}

var _ peering.Transport = (*Network)(nil)

// Register makes s reachable at addr.
func (n *Network) Register(addr string, s *peering.Service) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes = map[string]*peering.Service{}
	}
	n.nodes[addr] = s
}

// SetDown makes addr unreachable (down true) or reachable again.
func (n *Network) SetDown(addr string, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down == nil {
		n.down = map[string]bool{}
	}
	n.down[addr] = down
}

// pick returns the first reachable Service of addrs.
func (n *Network) pick(addrs []string) (*peering.Service, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		if s := n.nodes[a]; s != nil && !n.down[a] {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no peer server answers at %v: %w", addrs, keel.KindUnavailable)
}

// Exchange implements peering.Transport.
func (n *Network) Exchange(ctx context.Context, addrs []string, req *peering.ExchangeRequest) (_ *peering.ExchangeResponse, err error) {
	s, err := n.pick(addrs)
	if err != nil {
		return nil, err
	}
	return s.HandleExchange(ctx, req)
}

// Heartbeat implements peering.Transport.
func (n *Network) Heartbeat(ctx context.Context, addrs []string, req *peering.HeartbeatRequest) (_ *peering.HeartbeatResponse, err error) {
	s, err := n.pick(addrs)
	if err != nil {
		return nil, err
	}
	return s.HandleHeartbeat(ctx, req)
}

// Terminate implements peering.Transport.
func (n *Network) Terminate(ctx context.Context, addrs []string, req *peering.TerminateRequest) (err error) {
	s, err := n.pick(addrs)
	if err != nil {
		return err
	}
	return s.HandleTerminate(ctx, req)
}
