// Package txbase holds what every leaf store's transaction shares: the
// context the closure receives, the checks of a finished transaction, of
// writes in a read-only one, of keys, values and transaction sizes, and the
// detection of nested transactions.
package txbase

import (
	"context"

	"github.com/keelhq/keel/storage"
)

type ownerKey struct{}

// Base is embedded by a store's transaction type. It is the context.Context
// given to the closure, carrying the store that owns the transaction.
type Base struct {
	context.Context
	owner    any
	limits   *storage.Limits
	writable bool
	done     bool
	ops      int
	bytes    int
	keys     []string // written, in order, repeats kept
	small    [4]string
}

// Init prepares b for a transaction of owner started with ctx. limits must
// not change while the transaction runs.
func (b *Base) Init(ctx context.Context, owner any, limits *storage.Limits, writable bool) {
	*b = Base{Context: ctx, owner: owner, limits: limits, writable: writable}
	b.keys = b.small[:0] // most transactions write a few keys: no allocation
}

// Value answers the owner for the key of nested-transaction detection and
// defers to the parent context otherwise.
func (b *Base) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return b.owner
	}
	return b.Context.Value(key)
}

// Begin returns the error that keeps a transaction of owner from starting
// with ctx: ctx's own error, or storage.ErrNestedTx when ctx comes from a
// running transaction of owner.
func Begin(ctx context.Context, owner any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if o := ctx.Value(ownerKey{}); o != nil && o == owner {
		return storage.ErrNestedTx
	}
	return nil
}

// Finish marks the transaction done: every later check fails with
// storage.ErrTxDone.
func (b *Base) Finish() { b.done = true }

// Writable reports whether the transaction may write.
func (b *Base) Writable() bool { return b.writable }

// Finished reports whether Finish was called.
func (b *Base) Finished() bool { return b.done }

// Writes reports how many Puts and Deletes passed CheckPut or CheckDelete.
func (b *Base) Writes() int { return b.ops }

// Written returns the keys of the Puts and Deletes that passed CheckPut or
// CheckDelete, for the store's Watchers.
func (b *Base) Written() []string { return b.keys }

// CheckRead returns storage.ErrTxDone after Finish, and the context's error
// once it is done.
func (b *Base) CheckRead() error {
	if b.done {
		return storage.ErrTxDone
	}
	return b.Context.Err()
}

// CheckPut checks a Put of value at key and counts it against the
// transaction's limits.
func (b *Base) CheckPut(key string, value []byte) error {
	if err := b.checkWrite(key); err != nil {
		return err
	}
	if err := b.limits.CheckValue(key, value); err != nil {
		return err
	}
	return b.count(key, len(key)+len(value))
}

// CheckDelete checks a Delete of key and counts it against the transaction's
// limits.
func (b *Base) CheckDelete(key string) error {
	if err := b.checkWrite(key); err != nil {
		return err
	}
	return b.count(key, len(key))
}

func (b *Base) checkWrite(key string) error {
	if err := b.CheckRead(); err != nil {
		return err
	}
	if !b.writable {
		return storage.ErrReadOnly
	}
	return b.limits.CheckKey(key)
}

func (b *Base) count(key string, n int) error {
	if b.limits.MaxTxOps > 0 && b.ops+1 > b.limits.MaxTxOps {
		return storage.ErrTxTooLarge
	}
	if b.limits.MaxTxBytes > 0 && b.bytes+n > b.limits.MaxTxBytes {
		return storage.ErrTxTooLarge
	}
	b.ops++
	b.bytes += n
	b.keys = append(b.keys, key)
	return nil
}

// ScanCheckEvery is how many visited keys a scan goes between checks of the
// context.
const ScanCheckEvery = 64
