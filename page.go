package keel

import (
	"context"
	"iter"
)

// ListRequest asks for one page of a list that can grow without bound:
// the items after Cursor (empty: from the first), at most Limit of them (0
// or less: the package's default, which its doc states).
type ListRequest struct {
	Cursor string
	Limit  int
}

// Page is one page of a list: its Items, in the list's order, and Next,
// the Cursor of the page that follows ("" on the last page). A cursor is
// opaque to the caller and stays valid while the list changes: the next
// page starts after the last item given, wherever it now is.
type Page[T any] struct {
	Items []T
	Next  string
}

// CountedPage is a Page of a list that counts the list too, so that a
// transport can render numbered pages (HCP Terraform's page[number] and
// meta.pagination) from a request's offset: Matching is the number of
// items the request's filters keep, on every page together (the list the
// offset indexes); Total is the number of items before those filters.
// Walk its items with All, returning its Page.
type CountedPage[T any] struct {
	Page[T]
	Total    int
	Matching int
}

// All returns an iterator over every item of a paged list, asking list for
// one page after another, limit items at a time (0: the list's default).
// The iteration stops at the first error, yielded with the zero T.
func All[T any](ctx context.Context, limit int, list func(ctx context.Context, r ListRequest) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		r := ListRequest{Limit: limit}
		for {
			p, err := list(ctx, r)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			r.Cursor = p.Next
		}
	}
}
