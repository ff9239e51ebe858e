package lease

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fakeRevoker records revocations and renewals. fail, when set, decides
// the error of a revocation; renewErr that of a renewal. It implements
// Renewer only through renewingRevoker.
type fakeRevoker struct {
	mu      sync.Mutex
	revoked []string // ids, in call order, successful or not
	fail    func(l Lease) error
	calls   chan Lease // when not nil, every call is sent to it
}

func (r *fakeRevoker) Revoke(ctx context.Context, l Lease) error {
	r.mu.Lock()
	r.revoked = append(r.revoked, l.ID)
	fail, calls := r.fail, r.calls
	r.mu.Unlock()
	if calls != nil {
		calls <- l
	}
	if fail != nil {
		return fail(l)
	}
	return nil
}

func (r *fakeRevoker) setFail(f func(Lease) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

// calls returns the ids revoked so far.
func (r *fakeRevoker) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.revoked)
}

// renewingRevoker is a fakeRevoker that is a Renewer too.
type renewingRevoker struct {
	fakeRevoker
	renewMu  sync.Mutex
	renewals []time.Duration
	renewErr error
	onRenew  func() // called during Renew, outside the manager's transactions
}

func (r *renewingRevoker) Renew(ctx context.Context, l Lease, ttl time.Duration) error {
	r.renewMu.Lock()
	r.renewals = append(r.renewals, ttl)
	err, hook := r.renewErr, r.onRenew
	r.renewMu.Unlock()
	if hook != nil {
		hook()
	}
	return err
}

// env is a manager under test, over a store of everystore, with a fake
// clock and one mount "ldap/" served by rev.
type env struct {
	m     *Manager
	store storage.Store // the store given to New (raw, wrapped)
	raw   storage.Store // the store opened, without wrap: to look at it
	clock *keel.FakeClock
	rev   *fakeRevoker
}

// newEnv returns an env over a new store from open (everystore.Mem for a
// test of one store); opts (may be nil) gets the fake clock. wrap, when
// not nil, wraps the store (a faultstore, say).
func newEnv(t testing.TB, open everystore.Open, opts *Options, wrap func(storage.Store) storage.Store) *env {
	t.Helper()
	raw := open(t)
	store := raw
	if wrap != nil {
		store = wrap(raw)
	}
	clock := keel.NewFakeClock(t0)
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = clock
	}
	m := mustNew(t, store, &o)
	t.Cleanup(m.Stop)
	rev := &fakeRevoker{}
	if err := m.register("ldap/", rev, nil); err != nil {
		t.Fatal(err)
	}
	return &env{m: m, store: store, raw: raw, clock: clock, rev: rev}
}

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own). TestMain is in size_test.go.
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

// issue issues a lease or fails t.
func (e *env) issue(t testing.TB, req IssueRequest) Lease {
	t.Helper()
	if req.Path == "" {
		req.Path = "ldap/creds/app"
	}
	l, err := e.m.issue(context.Background(), req)
	if err != nil {
		t.Fatalf("Issue(%+v): %v", req, err)
	}
	return l
}

// get returns the stored entry of id, and whether it exists.
func (e *env) get(t testing.TB, id string) (entry, bool) {
	t.Helper()
	var out entry
	var found bool
	err := e.raw.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		raw, err := tx.Get(keyPrefix + idKey(id))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		out, err = decodeEntry(id, raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, found
}

// keysUnder returns the keys of storagetest.Dump(s) that start with prefix, sorted.
func keysUnder(t testing.TB, s storage.Store, prefix string) []string {
	t.Helper()
	var out []string
	for k := range storagetest.Dump(t, s) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// raw writes (value != nil) or deletes (value == nil) raw keys of s, in
// as many transactions as the store's MaxTxOps asks.
func raw(t testing.TB, s storage.Store, kv map[string][]byte) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(kv))
	per := len(keys)
	if ops := s.Limits().MaxTxOps; ops > 0 {
		per = ops
	}
	for chunk := range slices.Chunk(keys, max(per, 1)) {
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for _, k := range chunk {
				var err error
				if kv[k] == nil {
					err = tx.Delete(k)
				} else {
					err = tx.Put(k, kv[k])
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// step runs one Step at at or fails t.
func (e *env) step(t testing.TB, at time.Time) time.Time {
	t.Helper()
	next, err := e.m.Step(context.Background(), at)
	if err != nil {
		t.Fatalf("Step(%s): %v", at, err)
	}
	return next
}

// listAll returns every name List gives for prefix, walking its pages with
// keel.All (an empty, non-nil slice for none).
func listAll(ctx context.Context, m *Manager, prefix string) ([]string, error) {
	names := []string{}
	for name, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return m.List(ctx, prefix, r)
	}) {
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// listIrrevocable returns every irrevocable lease, walking the pages of
// ListIrrevocable with keel.All, limit leases a page (0: the default).
func listIrrevocable(ctx context.Context, m *Manager, limit int) ([]IrrevocableLease, error) {
	leases := []IrrevocableLease{}
	for l, err := range keel.All(ctx, limit, m.ListIrrevocable) {
		if err != nil {
			return nil, err
		}
		leases = append(leases, l)
	}
	return leases, nil
}

// wantKind fails t unless err has kind k.
func wantKind(t testing.TB, err error, k keel.Kind) {
	t.Helper()
	if got := keel.KindOf(err); got != k {
		t.Fatalf("error %v: kind %v, want %v", err, got, k)
	}
}

// The rights tests record what is asked with keeltest.Recorder.
type (
	recordingAuthorizer = keeltest.Recorder
	ask                 = keeltest.Ask
)

// keyPrefix is where the tests put the Manager's view of their stores.
const keyPrefix = "lease/"

// mustNew returns a Manager over the view keyPrefix of store, or fails t.
func mustNew(t testing.TB, store storage.Store, opts *Options) *Manager {
	t.Helper()
	m, err := New(storage.Sub(store, keyPrefix), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// register registers path with r and cfg's TTLs (cfg may be nil), in
// place of its registration if it has one.
func (m *Manager) register(path string, r Revoker, cfg *mountConfig) error {
	m.Unregister(path)
	mt := Mount{Path: path, Revoker: r}
	if cfg != nil {
		mt.DefaultTTL, mt.MaxTTL = cfg.DefaultTTL, cfg.MaxTTL
	}
	_, err := m.Register(mt)
	return err
}
