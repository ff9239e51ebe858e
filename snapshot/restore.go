package snapshot

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// RestoreOptions refine Restore. A nil *RestoreOptions means the zero
// value.
type RestoreOptions struct {
	// Replace lets Restore write into a store that holds keys under the
	// stream's prefix: they are deleted once the stream has been
	// verified, before the stream's keys are written. Without it such a
	// store is refused with keel.KindConflict.
	Replace bool
	// Keep names keys Restore leaves as they are: with Replace they are
	// not deleted, and the stream's records of them are not written (nor
	// counted in RestoreResult.Keys). A program keeps so what belongs to
	// the store's holder rather than to its data (its own identity).
	// Nil: none.
	Keep func(key string) bool
	// Prepare, when not nil, is called once the stream has been
	// verified (and, with Replace, the keys under its prefix deleted),
	// with a transaction of store that commits before the stream's first
	// key is written: what it writes is in the store before any of the
	// copy (mount.PrepareRestore holds the copy's leases so). Its error
	// ends Restore, with nothing of the stream written.
	Prepare func(ctx context.Context, tx storage.Tx) error
	// TempDir is the directory of the temporary file a stream that is
	// not an io.ReadSeeker is copied to while it is verified. Empty
	// means os.TempDir().
	TempDir string
}

// RestoreResult is what Restore wrote.
type RestoreResult struct {
	Prefix  string // the stream's prefix: the part of the store restored
	Keys    int64  // keys written
	Deleted int    // keys deleted first (with Replace)
}

// Restore writes the keys of a stream made by Save into store, under the
// prefix the stream was saved from. It reads the whole stream and checks
// its format, order, count and checksum, and that every key and value
// fits store.Limits(), before it writes anything: a truncated or corrupt
// stream, or one of another format version, is refused with
// keel.KindInvalid (a key or value beyond the limits with
// keel.KindTooLarge) and leaves store as it was. A store that holds keys
// under the stream's prefix is refused with keel.KindConflict unless
// opts.Replace. The keys are written in batches sized from store.Limits().
//
// A stream that is an io.ReadSeeker (an *os.File of a regular file) is
// read twice, from where it stands; any other is copied to a temporary
// file while it is verified. The stream must not change meanwhile.
func Restore(ctx context.Context, in io.Reader, store storage.Store, opts *RestoreOptions) (RestoreResult, error) {
	var v keel.Validation
	if in == nil {
		v.Add("In", "is required")
	}
	if store == nil {
		v.Add("Store", "is required")
	}
	if err := v.Err(); err != nil {
		return RestoreResult{}, pfx.Add(err)
	}
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	limits := store.Limits()
	refuseNonEmpty := func(prefix string) error {
		if o.Replace {
			return nil
		}
		return checkEmpty(ctx, store, prefix)
	}

	// Pass 1: verify, keeping a way back to the start.
	src, cleanup, err := rewindable(in, o.TempDir)
	if err != nil {
		return RestoreResult{}, err
	}
	defer cleanup()
	d := newDecoder(src.verify, limits)
	if err := d.header(); err != nil {
		return RestoreResult{}, err
	}
	res := RestoreResult{Prefix: d.prefix}
	if err := refuseNonEmpty(d.prefix); err != nil {
		return res, err
	}
	for {
		if d.keys%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return res, pfx.Add(err)
			}
		}
		_, _, ok, err := d.next(false)
		if err != nil {
			return res, pfx.Add(err)
		}
		if !ok {
			break
		}
	}
	verified := d.keys

	// Pass 2: write.
	r, err := src.rewind()
	if err != nil {
		return res, err
	}
	if err := refuseNonEmpty(d.prefix); err != nil {
		return res, err
	}
	if o.Replace {
		n, err := deleteAll(ctx, store, d.prefix, o.Keep)
		res.Deleted = n
		if err != nil {
			return res, pfx.Wrapf(err, "delete the keys under %q", d.prefix)
		}
	}
	if o.Prepare != nil {
		if err := store.Update(ctx, o.Prepare); err != nil {
			return res, pfx.Wrapf(err, "prepare")
		}
	}
	b := newBatcher(store)
	b.committed = func(n int, _ int64) error {
		res.Keys += int64(n)
		return nil
	}
	d = newDecoder(r, limits)
	if err := d.header(); err != nil {
		return res, fmt.Errorf("%w (the stream changed after it was verified)", err)
	}
	for {
		key, value, ok, err := d.next(true)
		if err != nil {
			return res, pfx.Wrapf(err, "the stream changed after it was verified, %d keys written", res.Keys)
		}
		if !ok {
			break
		}
		if o.Keep != nil && o.Keep(key) {
			continue
		}
		if err := b.add(ctx, key, value); err != nil {
			return res, pfx.Wrapf(err, "write")
		}
	}
	if err := b.flush(ctx); err != nil {
		return res, pfx.Wrapf(err, "write")
	}
	if d.keys != verified {
		return res, invalid("the stream changed after it was verified: %d records, then %d", verified, d.keys)
	}
	return res, nil
}

// deleteAll deletes the keys under prefix of store but those keep names,
// in batches sized from the store's limits, and returns how many it
// deleted.
func deleteAll(ctx context.Context, store storage.Store, prefix string, keep func(string) bool) (int, error) {
	if keep == nil {
		return storage.DeletePrefix(ctx, store, prefix)
	}
	n, err := storage.Batch(ctx, store, prefix, &storage.BatchOptions{KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
		if keep(key) {
			return nil
		}
		return tx.Delete(key)
	})
	if err != nil {
		return 0, err
	}
	// What is left under prefix is what keep kept (a batch's closure may
	// run more than once: counting in it could count a key twice).
	kept := 0
	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		kept = 0
		return tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
			kept++
			return nil
		})
	})
	return n - kept, err
}

// checkEmpty returns an error of kind keel.KindConflict when store holds a
// key under prefix.
func checkEmpty(ctx context.Context, store storage.Store, prefix string) error {
	found := ""
	err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			found = key
			return storage.StopScan
		})
	})
	if err != nil {
		return pfx.Wrapf(err, "read the store")
	}
	if found != "" {
		return fmt.Errorf("snapshot: the store holds keys under %q (%q): restore into an empty store, or replace: %w", prefix, found, keel.KindConflict)
	}
	return nil
}

// source is a stream read twice: verify reads it the first time, rewind
// returns it from its start.
type source struct {
	verify io.Reader
	rewind func() (io.Reader, error)
}

// rewindable returns in as a source: an io.ReadSeeker that can seek is
// read again from where it stood; any other is copied to a temporary file
// in dir as it is verified. cleanup removes that file.
func rewindable(in io.Reader, dir string) (source, func(), error) {
	if rs, ok := in.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			return source{verify: rs, rewind: func() (io.Reader, error) {
				if _, err := rs.Seek(start, io.SeekStart); err != nil {
					return nil, ioErr("rewind the stream", err)
				}
				return rs, nil
			}}, func() {}, nil
		}
	}
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "keel-snapshot-*")
	if err != nil {
		return source{}, nil, ioErr("spool the stream", err)
	}
	cleanup := func() {
		f.Close()
		os.Remove(f.Name())
	}
	return source{verify: io.TeeReader(in, &spoolWriter{f}), rewind: func() (io.Reader, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, ioErr("rewind the spooled stream", err)
		}
		return f, nil
	}}, cleanup, nil
}

// spoolWriter marks the errors of the temporary file, so that a full
// disk is not mistaken for the caller's reader failing.
type spoolWriter struct{ f *os.File }

func (w *spoolWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("spool the stream to %s: %w: %w", w.f.Name(), err, keel.KindUnavailable)
	}
	return n, nil
}
