package snapshot

import (
	"context"
	"io"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// SaveOptions refine Save. A nil *SaveOptions means the zero value: the
// whole store.
type SaveOptions struct {
	// Prefix, when not empty, saves only the keys that start with it.
	Prefix string
}

// SaveResult is what Save wrote.
type SaveResult struct {
	Prefix string // the prefix saved ("" for the whole store)
	Keys   int64  // records written
	Bytes  int64  // bytes of the stream, header and trailer included
}

// Save writes every key of store under opts.Prefix, with its value as the
// store holds it, to out as one stream: a header, the records in key
// order and a trailer with their count and a SHA-256 checksum. The keys
// are read in one View, so the stream is the state of one instant however
// many writers commit meanwhile (see the package documentation for each
// store). Save does not close out; on an error, what it wrote is not a
// valid stream.
func Save(ctx context.Context, store storage.Store, out io.Writer, opts *SaveOptions) (SaveResult, error) {
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	}
	if out == nil {
		v.Add("Out", "is required")
	}
	if err := v.Err(); err != nil {
		return SaveResult{}, pfx.Add(err)
	}
	var o SaveOptions
	if opts != nil {
		o = *opts
	}
	res := SaveResult{Prefix: o.Prefix}
	e := newEncoder(out)
	defer e.stop()
	// A write error of out is kept apart from the store's errors.
	var werr error
	err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		if werr = e.header(o.Prefix); werr != nil {
			return werr
		}
		if l, ok := tx.(lender); ok {
			return l.ScanLent(o.Prefix, func(key, value []byte) error {
				if e.keys%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				werr = appendRecord(e, key, value)
				return werr
			})
		}
		return tx.Scan(o.Prefix, storage.ScanOptions{}, func(key string, value []byte) error {
			if e.keys%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			werr = appendRecord(e, key, value)
			return werr
		})
	})
	if werr != nil {
		return res, ioErr("write the stream", werr)
	}
	if err != nil {
		return res, pfx.Wrapf(err, "read the store")
	}
	if err := e.trailer(); err != nil {
		return res, ioErr("write the stream", err)
	}
	res.Keys, res.Bytes = e.keys, e.n
	return res, nil
}

// lender is implemented by the transactions of a store that can lend the
// bytes of its keys and values during a scan (boltstore's, which lend its
// file's memory map): Save then copies each record once, into its stream,
// instead of receiving copies from Scan. ScanLent calls fn for each key
// under prefix, in ascending order, with the key and its value, which are
// valid only until fn returns and must not be modified; it stops at, and
// returns, fn's first error.
type lender interface {
	ScanLent(prefix string, fn func(key, value []byte) error) error
}
