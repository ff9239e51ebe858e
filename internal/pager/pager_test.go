package pager_test

import (
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
)

func page(t *testing.T, keys []string, r keel.ListRequest, offset int, desc bool) ([]string, string) {
	t.Helper()
	p, err := pager.New(r, offset, desc, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		if p.Take(k) {
			got = append(got, k)
		}
	}
	return got, p.Next()
}

func TestPager(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		name   string
		r      keel.ListRequest
		offset int
		desc   bool
		keys   []string
		want   []string
		next   string
	}{
		{"default limit", keel.ListRequest{}, 0, false, keys, []string{"a", "b"}, "b"},
		{"limit cut to max", keel.ListRequest{Limit: 10}, 0, false, keys, []string{"a", "b", "c"}, "c"},
		{"offset", keel.ListRequest{}, 3, false, keys, []string{"d", "e"}, ""},
		{"cursor wins over offset", keel.ListRequest{Cursor: "b"}, 4, false, keys, []string{"c", "d"}, "d"},
		{"cursor of a deleted item", keel.ListRequest{Cursor: "bb"}, 0, false, keys, []string{"c", "d"}, "d"},
		{"descending", keel.ListRequest{Cursor: "d"}, 0, true, []string{"e", "d", "c", "b", "a"}, []string{"c", "b"}, "b"},
		{"past the end", keel.ListRequest{}, 9, false, keys, nil, ""},
	} {
		got, next := page(t, tc.keys, tc.r, tc.offset, tc.desc)
		if !slices.Equal(got, tc.want) || next != tc.next {
			t.Errorf("%s: %q next %q, want %q next %q", tc.name, got, next, tc.want, tc.next)
		}
	}
	if _, err := pager.New(keel.ListRequest{}, -1, false, 2, 3); keel.KindOf(err) != keel.KindInvalid {
		t.Fatalf("negative offset: %v", err)
	}
}
