package policy

import (
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestListPageNumberBounds: a page past the end is empty with true
// pagination; a page number above MaxPageNumber is refused on PageNumber,
// never read as page 1.
func TestListPageNumberBounds(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.mk(t, "a")
		e.mk(t, "b")
		page, err := e.s.List(root(), "acme", ListRequest{PageNumber: 7, PageSize: 1})
		if err != nil || len(page.Policies) != 0 || page.Pagination.CurrentPage != 7 || page.Pagination.TotalPages != 2 || *page.Pagination.PrevPage != 2 {
			t.Fatalf("past the end: %+v, %v", page, err)
		}
		_, err = e.s.List(root(), "acme", ListRequest{PageNumber: MaxPageNumber + 1})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "PageNumber" {
			t.Fatalf("huge page number: %v", err)
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
			{ListRequest{FilterKind: OPA, PageNumber: 2, PageSize: 2}, []string{"web-o"}, 3},
			{ListRequest{FilterKind: OPA, PageNumber: 9}, nil, 3},
			{ListRequest{}, []string{"db-o", "net-o", "net-s", "web-o", "web-s"}, 5},
		} {
			page, err := e.s.List(root(), "acme", tc.opts)
			var names []string
			for _, p := range page.Policies {
				names = append(names, p.Name)
			}
			if err != nil || !slices.Equal(names, tc.want) || page.Pagination.TotalCount != tc.total {
				t.Errorf("List(%+v) = %q (total %d), %v; want %q (total %d)", tc.opts, names, page.Pagination.TotalCount, err, tc.want, tc.total)
			}
		}
		_, err := e.s.List(root(), "acme", ListRequest{FilterKind: "rego"})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "FilterKind" {
			t.Fatalf("unknown kind: %v", err)
		}
	})
}
