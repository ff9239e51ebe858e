package policy

import (
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
		page, err := e.s.List(root(), "acme", ListOptions{PageNumber: 7, PageSize: 1})
		if err != nil || len(page.Policies) != 0 || page.Pagination.CurrentPage != 7 || page.Pagination.TotalPages != 2 || *page.Pagination.PrevPage != 2 {
			t.Fatalf("past the end: %+v, %v", page, err)
		}
		_, err = e.s.List(root(), "acme", ListOptions{PageNumber: MaxPageNumber + 1})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "PageNumber" {
			t.Fatalf("huge page number: %v", err)
		}
	})
}
