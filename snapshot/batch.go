package snapshot

import (
	"context"
	"errors"

	"github.com/keelhq/keel/storage"
)

// The bounds of one batch on a store whose Limits set none: maxBatchKeys
// is storage.Batch's, and maxBatchBytes bounds the memory a batch holds.
// A record larger than maxBatchBytes is written alone.
const (
	maxBatchKeys  = 1000
	maxBatchBytes = 8 << 20
)

type record struct {
	key   string
	value []byte
}

// batcher writes records to a store in Updates of blind Puts sized from
// its Limits, as storage.Batch sizes them: as many keys as MaxTxOps allows
// and as many bytes (the prefix of a Sub view included) as MaxTxBytes
// does. A batch the store refuses with storage.ErrTxTooLarge all the same
// (sealstore counts its overhead) is written again in two halves.
type batcher struct {
	store     storage.Store
	maxKeys   int
	maxBytes  int
	subPrefix int
	recs      []record
	bytes     int
	// committed is called after each commit with the records it wrote
	// and their key and value bytes.
	committed func(n int, bytes int64) error
}

func newBatcher(store storage.Store) *batcher {
	l := store.Limits()
	b := &batcher{store: store, maxKeys: maxBatchKeys, maxBytes: maxBatchBytes}
	if l.MaxTxOps > 0 {
		b.maxKeys = min(b.maxKeys, l.MaxTxOps)
	}
	if l.MaxTxBytes > 0 {
		b.maxBytes = min(b.maxBytes, l.MaxTxBytes)
	}
	_, sub := storage.Split(store)
	b.subPrefix = len(sub)
	return b
}

// full reports whether a record of key and value bytes would not fit the
// batch.
func (b *batcher) full(key string, value []byte) bool {
	size := b.subPrefix + len(key) + len(value)
	return len(b.recs) > 0 && (len(b.recs) >= b.maxKeys || b.bytes+size > b.maxBytes)
}

// add adds a record, writing the batch first when it would not fit.
func (b *batcher) add(ctx context.Context, key string, value []byte) error {
	if b.full(key, value) {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	b.recs = append(b.recs, record{key, value})
	b.bytes += b.subPrefix + len(key) + len(value)
	return nil
}

// flush writes the records held.
func (b *batcher) flush(ctx context.Context) error {
	if len(b.recs) == 0 {
		return nil
	}
	err := b.write(ctx, b.recs)
	b.recs, b.bytes = b.recs[:0], 0
	return err
}

func (b *batcher) write(ctx context.Context, recs []record) error {
	err := b.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, r := range recs {
			if err := tx.Put(r.key, r.value); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, storage.ErrTxTooLarge) && len(recs) > 1 {
		half := len(recs) / 2
		if err := b.write(ctx, recs[:half]); err != nil {
			return err
		}
		return b.write(ctx, recs[half:])
	}
	if err != nil {
		return err
	}
	if b.committed != nil {
		var n int64
		for _, r := range recs {
			n += int64(len(r.key) + len(r.value))
		}
		return b.committed(len(recs), n)
	}
	return nil
}
