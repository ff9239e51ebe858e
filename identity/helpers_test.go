package identity

import (
	"context"
	"slices"
	"strings"
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

// env is Groups under test over a store of everystore, with a fake clock.
type env struct {
	g     *Groups
	store storage.Store // the store given to New, wrapped
	raw   storage.Store // the store opened, without wrap: to look at it
	clock *keel.FakeClock
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
	g, err := New(storage.Sub(store, keyPrefix), &o)
	if err != nil {
		t.Fatal(err)
	}
	return &env{g: g, store: store, raw: raw, clock: clock}
}

// create creates a group named name with the given member groups, or
// fails t.
func (e *env) create(t testing.TB, name string, members ...string) string {
	t.Helper()
	in := GroupRequest{Name: &name}
	if members != nil {
		in.MemberGroupIDs = &members
	}
	res, err := e.g.CreateOrUpdate(context.Background(), "", in)
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	if !res.Created {
		t.Fatalf("create %q: updated an existing group", name)
	}
	return res.ID
}

// read reads id or fails t.
func (e *env) read(t testing.TB, id string) Group {
	t.Helper()
	g, err := e.g.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("read %q: %v", id, err)
	}
	return g
}

// collect returns every item of the paged list, as keel.All walks it
// limit items a page (0: the default), or the first error.
func collect(ctx context.Context, limit int, list func(context.Context, keel.ListRequest) (keel.Page[string], error)) ([]string, error) {
	var out []string
	for it, err := range keel.All(ctx, limit, list) {
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

// wantKind fails t unless err has kind k.
func wantKind(t testing.TB, err error, k keel.Kind) {
	t.Helper()
	if got := keel.KindOf(err); got != k {
		t.Fatalf("error %v: kind %v, want %v", err, got, k)
	}
}

// wantInvalid fails t unless err is of kind invalid with a problem on
// field whose rule contains rule.
func wantInvalid(t testing.TB, err error, field, rule string) {
	t.Helper()
	wantKind(t, err, keel.KindInvalid)
	for _, fe := range keel.FieldErrors(err) {
		if fe.Field == field && strings.Contains(fe.Rule, rule) {
			return
		}
	}
	t.Fatalf("error %v: no problem on %q containing %q", err, field, rule)
}

// checkGraph fails t unless every member edge has its parent edge and back,
// every edge joins existing groups, and the member graph has no cycle.
func checkGraph(t testing.TB, s storage.Store) {
	t.Helper()
	members := map[string][]string{}
	parents := map[string]map[string]bool{}
	groups := map[string]bool{}
	for k := range storagetest.Dump(t, s) {
		rest, ok := strings.CutPrefix(k, keyPrefix)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(rest, groupPrefix):
			groups[rest[len(groupPrefix):]] = true
		case strings.HasPrefix(rest, "edge/member/"):
			p, c, _ := strings.Cut(rest[len("edge/member/"):], "/")
			members[p] = append(members[p], c)
		case strings.HasPrefix(rest, "edge/parent/"):
			c, p, _ := strings.Cut(rest[len("edge/parent/"):], "/")
			if parents[c] == nil {
				parents[c] = map[string]bool{}
			}
			parents[c][p] = true
		}
	}
	n := 0
	for p, cs := range members {
		for _, c := range cs {
			n++
			if !groups[p] || !groups[c] {
				t.Fatalf("edge %s -> %s joins a missing group", p, c)
			}
			if !parents[c][p] {
				t.Fatalf("member edge %s -> %s has no parent edge", p, c)
			}
		}
	}
	m := 0
	for c, ps := range parents {
		for p := range ps {
			m++
			if !slices.Contains(members[p], c) {
				t.Fatalf("parent edge %s <- %s has no member edge", c, p)
			}
		}
	}
	if n != m {
		t.Fatalf("%d member edges, %d parent edges", n, m)
	}
	// Cycle detection: colour DFS.
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var visit func(string) bool
	visit = func(x string) bool {
		colour[x] = grey
		for _, c := range members[x] {
			switch colour[c] {
			case grey:
				return true
			case white:
				if visit(c) {
					return true
				}
			}
		}
		colour[x] = black
		return false
	}
	for g := range groups {
		if colour[g] == white && visit(g) {
			t.Fatalf("the membership graph has a cycle through %s", g)
		}
	}
}

// The rights tests record what is asked with keeltest.Recorder.
type (
	recordingAuthorizer = keeltest.Recorder
	ask                 = keeltest.Ask
)

// keyPrefix is where the tests put the Groups' view of their stores.
const keyPrefix = "identity/"
