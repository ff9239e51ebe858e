package ldapengine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

const libUsersDN = "ou=users,dc=example,dc=org"

// libEnv is an ldap engine on a fake directory with a lease manager that
// has the engine's revoker registered for "ldap/".
type libEnv struct {
	*env
	leases *lease.Manager
}

type libOptions struct {
	store     storage.Store             // nil: a new store from open
	flavor    Flavor                    // "": FlavorLDAP
	dir       func(Directory) Directory // wraps the fake directory
	auth      keel.Authorizer           // the engine's
	leaseAuth keel.Authorizer           // the lease manager's
	logger    *slog.Logger              // the engine's and the lease manager's
	noLeases  bool
}

// newLibEnv returns a configured engine (userdn ou=users, userattr uid) on
// a fake directory holding the bind account, alice, bob and svc0…svc{n-1},
// over o.store or else a new store from open (everystore.Mem for a test of
// one store). It configures the engine as libRoot.
func newLibEnv(t testing.TB, open everystore.Open, n int, o libOptions) *libEnv {
	t.Helper()
	s := o.store
	if s == nil {
		s = open(t)
	}
	if o.flavor == "" {
		o.flavor = FlavorLDAP
	}
	dir := newFakeDirectory()
	dir.Add(bindDN, "bind-pw", "cn", "keel")
	dir.Add(aliceDN, "alice-pw", "cn", "alice", "uid", "alice")
	dir.Add(bobDN, "bob-pw", "cn", "bob", "uid", "bob")
	for i := range n {
		dir.Add(libSvcDN(i), libSvcPW(i), "cn", libSvcName(i), "uid", libSvcName(i))
	}
	var d Directory = dir
	if o.dir != nil {
		d = o.dir(dir)
	}
	clock := keel.NewFakeClock(t0)
	pol, err := passwordpolicy.New(storage.Sub(s, policiesPrefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	var m *lease.Manager
	var iss *lease.Issuer
	if !o.noLeases {
		m = newLeases(t, s, &lease.Options{Clock: clock, Authorizer: o.leaseAuth, Logger: o.logger})
		t.Cleanup(m.Stop)
		iss = ldapLeases(t, m, s)
	}
	e, err := New(storage.Sub(s, storePrefix("ldap")), o.flavor, "ldap", &Options{Directory: d, Clock: clock, Policies: pol, Leases: iss, Authorizer: o.auth, Logger: o.logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	v := &libEnv{env: &env{e: e, dir: dir, clock: clock, store: s, pol: pol}, leases: m}
	cfg := Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}
	if o.flavor == FlavorLDAP {
		cfg.UserDN, cfg.UserAttr = libUsersDN, "uid"
	}
	if err := e.PutConfig(libRoot(), cfg); err != nil {
		t.Fatal(err)
	}
	return v
}

func libSvcName(i int) string { return fmt.Sprintf("svc%d", i) }
func libSvcDN(i int) string   { return fmt.Sprintf("uid=svc%d,%s", i, libUsersDN) }
func libSvcPW(i int) string   { return fmt.Sprintf("svc%d-initial-pw", i) }

func libSvcNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = libSvcName(i)
	}
	return out
}

// libRoot returns a context of a caller with the root policy, which a
// keel.RuleAuthorizer lets do anything.
func libRoot() context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", ClientTokenID: "tok-root", Policies: []string{keel.RootPolicy}})
}

// libCaller returns a context of a caller with client token token and entity
// entity.
func libCaller(token, entity string) context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: token, ClientTokenID: token, EntityID: entity})
}

func libPtr[T any](v T) *T { return &v }

// putSet creates the set name with accounts, as libRoot, and fails the
// test on error.
func (v *libEnv) putSet(t testing.TB, name string, accounts ...string) {
	t.Helper()
	if err := v.e.PutLibrarySet(libRoot(), name, LibrarySetRequest{ServiceAccountNames: accounts}); err != nil {
		t.Fatal(err)
	}
}

// account returns the stored record of account n of set.
func (v *libEnv) account(t testing.TB, set, n string) libAccount {
	t.Helper()
	var a libAccount
	err := v.e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var ok bool
		var err error
		a, ok, err = loadAccount(tx, set, n)
		if err == nil && !ok {
			err = fmt.Errorf("account %q of %q missing", n, set)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// binds reports whether dn binds with pw on the fake directory.
func (v *libEnv) binds(dn, pw string) bool {
	return v.dir.Bind(context.Background(), Conn{}, dn, pw) == nil
}

// libFlakyDir wraps a Directory: after is called after each successful
// SetPassword and may turn it into a failure (as a change that reached the
// server but whose answer was lost).
type libFlakyDir struct {
	Directory
	mu    sync.Mutex
	after func(dn string) error
}

func (f *libFlakyDir) SetPassword(ctx context.Context, c Conn, dn, pw string) error {
	if err := f.Directory.SetPassword(ctx, c, dn, pw); err != nil {
		return err
	}
	f.mu.Lock()
	after := f.after
	f.mu.Unlock()
	if after != nil {
		return after(dn)
	}
	return nil
}

func (f *libFlakyDir) setAfter(fn func(dn string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = fn
}

// libDenyAuth refuses every capability on the resources of deny and records
// what was asked.
type libDenyAuth struct {
	mu    sync.Mutex
	deny  map[string]bool
	asked []string
}

func (a *libDenyAuth) Authorize(_ context.Context, _ keel.Principal, c keel.Capability, resource string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, string(c)+" "+resource)
	if a.deny[resource] {
		return fmt.Errorf("%s on %s: %w", c, resource, keel.KindForbidden)
	}
	return nil
}

func (a *libDenyAuth) reset(deny ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = nil
	a.deny = map[string]bool{}
	for _, d := range deny {
		a.deny[d] = true
	}
}

func (a *libDenyAuth) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) == 0 {
		return ""
	}
	return a.asked[len(a.asked)-1]
}

// levelLog is a slog.Handler that records the level and message of every
// record, to check what an operation logged.
type levelLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelLog) WithGroup(string) slog.Handler            { return h }

func (h *levelLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// atLeast returns "LEVEL message" of the records of level lvl or above.
func (h *levelLog) atLeast(lvl slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if r.Level >= lvl {
			out = append(out, r.Level.String()+" "+r.Message)
		}
	}
	return out
}
