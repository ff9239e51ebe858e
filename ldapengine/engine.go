package ldapengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// The defaults of Config.
const (
	defaultURL           = "ldap://127.0.0.1"
	defaultTLSVersion    = "tls12"
	defaultRetryInterval = 10 * time.Second // retry of a failed rotation
	minRotationPeriod    = 5 * time.Second
)

// Options configure an Engine. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Directory reaches the LDAP servers. Nil: LDAP{}.
	Directory Directory
	// Policies holds the password policies that Config.PasswordPolicy
	// names. Nil: none, and generating with a password policy fails.
	Policies *passwordpolicy.Policies
	// Clock gives the time and the worker's timers. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Authorizer decides the rights of callers. Nil: everything is allowed.
	Authorizer keel.Authorizer
	// Logger receives the worker's rotations and failures. Nil: discard.
	Logger *slog.Logger
	// RetryInterval is the delay before a failed rotation is tried again.
	// Zero: 10s.
	RetryInterval time.Duration
	// Leader makes the worker of Start run only while the process leads.
	// Nil: leader.Always.
	Leader leader.Leader
	// Leases is the lease handle of the engine's mount (MOUNT + "/"):
	// it issues the leases of dynamic credentials and library check-outs
	// and ends them. The mount must have been registered with the
	// engine's store (lease.Mount.Store: the same view), and New names
	// the engine's Revoker and Renewer with it (lease.Issuer.SetRevoker;
	// the Engine itself has no method that revokes without a right).
	// Package mount registers the mount and hands the Issuer over. Nil:
	// those operations fail with keel.KindUnavailable.
	Leases *lease.Issuer
	// MaxTTL is the mount's maximum TTL of the leases of dynamic
	// credentials: the default_ttl and max_ttl of a dynamic role may not
	// exceed it, and every lease is capped at it. Zero: lease.DefaultTTL
	// (768h, the lease manager's default system maximum; the manager's own
	// maximum still applies).
	MaxTTL time.Duration
	// Observer is told of every operation (see keel.Observer): the bind
	// password, and every password handed out, are secret. Nil: none.
	Observer keel.Observer
}

// Engine is the ldap or openldap secrets engine of one mount. Create one
// with New. An Engine is safe for concurrent use.
type Engine struct {
	flavor Flavor
	feat   features // flavor's
	mount  string
	store  storage.Store // the store given to New
	dir    Directory
	pol    *passwordpolicy.Policies
	clock  keel.Clock
	auth   keel.Authorizer
	obs    keel.Observer
	log    *slog.Logger
	retry  time.Duration
	leases *lease.Issuer // nil without Options.Leases
	maxTTL time.Duration // Options.MaxTTL; zero: unset

	// Password changes: each entry's one at a time (entries), and none
	// while the bind account's password changes (rootMu, held for
	// writing by RotateRoot and for reading by every other change).
	entries entryLocks
	rootMu  sync.RWMutex
	stepMu  sync.Mutex // one Step at a time
	worker  *leader.Worker
}

// ClaimKind is the kind of the parts of a store where a composition root
// keeps its secrets engines' data (see storage.Claim): New refuses a view
// that would share keys with another component of the root.
const ClaimKind = "engine"

// New returns the engine of flavor for mount (such as "ldap" or
// "team/openldap"), keeping its state in store, which its caller has scoped
// to the engine (package mount gives each engine a view of its own). It
// reads nothing from the store. With opts.Leases, New names the engine's
// Revoker and Renewer of the mount's leases.
//
// New fails with an error of kind keel.KindInvalid when store is nil, the
// flavor is unknown, mount is empty, or opts.Leases is the handle of
// another mount or was registered with another store than store.
func New(store storage.Store, flavor Flavor, mount string, opts *Options) (_ *Engine, err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	}
	feat, known := flavor.features()
	if !known {
		v.Add("Flavor", "must be %q or %q", FlavorLDAP, FlavorOpenLDAP)
	}
	mount = strings.Trim(mount, "/")
	if mount == "" {
		v.Add("Mount", "must not be empty")
	}
	if err := validation(&v); err != nil {
		return nil, err
	}
	if err := storage.CheckClaim(store, ClaimKind); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Directory == nil {
		o.Directory = LDAP{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = defaultRetryInterval
	}
	if o.Leader == nil {
		o.Leader = leader.Always
	}
	e := &Engine{
		flavor: flavor,
		feat:   feat,
		mount:  mount,
		store:  store,
		dir:    o.Directory,
		pol:    o.Policies,
		clock:  keel.ClockOrSystem(o.Clock),
		auth:   o.Authorizer,
		obs:    o.Observer,
		log:    o.Logger.With("mount", mount),
		retry:  o.RetryInterval,
		maxTTL: max(o.MaxTTL, 0),
	}
	e.worker = leader.NewWorker(e.Step, &leader.WorkerOptions{
		Clock: e.clock, Leader: o.Leader, Retry: o.RetryInterval,
		OnError: func(err error) { e.log.Error("ldapengine worker", "error", err) },
		Watch:   e.watchDue,
	})
	if o.Leases != nil {
		if o.Leases.Mount() != mount+"/" {
			return nil, invalid("Options.Leases", "issues the leases of the mount %q, not %q", o.Leases.Mount(), mount+"/")
		}
		if err := o.Leases.CheckStore("Store", store); err != nil {
			return nil, err
		}
		e.leases = o.Leases
		e.leases.SetRevoker(revoker{e})
	}
	return e, nil
}

// Flavor returns the engine's flavor.
func (e *Engine) Flavor() Flavor { return e.flavor }

// Mount returns the engine's mount path, without slashes at its ends.
func (e *Engine) Mount() string { return e.mount }

func (e *Engine) resource(parts ...string) string {
	return e.mount + "/" + strings.Join(parts, "/")
}

// Store keys, relative to the engine's view.
const (
	keyConfig     = "config"
	keyRootWAL    = "rootwal"
	prefixRole    = "role/"
	prefixDue     = "due/"
	prefixWAL     = "wal/"
	prefixAccount = "account/"
)

// watchDue wakes the worker, through wakeFor, for the work that any
// process commits (storage.Watch): a rotation made due (a role written, a
// rotation to retry) at its time, an account left pending by a check-in or
// a lease end at once. On a store shared by processes, a static role
// written through a follower is rotated when due, not at the leader's next
// planned step.
func (e *Engine) watchDue(ctx context.Context, wakeFor func(time.Time)) (func(), error) {
	stopDue, err := storage.Watch(ctx, e.store, prefixDue, func(key string) {
		at, _, ok := parseDueKey(key)
		if !ok {
			at = time.Time{} // the whole index may have changed: at once
		}
		wakeFor(at)
	})
	if err != nil {
		return nil, err
	}
	stopPending, err := storage.Watch(ctx, e.store, prefixLibPending, func(string) { wakeFor(time.Time{}) })
	if err != nil {
		stopDue()
		return nil, err
	}
	// A mark of MarkRestored, made by any process: verify at once.
	stopMark, err := storage.Watch(ctx, e.store, keyRestored, func(string) { wakeFor(time.Time{}) })
	if err != nil {
		stopDue()
		stopPending()
		return nil, err
	}
	return func() { stopDue(); stopPending(); stopMark() }, nil
}

func dueKey(at time.Time, name string) string {
	return fmt.Sprintf("%s%020d/%s", prefixDue, at.UnixNano(), name)
}

func parseDueKey(key string) (time.Time, string, bool) {
	rest := strings.TrimPrefix(key, prefixDue)
	ts, name, ok := strings.Cut(rest, "/")
	if !ok || len(ts) != 20 {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.Unix(0, n).UTC(), name, true
}

func getJSON(tx storage.Tx, key string, v any) (bool, error) {
	raw, err := tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("ldapengine: stored record %q: %v: %w", key, err, keel.KindInternal)
	}
	return true, nil
}

func putJSON(tx storage.Tx, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ldapengine: encode %q: %v: %w", key, err, keel.KindInternal)
	}
	return tx.Put(key, raw)
}

// Wake makes the worker of Start run a Step soon. It never blocks.
func (e *Engine) Wake() { e.worker.Wake() }
