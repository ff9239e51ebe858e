package identity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// walk asks list for one page after another, limit items a page, and
// calls between (may be nil) after each page but the last with the items
// listed so far. It returns the pages' items, failing t on an error, a
// page longer than limit, or more pages than there can be.
func walk(t *testing.T, list func(context.Context, keel.ListRequest) (keel.Page[string], error), limit int, between func(listed []string)) (pages [][]string) {
	t.Helper()
	ctx := context.Background()
	r := keel.ListRequest{Limit: limit}
	var listed []string
	for range 1000 {
		p, err := list(ctx, r)
		if err != nil {
			t.Fatalf("page after %q: %v", r.Cursor, err)
		}
		if len(p.Items) > limit {
			t.Fatalf("page after %q holds %d items, more than the limit %d", r.Cursor, len(p.Items), limit)
		}
		pages = append(pages, p.Items)
		listed = append(listed, p.Items...)
		if p.Next == "" {
			return pages
		}
		if len(p.Items) == 0 {
			t.Fatalf("an empty page after %q has a Next %q", r.Cursor, p.Next)
		}
		if between != nil {
			between(slices.Clone(listed))
		}
		r.Cursor = p.Next
	}
	t.Fatal("the pages do not end")
	return nil
}

// TestListPages: List and ListNames give a list longer than the limit in
// pages of the limit, in the order of the whole list (ids byte-wise; names
// by their folded form), the last page with an empty Next; keel.All
// walks the same list, and a limit of 0 or less is the default.
func TestListPages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		names := []string{"b", "C", "a", "Ä", "Beta", "alpha", "Zed"}
		var ids []string
		for _, n := range names {
			ids = append(ids, e.create(t, n))
		}
		slices.Sort(ids)
		wantNames := []string{"a", "alpha", "b", "Beta", "C", "Zed", "Ä"}
		for _, tc := range []struct {
			list string
			fn   func(context.Context, keel.ListRequest) (keel.Page[string], error)
			want []string
		}{{"List", e.g.List, ids}, {"ListNames", e.g.ListNames, wantNames}} {
			pages := walk(t, tc.fn, 3, nil)
			if want := [][]string{tc.want[:3], tc.want[3:6], tc.want[6:]}; !slices.EqualFunc(pages, want, slices.Equal) {
				t.Fatalf("%s in pages of 3 = %q, want %q", tc.list, pages, want)
			}
			// A limit that is a whole number of pages: the last full
			// page may point to an empty one, never further.
			var got []string
			for _, p := range walk(t, tc.fn, 7, nil) {
				got = append(got, p...)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s in pages of 7 = %q, want %q", tc.list, got, tc.want)
			}
			for _, limit := range []int{0, -1, 100, math.MaxInt} {
				p, err := tc.fn(ctx, keel.ListRequest{Limit: limit})
				if err != nil || !slices.Equal(p.Items, tc.want) || p.Next != "" {
					t.Fatalf("%s with limit %d = %q (next %q), %v; want one page %q", tc.list, limit, p.Items, p.Next, err, tc.want)
				}
			}
			if got, err := collect(ctx, 2, tc.fn); err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("keel.All over %s = %q, %v; want %q", tc.list, got, err, tc.want)
			}
			// The cursor is the last item given: the page after it is
			// what follows it, and after the last item nothing.
			p, err := tc.fn(ctx, keel.ListRequest{Cursor: tc.want[1], Limit: 2})
			if err != nil || !slices.Equal(p.Items, tc.want[2:4]) || p.Next != tc.want[3] {
				t.Fatalf("%s after %q = %q (next %q), %v; want %q", tc.list, tc.want[1], p.Items, p.Next, err, tc.want[2:4])
			}
			p, err = tc.fn(ctx, keel.ListRequest{Cursor: tc.want[6]})
			if err != nil || len(p.Items) != 0 || p.Next != "" {
				t.Fatalf("%s after the last = %q (next %q), %v; want an empty last page", tc.list, p.Items, p.Next, err)
			}
		}
	})
}

// TestListDefaultLimit: a page asked for without a limit holds
// defaultListLimit items, and Next leads to the rest.
func TestListDefaultLimit(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	ctx := context.Background()
	for i := range defaultListLimit + 1 {
		e.create(t, fmt.Sprintf("g%04d", i))
	}
	for name, list := range map[string]func(context.Context, keel.ListRequest) (keel.Page[string], error){
		"List": e.g.List, "ListNames": e.g.ListNames,
	} {
		p, err := list(ctx, keel.ListRequest{})
		if err != nil || len(p.Items) != defaultListLimit || p.Next != p.Items[defaultListLimit-1] {
			t.Fatalf("%s: first page of %d items (next %q), %v; want %d", name, len(p.Items), p.Next, err, defaultListLimit)
		}
		rest, err := list(ctx, keel.ListRequest{Cursor: p.Next})
		if err != nil || len(rest.Items) != 1 || rest.Next != "" || rest.Items[0] <= p.Next {
			t.Fatalf("%s: the page after %q = %q (next %q), %v; want the last item", name, p.Next, rest.Items, rest.Next, err)
		}
	}
	if p, _ := e.g.ListNames(ctx, keel.ListRequest{}); p.Items[0] != "g0000" || p.Next != "g0999" {
		t.Fatalf("ListNames: first page from %q to %q", p.Items[0], p.Next)
	}
}

// TestListCursorWhileGroupsChange: groups created, renamed and deleted
// between two pages, the last one listed included, neither break the walk
// nor make it skip or repeat a group that stays: each page starts after
// the last item given, wherever it now is.
func TestListCursorWhileGroupsChange(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		byName := map[string]string{}
		for _, n := range []string{"b", "d", "f", "h", "j", "l", "n"} {
			byName[n] = e.create(t, n)
		}

		// By name: the walk in pages of 2 meets "b d", "f g", "j l", "m".
		var cursors []string
		pages := walk(t, e.g.ListNames, 2, func(listed []string) {
			last := listed[len(listed)-1]
			cursors = append(cursors, last)
			switch last {
			case "d":
				// Deleted: the last one listed, and one not yet listed.
				// Created: one before the cursor (not listed) and one
				// after (listed).
				for _, n := range []string{"d", "h"} {
					if err := e.g.DeleteByName(ctx, n); err != nil {
						t.Fatal(err)
					}
				}
				e.create(t, "c")
				e.create(t, "g")
			case "l":
				// Renamed: one listed, to a name after the cursor
				// (listed under it), and one not yet listed, to a name
				// before the cursor (not listed).
				if _, err := e.g.Update(ctx, byName["b"], GroupRequest{Name: new("m")}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.g.Update(ctx, byName["n"], GroupRequest{Name: new("a")}); err != nil {
					t.Fatal(err)
				}
			}
		})
		want := [][]string{{"b", "d"}, {"f", "g"}, {"j", "l"}, {"m"}}
		if !slices.EqualFunc(pages, want, slices.Equal) || !slices.Equal(cursors, []string{"d", "g", "l"}) {
			t.Fatalf("ListNames while groups change = %q (cursors %q), want %q", pages, cursors, want)
		}

		// By id: the ids are random. Between two pages, delete the last
		// id listed and the first one not yet listed, and create two
		// groups: every id that stays is listed once, in order; a
		// deleted one not yet listed is not; a created one is listed
		// when it follows the cursor.
		ids, err := collect(ctx, 0, e.g.List)
		if err != nil {
			t.Fatal(err)
		}
		stays := map[string]bool{}
		for _, id := range ids {
			stays[id] = true
		}
		var deleted, skipped []string  // skipped: deleted before their page
		created := map[string]string{} // id: the cursor when it was created
		pages = walk(t, e.g.List, 2, func(listed []string) {
			last := listed[len(listed)-1]
			next, err := e.g.List(ctx, keel.ListRequest{Cursor: last, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			skipped = append(skipped, next.Items...)
			for _, id := range append([]string{last}, next.Items...) {
				if err := e.g.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				delete(stays, id)
				deleted = append(deleted, id)
			}
			for range 2 {
				res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{})
				if err != nil {
					t.Fatal(err)
				}
				created[res.ID] = last
			}
		})
		var listed []string
		for _, p := range pages {
			listed = append(listed, p...)
		}
		if !slices.IsSorted(listed) || len(slices.Compact(slices.Clone(listed))) != len(listed) {
			t.Fatalf("List while groups change = %q: not in order, or an id twice", listed)
		}
		for id := range stays {
			if !slices.Contains(listed, id) {
				t.Fatalf("List while groups change skipped %s, which stayed; listed %q", id, listed)
			}
		}
		for _, id := range skipped {
			if slices.Contains(listed, id) {
				t.Fatalf("List listed %s, deleted before its page", id)
			}
		}
		for id, at := range created {
			// Unless deleted since, by the walk itself.
			if slices.Contains(deleted, id) {
				continue
			}
			if got, want := slices.Contains(listed, id), id > at; got != want {
				t.Fatalf("group %s, created while the cursor was %s: listed %v, want %v", id, at, got, want)
			}
		}
	})
}

// TestListBadCursorAndRights: a cursor that no key has is a position all
// the same (opaque to the caller, not checked); the rights are asked for
// every page.
func TestListBadCursorAndRights(t *testing.T) {
	a := &recordingAuthorizer{}
	e := newEnv(t, everystore.Mem, &Options{Authorizer: a}, nil)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		e.create(t, n)
	}
	a.Take()
	p, err := e.g.ListNames(ctx, keel.ListRequest{Cursor: "aa", Limit: 1})
	if err != nil || !slices.Equal(p.Items, []string{"b"}) || p.Next != "b" {
		t.Fatalf("ListNames after %q = %q (next %q), %v", "aa", p.Items, p.Next, err)
	}
	if _, err := collect(ctx, 1, e.g.ListNames); err != nil {
		t.Fatal(err)
	}
	if got := a.Take(); len(got) != 1+3 {
		t.Fatalf("asked %v: want one ask a page", got)
	}
	p, err = e.g.List(ctx, keel.ListRequest{Cursor: "\xff", Limit: 1})
	if err != nil || len(p.Items) != 0 || p.Next != "" {
		t.Fatalf("List after every id = %q (next %q), %v", p.Items, p.Next, err)
	}
}
