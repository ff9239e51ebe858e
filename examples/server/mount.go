package main

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/ratelimit"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/telemetry"
)

// deps is what every adapter is built from. One of each is shared by the
// whole server.
type deps struct {
	store      storage.Store   // the server's store, sealed when -seal-key-file is set
	authorizer keel.Authorizer // rules from -config; "root" grants everything
	clock      keel.Clock      // keel.SystemClock{}; tests may use a keel.FakeClock
	logger     *slog.Logger
	cluster    cluster      // -datacenter and -advertise; see consul.go
	tls        bool         // the server serves TLS (-tls-cert or -dev-tls)
	mounts     *mount.Table // the mount table and its lease manager; see vault.go
	state      serverState  // the cluster's identity, kept in the store; see state.go
	// storageType names the store in sys/seal-status: "inmem", "bolt"
	// or "etcd".
	storageType string

	// leaders gives the leader of the background worker name ("lease",
	// "peering"): an election of its own per name, so that with -etcd
	// one server of the deployment runs each worker. Nil when this server
	// alone runs background work; see leader.
	leaders func(name string) leader.Leader
	// peeringHeartbeat is the heartbeat interval of cluster peering; zero
	// is peering's default. Tests shorten it (hooks.peeringHeartbeat).
	peeringHeartbeat time.Duration
	// holdLeases starts the lease manager held (-hold-leases).
	holdLeases bool
	// telemetry measures the operations of the mount table, and
	// metrics serves what it measured (metrics.go); nil until
	// telemetryOf.
	telemetry *telemetry.Telemetry
	metrics   http.Handler
	// rateLimits are the rate-limit quotas; see ratelimit.go.
	rateLimits *ratelimit.Limiter

	closers []func() error // see onClose
}

// observer returns what the components tell of their operations: the
// telemetry, when there is one, and the server's log (a line per
// operation that failed for want of a dependency, or of a bug; the others
// at debug level).
func (d *deps) observer() keel.Observer {
	var tel keel.Observer
	if d.telemetry != nil {
		tel = d.telemetry
	}
	return keel.Observers(tel, telemetry.LogTo(d.logger))
}

// leader returns the leader of the background worker name, or nil (run
// always) when the server runs alone.
func (d *deps) leader(name string) leader.Leader {
	if d.leaders == nil {
		return nil
	}
	return d.leaders(name)
}

// onClose registers f to run when the server stops: after the last request
// has finished and before the store is closed. Adapters that start
// background work stop it here. Closers run in reverse order of
// registration.
func (d *deps) onClose(f func() error) { d.closers = append(d.closers, f) }

// close runs the closers registered with onClose, last first, and returns
// their errors joined.
func (d *deps) close() error {
	var errs []error
	for i := len(d.closers) - 1; i >= 0; i-- {
		errs = append(errs, d.closers[i]())
	}
	d.closers = nil
	return errors.Join(errs...)
}

// adapters lists the HTTP adapters the server serves. Each one is a
// function, in a file of its own, that registers its routes on the mux;
// adding an adapter is adding one line here.
//
// Patterns of different adapters must not overlap: http.ServeMux panics
// when a pattern conflicts with one already registered, so a conflict
// shows at start-up (and in the tests), never at request time.
var adapters = []func(mux *routes, d *deps) error{
	mountVault,  // vault.go: Vault dialect: health, status, kv mounts, leases, identity, tokens
	mountTFE,    // tfe.go: projects and policies, HCP Terraform JSON:API dialect
	mountConsul, // consul.go: cluster peering, Consul dialect
}

// mountAdapters registers the routes of every adapter on mux.
func mountAdapters(mux *routes, d *deps) error {
	for _, m := range adapters {
		if err := m(mux, d); err != nil {
			return err
		}
	}
	return nil
}
