package peering

import (
	"context"
	"errors"
)

// ExchangeRequest is what the dialing cluster sends to the acceptor to
// establish a peering: the one-time secret of the token, and who it is.
type ExchangeRequest struct {
	PeerID              string // the acceptor's peering id, from the token
	EstablishmentSecret string `keel:"secret"` // from the token
	DialerID            string // the dialer's peering id
	Datacenter          string
	Partition           string
	ServerName          string
	ServerAddresses     []string
}

// ExchangeResponse is the acceptor's answer to an ExchangeRequest.
type ExchangeResponse struct {
	StreamSecret     string   `keel:"secret"` // authenticates later messages of both sides
	ExportedServices []string // what the acceptor exports to the dialer
}

// HeartbeatRequest is a message of the stream, sent by the dialer.
type HeartbeatRequest struct {
	PeerID           string   // the receiver's peering id
	StreamSecret     string   `keel:"secret"`
	ExportedServices []string // what the sender exports to the receiver
}

// HeartbeatResponse is the acceptor's answer to a HeartbeatRequest.
type HeartbeatResponse struct {
	ExportedServices []string // what the receiver exports to the sender
}

// TerminateRequest tells a peer that the sender deleted the peering.
type TerminateRequest struct {
	PeerID       string // the receiver's peering id
	StreamSecret string `keel:"secret"`
}

// Transport carries the messages of peering to a peer cluster's server
// addresses (host:port). Its errors carry keel kinds: the kind the peer's
// handler answered with, or keel.KindUnavailable when no address answered.
// The Service puts its own prefix ("peering: ") in front of them, once.
// Implementations are safe for concurrent use.
type Transport interface {
	Exchange(ctx context.Context, addrs []string, req *ExchangeRequest) (*ExchangeResponse, error)
	Heartbeat(ctx context.Context, addrs []string, req *HeartbeatRequest) (*HeartbeatResponse, error)
	Terminate(ctx context.Context, addrs []string, req *TerminateRequest) error
}

// errRefused is the answer to a message whose secret does not match.
var errRefused = errors.New("the peering secret was refused")
