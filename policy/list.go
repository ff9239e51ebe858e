package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// ListRequest asks for one page of the policies of an organization.
type ListRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: 20; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the filtered list (0, the default: its first policy): a transport
	// renders numbered pages with it. It is at least 0.
	Offset int
	// Search keeps the policies whose name holds it, ignoring case.
	Search string
	// FilterKind, when not empty, keeps the policies of that kind
	// (Sentinel or OPA).
	FilterKind string
}

// List returns a page of the policies of org, in name order (case folded;
// the cursor of a policy is its folded name), with Total, the policies of
// the organization, and Matching, those the filters keep. A page past the
// end is empty; a negative Offset ("Offset"), or a FilterKind other than
// Sentinel or OPA ("FilterKind"), is refused once the caller is known to
// manage the organization's policies.
func (s *Service) List(ctx context.Context, org string, r ListRequest) (_ keel.CountedPage[Policy], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.List", org, r, func(ctx context.Context) (keel.CountedPage[Policy], error) {
		return s.doList(ctx, org, r)
	})
}

func (s *Service) doList(ctx context.Context, org string, r ListRequest) (out keel.CountedPage[Policy], err error) {
	defer prefixErr(&err)
	if err := s.allowed(ctx, org); err != nil {
		return out, err
	}
	pg, err := pager.New(r.ListRequest, r.Offset, false, defaultPageSize, MaxPageSize)
	if err != nil {
		return out, err
	}
	if r.FilterKind != "" && r.FilterKind != Sentinel && r.FilterKind != OPA {
		return out, keel.Invalid("FilterKind", "must be sentinel or opa")
	}
	q := strings.ToLower(r.Search)
	err = s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		out = keel.CountedPage[Policy]{Page: keel.Page[Policy]{Items: []Policy{}}}
		pg.Seen, pg.Taken, pg.Last, pg.More = 0, 0, "", false
		if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
			return err
		}
		prefix := nameIx(org)
		var keys []string
		if q == "" && r.FilterKind == "" {
			// Without filters the count is kept: read the page only,
			// skipping the keys before it (or seeking past the cursor).
			var err error
			if out.Total, err = count(tx, org); err != nil {
				return err
			}
			out.Matching = out.Total
			collect := func(k string, _ []byte) error {
				if len(keys) == pg.Limit {
					pg.More = true
					return storage.StopScan
				}
				keys = append(keys, k)
				return nil
			}
			if pg.Cursor != "" {
				err = tx.Scan(prefix, storage.ScanOptions{After: prefix + pg.Cursor, KeysOnly: true}, collect)
				if err == storage.StopScan {
					err = nil
				}
			} else if pg.Offset < out.Total {
				err = storage.Window(tx, prefix, pg.Offset, pg.Limit, collect)
				pg.More = pg.Offset < out.Total-len(keys)
			}
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				pg.Last = keys[len(keys)-1][len(prefix):]
			}
		} else {
			// With filters every index key is read (keys only) to count
			// the matches; only the page's values and records are read.
			// A kind filter reads the record of every name that matches.
			byKind := r.FilterKind != ""
			err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: !byKind}, func(k string, v []byte) error {
				out.Total++
				name := k[len(prefix):]
				if !strings.Contains(name, q) {
					return nil
				}
				if byKind {
					rec, err := getRecord(tx, string(v))
					if err != nil {
						return err
					}
					if rec.Kind != r.FilterKind {
						return nil
					}
				}
				if pg.Take(name) {
					keys = append(keys, k)
				}
				return nil
			})
			if err != nil {
				return err
			}
			out.Matching = pg.Seen
		}
		out.Next = pg.Next()
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
			out.Items = append(out.Items, p)
		}
		return nil
	})
	return out, err
}
