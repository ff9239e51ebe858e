package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// MigrateOptions refine Migrate. A nil *MigrateOptions means the zero
// value: every key, no progress reported.
type MigrateOptions struct {
	// Prefix, when not empty, copies only the keys that start with it.
	Prefix string
	// Progress, when not nil, is called in Migrate's goroutine once before
	// the first batch and after each committed batch. Setting it makes
	// Migrate count the source's keys first (one keys-only scan), to
	// report Progress.Total.
	Progress func(Progress)
}

// Progress is how far a Migrate has come, for a caller to render (a
// progress bar).
type Progress struct {
	Keys    int64 // keys copied by this run
	Bytes   int64 // key and value bytes copied by this run
	Resumed int64 // keys found in the destination, copied by a previous run
	// Total is the keys under the prefix of the source when Migrate
	// began; Keys+Resumed reaches it when the source was not written
	// meanwhile.
	Total   int64
	Elapsed time.Duration // since this run began
	// KeysPerSecond and BytesPerSecond are this run's rates so far.
	KeysPerSecond  float64
	BytesPerSecond float64
	// Left is the estimated time left at KeysPerSecond; zero before the
	// first batch.
	Left time.Duration
}

// MigrateResult is what Migrate copied.
type MigrateResult struct {
	Keys    int64 // keys copied by this run
	Bytes   int64 // key and value bytes copied by this run
	Resumed int64 // keys already in the destination, not copied again
}

// Migrate copies every key of from under opts.Prefix, with its value as
// stored, into to, in key order, in batches sized from to.Limits(). It is
// resumable: it continues after the greatest key under the prefix that to
// already holds, so that a Migrate run again after an error or a kill
// finishes the copy. The rule that makes this right: to holds nothing
// under the prefix when the first run begins, or only what earlier runs
// of the same Migrate copied, and nobody writes from or to meanwhile. To
// catch a destination that breaks it, Migrate checks that from holds the
// greatest key of to with the same value, and fails with keel.KindConflict
// when it does not.
//
// Each batch reads from in a View of its own: Migrate copies a store at
// rest. Save and Restore copy a store that is written meanwhile.
func Migrate(ctx context.Context, from, to storage.Store, opts *MigrateOptions) (MigrateResult, error) {
	var v keel.Validation
	if from == nil {
		v.Add("From", "is required")
	}
	if to == nil {
		v.Add("To", "is required")
	}
	if err := v.Err(); err != nil {
		return MigrateResult{}, pfx.Add(err)
	}
	var o MigrateOptions
	if opts != nil {
		o = *opts
	}
	start := time.Now()
	var res MigrateResult

	// Where the previous runs stopped.
	after := ""
	err := to.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan(o.Prefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			after = key
			res.Resumed++
			return nil
		})
	})
	if err != nil {
		return res, pfx.Wrapf(err, "read the destination")
	}
	if after != "" {
		if err := checkResume(ctx, from, to, after); err != nil {
			return res, err
		}
	}
	var total int64
	if o.Progress != nil {
		err := from.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.Scan(o.Prefix, storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
				total++
				return nil
			})
		})
		if err != nil {
			return res, pfx.Wrapf(err, "read the source")
		}
	}
	report := func() {
		if o.Progress == nil {
			return
		}
		p := Progress{Keys: res.Keys, Bytes: res.Bytes, Resumed: res.Resumed, Total: total, Elapsed: time.Since(start)}
		if s := p.Elapsed.Seconds(); s > 0 {
			p.KeysPerSecond = float64(p.Keys) / s
			p.BytesPerSecond = float64(p.Bytes) / s
		}
		if left := total - p.Keys - p.Resumed; left > 0 && p.KeysPerSecond > 0 {
			p.Left = time.Duration(float64(left) / p.KeysPerSecond * float64(time.Second))
		}
		o.Progress(p)
	}
	report()

	b := newBatcher(to)
	b.committed = func(n int, bytes int64) error {
		res.Keys += int64(n)
		res.Bytes += bytes
		report()
		return nil
	}
	for {
		// One batch's records, read in a View of from, then written in
		// an Update of to: never a transaction inside another, which
		// would deadlock when both are views of one bbolt file.
		var page []record
		pageBytes := 0
		err := from.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			page, pageBytes = page[:0], 0
			return tx.Scan(o.Prefix, storage.ScanOptions{After: after}, func(key string, value []byte) error {
				size := b.subPrefix + len(key) + len(value)
				if len(page) > 0 && (len(page) >= b.maxKeys || pageBytes+size > b.maxBytes) {
					return storage.StopScan
				}
				page = append(page, record{key, value})
				pageBytes += size
				return nil
			})
		})
		if err != nil {
			return res, pfx.Wrapf(err, "read the source")
		}
		if len(page) == 0 {
			return res, nil
		}
		b.recs, b.bytes = page, pageBytes
		if err := b.flush(ctx); err != nil {
			return res, pfx.Wrapf(err, "write the destination")
		}
		after = page[len(page)-1].key
	}
}

// checkResume returns an error of kind keel.KindConflict unless from holds
// key, the greatest key of to, with the same value.
func checkResume(ctx context.Context, from, to storage.Store, key string) error {
	get := func(s storage.Store) (v []byte, err error) {
		err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			v, err = tx.Get(key)
			return err
		})
		return v, err
	}
	want, err := get(to)
	if err != nil {
		return pfx.Wrapf(err, "read the destination")
	}
	got, err := get(from)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return pfx.Wrapf(err, "read the source")
	}
	if err != nil || !bytes.Equal(got, want) {
		return fmt.Errorf("snapshot: the destination holds %q, which the source does not hold with the same value: migrate into an empty store, or one that holds only a previous run's keys: %w", key, keel.KindConflict)
	}
	return nil
}
