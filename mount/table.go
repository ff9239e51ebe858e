package mount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// The keys of the table's store (see the package documentation).
const (
	tableKey         = "sys/mounts"
	guardPrefix      = "sys/mount-guards/" // + mount UUID: exists while the mount's data may be written
	leasePrefix      = "lease/"
	kvPrefix         = "kv/"                // + mount UUID + "/"
	mountsPrefix     = "mounts/"            // + mount UUID + "/": a mount's data, for the types other than kv
	ldapPrefix       = "ldapengine/mounts/" // + escaped mount path + "/": an ldap or openldap mount's data, when its entry has no Data
	passwordPolicies = "ldapengine/password-policies/"
	identityPrefix   = "identity/"
)

// Entry is one row of the mount table, as stored.
type Entry struct {
	// Path is where the mount is, ending in "/" ("secret/", "team/ldap/").
	Path string `json:"path"`
	// Type is the engine's type: "kv", "ldap", "openldap", or one of
	// Options.Types.
	Type string `json:"type"`
	// Description is free text.
	Description string `json:"description"`
	// UUID names the mount's data in the store: a mount enabled again
	// at the same path gets a new one.
	UUID string `json:"uuid"`
	// Accessor is Vault's mount accessor, TYPE_ and 8 hex digits.
	Accessor string `json:"accessor"`
	// Options are the engine's options, as its type checked them:
	// "version" and "leased_passthrough" for kv; none for ldap and
	// openldap.
	Options map[string]string `json:"options"`
	// DefaultTTL is the mount's default lease TTL; zero: the system's.
	DefaultTTL time.Duration `json:"default_ttl"`
	// MaxTTL is the mount's max lease TTL; zero: the system's.
	MaxTTL time.Duration `json:"max_ttl"`
	// Disabling is true from the start of Disable until the mount's
	// data is gone: the mount is no longer served, and Open finishes the
	// removal.
	Disabling bool `json:"disabling,omitempty"`
	// Data is the key prefix of the mount's data in the table's store,
	// keyed by its UUID: "kv/UUID/" for kv, "mounts/UUID/" for the other
	// types. It is empty in the entries of ldap and openldap mounts
	// enabled before it existed, whose data stays under
	// "ldapengine/mounts/PATH/".
	Data string `json:"data,omitempty"`
}

// Mount is a mount of the table with its engine: Engine, and the same
// engine typed as KV for a kv mount, LDAP for an ldap or openldap mount. A
// mount that is not served has no engine, and Err says why.
type Mount struct {
	Entry
	Engine Engine
	KV     *kv.Engine
	LDAP   *ldapengine.Engine
	// Err is why a stored mount is not served: it no longer validates,
	// its engine could not be built, or its removal did not finish.
	Err error
}

// Served reports whether requests can be routed to the mount.
func (m *Mount) Served() bool { return m.Err == nil && !m.Disabling }

// Options configure a Table. A nil *Options, and each zero field, means
// the default.
type Options struct {
	// Clock gives the time to the engines and the lease manager. Nil:
	// keel.SystemClock{}.
	Clock keel.Clock
	// Authorizer decides the rights of callers, on the table and in
	// every engine. It is required: a program that does its own access
	// control says so with keel.AllowAll{}.
	Authorizer keel.Authorizer
	// Logger receives the workers' lines and the mounts not served.
	// Nil: discard.
	Logger *slog.Logger
	// Observer is told of the table's Enable, Tune, Disable and
	// MarkRestored, and of the operations of the lease manager, the
	// password policies, the identity groups and every engine (see
	// keel.Observer). Nil: none.
	Observer keel.Observer
	// Entities, when not nil, checks the member entity ids of identity
	// group writes (see identity.Options). Nil: ids are stored as given.
	Entities identity.EntityDirectory
	// Directory reaches the LDAP servers of the ldap and openldap
	// mounts. Nil: ldapengine.LDAP{}.
	Directory ldapengine.Directory
	// Leader gives the leader of each background worker by name:
	// "lease" for the lease manager, "ldapengine/PATH" for the rotation
	// worker of an ldap or openldap mount, "engine/PATH" for the worker of
	// a mount of another type (PATH without its trailing "/"). Nil: every
	// worker runs always (one process).
	Leader func(name string) leader.Leader
	// Leases configures the lease manager; its Clock, Authorizer,
	// Logger and Leader are those above. Nil: the defaults.
	Leases *lease.Options
	// Defaults are the mounts Open enables when the store holds no
	// table yet (VaultDefaults gives Vault's). Nil: none.
	Defaults []EnableRequest
	// Reserved are more paths under which, or above which, Enable mounts
	// nothing, besides Vault's own ("sys/", "auth/", "identity/",
	// "cubbyhole/"): those the program serves otherwise beside the table
	// (the Consul dialect's "peering/" in the example server), each
	// ending in "/". Mounts stored at such a path stay served. Nil: none.
	Reserved []string
	// Types are the engine types the table mounts besides the built-in
	// "kv", "ldap" and "openldap" (these two through Directory); a type
	// of one of these names replaces the built-in one. Nil: the built-in
	// types only.
	Types map[string]EngineType
}

// ClaimKind is the kind of the part "sys/" of a store, which the table
// keeps for itself (see storage.Claim).
const ClaimKind = "mount"

// VaultDefaults returns the mounts of a new Vault-like server: kv version
// 1 at "secret/", ldap at "ldap/" and openldap at "openldap/".
func VaultDefaults() []EnableRequest {
	return []EnableRequest{
		{Path: "secret/", Type: "kv", Description: "key/value secret storage", Options: map[string]string{"version": "1"}},
		{Path: "ldap/", Type: "ldap", Description: "ldap secrets engine"},
		{Path: "openldap/", Type: "openldap", Description: "openldap secrets engine"},
	}
}

// Table is the mount table of a store: which engine serves which path. It
// builds the engines, keeps one lease manager for all of them, runs their
// background workers, and removes a mount's leases and data when it is
// disabled. Create one with Open; Close it before closing the store. A
// Table is safe for concurrent use.
type Table struct {
	store    storage.Store
	leases   *lease.Manager
	policies *passwordpolicy.Policies
	groups   *identity.Groups
	auth     keel.Authorizer
	clock    keel.Clock
	log      *slog.Logger
	obs      keel.Observer
	leader   func(string) leader.Leader
	types    map[string]EngineType
	reserved []string // Options.Reserved, normalised

	opMu   sync.Mutex // one Enable, Disable, Tune or reconcile at a time
	mu     sync.RWMutex
	mounts map[string]*Mount // by path; served or not
	closed bool

	stopWatch func()        // ends the store watch of the table
	closeOnce sync.Once     // stops the watch and the reconciler
	changed   chan struct{} // the stored table may have changed
	done      chan struct{} // closed by Close: the reconciler ends
	ended     chan struct{} // closed by the reconciler when it ends
}

// Open reads the mount table of store (enabling opts.Defaults when it
// holds none), builds every mount's engine, finishes the removal of the
// mounts a crash interrupted, and starts the workers: the rotation worker
// of each ldap and openldap mount, then the lease manager's.
//
// store is the program's whole store, or a view of it; the table keeps the
// mount table at "sys/mounts" with a guard key per mount under
// "sys/mount-guards/", the leases under "lease/", each kv mount's data
// under "kv/UUID/", each other mount's under "mounts/UUID/" (or, for an
// ldap or openldap mount of an older table, "ldapengine/mounts/PATH/"),
// the password policies under
// "ldapengine/password-policies/" and the identity groups under
// "identity/".
//
// A stored mount that no longer validates, or whose engine cannot be
// built, does not stop Open: it is listed with its error (Mount.Err) and
// not served. Open fails when store or opts.Authorizer is nil
// (keel.KindInvalid, naming the field: allowing everything, anonymous
// callers included, is never a default), or the store fails.
func Open(ctx context.Context, store storage.Store, opts *Options) (_ *Table, err error) {
	defer errPrefix.Set(&err)
	var o Options
	if opts != nil {
		o = *opts
	}
	// The parts of the store the table lays out, claimed for the kind of
	// component that keeps each: a component a program builds by hand
	// over one of them, or over the whole store, is refused.
	if err := storage.CheckRoot(store, o.Authorizer, []storage.Part{
		{Prefix: "sys/", Kind: ClaimKind},
		{Prefix: leasePrefix, Kind: lease.ClaimKind},
		{Prefix: kvPrefix, Kind: kv.ClaimKind},
		{Prefix: mountsPrefix, Kind: ldapengine.ClaimKind},
		{Prefix: ldapPrefix, Kind: ldapengine.ClaimKind},
		{Prefix: passwordPolicies, Kind: passwordpolicy.ClaimKind},
		{Prefix: identityPrefix, Kind: identity.ClaimKind},
	}, nil); err != nil {
		return nil, errPrefix.Wrapf(err, "open")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Leader == nil {
		o.Leader = func(string) leader.Leader { return leader.Always }
	}
	policies, err := passwordpolicy.New(storage.Sub(store, passwordPolicies), &passwordpolicy.Options{Authorizer: o.Authorizer, Observer: o.Observer})
	if err != nil {
		return nil, err
	}
	groups, err := identity.New(storage.Sub(store, identityPrefix), &identity.Options{
		Authorizer: o.Authorizer, Clock: o.Clock, Entities: o.Entities, Observer: o.Observer})
	if err != nil {
		return nil, err
	}
	var lo lease.Options
	if o.Leases != nil {
		lo = *o.Leases
	}
	lo.Clock, lo.Authorizer, lo.Logger, lo.Leader = o.Clock, o.Authorizer, o.Logger, o.Leader("lease")
	lo.Observer = o.Observer
	leases, err := lease.New(storage.Sub(store, leasePrefix), &lo)
	if err != nil {
		return nil, err
	}
	t := &Table{
		store:    store,
		leases:   leases,
		policies: policies,
		groups:   groups,
		auth:     o.Authorizer,
		clock:    keel.ClockOrSystem(o.Clock),
		log:      o.Logger,
		obs:      o.Observer,
		leader:   o.Leader,
		types: map[string]EngineType{
			"kv":                              kvEngineType(),
			string(ldapengine.FlavorLDAP):     ldapEngineType(ldapengine.FlavorLDAP, o.Directory, policies),
			string(ldapengine.FlavorOpenLDAP): ldapEngineType(ldapengine.FlavorOpenLDAP, o.Directory, policies),
		},
		mounts:  make(map[string]*Mount),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		ended:   make(chan struct{}),
	}
	maps.Copy(t.types, o.Types)
	for _, r := range o.Reserved {
		t.reserved = append(t.reserved, normPath(r))
	}
	// Watch before reading: a change committed after the read is seen.
	stopWatch, err := storage.Watch(ctx, store, tableKey, func(string) { t.signal() })
	if err != nil {
		return nil, errPrefix.Wrapf(err, "open: watching the table")
	}
	t.stopWatch = stopWatch
	entries, err := t.load(ctx, o.Defaults)
	if err != nil {
		stopWatch()
		return nil, err
	}
	for _, e := range entries {
		t.mounts[e.Path] = t.open(e)
	}
	for _, m := range t.list() {
		if m.Disabling {
			if err := t.finishDisable(ctx, m); err != nil {
				t.log.Error("mount: finishing an interrupted removal", "path", m.Path, "error", err)
			}
		}
	}
	for _, m := range t.list() {
		start(m)
	}
	// Leases fall due from now on: the worker revokes what expired while
	// no table ran, then what expires while it runs.
	leases.Start()
	go t.reconciler()
	return t, nil
}

// open returns the mount of the stored entry e with its engine built, or
// with the reason it is not served.
func (t *Table) open(e Entry) *Mount {
	m := &Mount{Entry: e}
	if err := t.checkStored(e); err != nil {
		m.Err = err
	} else if err := t.build(m); err != nil {
		m.Err = err
	}
	if m.Err != nil {
		t.log.Error("mount not served", "path", e.Path, "type", e.Type, "error", m.Err)
	}
	return m
}

// load reads the stored table, storing the defaults' entries when there
// is none.
func (t *Table) load(ctx context.Context, defaults []EnableRequest) ([]Entry, error) {
	if err := t.checkNoTableAbove(ctx); err != nil {
		return nil, errPrefix.Wrapf(err, "open")
	}
	var entries []Entry
	err := t.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		entries = nil
		_, err := tx.Get(tableKey)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			for _, req := range defaults {
				e, err := t.newEntry(req)
				if err != nil {
					return errPrefix.Wrapf(err, "default mount %q", req.Path)
				}
				entries = append(entries, e)
				if err := putGuard(tx, e); err != nil {
					return err
				}
			}
			return putTable(tx, entries)
		case err != nil:
			return err
		}
		entries, err = readEntries(tx)
		return err
	})
	if err != nil {
		return nil, errPrefix.Wrapf(err, "open")
	}
	if err := t.addGuards(ctx, entries); err != nil {
		return nil, errPrefix.Wrapf(err, "open")
	}
	return entries, nil
}

// addGuards stores the guards that the served entries of a table stored
// before guards existed lack, one transaction per mount (a table of any
// size fits etcd's limits), each only while its entry is still served.
func (t *Table) addGuards(ctx context.Context, entries []Entry) error {
	var missing []Entry
	err := t.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		missing = missing[:0]
		for _, e := range entries {
			if e.Disabling || e.UUID == "" {
				continue
			}
			if _, err := tx.Get(guardKey(e)); errors.Is(err, storage.ErrNotFound) {
				missing = append(missing, e)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range missing {
		err := t.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			cur, err := readEntries(tx)
			if err != nil {
				return err
			}
			for _, c := range cur {
				if c.UUID == e.UUID && !c.Disabling {
					return putGuard(tx, e)
				}
			}
			return nil // disabled meanwhile
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkNoTableAbove fails when the table's store is a view (storage.Sub),
// holding no table yet, of a store that holds a mount table above it: at
// the whole store, or at a shorter prefix. A program that opened the table on the whole store
// and later on a view of it would otherwise start an empty table beside
// its data.
func (t *Table) checkNoTableAbove(ctx context.Context) error {
	base, prefix := storage.Split(t.store)
	if prefix == "" {
		return nil
	}
	return base.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.Get(prefix + tableKey); !errors.Is(err, storage.ErrNotFound) {
			return err // the view's own table, or a store error
		}
		for i := 0; i < len(prefix); i++ {
			if i > 0 && prefix[i-1] != '/' {
				continue
			}
			_, err := tx.Get(prefix[:i] + tableKey)
			if err == nil {
				return keel.Invalid("Store", "is a view of a store whose mount table is at %q: open the table on that view, or the mounts there are not served", prefix[:i])
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}

// Close stops following the stored table, stops the rotation workers of
// the ldap and openldap mounts, then the lease manager's worker, and waits
// for them. The Table still routes and lists afterwards, but nothing runs
// on schedule, changes made by other tables are no longer seen, and
// Enable, Disable and Tune fail. Close may be called more than once; it
// returns nil.
func (t *Table) Close() error {
	// The reconciler first: its context ends with done, so a reconcile
	// waiting on the store (unreachable at shutdown) returns at once.
	t.closeOnce.Do(func() {
		t.stopWatch()
		close(t.done)
	})
	<-t.ended
	t.opMu.Lock()
	t.mu.Lock()
	t.closed = true
	mounts := t.listLocked()
	t.mu.Unlock()
	t.opMu.Unlock()
	for _, m := range mounts {
		stop(m)
	}
	t.leases.Stop()
	return nil
}

// Leases returns the table's lease manager, the one every mount's engine
// issues its leases through (for the sys/leases operations).
func (t *Table) Leases() *lease.Manager { return t.leases }

// PasswordPolicies returns the password policies the ldap and openldap
// mounts generate passwords with.
func (t *Table) PasswordPolicies() *passwordpolicy.Policies { return t.policies }

// Groups returns the identity groups of the service, kept under
// "identity/" and guarded by the table's Authorizer.
func (t *Table) Groups() *identity.Groups { return t.groups }

// List returns every mount of the table, served or not, ordered by path.
// It needs keel.CapRead on "sys/mounts".
func (t *Table) List(ctx context.Context) (_ []Mount, err error) {
	defer errPrefix.Set(&err)
	if err := keel.Authorize(ctx, t.auth, keel.CapRead, "sys/mounts"); err != nil {
		return nil, errPrefix.Wrapf(err, "list")
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Mount
	for _, m := range t.listLocked() {
		out = append(out, *m)
	}
	return out, nil
}

// Get returns the mount at path (with or without its trailing "/"), served
// or not. It needs keel.CapRead on "sys/mounts/PATH"; it fails with an
// error of kind keel.KindNotFound when there is none.
func (t *Table) Get(ctx context.Context, path string) (_ Mount, err error) {
	defer errPrefix.Set(&err)
	path = normPath(path)
	if err := keel.Authorize(ctx, t.auth, keel.CapRead, "sys/mounts/"+path); err != nil {
		return Mount{}, errPrefix.Wrapf(err, "get")
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	m, ok := t.mounts[path]
	if !ok {
		return Mount{}, fmt.Errorf("mount: no mount at %q: %w", path, keel.KindNotFound)
	}
	return *m, nil
}

// Route returns the served mount under which the request path p ("secret/a/b")
// lies, the longest whose path prefixes it, and the rest of p below it (""
// for the mount itself, "secret" or "secret/"). It checks no right: the
// engine checks them.
func (t *Table) Route(p string) (m *Mount, rest string, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for path, c := range t.mounts {
		if !c.Served() {
			continue
		}
		if (strings.HasPrefix(p, path) || p+"/" == path) && (m == nil || len(path) > len(m.Path)) {
			m = c
		}
	}
	if m == nil {
		return nil, "", false
	}
	if p+"/" != m.Path {
		rest = p[len(m.Path):]
	}
	return m, rest, true
}

// usableCapabilities are the rights of which any one, on a mount or on a
// path under it, lets a caller see the mount (MountFor).
var usableCapabilities = []keel.Capability{keel.CapRead, keel.CapList, keel.CapCreate, keel.CapUpdate, keel.CapDelete, keel.CapSudo}

// MountFor returns the served mount under which the request path p lies,
// for a caller that may use it: one that holds any of read, list, create,
// update, delete or sudo on the mount's path or on p, as Vault describes a
// mount to a client before it sends a request there. A path under no
// mount, or under one the caller may not use, is keel.KindForbidden alike,
// so that the answer does not reveal which mounts exist.
func (t *Table) MountFor(ctx context.Context, p string) (_ Mount, err error) {
	defer errPrefix.Set(&err)
	forbidden := fmt.Errorf("mount: no mount the caller may use lies above %q: %w", p, keel.KindForbidden)
	m, _, ok := t.Route(p)
	if !ok {
		return Mount{}, forbidden
	}
	for _, res := range []string{p, m.Path} {
		for _, c := range usableCapabilities {
			if keel.Authorize(ctx, t.auth, c, res) == nil {
				return *m, nil
			}
		}
	}
	return Mount{}, forbidden
}

// typeNames lists the engine types of the table.
func (t *Table) typeNames() string {
	return strings.Join(slices.Sorted(maps.Keys(t.types)), ", ")
}

func (t *Table) list() []*Mount {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.listLocked()
}

func (t *Table) listLocked() []*Mount {
	out := make([]*Mount, 0, len(t.mounts))
	for _, m := range t.mounts {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *Mount) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// putTable stores entries as the table.
func putTable(tx storage.Tx, entries []Entry) error {
	if entries == nil {
		entries = []Entry{}
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		return fmt.Errorf("mount: encode the table: %v: %w", err, keel.KindInternal)
	}
	return tx.Put(tableKey, raw)
}

// changeTable rewrites the stored table with change applied, in one
// transaction; change may write other keys with tx.
func (t *Table) changeTable(ctx context.Context, change func(tx storage.Tx, entries []Entry) ([]Entry, error)) error {
	return t.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		entries, err := readEntries(tx)
		if err != nil {
			return err
		}
		entries, err = change(tx, entries)
		if err != nil {
			return err
		}
		return putTable(tx, entries)
	})
}

// readTable returns the stored table.
func (t *Table) readTable(ctx context.Context) ([]Entry, error) {
	var entries []Entry
	err := t.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		entries, err = readEntries(tx)
		return err
	})
	return entries, err
}

// readEntries returns the table stored in tx, nil when there is none.
func readEntries(tx storage.Tx) ([]Entry, error) {
	raw, err := tx.Get(tableKey)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []Entry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("mount: stored table: %v: %w", err, keel.KindInternal)
	}
	return entries, nil
}

// guardKey is the key that exists while the data of e's engine may be
// written: every transaction of the engine reads it (storage.Guard), and
// Disable deletes it before it deletes the data.
func guardKey(e Entry) string { return guardPrefix + e.UUID }

// putGuard stores the guard of e.
func putGuard(tx storage.Tx, e Entry) error { return tx.Put(guardKey(e), []byte(e.Path)) }

// system is the principal of the table's own work on leases: the caller's
// rights were checked on the mount.
func system(ctx context.Context) context.Context {
	return keel.WithPrincipal(ctx, keel.Principal{ID: "mount table", Policies: []string{keel.RootPolicy}})
}
