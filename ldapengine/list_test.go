package ldapengine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/memstore"
)

// pagedList is one of the engine's paged lists, with a function that
// creates the object name (the i-th created), and one that deletes it.
type pagedList struct {
	kind string
	list func(context.Context, string, keel.ListRequest) (keel.Page[string], error)
	put  func(t testing.TB, name string, i int)
	del  func(t testing.TB, name string)
}

// pagedLists returns the three paged lists of v's engine: static roles
// (each on an entry of its own), dynamic roles and library sets (each
// lending svc<i>: v's directory must hold as many accounts as sets are
// made).
func pagedLists(v *libEnv) []pagedList {
	ctx := libRoot()
	must := func(t testing.TB, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return []pagedList{
		{"static roles", v.e.ListStaticRoles,
			func(t testing.TB, name string, i int) {
				t.Helper()
				user := fmt.Sprintf("st%d", i)
				dn := "uid=" + user + "," + libUsersDN
				v.dir.Add(dn, "pw", "uid", user)
				must(t, v.e.PutStaticRole(ctx, name, StaticRoleRequest{Username: user, DN: dn, RotationPeriod: time.Hour}))
			},
			func(t testing.TB, name string) { t.Helper(); must(t, v.e.DeleteStaticRole(ctx, name)) }},
		{"dynamic roles", v.e.ListDynamicRoles,
			func(t testing.TB, name string, _ int) {
				t.Helper()
				must(t, v.e.PutDynamicRole(ctx, name, DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)}))
			},
			func(t testing.TB, name string) { t.Helper(); must(t, v.e.DeleteDynamicRole(ctx, name)) }},
		{"library sets", v.e.ListLibrarySets,
			func(t testing.TB, name string, i int) {
				t.Helper()
				must(t, v.e.PutLibrarySet(ctx, name, LibrarySetRequest{ServiceAccountNames: []string{libSvcName(i)}}))
			},
			func(t testing.TB, name string) { t.Helper(); must(t, v.e.DeleteLibrarySet(ctx, name)) }},
	}
}

// walk lists path page by page, limit names at a time, checking the form
// of each page: at most limit names, a full page before each Next, and
// Next the last name given. It returns the names of every page, in order.
func walk(t *testing.T, l pagedList, path string, limit int) []string {
	t.Helper()
	var all []string
	r := keel.ListRequest{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: no end after %d pages: %q", l.kind, pages, all)
		}
		p, err := l.list(libRoot(), path, r)
		if err != nil {
			t.Fatalf("%s: page after %q: %v", l.kind, r.Cursor, err)
		}
		if len(p.Items) > limit || (p.Next != "" && (len(p.Items) != limit || p.Next != p.Items[len(p.Items)-1])) {
			t.Fatalf("%s: page after %q of limit %d: %q, Next %q", l.kind, r.Cursor, limit, p.Items, p.Next)
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		r.Cursor = p.Next
	}
}

// TestListPagesWalkEveryNameInOrder: each paged list, walked a few names
// at a time, gives every name and folder directly under the path once, in
// ascending byte order (a name that is also a folder twice, "a" then
// "a/"), as one page of the default limit and keel.All do; a page of a
// folder lists its children only.
func TestListPagesWalkEveryNameInOrder(t *testing.T) {
	names := []string{"z", "r03", "a/x", "r00", "a", "b/c/d", "a-b", "r01", "b/e", "r02", "r10", "r04", "r09", "r05", "r08", "r06", "r07"}
	top := []string{"a", "a-b", "a/", "b/", "r00", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09", "r10", "z"}
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, len(names), libOptions{})
		for _, l := range pagedLists(v) {
			for i, n := range names {
				l.put(t, n, i)
			}
			for _, limit := range []int{1, 3, 4, len(top) - 1, len(top), len(top) + 1} {
				if got := walk(t, l, "", limit); !slices.Equal(got, top) {
					t.Errorf("%s, %d at a time: %q, want %q", l.kind, limit, got, top)
				}
			}
			one, err := l.list(libRoot(), "", keel.ListRequest{})
			if err != nil || !slices.Equal(one.Items, top) || one.Next != "" {
				t.Errorf("%s, one page of the default limit: %q, Next %q, %v", l.kind, one.Items, one.Next, err)
			}
			var all []string
			for n, err := range keel.All(libRoot(), 2, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
				return l.list(ctx, "", r)
			}) {
				if err != nil {
					t.Fatalf("%s: keel.All: %v", l.kind, err)
				}
				all = append(all, n)
			}
			if !slices.Equal(all, top) {
				t.Errorf("%s: keel.All gives %q, want %q", l.kind, all, top)
			}
			if got := walk(t, l, "b", 1); !slices.Equal(got, []string{"c/", "e"}) {
				t.Errorf("%s: folder b, one at a time: %q", l.kind, got)
			}
			if got := walk(t, l, "nothing/", 2); len(got) != 0 {
				t.Errorf("%s: an empty folder gives %q", l.kind, got)
			}
		}
	})
}

// TestListPagesSurviveDeletes: a cursor stays valid when names are deleted
// and created between pages, its own name and a folder's children
// included: the walk goes on after the last name given, so that no name
// is given twice, every name that exists throughout the walk is given
// once, and a name created after the cursor is given too.
func TestListPagesSurviveDeletes(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 20, libOptions{})
		for _, l := range pagedLists(v) {
			for i, n := range []string{"r00", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09", "f/a", "f/b", "g"} {
				l.put(t, n, i)
			}
			ctx := libRoot()
			p1, err := l.list(ctx, "", keel.ListRequest{Limit: 4})
			if err != nil || !slices.Equal(p1.Items, []string{"f/", "g", "r00", "r01"}) || p1.Next != "r01" {
				t.Fatalf("%s: first page %q, Next %q, %v", l.kind, p1.Items, p1.Next, err)
			}
			// The cursor's own name and one of the next page go; one name
			// comes before the cursor, one after.
			l.del(t, "r01")
			l.del(t, "r03")
			l.put(t, "e", 13)
			l.put(t, "r025", 14)
			p2, err := l.list(ctx, "", keel.ListRequest{Cursor: p1.Next, Limit: 4})
			if err != nil || !slices.Equal(p2.Items, []string{"r02", "r025", "r04", "r05"}) || p2.Next != "r05" {
				t.Fatalf("%s: second page %q, Next %q, %v", l.kind, p2.Items, p2.Next, err)
			}
			l.del(t, "r05")
			l.del(t, "r06")
			p3, err := l.list(ctx, "", keel.ListRequest{Cursor: p2.Next, Limit: 4})
			if err != nil || !slices.Equal(p3.Items, []string{"r07", "r08", "r09"}) || p3.Next != "" {
				t.Fatalf("%s: last page %q, Next %q, %v", l.kind, p3.Items, p3.Next, err)
			}

			// A folder as the cursor, emptied between pages.
			q1, err := l.list(ctx, "", keel.ListRequest{Limit: 2})
			if err != nil || !slices.Equal(q1.Items, []string{"e", "f/"}) || q1.Next != "f/" {
				t.Fatalf("%s: first page %q, Next %q, %v", l.kind, q1.Items, q1.Next, err)
			}
			l.del(t, "f/a")
			l.del(t, "f/b")
			q2, err := l.list(ctx, "", keel.ListRequest{Cursor: q1.Next, Limit: 2})
			if err != nil || !slices.Equal(q2.Items, []string{"g", "r00"}) {
				t.Fatalf("%s: page after the emptied folder %q, Next %q, %v", l.kind, q2.Items, q2.Next, err)
			}
		}
	})
}

// TestListDefaultLimit: a list of more than defaultListLimit names is
// given defaultListLimit at a time when Limit is 0 or less, and a larger
// Limit is honoured.
func TestListDefaultLimit(t *testing.T) {
	ctx := context.Background()
	v := newLibEnv(t, everystore.Mem, 0, libOptions{})
	var want []string
	for i := range defaultListLimit + 1 {
		n := fmt.Sprintf("role%05d", i)
		if err := v.e.PutDynamicRole(ctx, n, DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, n)
	}
	for _, limit := range []int{0, -1} {
		p, err := v.e.ListDynamicRoles(ctx, "", keel.ListRequest{Limit: limit})
		if err != nil || !slices.Equal(p.Items, want[:defaultListLimit]) || p.Next != want[defaultListLimit-1] {
			t.Fatalf("limit %d: %d names, Next %q, %v", limit, len(p.Items), p.Next, err)
		}
		last, err := v.e.ListDynamicRoles(ctx, "", keel.ListRequest{Cursor: p.Next, Limit: limit})
		if err != nil || !slices.Equal(last.Items, want[defaultListLimit:]) || last.Next != "" {
			t.Fatalf("limit %d, second page: %q, Next %q, %v", limit, last.Items, last.Next, err)
		}
	}
	p, err := v.e.ListDynamicRoles(ctx, "", keel.ListRequest{Limit: defaultListLimit + 1})
	if err != nil || !slices.Equal(p.Items, want) || p.Next != "" {
		t.Fatalf("limit %d: %d names, Next %q, %v", defaultListLimit+1, len(p.Items), p.Next, err)
	}
}

// TestListRefusesForeignCursors: a cursor that no page of the list can
// give (deeper than one name, or empty before its "/") is keel.KindInvalid
// on Cursor, reported with a broken path at once.
func TestListRefusesForeignCursors(t *testing.T) {
	v := newLibEnv(t, everystore.Mem, 0, libOptions{})
	for _, l := range pagedLists(v) {
		for _, c := range []string{"a/b", "/", "a//", "/a"} {
			_, err := l.list(libRoot(), "", keel.ListRequest{Cursor: c})
			wantField(t, err, "Cursor", "Next")
		}
		_, err := l.list(libRoot(), "a//b", keel.ListRequest{Cursor: "a/b"})
		wantFields(t, err, "Cursor", "Path")
	}
}

// TestLimits: Limits reports the size of a library set that the store's
// transactions allow: none on a store without a bound on reads, 120 on
// etcdstore's default limits.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits storage.Limits
		want   Limits
	}{
		{"memstore", storage.DefaultLimits(), Limits{}},
		{"etcdstore's defaults", etcdstore.DefaultLimits(), Limits{MaxLibraryAccounts: 120}},
		{"10 reads", storage.Limits{MaxTxReads: 10}, Limits{MaxLibraryAccounts: 2}},
		{"8 reads", storage.Limits{MaxTxReads: 8}, Limits{MaxLibraryAccounts: 1}},
	} {
		s := storage.Sub(memstore.New(&memstore.Options{Limits: tc.limits}), "ldap/")
		e, err := New(s, FlavorLDAP, "ldap", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Limits(); got != tc.want {
			t.Errorf("%s: Limits() = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
