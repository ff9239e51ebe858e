package keel_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/keelhq/keel"
)

// TestAll: All walks every page in order, passing each page's Next as the
// following request's Cursor, stops when the consumer stops, and yields
// the first error of a page.
func TestAll(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	var asked []keel.ListRequest
	list := func(_ context.Context, r keel.ListRequest) (keel.Page[string], error) {
		asked = append(asked, r)
		start := 0
		if r.Cursor != "" {
			start, _ = strconv.Atoi(r.Cursor)
		}
		end := min(start+r.Limit, len(items))
		p := keel.Page[string]{Items: items[start:end]}
		if end < len(items) {
			p.Next = strconv.Itoa(end)
		}
		return p, nil
	}
	var got []string
	for it, err := range keel.All(context.Background(), 2, list) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it)
	}
	if !slices.Equal(got, items) || !slices.Equal(asked, []keel.ListRequest{{Limit: 2}, {Cursor: "2", Limit: 2}, {Cursor: "4", Limit: 2}}) {
		t.Fatalf("got %q asking %+v", got, asked)
	}
	asked = nil
	for it := range keel.All(context.Background(), 2, list) {
		if it == "c" {
			break
		}
	}
	if len(asked) != 2 {
		t.Errorf("a consumer that stopped at c made %d requests, want 2", len(asked))
	}
	boom := errors.New("boom")
	n := 0
	for _, err := range keel.All(context.Background(), 0, func(context.Context, keel.ListRequest) (keel.Page[int], error) { return keel.Page[int]{}, boom }) {
		n++
		if !errors.Is(err, boom) {
			t.Errorf("error %v, want boom", err)
		}
	}
	if n != 1 {
		t.Errorf("%d yields for a failing list, want 1", n)
	}
}
