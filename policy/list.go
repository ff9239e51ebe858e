package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// ListRequest are the query parameters of a policy list.
type ListRequest struct {
	// PageNumber is page[number]; below 1 means the first page, above
	// MaxPageNumber is refused.
	PageNumber int
	// PageSize is page[size]; below 1 means DefaultPageSize, above
	// MaxPageSize means MaxPageSize.
	PageSize int
	// Search is search[name]: a case-insensitive substring of the name.
	Search string
	// FilterKind is filter[kind]: when not empty, only the policies of
	// that kind (Sentinel or OPA).
	FilterKind string
}

// Page is one page of policies, in name order.
type Page struct {
	Policies   []Policy
	Pagination keel.Pagination
}

// List returns a page of the policies of org, in name order (case
// folded). A page past the end is empty, its pagination true; a page
// number above MaxPageNumber ("PageNumber"), or a FilterKind other than
// Sentinel or OPA ("FilterKind"), is refused once the caller is known to
// manage the organization's policies.
func (s *Service) List(ctx context.Context, org string, opts ListRequest) (Page, error) {
	if err := s.allowed(ctx, org); err != nil {
		return Page{}, err
	}
	if opts.PageNumber > MaxPageNumber {
		return Page{}, keel.Invalid("PageNumber", "must be at most %d", MaxPageNumber)
	}
	if opts.FilterKind != "" && opts.FilterKind != Sentinel && opts.FilterKind != OPA {
		return Page{}, keel.Invalid("FilterKind", "must be sentinel or opa")
	}
	if opts.PageNumber < 1 {
		opts.PageNumber = 1
	}
	if opts.PageSize < 1 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(opts.PageSize, MaxPageSize)
	q := strings.ToLower(opts.Search)
	start := (opts.PageNumber - 1) * opts.PageSize
	var out Page
	err := s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		out = Page{Policies: []Policy{}}
		if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
			return err
		}
		prefix := nameIx(org)
		var keys []string
		total := 0
		if q == "" && opts.FilterKind == "" {
			// Without search the count is kept: read the page only,
			// skipping the keys before it.
			var err error
			if total, err = count(tx, org); err != nil {
				return err
			}
			if start < total {
				err = storage.Window(tx, prefix, start, opts.PageSize, func(k string, _ []byte) error {
					keys = append(keys, k)
					return nil
				})
				if err != nil {
					return err
				}
			}
		} else {
			// With search every index key is read (keys only) to count
			// the matches; only the page's values and records are read.
			// A kind filter reads the record of every name that matches.
			byKind := opts.FilterKind != ""
			err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: !byKind}, func(k string, v []byte) error {
				if !strings.Contains(k[len(prefix):], q) {
					return nil
				}
				if byKind {
					rec, err := getRecord(tx, string(v))
					if err != nil {
						return err
					}
					if rec.Kind != opts.FilterKind {
						return nil
					}
				}
				if total >= start && total < start+opts.PageSize {
					keys = append(keys, k)
				}
				total++
				return nil
			})
			if err != nil {
				return err
			}
		}
		out.Pagination = keel.NewPagination(opts.PageNumber, opts.PageSize, total)
		for _, k := range keys {
			id, err := tx.Get(k)
			if err != nil {
				return err
			}
			rec, err := getRecord(tx, string(id))
			if err != nil {
				return err
			}
			p, err := s.public(tx, rec)
			if err != nil {
				return err
			}
			out.Policies = append(out.Policies, p)
		}
		return nil
	})
	return out, err
}
