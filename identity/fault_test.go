package identity

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

var errInjected = errors.New("injected fault")

// faultEnv returns an env over a faultstore over a new store of open, and
// the faultstore.
func faultEnv(t *testing.T, open everystore.Open) (*env, *faultstore.Store) {
	t.Helper()
	var fs *faultstore.Store
	e := newEnv(t, open, nil, func(s storage.Store) storage.Store {
		fs = faultstore.New(s)
		return fs
	})
	return e, fs
}

// TestFailedWritesLeaveStoreUnchanged makes a write or the commit of each
// operation fail, and checks that the store is as before.
func TestFailedWritesLeaveStoreUnchanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		type fault struct {
			op     Op
			prefix string
		}
		faults := map[string]fault{
			"commit":            {faultstore.OpCommit, ""},
			"put of the record": {faultstore.OpPut, "identity/group/id/"},
			"put of the name":   {faultstore.OpPut, "identity/group/name/"},
			"put of an edge":    {faultstore.OpPut, "identity/edge/"},
			"delete of an edge": {faultstore.OpDelete, "identity/edge/"},
		}
		type ids struct{ a, b, p, top string }
		ops := map[string]struct {
			run     func(ctx context.Context, e *env, g ids) error
			skipped map[string]bool
		}{
			"create with members": {run: func(ctx context.Context, e *env, g ids) error {
				_, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{MemberGroupIDs: &[]string{g.a}})
				return err
			}, skipped: map[string]bool{"delete of an edge": true}},
			"replace members": {run: func(ctx context.Context, e *env, g ids) error {
				_, err := e.g.Update(ctx, g.p, GroupRequest{Name: new("renamed"), MemberGroupIDs: &[]string{g.b}})
				return err
			}},
			"delete": {run: func(ctx context.Context, e *env, g ids) error {
				return e.g.Delete(ctx, g.p)
			}, skipped: map[string]bool{"put of the name": true, "put of an edge": true}},
		}
		for opName, op := range ops {
			for faultName, f := range faults {
				if op.skipped[faultName] {
					continue
				}
				t.Run(opName+"/"+faultName, func(t *testing.T) {
					e, fs := faultEnv(t, open)
					var g ids
					g.a, g.b = e.create(t, "a"), e.create(t, "b")
					g.p = e.create(t, "p", g.a)
					g.top = e.create(t, "top", g.p)
					before := storagetest.Dump(t, e.raw)
					fs.Fail(f.op, f.prefix, 0, errInjected)
					err := op.run(context.Background(), e, g)
					if !errors.Is(err, errInjected) {
						t.Fatalf("error %v, want the injected fault", err)
					}
					if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
						t.Fatalf("store changed by a failed operation:\nbefore %q\nafter  %q", before, after)
					}
				})
			}
		}
	})
}

// Op is faultstore.Op, named for the table above.
type Op = faultstore.Op

// TestClosuresAreRetrySafe runs every write with closures run twice, the
// first run rolled back: the outcome must be that of one run.
func TestClosuresAreRetrySafe(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e, fs := faultEnv(t, open)
		fs.Rerun(true)
		ctx := context.Background()
		a := e.create(t, "a")
		res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{MemberGroupIDs: &[]string{a}})
		if err != nil || !res.Created {
			t.Fatalf("create under rerun = %+v, %v", res, err)
		}
		g := e.read(t, res.ID)
		if g.Name != res.Name || g.ModifyIndex != 1 || len(g.MemberGroupIDs) != 1 {
			t.Fatalf("created under rerun: %+v (result %+v)", g, res)
		}
		if _, err := e.g.Update(ctx, res.ID, GroupRequest{Policies: &[]string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if g := e.read(t, res.ID); g.ModifyIndex != 2 {
			t.Fatalf("index after one update under rerun = %d, want 2", g.ModifyIndex)
		}
		ids, err := collect(ctx, 0, e.g.List)
		if err != nil || len(ids) != 2 {
			t.Fatalf("ids = %q, %v; want 2 groups", ids, err)
		}
		if err := e.g.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		if g := e.read(t, res.ID); g.ModifyIndex != 3 || len(g.MemberGroupIDs) != 0 {
			t.Fatalf("parent after delete under rerun: %+v", g)
		}
		checkGraph(t, e.raw)
	})
}
