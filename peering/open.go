package peering

import (
	"context"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// storePrefix is where Open keeps peering's keys in the store it is given:
// the prefix the example server chose before Open existed, so that its
// data files are served unchanged.
const storePrefix = "peering/"

// Open is the usual way to build one cluster's Service: the composition
// root of the peering family. store is the program's whole store, or a
// view of it; Open keeps peering's keys under "peering/" and writes
// nothing outside it. It builds the Service as New does, reaching peers
// through transport, and starts its worker (Start); Close stops it.
//
// Open fails with an error of kind keel.KindInvalid naming each field
// missing: "Store", "Transport", or "Authorizer" when opts.Authorizer is
// nil (allowing everything, anonymous callers included, is never a
// default: a program that does its own access control says so with
// keel.AllowAll{}); it then writes nothing and starts nothing. It fails
// with ctx's error when ctx is already done. Open reads nothing from the
// store.
func Open(ctx context.Context, store storage.Store, transport Transport, opts *Options) (_ *Service, err error) {
	defer prefixErr(&err)
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := storage.CheckRoot(store, o.Authorizer, []storage.Part{{Prefix: storePrefix, Kind: ClaimKind}}, func(v *keel.Validation) {
		if transport == nil {
			v.Add("Transport", "is required")
		}
	}); err != nil {
		return nil, wrapf(err, "open")
	}
	if err := ctx.Err(); err != nil {
		return nil, wrapf(err, "open")
	}
	view := storage.Sub(store, storePrefix)
	s, err := New(view, transport, &o)
	if err != nil {
		return nil, wrapf(err, "open")
	}
	s.Start()
	return s, nil
}

// Close stops the worker, as Stop does: it cancels the running Step and
// waits for the worker's goroutine to end. It stops what Open started, and
// the worker of a Service made with New and started with Start alike. The
// Service still answers calls afterwards, but nothing runs on schedule (no
// heartbeats, no failure detection, no clean-up of deleted peerings) until
// Start is called again. Close returns nil; it may be called more than
// once, and does not close the store.
func (s *Service) Close() error {
	s.Stop()
	return nil
}
