// Package pager picks one page out of a list walked in its order, for the
// cursor-paged lists with an offset of packages project and policy (see
// keel.CountedPage): the items after a cursor, else from an offset, at most
// a limit of them.
package pager

import "github.com/keelhq/keel"

// Pager is the state of one page being picked. The cursor of an item is
// its sort key; keys are compared as strings, descending when Desc.
type Pager struct {
	Cursor        string
	Desc          bool
	Offset, Limit int
	Seen, Taken   int    // items walked, items taken
	Last          string // the key of the last item taken
	More          bool   // an item follows the page
}

// New returns the Pager of the page r and offset ask for: a limit of 0 or
// less is def, one above max is max; a negative offset is refused
// ("Offset").
func New(r keel.ListRequest, offset int, desc bool, def, max int) (*Pager, error) {
	if offset < 0 {
		return nil, keel.Invalid("Offset", "must be at least 0")
	}
	limit := r.Limit
	if limit <= 0 {
		limit = def
	}
	return &Pager{Cursor: r.Cursor, Desc: desc, Offset: offset, Limit: min(limit, max)}, nil
}

// Take reports whether the next item of the list, of sort key key, is on
// the page.
func (p *Pager) Take(key string) bool {
	p.Seen++
	if p.Cursor != "" {
		if p.Desc && key >= p.Cursor || !p.Desc && key <= p.Cursor {
			return false
		}
	} else if p.Seen <= p.Offset {
		return false
	}
	if p.Taken == p.Limit {
		p.More = true
		return false
	}
	p.Taken++
	p.Last = key
	return true
}

// Next is the Next of the page: the cursor of its last item when another
// follows it, else "".
func (p *Pager) Next() string {
	if p.More {
		return p.Last
	}
	return ""
}
