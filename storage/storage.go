package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
)

// Store is a transactional, ordered key-value store. Keys are non-empty
// strings ordered byte-wise; values are byte slices.
//
// Implementations must be safe for concurrent use and must pass the
// conformance suite of package storagetest.
type Store interface {
	// View runs fn in a read-only transaction that sees one consistent
	// snapshot of the store. It returns fn's error, or an error of the
	// store.
	View(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Update runs fn in a read-write transaction. When fn returns nil
	// every write of fn is committed, durably for a durable store, before
	// Update returns; when fn returns an error, panics, or the commit
	// fails, none is. Update returns fn's error, or an error of the
	// store.
	//
	// fn may be called more than once (a store may retry it after a
	// conflict or to group writers): it must have no effect outside tx,
	// and must read through tx what it decides on.
	Update(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Limits states the store's limits; a write beyond one fails with an
	// error of kind keel.KindTooLarge and leaves the store as it was.
	Limits() Limits

	// Close releases the store. Transactions started afterwards fail with
	// ErrClosed. Close waits for running transactions to end; calling it
	// again returns nil.
	Close() error
}

// Tx is a transaction, valid only while the closure it was given to runs.
// Every method fails with ErrTxDone once that closure has returned. A Tx is
// not safe for concurrent use.
//
// The ctx given to the closure with the Tx carries the transaction: starting
// another transaction of the same store with it fails with ErrNestedTx
// instead of deadlocking. Name it ctx, so that it shadows the outer one.
type Tx interface {
	// Get returns a copy of the value at key, or an error that wraps
	// ErrNotFound (and so keel.KindNotFound) when there is none.
	Get(key string) ([]byte, error)

	// Put stores a copy of value at key. It fails with ErrReadOnly in a
	// View, and with a classified error for an empty key or a limit.
	Put(key string, value []byte) error

	// Delete removes key. Deleting a missing key is not an error.
	Delete(key string) error

	// Scan calls fn, in ascending key order, for every key that starts
	// with prefix, is not less than opts.From and sorts after opts.After.
	// fn gets a copy of the
	// value (nil with opts.KeysOnly). Scan stops at the first error of
	// fn and returns it, except StopScan, which stops and returns nil.
	// A scan inside Update sees the transaction's own writes, and fn may
	// write through the same Tx; whether those writes are visited by the
	// scan in progress is unspecified.
	Scan(prefix string, opts ScanOptions, fn func(key string, value []byte) error) error
}

// ScanOptions refine a Scan. The zero value visits every key of the prefix.
type ScanOptions struct {
	// After, when not empty, starts the scan at the first key greater than
	// After; it is the last key of the previous page.
	After string
	// From, when not empty, starts the scan at the first key greater than
	// or equal to From; it lets a caller seek past a whole range of keys.
	// With After too, the later start wins.
	From string
	// KeysOnly passes nil values to fn, which saves copying them.
	KeysOnly bool
}

// StopScan may be returned by a Scan callback to end the scan early without
// an error.
//
//lint:ignore ST1012 a signal, not a failure: named like fs.SkipAll
var StopScan = errors.New("stop scan")

// Limits are the sizes a store accepts. A zero field means no limit.
type Limits struct {
	MaxKeySize   int // bytes in a key
	MaxValueSize int // bytes in a value
	MaxTxOps     int // Puts and Deletes in one transaction
	MaxTxBytes   int // key and value bytes written in one transaction
	// MaxTxReads bounds what an Update that writes may read: each key
	// read by Get (found or not) or visited by a Scan counts one, however
	// often it is read, and each Scan counts one more. An Update that
	// wrote and read more fails at commit with ErrTxTooLarge and writes
	// nothing. An Update that wrote nothing, and a View, are not bounded.
	MaxTxReads int
}

// DefaultLimits returns the limits of the memory and bbolt stores: keys up
// to 4 KiB, values up to 32 MiB, up to 256 MiB written by one transaction.
func DefaultLimits() Limits {
	return Limits{
		MaxKeySize:   4 << 10,
		MaxValueSize: 32 << 20,
		MaxTxBytes:   256 << 20,
	}
}

// The errors of stores. Each wraps a keel kind, so callers test them with
// errors.Is on either the storage error or the kind.
var (
	// ErrNotFound: no value at the key (keel.KindNotFound).
	ErrNotFound = fmt.Errorf("storage: key not found: %w", keel.KindNotFound)
	// ErrEmptyKey: a key must not be empty (keel.KindInvalid).
	ErrEmptyKey = fmt.Errorf("storage: empty key: %w", keel.KindInvalid)
	// ErrKeyTooLarge: the key exceeds Limits.MaxKeySize (keel.KindTooLarge).
	ErrKeyTooLarge = fmt.Errorf("storage: key too large: %w", keel.KindTooLarge)
	// ErrValueTooLarge: the value exceeds Limits.MaxValueSize (keel.KindTooLarge).
	ErrValueTooLarge = fmt.Errorf("storage: value too large: %w", keel.KindTooLarge)
	// ErrTxTooLarge: the transaction exceeds Limits.MaxTxOps,
	// MaxTxBytes or MaxTxReads (keel.KindTooLarge).
	ErrTxTooLarge = fmt.Errorf("storage: transaction too large: %w", keel.KindTooLarge)
	// ErrReadOnly: a write in a View (keel.KindInternal).
	ErrReadOnly = fmt.Errorf("storage: write in a read-only transaction: %w", keel.KindInternal)
	// ErrTxDone: a Tx used after its closure returned (keel.KindInternal).
	ErrTxDone = fmt.Errorf("storage: transaction used after its closure returned: %w", keel.KindInternal)
	// ErrNestedTx: a transaction started with the ctx of a running
	// transaction of the same store (keel.KindInternal).
	ErrNestedTx = fmt.Errorf("storage: transaction started inside another transaction of the same store: %w", keel.KindInternal)
	// ErrClosed: the store is closed (keel.KindUnavailable).
	ErrClosed = fmt.Errorf("storage: store is closed: %w", keel.KindUnavailable)
)

// CheckKey returns ErrEmptyKey or ErrKeyTooLarge (with the key's size) when
// key breaks l.
func (l Limits) CheckKey(key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	if l.MaxKeySize > 0 && len(key) > l.MaxKeySize {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrKeyTooLarge, len(key), l.MaxKeySize)
	}
	return nil
}

// CheckValue returns ErrValueTooLarge (with the sizes) when value breaks l.
func (l Limits) CheckValue(key string, value []byte) error {
	if l.MaxValueSize > 0 && len(value) > l.MaxValueSize {
		return fmt.Errorf("%w: %q holds %d bytes, at most %d", ErrValueTooLarge, key, len(value), l.MaxValueSize)
	}
	return nil
}
