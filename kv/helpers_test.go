package kv_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// newMem returns an empty memstore closed at the end of the test.
func newMem(t testing.TB, limits storage.Limits) storage.Store {
	t.Helper()
	s := memstore.New(&memstore.Options{Limits: limits})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMain gives the tests on etcdstore one embedded etcd (see everystore).
func TestMain(m *testing.M) { everystore.Main(m) }

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own): fn opens its stores with open.
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

// newEngine mounts an engine at "secret" on store.
func newEngine(t testing.TB, store storage.Store, opts *kv.Options) *kv.Engine {
	t.Helper()
	e, err := kv.New(store, "secret", opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// put stores value at key of store, bypassing the engine.
func put(t testing.TB, store storage.Store, key, value string) {
	t.Helper()
	err := store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(key, []byte(value))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mustWrite writes data at path with the context's principal.
func mustWrite(t testing.TB, ctx context.Context, e *kv.Engine, path string, data map[string]any) {
	t.Helper()
	if err := e.Write(ctx, path, data); err != nil {
		t.Fatalf("Write(%q): %v", path, err)
	}
}

// wantKind fails t unless err is of kind want.
func wantKind(t testing.TB, err error, want keel.Kind) {
	t.Helper()
	if got := keel.KindOf(err); got != want {
		t.Fatalf("error kind %v (%v), want %v", got, err, want)
	}
}

// wantUnchanged fails t unless store holds exactly before.
func wantUnchanged(t testing.TB, store storage.Store, before map[string]string) {
	t.Helper()
	if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
		t.Fatalf("store changed:\nbefore %q\nafter  %q", before, after)
	}
}

// as returns ctx carrying the principal id.
func as(id string) context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: id})
}

// fakeAuthz grants each principal id the capabilities listed for it, on
// every resource, and records every question.
type fakeAuthz struct {
	grants map[string][]keel.Capability
	// plain, when set, refuses with an error that carries no kind.
	plain bool

	mu    sync.Mutex
	asked []string // "id cap resource"
}

func (a *fakeAuthz) Authorize(_ context.Context, p keel.Principal, c keel.Capability, resource string) error {
	a.mu.Lock()
	a.asked = append(a.asked, fmt.Sprintf("%s %s %s", p.ID, c, resource))
	a.mu.Unlock()
	if slices.Contains(a.grants[p.ID], c) {
		return nil
	}
	if a.plain {
		return errors.New("no")
	}
	return fmt.Errorf("%s lacks %s on %s: %w", p.ID, c, resource, keel.KindForbidden)
}

// questions returns the questions asked so far, and forgets them.
func (a *fakeAuthz) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.asked
	a.asked = nil
	return q
}

// countingStore counts the keys its transactions' Scans visit.
type countingStore struct {
	storage.Store
	visited atomic.Int64
}

func (s *countingStore) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.Store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, &countingTx{Tx: tx, s: s})
	})
}

type countingTx struct {
	storage.Tx
	s *countingStore
}

func (t *countingTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	return t.Tx.Scan(prefix, opts, func(k string, v []byte) error {
		t.s.visited.Add(1)
		return fn(k, v)
	})
}

// racingStore runs a rival's Update at a chosen moment of each Update of
// the engine: before it (a writer that committed just before), or between
// a first run of the closure, rolled back, and the second run that
// commits (a store that retries after a conflict with that writer).
type racingStore struct {
	storage.Store
	between bool
	rival   func(ctx context.Context, tx storage.Tx) error
}

var errRetry = errors.New("retry")

func (s *racingStore) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if s.between {
		err := s.Store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := fn(ctx, tx); err != nil {
				return err
			}
			return errRetry
		})
		if err != errRetry {
			return err
		}
	}
	if err := s.Store.Update(ctx, s.rival); err != nil {
		return err
	}
	return s.Store.Update(ctx, fn)
}

// listAll returns every name of e's folder path, walking List's pages.
func listAll(e *kv.Engine, ctx context.Context, path string) ([]string, error) {
	var names []string
	for name, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return e.List(ctx, path, r)
	}) {
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}
