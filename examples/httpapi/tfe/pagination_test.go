package tfe

import (
	"fmt"
	"testing"
)

func TestNewPagination(t *testing.T) {
	show := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	for _, tc := range []struct {
		number, size, total int
		want                string // prev next pages
	}{
		{1, 20, 0, "- - 1"},  // an empty list has one page
		{1, 20, 20, "- - 1"}, // exactly full
		{1, 20, 21, "- 2 2"}, // one more item opens a page
		{2, 20, 41, "1 3 3"}, // a middle page
		{3, 20, 41, "2 - 3"}, // the last page
		{9, 4, 6, "2 - 2"},   // past the end: prev is the last page
	} {
		p := newPagination(tc.number, tc.size, tc.total)
		if got := show(p.PrevPage) + " " + show(p.NextPage) + " " + fmt.Sprint(p.TotalPages); got != tc.want ||
			p.CurrentPage != tc.number || p.PageSize != tc.size || p.TotalCount != tc.total {
			t.Errorf("NewPagination(%d, %d, %d) = %+v (%s), want %s", tc.number, tc.size, tc.total, p, got, tc.want)
		}
	}
}
