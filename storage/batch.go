package storage

import (
	"context"
	"errors"
)

// BatchOptions describe what the callback of Batch does for one key, so
// that Batch sizes its transactions. A nil *BatchOptions means the zero
// value: one write per key, no other read, values passed.
type BatchOptions struct {
	// Writes is the most Puts and Deletes the callback makes for one key.
	// Zero means 1.
	Writes int
	// Reads is the most keys the callback reads with Get for one key,
	// besides the key it is given. Zero means none.
	Reads int
	// KeysOnly passes nil values to the callback.
	KeysOnly bool
}

// Batch calls fn, in ascending key order, for every key under prefix of s,
// in as many Update transactions as s.Limits() require: a batch holds as
// many keys as fit the store's operations, reads and bytes per
// transaction, counting opts.Writes writes and opts.Reads reads per key,
// and writes as large as the key and the value fn is given (the key alone
// with KeysOnly), plus the prefix of s when s is a Sub view. fn runs inside
// the Update of its key's batch and may write through tx; the closure of a
// batch may run more than once, as any Update's.
//
// A batch that the store refuses with ErrTxTooLarge all the same (a wrapper
// may count more than Batch does: sealstore counts its sealing overhead
// against MaxTxBytes) is rolled back and tried again with fewer keys: those
// before the key whose write was refused, or half as many when the commit
// was. When one key alone is refused, Batch returns that error.
//
// An error of fn or of the store ends Batch and is returned: the failing
// batch is rolled back, the batches before it stay committed. fn may return
// StopScan to end Batch early without an error: the batch commits, with
// the writes fn made for that key. Batch keeps no state of its own, so it
// is resumable: run again after an error or a crash, it visits every key
// still under prefix. fn must therefore give the same result when it meets
// a key it has already handled (a deletion, a rewrite to a final form).
//
// Batch returns how many keys it visited in committed batches.
func Batch(ctx context.Context, s Store, prefix string, opts *BatchOptions, fn func(tx Tx, key string, value []byte) error) (int, error) {
	var o BatchOptions
	if opts != nil {
		o = *opts
	}
	o.Writes = max(o.Writes, 1)
	o.Reads = max(o.Reads, 0)
	limit := batchKeys(s.Limits(), o)
	// A Sub view writes its prefix with every key, and the store below
	// counts it against MaxTxBytes.
	_, subPrefix := Split(s)
	total, after := 0, ""
	for {
		seen, tried, last, full, stopped := 0, 0, "", false, false
		err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
			// The closure may run again: it starts from after, which
			// changes only once Update has returned.
			seen, tried, last, full, stopped = 0, 0, "", false, false
			bytes := 0
			l := s.Limits()
			return tx.Scan(prefix, ScanOptions{After: after, KeysOnly: o.KeysOnly}, func(key string, value []byte) error {
				size := o.Writes * (len(subPrefix) + len(key) + len(value))
				if seen > 0 && (seen == limit || (l.MaxTxBytes > 0 && bytes+size > l.MaxTxBytes)) {
					full = true
					return StopScan
				}
				tried++
				err := fn(tx, key, value)
				if err == StopScan {
					stopped = true
				} else if err != nil {
					return err
				}
				seen++
				bytes += size
				last = key
				return err
			})
		})
		if errors.Is(err, ErrTxTooLarge) && tried > 1 {
			// tried <= limit: the batch shrinks at every refusal.
			if tried > seen {
				limit = seen // the writes for the keys before fitted
			} else {
				limit = tried / 2 // the commit was refused
			}
			continue
		}
		if err != nil {
			return total, err
		}
		total += seen
		if !full || stopped {
			return total, nil
		}
		after = last
	}
}

// batchKeys is how many keys one transaction of Batch may visit under l.
func batchKeys(l Limits, o BatchOptions) int {
	n := maxBatchKeys
	if l.MaxTxOps > 0 {
		n = min(n, l.MaxTxOps/o.Writes)
	}
	if l.MaxTxReads > 0 {
		// Each key visited is a read, and so is the scan itself, plus
		// the look-ahead of the key that ends a full batch.
		n = min(n, (l.MaxTxReads-2)/(1+o.Reads))
	}
	return max(n, 1)
}

// maxBatchKeys bounds a batch on a store without limits, so that one
// transaction never holds the whole of a large prefix.
const maxBatchKeys = 1000

// DeletePrefix deletes every key under prefix of s with Batch, in as many
// transactions as the store's limits require, and returns how many it
// deleted. Run again after an error or a crash, it deletes what is left.
func DeletePrefix(ctx context.Context, s Store, prefix string) (int, error) {
	return Batch(ctx, s, prefix, &BatchOptions{KeysOnly: true}, func(tx Tx, key string, _ []byte) error {
		return tx.Delete(key)
	})
}
