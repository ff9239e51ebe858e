package peering

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/keelhq/keel"
)

// ExchangeRequest is what the dialing cluster sends to the acceptor to
// establish a peering: the one-time secret of the token, and who it is.
type ExchangeRequest struct {
	PeerID              string // the acceptor's peering id, from the token
	EstablishmentSecret string // from the token
	DialerID            string // the dialer's peering id
	Datacenter          string
	Partition           string
	ServerName          string
	ServerAddresses     []string
}

// ExchangeResponse is the acceptor's answer to an ExchangeRequest.
type ExchangeResponse struct {
	StreamSecret     string   // authenticates later messages of both sides
	ExportedServices []string // what the acceptor exports to the dialer
}

// HeartbeatRequest is a message of the stream, sent by the dialer.
type HeartbeatRequest struct {
	PeerID           string // the receiver's peering id
	StreamSecret     string
	ExportedServices []string // what the sender exports to the receiver
}

// HeartbeatResponse is the acceptor's answer to a HeartbeatRequest.
type HeartbeatResponse struct {
	ExportedServices []string // what the receiver exports to the sender
}

// TerminateRequest tells a peer that the sender deleted the peering.
type TerminateRequest struct {
	PeerID       string // the receiver's peering id
	StreamSecret string
}

// Transport carries the messages of peering to a peer cluster's server
// addresses (host:port). Its errors carry keel kinds: the kind the peer's
// handler answered with, or keel.ErrUnavailable when no address answered.
// The Service puts its own prefix ("peering: ") in front of them, once.
// Implementations are safe for concurrent use.
type Transport interface {
	Exchange(ctx context.Context, addrs []string, req *ExchangeRequest) (*ExchangeResponse, error)
	Heartbeat(ctx context.Context, addrs []string, req *HeartbeatRequest) (*HeartbeatResponse, error)
	Terminate(ctx context.Context, addrs []string, req *TerminateRequest) error
}

// InProcess is a Transport between Services of one process, for tests and
// examples: each Service is registered under its addresses. The zero value
// is ready to use and safe for concurrent use.
type InProcess struct {
	mu    sync.Mutex
	nodes map[string]*Service
	down  map[string]bool
}

var _ Transport = (*InProcess)(nil)

// Register makes s reachable at addr.
func (n *InProcess) Register(addr string, s *Service) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes = map[string]*Service{}
	}
	n.nodes[addr] = s
}

// SetDown makes addr unreachable (down true) or reachable again.
func (n *InProcess) SetDown(addr string, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down == nil {
		n.down = map[string]bool{}
	}
	n.down[addr] = down
}

// pick returns the first reachable Service of addrs.
func (n *InProcess) pick(addrs []string) (*Service, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		if s := n.nodes[a]; s != nil && !n.down[a] {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no peer server answers at %v: %w", addrs, keel.ErrUnavailable)
}

// Exchange implements Transport.
func (n *InProcess) Exchange(ctx context.Context, addrs []string, req *ExchangeRequest) (_ *ExchangeResponse, err error) {
	defer prefixErr(&err)
	s, err := n.pick(addrs)
	if err != nil {
		return nil, err
	}
	return s.HandleExchange(ctx, req)
}

// Heartbeat implements Transport.
func (n *InProcess) Heartbeat(ctx context.Context, addrs []string, req *HeartbeatRequest) (_ *HeartbeatResponse, err error) {
	defer prefixErr(&err)
	s, err := n.pick(addrs)
	if err != nil {
		return nil, err
	}
	return s.HandleHeartbeat(ctx, req)
}

// Terminate implements Transport.
func (n *InProcess) Terminate(ctx context.Context, addrs []string, req *TerminateRequest) (err error) {
	defer prefixErr(&err)
	s, err := n.pick(addrs)
	if err != nil {
		return err
	}
	return s.HandleTerminate(ctx, req)
}

// errRefused is the answer to a message whose secret does not match.
var errRefused = errors.New("the peering secret was refused")
