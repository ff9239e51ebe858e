package ldapengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// Flavor says which of the two engines an Engine is.
type Flavor string

// The flavors.
const (
	// FlavorLDAP is Vault's ldap engine: it also has userdn, userattr,
	// upndomain, connection_timeout and last_password.
	FlavorLDAP Flavor = "ldap"
	// FlavorOpenLDAP is Vault's openldap engine; it refuses the ldap-only
	// settings.
	FlavorOpenLDAP Flavor = "openldap"
)

// The defaults of Config.
const (
	DefaultURL           = "ldap://127.0.0.1"
	DefaultTLSVersion    = "tls12"
	DefaultRetryInterval = 10 * time.Second // retry of a failed rotation
	MinRotationPeriod    = 5 * time.Second
)

// Options configure an Engine. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Directory reaches the LDAP servers. Nil: LDAP{}.
	Directory Directory
	// Policies holds the password policies that Config.PasswordPolicy
	// names. Nil: none, and generating with a password policy fails.
	Policies *PasswordPolicies
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
	// Leases issues the leases of dynamic credentials and library
	// check-outs. It must keep its leases in the store given to New, and
	// the Engine must be registered with it as the Revoker of its mount
	// (MOUNT + "/"). Nil: those operations fail with keel.ErrUnavailable.
	Leases *lease.Manager
	// MaxTTL is the mount's maximum TTL of the leases of dynamic
	// credentials: the default_ttl and max_ttl of a dynamic role may not
	// exceed it, and every lease is capped at it. Zero: lease.DefaultTTL
	// (768h, the lease manager's default system maximum; the manager's own
	// maximum still applies).
	MaxTTL time.Duration
}

// Engine is the ldap or openldap secrets engine of one mount. Create one
// with New. An Engine is safe for concurrent use.
type Engine struct {
	flavor Flavor
	mount  string
	root   storage.Store // the store given to New
	store  storage.Store // root's view under the engine's prefix
	dir    Directory
	pol    *PasswordPolicies
	clock  keel.Clock
	auth   keel.Authorizer
	log    *slog.Logger
	retry  time.Duration
	leader leader.Leader
	leases *lease.Manager
	maxTTL time.Duration // Options.MaxTTL; zero: unset

	rotMu  sync.Mutex    // one rotation (root or role) at a time
	stepMu sync.Mutex    // one Step at a time
	wake   chan struct{} // buffered 1
	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns the engine of flavor for mount (such as "ldap" or
// "team/openldap"), keeping its state under the key prefix
// "ldapengine/mounts/ESCAPED-MOUNT/" of store. It reads nothing from the
// store.
func New(store storage.Store, flavor Flavor, mount string, opts *Options) (*Engine, error) {
	if flavor != FlavorLDAP && flavor != FlavorOpenLDAP {
		return nil, keel.Invalid("type", "must be %q or %q", FlavorLDAP, FlavorOpenLDAP)
	}
	mount = strings.Trim(mount, "/")
	if mount == "" {
		return nil, keel.Invalid("path", "mount path must not be empty")
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
		o.RetryInterval = DefaultRetryInterval
	}
	if o.Leader == nil {
		o.Leader = leader.Always
	}
	return &Engine{
		flavor: flavor,
		mount:  mount,
		root:   store,
		store:  storage.Sub(store, StorePrefix(mount)),
		dir:    o.Directory,
		pol:    o.Policies,
		clock:  keel.ClockOrSystem(o.Clock),
		auth:   o.Authorizer,
		log:    o.Logger.With("mount", mount),
		retry:  o.RetryInterval,
		leader: o.Leader,
		leases: o.Leases,
		maxTTL: max(o.MaxTTL, 0),
		wake:   make(chan struct{}, 1),
	}, nil
}

// StorePrefix is the key prefix under which the engine of mount keeps its
// state in the store given to New: "ldapengine/mounts/" + the escaped
// mount + "/". Unmounting deletes it.
func StorePrefix(mount string) string {
	return "ldapengine/mounts/" + url.PathEscape(strings.Trim(mount, "/")) + "/"
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

// updateRoot runs fn in one transaction of the whole store: tx is the
// engine's view of it, root the transaction of the store given to New (for
// lease.Manager.IssueTx), so that the engine's records and a lease commit
// together.
func (e *Engine) updateRoot(ctx context.Context, fn func(ctx context.Context, tx, root storage.Tx) error) error {
	prefix := StorePrefix(e.mount)
	return e.root.Update(ctx, func(ctx context.Context, root storage.Tx) error {
		return fn(ctx, storage.SubTx(root, prefix), root)
	})
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
		return false, fmt.Errorf("ldapengine: stored record %q: %v: %w", key, err, keel.ErrInternal)
	}
	return true, nil
}

func putJSON(tx storage.Tx, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ldapengine: encode %q: %v: %w", key, err, keel.ErrInternal)
	}
	return tx.Put(key, raw)
}

// Wake makes the worker of Start run a Step soon. It never blocks.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
