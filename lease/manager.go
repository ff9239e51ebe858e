package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/storage"
)

// The defaults of Options.
const (
	DefaultTTL               = 768 * time.Hour  // system default and max TTL (Vault's 32 days)
	defaultRetryBase         = 20 * time.Second // first retry of a failed revocation
	defaultRetryMax          = 5 * time.Minute  // cap of the doubling retry delay
	defaultMaxAttempts       = 6                // failed attempts before a lease is irrevocable
	defaultIrrevocableRetry  = 24 * time.Hour   // retry period of irrevocable leases
	defaultRevokeTimeout     = 30 * time.Second // one revoker call of the worker
	defaultRevokeConcurrency = 4                // revoker calls at once per mount
)

// Options configure a Manager. A nil *Options, and every zero (or
// negative) field, means the default.
type Options struct {
	// Clock gives the time and the timers of the worker. Nil:
	// keel.SystemClock{}.
	Clock keel.Clock
	// Authorizer decides the rights of callers. Nil: everything is
	// allowed.
	Authorizer keel.Authorizer
	// Logger receives revocations, failures and store errors of the
	// worker. Nil: discard.
	Logger *slog.Logger
	// DefaultTTL is the system default TTL of a lease. Zero: 768h. It is
	// lowered to MaxTTL when above it.
	DefaultTTL time.Duration
	// MaxTTL is the system max TTL of a lease, counted from its issue.
	// Zero: 768h.
	MaxTTL time.Duration
	// RetryBase is the delay before the first retry of a failed
	// revocation; it doubles with each further failure. Zero: 20s.
	RetryBase time.Duration
	// RetryMax caps the doubling delay. Zero: 5m.
	RetryMax time.Duration
	// MaxAttempts is how many failed revocation attempts make a lease
	// irrevocable. Zero: 6.
	MaxAttempts int
	// IrrevocableRetry is how often the worker tries again to revoke an
	// irrevocable lease. Zero: 24h.
	IrrevocableRetry time.Duration
	// RevokeTimeout bounds one revoker call of the worker (real time):
	// its context ends then, and a call still running counts as a failed
	// attempt. Zero: 30s.
	RevokeTimeout time.Duration
	// RevokeConcurrency is how many revoker calls of one mount the worker
	// makes at once; the mounts' calls run side by side. Zero: 4.
	RevokeConcurrency int
	// Observer is told of the Manager's operations and of each
	// revocation of its worker ("lease.Expire"; see keel.Observer). A
	// lease's Data is secret. Nil: none.
	Observer keel.Observer
	// Held starts this Manager held, as Hold does for every Manager of
	// the store: its Step revokes nothing until Release.
	Held bool
	// Leader decides which process of a deployment runs the worker of
	// Start: the worker runs Steps only while it leads, and stops them
	// before it releases its term (see package leader). Nil:
	// leader.Always, for a single process. Step called directly is not
	// affected.
	Leader leader.Leader
}

// ClaimKind is the kind of the part of a store a composition root lays
// out for leases (see storage.Claim): New refuses a view that would share
// keys with another component of the root.
const ClaimKind = "lease"

// mountConfig holds the TTLs of one registered mount, with the system
// values filled in.
type mountConfig struct {
	DefaultTTL time.Duration
	MaxTTL     time.Duration
}

// Revoker revokes the secret behind a lease: deletes the directory
// account, drops the database user. The manager calls it outside any store
// transaction, with the Lease as stored (Data holds what the engine gave
// to Issue).
//
// Revoke must be idempotent: it may be called again for a lease it already
// revoked, after a crash between the revocation and the removal of the
// lease, or when two revocations of one lease race. An error means the
// secret may still exist; the manager retries later (see Permanent).
// Implementations must be safe for concurrent use.
type Revoker interface {
	Revoke(ctx context.Context, l Lease) error
}

// RevokerFunc is a function that is a Revoker.
type RevokerFunc func(ctx context.Context, l Lease) error

// Revoke calls f(ctx, l).
func (f RevokerFunc) Revoke(ctx context.Context, l Lease) error { return f(ctx, l) }

// Renewer is implemented by a Revoker whose engine must act when one of its
// leases is renewed (extend a database user's validity, say). Renew finds
// it by type assertion on the Revoker registered for the lease's mount and
// calls it, outside any transaction, with the lease before renewal and the
// TTL about to be granted; an error refuses the renewal and leaves the
// lease as it was.
type Renewer interface {
	Renew(ctx context.Context, l Lease, ttl time.Duration) error
}

// Refresher is implemented by a Revoker whose engine answers the renewal of
// a lease with the secret again, as Vault's kv engine answers the renewal
// of a leased read with the secret read anew. Renew finds it by type
// assertion, calls Refresh after the Renewer, outside any transaction,
// with the lease before renewal, and returns its data in Renewal.Data; an
// error refuses the renewal and leaves the lease as it was.
type Refresher interface {
	Refresh(ctx context.Context, l Lease) (data any, err error)
}

// Permanent marks err, returned by a Revoker, as not worth retrying: the
// lease becomes irrevocable at once instead of after Options.MaxAttempts
// failures. errors.Is and errors.As see err through the result. Permanent
// returns nil for a nil err.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// Manager keeps the leases of issued secrets in a store, revokes them when
// they expire, and serves the lease operations of sys/leases. Create one
// with New. A Manager is safe for concurrent use.
type Manager struct {
	store storage.Store // the store given to New
	clock keel.Clock
	auth  keel.Authorizer
	obs   keel.Observer
	log   *slog.Logger
	opts  Options // filled in
	batch int     // leases per transaction in batched operations

	mu     sync.RWMutex
	mounts map[string]mountEntry

	stepMu   sync.Mutex    // one Step at a time
	lanes    lanes         // the worker's revocation lanes, one per mount
	flights  inflight      // the revocations Steps left going (see laneRun)
	wake     chan struct{} // buffered 1: a pending wake-up of the worker
	worker   *leader.Worker
	tidying  atomic.Bool
	heldHere atomic.Bool // Options.Held, until Release
}

type mountEntry struct {
	revoker Revoker     // nil: none yet (see Issuer.SetRevoker)
	cfg     mountConfig // zero fields filled with the system values
	owner   *Issuer     // the Issuer of this registration
}

// opsPerLease bounds the writes a batched operation makes per lease (the
// record, the old and new expiry-index entries, the irrevocable entry;
// Tidy writes five at most).
const opsPerLease = 6

// maxBatch is how many leases a batched operation handles per transaction
// when the store sets no lower bound (Limits.Batch).
const maxBatch = 1024

// Limits are the limits of a Manager that depend on its store. The fixed
// ones are stated where they apply: an error kept is cut to 240 bytes, and
// a page holds 1,000 names (List) or 10,000 leases (ListIrrevocable) by
// default.
type Limits struct {
	// Batch is how many leases the operations that touch many (Step,
	// RevokePrefix, RevokeForce, Tidy) handle per transaction: 1,024, or
	// fewer when the store limits the writes (storage.Limits.MaxTxOps)
	// or the reads (storage.Limits.MaxTxReads) of a transaction; at
	// least 1.
	Batch int
}

// Limits returns the limits of the Manager, which New derived from its
// store.
func (m *Manager) Limits() Limits { return Limits{Batch: m.batch} }

// New returns a Manager that keeps its state in store, a store or a view
// its caller has scoped (programs give it storage.Sub(root, "lease/"); the
// engines that issue leases inside their own transactions must be views of
// the same root, see Mount.Store). It reads nothing from the store: a
// Manager over a million stored leases is ready at once, and its first
// Step revokes what fell due while no Manager ran. Register the mounts of
// the engines, then call Start.
//
// New fails with an error of kind keel.KindInvalid, on the field "Store",
// when store is nil, and with storage.CheckClaim's error when store is a
// view laid out for another component.
func New(store storage.Store, opts *Options) (*Manager, error) {
	if store == nil {
		return nil, fmt.Errorf("lease: new: %w", keel.Invalid("Store", "is required"))
	}
	if err := storage.CheckClaim(store, ClaimKind); err != nil {
		return nil, fmt.Errorf("lease: new: %w", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxTTL <= 0 {
		o.MaxTTL = DefaultTTL
	}
	if o.DefaultTTL <= 0 {
		o.DefaultTTL = DefaultTTL
	}
	o.DefaultTTL = min(o.DefaultTTL, o.MaxTTL)
	if o.RetryBase <= 0 {
		o.RetryBase = defaultRetryBase
	}
	if o.RetryMax <= 0 {
		o.RetryMax = defaultRetryMax
	}
	o.RetryMax = max(o.RetryMax, o.RetryBase)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultMaxAttempts
	}
	if o.IrrevocableRetry <= 0 {
		o.IrrevocableRetry = defaultIrrevocableRetry
	}
	if o.RevokeTimeout <= 0 {
		o.RevokeTimeout = defaultRevokeTimeout
	}
	if o.RevokeConcurrency <= 0 {
		o.RevokeConcurrency = defaultRevokeConcurrency
	}
	o.Clock = keel.ClockOrSystem(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	batch := maxBatch
	if ops := store.Limits().MaxTxOps; ops > 0 {
		// A batch's writes for its leases leave room for one more: the
		// quota table (see quotaTx).
		batch = max(1, min(batch, ops/opsPerLease))
	}
	if reads := store.Limits().MaxTxReads; reads > 0 {
		// A batch reads each lease's record and index entry, plus a
		// scan or two and the quota table.
		batch = max(1, min(batch, (reads-5)/2))
	}
	m := &Manager{
		store:  store,
		clock:  o.Clock,
		auth:   o.Authorizer,
		obs:    o.Observer,
		log:    o.Logger,
		opts:   o,
		batch:  batch,
		mounts: make(map[string]mountEntry),
		wake:   make(chan struct{}, 1),
	}
	m.heldHere.Store(o.Held)
	m.worker = leader.NewWorker(m.workerStep, &leader.WorkerOptions{
		Clock: o.Clock, Leader: o.Leader, Retry: o.RetryBase, Wake: m.wake,
		OnError: func(err error) { m.log.Error("lease worker", "error", err, "retry_in", o.RetryBase) },
		Watch:   m.watchDue,
	})
	return m, nil
}

// watchDue wakes the worker, through wakeFor, for the leases that any
// process makes due (storage.Watch of the expiry index): on a store shared
// by processes, a lease issued or queued through a follower is revoked
// when due, not at the leader's next planned step.
func (m *Manager) watchDue(ctx context.Context, wakeFor func(time.Time)) (func(), error) {
	return storage.Watch(ctx, m.store, duePrefix, func(key string) {
		at, _, err := parseDueKey(key)
		if err != nil {
			at = time.Time{} // the whole index may have changed: at once
		}
		wakeFor(at)
	})
}

// Mount is an engine's mount as Register takes it.
type Mount struct {
	// Path is the mount's path prefix, ending in "/", such as "ldap/" or
	// "secret/": the leases issued under it have ids that start with it.
	Path string
	// Revoker revokes the secrets behind the mount's leases; when it
	// implements Renewer, it is asked before each renewal, and when it
	// implements Refresher, it answers each renewal. Advisory is the
	// Revoker of leases that have nothing to undo. Nil: none yet, until
	// the engine built with the mount's Issuer names it (Issuer.SetRevoker);
	// meanwhile the worker puts the mount's due leases off, as those of
	// a mount not registered (see Step), and Revoke and Renew fail with
	// keel.KindUnavailable.
	Revoker Revoker
	// Store is the engine's own store, given when the engine issues
	// leases inside its own transactions (Issuer.Update). It must be a
	// view of the store under the Manager's (storage.Join): not another
	// store, not a sealed view of an unsealed one, not a view that
	// overlaps the Manager's. Nil: the Issuer only issues leases in
	// transactions of their own (Issuer.Issue).
	Store storage.Store
	// DefaultTTL is the TTL of a lease whose IssueRequest has none. It
	// must not exceed the mount's MaxTTL. Zero: the system default.
	DefaultTTL time.Duration
	// MaxTTL caps the leases of the mount. It must not exceed the system
	// MaxTTL. Zero: the system max TTL.
	MaxTTL time.Duration
}

// CheckMount returns the error Register would return for mt's path and
// TTLs, without registering anything: a program that keeps a table of
// mounts checks a new entry with it before storing it.
func (m *Manager) CheckMount(mt Mount) error {
	_, err := m.checkMount(mt)
	return err
}

// checkMount validates mt and returns its TTLs with the system values
// filled in.
func (m *Manager) checkMount(mt Mount) (mountConfig, error) {
	var v keel.Validation
	if err := checkMount(mt.Path); err != "" {
		v.Add("Path", "%s", err)
	}
	c := mountConfig{DefaultTTL: mt.DefaultTTL, MaxTTL: mt.MaxTTL}
	if c.DefaultTTL < 0 {
		v.Add("DefaultTTL", "must not be negative")
	}
	switch {
	case c.MaxTTL < 0:
		v.Add("MaxTTL", "must not be negative")
	case c.MaxTTL > m.opts.MaxTTL:
		v.Add("MaxTTL", "%s is above the system max lease TTL of %s", c.MaxTTL, m.opts.MaxTTL)
	}
	if c.MaxTTL <= 0 {
		c.MaxTTL = m.opts.MaxTTL
	}
	if c.DefaultTTL > min(c.MaxTTL, m.opts.MaxTTL) {
		v.Add("DefaultTTL", "given default lease TTL %s greater than max lease TTL %s", c.DefaultTTL, min(c.MaxTTL, m.opts.MaxTTL))
	}
	if c.DefaultTTL <= 0 {
		c.DefaultTTL = min(m.opts.DefaultTTL, c.MaxTTL)
	}
	if err := v.Err(); err != nil {
		return mountConfig{}, fmt.Errorf("lease: register %q: %w", mt.Path, err)
	}
	return c, nil
}

// Register makes mt.Revoker the Revoker (and, when it implements Renewer,
// the Renewer) of the leases whose id starts with mt.Path, sets the TTLs of
// the leases issued under it, and returns the mount's Issuer: the one way
// to issue its leases, and the lease handle of the engine that serves the
// mount.
//
// Register fails with an error of kind keel.KindInvalid, and changes
// nothing, when the path is empty, lacks the trailing "/", has an empty,
// "." or ".." segment, or overlaps another registered mount (one a prefix
// of the other); when a TTL is negative, MaxTTL exceeds the system MaxTTL,
// or DefaultTTL exceeds the mount's max TTL; when mt.Store and the
// Manager's store cannot be joined (see Mount.Store); and when the path is
// registered already: a second engine cannot take over a mount's leases
// by registering its path again (Unregister it first). A mount may be
// registered while the worker runs, with leases stored: the worker put
// them off while it knew no revoker for them (see Step).
func (m *Manager) Register(mt Mount) (*Issuer, error) {
	c, err := m.checkMount(mt)
	if err != nil {
		return nil, err
	}
	var joint *storage.Joint
	if mt.Store != nil {
		if joint, err = storage.Join(mt.Store, m.store); err != nil {
			return nil, fmt.Errorf("lease: register %q: the engine's store and the lease store: %w", mt.Path, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for other := range m.mounts {
		switch {
		case other == mt.Path:
			return nil, fmt.Errorf("lease: register %q: %w", mt.Path, keel.Invalid("Path", "is registered already (Unregister it first)"))
		case strings.HasPrefix(mt.Path, other) || strings.HasPrefix(other, mt.Path):
			return nil, fmt.Errorf("lease: register %q: %w", mt.Path, keel.Invalid("Path", "overlaps the registered mount %q", other))
		}
	}
	iss := &Issuer{m: m, mount: mt.Path, joint: joint}
	m.mounts[mt.Path] = mountEntry{revoker: mt.Revoker, cfg: c, owner: iss}
	return iss, nil
}

// Advisory is the Revoker of a mount whose leases have nothing to undo (a
// leased kv read's): revoking one only removes it.
var Advisory Revoker = advisory{}

type advisory struct{}

func (advisory) Revoke(context.Context, Lease) error { return nil }

// Unregister forgets mount. Its stored leases stay, put off by the worker
// until the mount is registered again or they are revoked with
// RevokeForce (see Step). Revoke them before (RevokePrefix with sync), as
// Vault does when it unmounts an engine. Unregistering an unknown mount
// does nothing.
func (m *Manager) Unregister(mount string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mounts, mount)
}

// checkMount returns why mount is not a valid mount path, or "".
func checkMount(mount string) string {
	switch {
	case mount == "":
		return "is required"
	case !strings.HasSuffix(mount, "/"):
		return "must end with \"/\""
	}
	if why := checkPath(strings.TrimSuffix(mount, "/")); why != "" {
		return why
	}
	return ""
}

// checkPath returns why p is not a valid request path, or "": a path has
// no leading or trailing "/", no empty, "." or ".." segment, and no
// control character.
func checkPath(p string) string {
	if p == "" {
		return "is required"
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "must not contain control characters"
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return "must not start or end with \"/\" or contain \"//\""
		case ".", "..":
			return "must not contain \".\" or \"..\" segments"
		}
	}
	return ""
}

// mountFor returns the registered mount under which the lease id or the
// request path p lies: its name is a prefix of p, shorter than p.
func (m *Manager) mountFor(p string) (string, mountEntry, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for name, mt := range m.mounts {
		if len(p) > len(name) && strings.HasPrefix(p, name) {
			return name, mt, true
		}
	}
	return "", mountEntry{}, false
}

// Wake makes the worker started by Start run a Step now, so that it sees
// leases due earlier than it planned. Revoke and Tidy wake it themselves,
// and Issue and Renew when their lease is due before the worker's next
// planned step, and Issuer.Update after its commit. Wake never blocks, and
// does nothing when the worker is not running.
func (m *Manager) Wake() { m.worker.Wake() }

// wakeFor wakes the worker for a lease that has just been committed with
// its next attempt at due, unless the worker already sleeps until a time
// no later than due (see leader.Worker.WakeFor). Issue and Renew, whose
// leases are rarely due before everything else, so spare the worker a Step
// per call under load.
func (m *Manager) wakeFor(due time.Time) { m.worker.WakeFor(due) }

// now returns the time of the clock, normalized as the store keeps it.
func (m *Manager) now() time.Time { return norm(m.clock.Now()) }

// authorize asks the Authorizer for c on resource; op names the operation
// in the error.
func (m *Manager) authorize(ctx context.Context, op string, c keel.Capability, resource string) error {
	if err := keel.Authorize(ctx, m.auth, c, resource); err != nil {
		return fmt.Errorf("lease: %s: %w", op, err)
	}
	return nil
}

// classify gives a kind to an error of an engine: keel.KindUnavailable
// unless it has one already. The result wraps err.
func classify(err error) error {
	if keel.KindOf(err) != keel.KindUnknown {
		return err
	}
	return fmt.Errorf("%w: %w", err, keel.KindUnavailable)
}

// requireID checks that a lease id was given, as the argument leaseID of
// the exported methods.
func requireID(id string) error {
	if id == "" {
		return keel.Invalid("LeaseID", "is required")
	}
	return nil
}

// notFound is the error of a lease id that names no stored lease.
func notFound(id string) error {
	return fmt.Errorf("lease %q: %w", id, keel.KindNotFound)
}
