package policy

import (
	"context"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestListPageBounds: a page past the end is empty, without Next; a
// negative offset is refused on Offset; a cursor walks the list, with and
// without filters.
func TestListPageBounds(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.mk(t, "a")
		e.mk(t, "b")
		page, err := e.s.List(root(), "acme", ListRequest{ListRequest: keel.ListRequest{Limit: 1}, Offset: 6})
		if err != nil || len(page.Items) != 0 || page.Next != "" || page.Matching != 2 || page.Total != 2 {
			t.Fatalf("past the end: %+v, %v", page, err)
		}
		_, err = e.s.List(root(), "acme", ListRequest{Offset: -1})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Offset" {
			t.Fatalf("negative offset: %v", err)
		}
		e.mk(t, "c")
		for _, r := range []ListRequest{{}, {Search: "c"}, {Search: "b"}, {FilterKind: Sentinel}} {
			var walked []string
			for p, err := range keel.All(root(), 1, func(ctx context.Context, lr keel.ListRequest) (keel.Page[Policy], error) {
				rr := r
				rr.ListRequest = lr
				page, err := e.s.List(ctx, "acme", rr)
				return page.Page, err
			}) {
				if err != nil {
					t.Fatal(err)
				}
				walked = append(walked, p.Name)
			}
			one, _ := e.s.List(root(), "acme", r)
			var want []string
			for _, p := range one.Items {
				want = append(want, p.Name)
			}
			if !slices.Equal(walked, want) || len(want) == 0 {
				t.Errorf("walk %+v = %q, want %q", r, walked, want)
			}
		}
	})
}

// TestListFilterKind: FilterKind keeps the policies of one kind, with or
// without search, counted in the pagination; a kind that is neither
// Sentinel nor OPA is refused on FilterKind.
func TestListFilterKind(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.mk(t, "net-s")
		e.mk(t, "web-s")
		for _, n := range []string{"net-o", "web-o", "db-o"} {
			if _, err := e.s.Create(root(), "acme", CreateRequest{Name: ptr(n), Kind: ptr(OPA), Query: ptr("data.x"), EnforcementLevel: ptr(Mandatory)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			opts  ListRequest
			want  []string
			total int
		}{
			{ListRequest{FilterKind: OPA}, []string{"db-o", "net-o", "web-o"}, 3},
			{ListRequest{FilterKind: Sentinel}, []string{"net-s", "web-s"}, 2},
			{ListRequest{FilterKind: OPA, Search: "NET"}, []string{"net-o"}, 1},
			{ListRequest{FilterKind: OPA, ListRequest: keel.ListRequest{Limit: 2}, Offset: 2}, []string{"web-o"}, 3},
			{ListRequest{FilterKind: OPA, Offset: 160}, nil, 3},
			{ListRequest{}, []string{"db-o", "net-o", "net-s", "web-o", "web-s"}, 5},
		} {
			page, err := e.s.List(root(), "acme", tc.opts)
			var names []string
			for _, p := range page.Items {
				names = append(names, p.Name)
			}
			if err != nil || !slices.Equal(names, tc.want) || page.Matching != tc.total {
				t.Errorf("List(%+v) = %q (total %d), %v; want %q (total %d)", tc.opts, names, page.Matching, err, tc.want, tc.total)
			}
		}
		_, err := e.s.List(root(), "acme", ListRequest{FilterKind: "rego"})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "FilterKind" {
			t.Fatalf("unknown kind: %v", err)
		}
	})
}
