package peering

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/storage"
)

// State is the state of a peering as Consul names it.
type State string

// The states a peering goes through; see the package documentation.
const (
	// StateInitial: the token is generated and no peer has used it yet.
	StateInitial State = "INITIAL"
	// StateActive: the stream with the peer is up and heartbeats arrive.
	StateActive State = "ACTIVE"
	// StateFailing: no heartbeat arrived for Options.HeartbeatTimeout.
	StateFailing State = "FAILING"
	// StateTerminated: one of the two sides deleted the peering.
	StateTerminated State = "TERMINATED"
)

// DefaultPartition is the only partition keel serves (partitions are an
// enterprise feature of Consul).
const DefaultPartition = "default"

// Defaults of Options, as Consul's.
const (
	defaultHeartbeatInterval = 15 * time.Second
	defaultHeartbeatTimeout  = 2 * time.Minute
	defaultRetry             = 5 * time.Second
	DefaultWait              = 5 * time.Minute
	MaxWait                  = 10 * time.Minute
)

// Remote names the partition and datacenter of the peer cluster.
type Remote struct {
	Partition  string
	Datacenter string
}

// StreamStatus is what the stream with the peer carries. The slices are
// sorted; ImportedServices is nil before the peer sent any.
type StreamStatus struct {
	// ImportedServices are the service names the peer exports to us.
	ImportedServices []string
	// ExportedServices are the service names we export to the peer (see
	// PutExportedServices and PutExportedServicesEntry).
	ExportedServices []string
	// LastHeartbeat, LastReceive and LastSend are the instants of the last
	// heartbeat, message received and message sent; zero when none.
	LastHeartbeat, LastReceive, LastSend time.Time
}

// Peering is a peering as read. Values returned are copies owned by the
// caller.
type Peering struct {
	// ID is this cluster's id of the peering (a UUID); generating a token
	// again for the same name keeps it.
	ID string
	// Name is the local name of the peer, a DNS label.
	Name string
	// Partition is always DefaultPartition.
	Partition string
	// State is the peering's state.
	State State
	// PeerID is the peer's id of the same peering; empty until
	// established.
	PeerID string
	// PeerServerName and PeerServerAddresses say how the peer is reached.
	PeerServerName      string
	PeerServerAddresses []string
	// StreamStatus is the state of the stream with the peer.
	StreamStatus StreamStatus
	// Meta is the caller's metadata; never nil.
	Meta map[string]string
	// CreateIndex and ModifyIndex are the change indexes of the creation
	// and of the last change.
	CreateIndex, ModifyIndex uint64
	// Remote is the peer's partition and datacenter; empty until
	// established.
	Remote Remote
	// DeletedAt is when deletion was requested; zero when it was not.
	DeletedAt time.Time
}

// Options are the optional settings of a Service; nil means defaults.
type Options struct {
	// Datacenter is this cluster's datacenter. Empty: "dc1".
	Datacenter string
	// ServerName is the name peers know this cluster's servers by.
	// Empty: "server.<Datacenter>.peering.keel".
	ServerName string
	// Addresses are the host:port addresses peers reach this cluster at,
	// put in tokens when the request names no ServerExternalAddresses.
	Addresses []string
	// Authorizer decides the caller's rights. Nil allows everything.
	Authorizer keel.Authorizer
	// Clock gives every instant. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Logger receives the worker's messages. Nil: slog.Default().
	Logger *slog.Logger
	// Leader, when set, lets the worker of Start run only while this
	// process leads. Nil: leader.Always.
	Leader leader.Leader
	// HeartbeatInterval is the time between two heartbeats of the dialing
	// side. Zero: 15s.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long without a message from the peer turns
	// an ACTIVE peering FAILING, and how long a deleted peering tries to
	// tell its peer before it is removed anyway. Zero:
	// 2m.
	HeartbeatTimeout time.Duration
	// Retry is the delay before the worker tries a failed Step again.
	// Zero: 5s.
	Retry time.Duration
	// Observer is told of every operation (see keel.Observer). Nil:
	// none.
	Observer keel.Observer
}

// Service is one cluster's side of cluster peering. Create one with New.
// It is safe for concurrent use.
type Service struct {
	store     storage.Store
	transport Transport
	authz     keel.Authorizer
	clock     keel.Clock
	obs       keel.Observer
	log       *slog.Logger
	opts      Options

	mu      sync.Mutex
	changed chan struct{} // closed and replaced after each commit

	stepMu sync.Mutex
	worker *leader.Worker
}

// ClaimKind is the kind of component a composition root claims the
// service's part of the store for (storage.Claim).
const ClaimKind = "peering"

// New returns the Service of one cluster, keeping its data in store as
// given (a view its caller has scoped to it), and reaching peers through
// transport. Open is the usual way: it chooses the view and starts the
// worker.
//
// New fails with an error of kind keel.KindInvalid, naming the field, when
// store or transport is nil, or store is a part of a store that a
// composition root gave to another kind of component (storage.CheckClaim).
func New(store storage.Store, transport Transport, opts *Options) (_ *Service, err error) {
	defer prefixErr(&err)
	var o Options
	if opts != nil {
		o = *opts
	}
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	} else if err := storage.CheckClaim(store, ClaimKind); err != nil {
		v.Add("Store", "%s", keel.FieldErrors(err)[0].Rule)
	}
	if transport == nil {
		v.Add("Transport", "is required")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if o.Datacenter == "" {
		o.Datacenter = "dc1"
	}
	if o.ServerName == "" {
		o.ServerName = "server." + o.Datacenter + ".peering.keel"
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = defaultHeartbeatInterval
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = defaultHeartbeatTimeout
	}
	if o.Retry <= 0 {
		o.Retry = defaultRetry
	}
	o.Addresses = append([]string(nil), o.Addresses...)
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{
		store:     store,
		transport: transport,
		authz:     o.Authorizer,
		clock:     keel.ClockOrSystem(o.Clock),
		obs:       o.Observer,
		log:       log,
		opts:      o,
		changed:   make(chan struct{}),
	}
	s.worker = leader.NewWorker(s.Step, &leader.WorkerOptions{
		Clock: s.clock, Leader: o.Leader, Retry: o.Retry,
		OnError: func(err error) { log.Error("peering worker", "error", err) },
		Watch:   s.watchIndex,
	})
	return s, nil
}

// watchIndex wakes the worker at once for every change of the peerings
// that any process commits (storage.Watch of the change index): on a store
// shared by processes, a peering established through a follower is
// streamed to by the leader without waiting for its next planned step.
func (s *Service) watchIndex(ctx context.Context, wakeFor func(time.Time)) (func(), error) {
	return storage.Watch(ctx, s.store, indexKey, func(string) { wakeFor(time.Time{}) })
}

// Datacenter returns this cluster's datacenter.
func (s *Service) Datacenter() string { return s.opts.Datacenter }

// resource is the resource of the rights on the peering name.
func resource(name string) string { return "peering/" + name }
