package lease

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// walkList pages through List(prefix) limit names at a time, calling
// between (when not nil) after each page but the last, and checks every
// page's shape: at most limit names, Next the last of them, "" only on
// the last page. It returns the names in the order given.
func walkList(t *testing.T, m *Manager, prefix string, limit int, between func(page int, p keel.Page[string])) []string {
	t.Helper()
	ctx := context.Background()
	var all []string
	r := keel.ListRequest{Limit: limit}
	for page := 0; ; page++ {
		p, err := m.List(ctx, prefix, r)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if p.Items == nil || len(p.Items) > limit {
			t.Fatalf("page %d: %d names (%#v), want at most %d", page, len(p.Items), p.Items, limit)
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		if len(p.Items) != limit || p.Next != p.Items[len(p.Items)-1] {
			t.Fatalf("page %d: Next %q after %q, want the last name of a full page", page, p.Next, p.Items)
		}
		if page > 10000 {
			t.Fatal("List never ends")
		}
		if between != nil {
			between(page, p)
		}
		r.Cursor = p.Next
	}
}

// issueLeaves issues n leases under path and returns their last segments,
// sorted (the names List gives for path).
func issueLeaves(t *testing.T, e *env, path string, n int) []string {
	t.Helper()
	var names []string
	for range n {
		l := e.issue(t, IssueRequest{Path: path, TTL: time.Hour})
		names = append(names, l.ID[len(path)+1:])
	}
	slices.Sort(names)
	return names
}

// TestListPages: List walked a few names at a time gives every name once,
// in ascending order, the leaves of a folder and the sub-folders alike,
// and the same names as one page holding them all.
func TestListPages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		leaves := issueLeaves(t, e, "ldap/creds/app", 11)
		for _, role := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			issueLeaves(t, e, "ldap/creds/"+role, 2)
		}
		for name, tc := range map[string]struct {
			prefix string
			want   []string
		}{
			"leaves":  {"ldap/creds/app/", leaves},
			"folders": {"ldap/creds", []string{"a/", "app/", "b/", "c/", "d/", "e/", "f/", "g/"}},
		} {
			t.Run(name, func(t *testing.T) {
				one, err := e.m.List(context.Background(), tc.prefix, keel.ListRequest{Limit: 100})
				if err != nil || one.Next != "" || !slices.Equal(one.Items, tc.want) {
					t.Fatalf("one page: %q, next %q, %v; want %q", one.Items, one.Next, err, tc.want)
				}
				for _, limit := range []int{1, 2, 3, len(tc.want) - 1, len(tc.want)} {
					if got := walkList(t, e.m, tc.prefix, limit, nil); !slices.Equal(got, tc.want) {
						t.Fatalf("limit %d: %q, want %q", limit, got, tc.want)
					}
				}
				// keel.All, as an adapter walks it.
				all, err := listAll(context.Background(), e.m, tc.prefix)
				if err != nil || !slices.Equal(all, tc.want) {
					t.Fatalf("keel.All: %q, %v", all, err)
				}
			})
		}
	})
}

// TestListDefaultLimit: a request without a limit (0 or negative) gets
// pages of defaultListLimit names, and keel.All walks past them.
func TestListDefaultLimit(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		// Write the records directly: List reads the keys only.
		const n = defaultListLimit + 5
		kv := map[string][]byte{}
		var want []string
		for i := range n {
			name := fmt.Sprintf("%05d", i)
			kv[keyPrefix+idKey("ldap/creds/app/"+name)] = []byte("x")
			want = append(want, name)
		}
		raw(t, e.raw, kv)
		ctx := context.Background()
		for _, limit := range []int{0, -1} {
			p, err := e.m.List(ctx, "ldap/creds/app/", keel.ListRequest{Limit: limit})
			if err != nil || len(p.Items) != defaultListLimit || p.Next != want[defaultListLimit-1] {
				t.Fatalf("limit %d: %d names, next %q, %v; want %d, next %q", limit, len(p.Items), p.Next, err, defaultListLimit, want[defaultListLimit-1])
			}
			rest, err := e.m.List(ctx, "ldap/creds/app/", keel.ListRequest{Limit: limit, Cursor: p.Next})
			if err != nil || !slices.Equal(rest.Items, want[defaultListLimit:]) || rest.Next != "" {
				t.Fatalf("limit %d, second page: %q, next %q, %v", limit, rest.Items, rest.Next, err)
			}
		}
		all, err := listAll(ctx, e.m, "ldap/creds/app")
		if err != nil || !slices.Equal(all, want) {
			t.Fatalf("keel.All: %d names, %v; want %d", len(all), err, n)
		}
	})
}

// TestListStableWhileLeasesGo: leases revoked between two pages, the one
// the cursor names included, neither repeat nor hide the names that stay:
// the walk gives each of them once, in order, and the revoked ones still
// ahead of the cursor not at all.
func TestListStableWhileLeasesGo(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		leaves := issueLeaves(t, e, "ldap/creds/app", 12)
		gone := map[string]bool{}
		revoke := func(name string) {
			t.Helper()
			if err := e.m.Revoke(ctx, "ldap/creds/app/"+name, true); err != nil {
				t.Fatal(err)
			}
			gone[name] = true
		}
		got := walkList(t, e.m, "ldap/creds/app", 4, func(page int, p keel.Page[string]) {
			if page != 0 {
				return
			}
			revoke(p.Next)     // the lease the cursor names
			revoke(leaves[0])  // one listed already
			revoke(leaves[4])  // the first of the next page
			revoke(leaves[9])  // one further on
			revoke(leaves[11]) // the last
		})
		var want []string
		for i, name := range leaves {
			if i < 4 || !gone[name] {
				want = append(want, name)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("walk while revoking: %q, want %q", got, want)
		}
		if left, _ := listAll(ctx, e.m, "ldap/creds/app"); len(left) != len(leaves)-len(gone) {
			t.Fatalf("%d left, want %d", len(left), len(leaves)-len(gone))
		}
	})
}

// TestListStableWhileFoldersGo: a cursor that names a folder whose leases
// are all revoked before the next page still resumes after it, at the
// next folder, and a folder that appears behind the cursor is not listed
// by the pages that follow.
func TestListStableWhileFoldersGo(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		for _, role := range []string{"b", "d", "f", "h"} {
			issueLeaves(t, e, "ldap/creds/"+role, 2)
		}
		got := walkList(t, e.m, "ldap/creds/", 2, func(page int, p keel.Page[string]) {
			if page != 0 {
				return
			}
			if p.Next != "d/" {
				t.Fatalf("first cursor %q, want d/", p.Next)
			}
			if err := e.m.RevokePrefix(ctx, "ldap/creds/d/", true); err != nil {
				t.Fatal(err)
			}
			issueLeaves(t, e, "ldap/creds/a", 1) // behind the cursor
			issueLeaves(t, e, "ldap/creds/e", 1) // ahead of it
		})
		if want := []string{"b/", "d/", "e/", "f/", "h/"}; !slices.Equal(got, want) {
			t.Fatalf("walk: %q, want %q", got, want)
		}
	})
}

// TestListCursor: a cursor is a name of the list; one past every name
// gives an empty last page, and one that reaches inside a folder resumes
// after that folder.
func TestListCursor(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		for _, role := range []string{"a", "b", "c"} {
			issueLeaves(t, e, "ldap/creds/"+role, 1)
		}
		for cursor, want := range map[string][]string{
			"":     {"a/", "b/", "c/"},
			"a/":   {"b/", "c/"},
			"a":    {"a/", "b/", "c/"}, // the leaf "a" sorts before the folder "a/"
			"a/x":  {"b/", "c/"},
			"a/x/": {"b/", "c/"},
			"bb":   {"c/"},
			"c/":   {},
			"zzz":  {},
		} {
			p, err := e.m.List(ctx, "ldap/creds/", keel.ListRequest{Cursor: cursor})
			if err != nil || p.Items == nil || !slices.Equal(p.Items, want) || p.Next != "" {
				t.Errorf("cursor %q: %#v, next %q, %v; want %q", cursor, p.Items, p.Next, err, want)
			}
		}
	})
}

// TestListIrrevocablePages: ListIrrevocable walked a few leases at a time
// gives every irrevocable lease once, in id order, each page cut at its
// limit with Next its last lease id; leases removed or made irrevocable
// between pages neither repeat nor hide the others.
func TestListIrrevocablePages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		ids := makeIrrevocable(t, e, "ldap/creds/app", 9)
		for _, limit := range []int{1, 2, 4, 8, 9} {
			var got []string
			r := keel.ListRequest{Limit: limit}
			for {
				p, err := e.m.ListIrrevocable(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Items) > limit || (p.Next != "" && (len(p.Items) != limit || p.Next != p.Items[len(p.Items)-1].LeaseID)) {
					t.Fatalf("limit %d: page %+v", limit, p)
				}
				for _, l := range p.Items {
					got = append(got, l.LeaseID)
				}
				if p.Next == "" {
					break
				}
				r.Cursor = p.Next
			}
			if !slices.Equal(got, ids) {
				t.Fatalf("limit %d: %q, want %q", limit, got, ids)
			}
		}
		all, err := listIrrevocable(ctx, e.m, 2)
		if err != nil || len(all) != len(ids) {
			t.Fatalf("keel.All: %d, %v", len(all), err)
		}

		// Revocations between pages.
		first, err := e.m.ListIrrevocable(ctx, keel.ListRequest{Limit: 3})
		if err != nil || first.Next != ids[2] {
			t.Fatalf("first page %+v, %v", first, err)
		}
		for _, id := range []string{ids[2], ids[0], ids[3], ids[8]} {
			if err := e.m.RevokeForce(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		var rest []string
		for l, err := range keel.All(ctx, 2, func(ctx context.Context, r keel.ListRequest) (keel.Page[IrrevocableLease], error) {
			if r.Cursor == "" {
				r.Cursor = first.Next
			}
			return e.m.ListIrrevocable(ctx, r)
		}) {
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, l.LeaseID)
		}
		if want := []string{ids[4], ids[5], ids[6], ids[7]}; !slices.Equal(rest, want) {
			t.Fatalf("after revocations: %q, want %q", rest, want)
		}
		// A limit of 0 or less is the default.
		for _, limit := range []int{0, -1} {
			p, err := e.m.ListIrrevocable(ctx, keel.ListRequest{Limit: limit})
			if err != nil || len(p.Items) != 5 || p.Next != "" {
				t.Fatalf("limit %d: %+v, %v", limit, p, err)
			}
		}
	})
}

// TestLimits: the batch of the batched operations is reported, and the
// store's transaction limits lower it.
func TestLimits(t *testing.T) {
	m := mustNew(t, everystore.Mem(t), nil)
	if got := m.Limits(); got.Batch != maxBatch {
		t.Fatalf("Limits() = %+v on a store without transaction limits, want Batch %d", got, maxBatch)
	}
	lim := mustNew(t, limited{Store: everystore.Mem(t), ops: 60}, nil)
	if got := lim.Limits(); got.Batch != 60/opsPerLease {
		t.Fatalf("Limits() = %+v with MaxTxOps 60, want Batch %d", got, 60/opsPerLease)
	}
	if got := truncateError(strings.Repeat("é", maxErrorLen)); len(got) > maxErrorLen {
		t.Fatalf("kept %d bytes of an error, want at most maxErrorLen", len(got))
	}
}

// TestListHugeLimit: a limit as large as an int goes is a limit, not an
// overflow.
func TestListHugeLimit(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	want := issueLeaves(t, e, "ldap/creds/app", 3)
	p, err := e.m.List(context.Background(), "ldap/creds/app", keel.ListRequest{Limit: math.MaxInt})
	if err != nil || !slices.Equal(p.Items, want) || p.Next != "" {
		t.Fatalf("%q, next %q, %v", p.Items, p.Next, err)
	}
	makeIrrevocable(t, e, "ldap/creds/app", 2)
	ip, err := e.m.ListIrrevocable(context.Background(), keel.ListRequest{Limit: math.MaxInt})
	if err != nil || len(ip.Items) != 2 || ip.Next != "" {
		t.Fatalf("irrevocable: %+v, %v", ip, err)
	}
}
