package storage

import (
	"context"
)

// Sub returns a view of s confined to the keys that start with prefix: keys
// given to the view are stored as prefix+key, and scans never see keys
// outside the prefix. Domains use it to keep out of each other's keys
// ("kv/secret/", "lease/"). By convention prefix ends with "/"; an empty
// prefix returns s itself.
//
// Closing the view does nothing; close s itself.
func Sub(s Store, prefix string) Store {
	if prefix == "" {
		return s
	}
	if inner, ok := s.(*subStore); ok {
		return &subStore{inner: inner.inner, prefix: inner.prefix + prefix, guards: inner.guards}
	}
	return &subStore{inner: s, prefix: prefix}
}

type subStore struct {
	inner  Store
	prefix string
	guards []guard // checked first by every transaction (see Guard)
}

func (s *subStore) View(ctx context.Context, fn func(context.Context, Tx) error) error {
	return s.inner.View(ctx, func(ctx context.Context, tx Tx) error {
		if err := checkGuards(tx, s.guards); err != nil {
			return err
		}
		return fn(ctx, &subTx{tx: tx, prefix: s.prefix})
	})
}

func (s *subStore) Update(ctx context.Context, fn func(context.Context, Tx) error) error {
	return s.inner.Update(ctx, func(ctx context.Context, tx Tx) error {
		if err := checkGuards(tx, s.guards); err != nil {
			return err
		}
		return fn(ctx, &subTx{tx: tx, prefix: s.prefix})
	})
}

// Limits are those of the underlying store, less the prefix in key size
// and the guards' reads.
func (s *subStore) Limits() Limits {
	l := s.inner.Limits()
	if l.MaxKeySize > 0 {
		l.MaxKeySize -= len(s.prefix)
	}
	if l.MaxTxReads > 0 {
		l.MaxTxReads = max(1, l.MaxTxReads-len(s.guards))
	}
	return l
}

func (s *subStore) Close() error { return nil }

type subTx struct {
	tx     Tx
	prefix string
}

func (t *subTx) Get(key string) ([]byte, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	return t.tx.Get(t.prefix + key)
}

// Size tells the size of key's value when the underlying transaction can
// (Sizer).
func (t *subTx) Size(key string) (int, error) {
	if key == "" {
		return 0, ErrEmptyKey
	}
	return SizeOf(t.tx, t.prefix+key)
}

func (t *subTx) Put(key string, value []byte) error {
	if key == "" {
		return ErrEmptyKey
	}
	return t.tx.Put(t.prefix+key, value)
}

func (t *subTx) Delete(key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	return t.tx.Delete(t.prefix + key)
}

func (t *subTx) Scan(prefix string, opts ScanOptions, fn func(string, []byte) error) error {
	if opts.After != "" {
		opts.After = t.prefix + opts.After
	}
	if opts.From != "" {
		opts.From = t.prefix + opts.From
	}
	return t.tx.Scan(t.prefix+prefix, opts, func(key string, value []byte) error {
		// The inner Scan gives only keys that start with the prefix: cut
		// it off without comparing it again.
		if len(key) <= len(t.prefix) {
			return nil // the prefix itself would be the empty key of the view
		}
		return fn(key[len(t.prefix):], value)
	})
}

// SubTx returns a view of tx confined to the keys that start with prefix,
// as Sub does for a store. A package that keeps its keys under a prefix of
// a store uses it to join a transaction its caller started on that store.
// An empty prefix returns tx itself.
func SubTx(tx Tx, prefix string) Tx {
	if prefix == "" {
		return tx
	}
	if inner, ok := tx.(*subTx); ok {
		return &subTx{tx: inner.tx, prefix: inner.prefix + prefix}
	}
	return &subTx{tx: tx, prefix: prefix}
}
