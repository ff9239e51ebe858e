package storage

import (
	"context"
	"errors"

	"github.com/keelhq/keel"
)

// Sizer is implemented by the transactions of a store that can tell the
// size of a value without loading it (memstore, boltstore, and the views
// and wrappers over them). Size returns the length of the value Get would
// return, or ErrNotFound; it counts as a read of key. A wrapper whose underlying store cannot tell
// returns errors.ErrUnsupported.
type Sizer interface {
	Size(key string) (int, error)
}

// SizeOf returns the size of key's value when tx can tell it without
// loading the value (Sizer), else errors.ErrUnsupported. Wrappers of Tx
// implement Size with it.
func SizeOf(tx Tx, key string) (int, error) {
	s, ok := tx.(Sizer)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	return s.Size(key)
}

// Has reports whether key holds a value, without loading it when tx can
// tell sizes (Sizer).
func Has(tx Tx, key string) (bool, error) {
	_, err := SizeOf(tx, key)
	if errors.Is(err, errors.ErrUnsupported) {
		_, err = tx.Get(key)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// sizeOf is SizeOf with ok false when tx cannot tell.
func sizeOf(tx Tx, key string) (n int, ok bool, err error) {
	n, err = SizeOf(tx, key)
	if errors.Is(err, errors.ErrUnsupported) {
		return 0, false, nil
	}
	return n, err == nil || errors.Is(err, ErrNotFound), err
}

// A Loader loads values within the memory reservation of the request its
// read runs for (keel.Reserver); Reserving gives one to its read.
type Loader struct {
	reserve keel.Reserver
	copies  int64
	held    int64 // reserved by earlier runs of read
	used    int64 // the large values of this run, loaded or to be
}

// unreserved is the Loader of a context without a Reserver: its Get is
// tx.Get, and it is never written.
var unreserved Loader

// errReserve ends a run of Reserving's read that needs a reservation first.
var errReserve = errors.New("storage: a large value is to be reserved first")

// Get returns the value of key, as tx.Get does. Without a Reserver in the
// context Reserving was called with, that is all. With one, a value of
// keel.LargeValue bytes or more that the reservation does not cover yet is
// not loaded when tx can tell its size (Sizer): Get returns an error that
// read must return (wrapped or not), and Reserving reserves for the value
// and runs read again. From a store that cannot tell
// sizes the value is loaded, and Reserving reserves for it before it
// returns.
func (l *Loader) Get(tx Tx, key string) ([]byte, error) {
	if l.reserve == nil {
		return tx.Get(key)
	}
	n, ok, err := sizeOf(tx, key)
	if err != nil {
		return nil, err
	}
	if ok && n >= keel.LargeValue {
		if l.used += l.copies * int64(n); l.used > l.held {
			return nil, errReserve
		}
	}
	v, err := tx.Get(key)
	if !ok && len(v) >= keel.LargeValue {
		l.used += l.copies * int64(len(v))
	}
	return v, err
}

// Reserving runs read, which reads in a transaction of its own (a View, or
// a joined one) through ld, the Loader of the values that may be large.
// copies is how many copies of such a value the operation holds at once: 1
// when it returns the bytes loaded, 2 when it also returns them decoded.
// When read asks ld for a value the request's reservation does not cover,
// Reserving reserves copies times its size (keel.ReserverFrom(ctx)), in one
// call, outside any transaction, and runs read again: read must give its
// results only through variables it sets anew on each run. It returns
// read's error, or the Reserver's.
func Reserving(ctx context.Context, copies int, read func(ld *Loader) error) error {
	reserve := keel.ReserverFrom(ctx)
	if reserve == nil {
		return read(&unreserved) // the common case costs no Loader
	}
	ld := &Loader{reserve: reserve, copies: int64(max(copies, 1))}
	for {
		ld.used = 0
		err := read(ld)
		if err != nil && !errors.Is(err, errReserve) {
			return err
		}
		if ld.used <= ld.held {
			return err // nil, or errReserve from a read that did not wait for Get's answer
		}
		if err := ld.reserve(ctx, ld.used-ld.held); err != nil {
			return err
		}
		ld.held = ld.used
		if err == nil {
			return nil // loaded from a store that cannot tell sizes
		}
	}
}
