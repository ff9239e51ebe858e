package storage

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/keelhq/keel"
)

// Joint is two views of one store that a single transaction writes
// together: a domain's own records and another domain's (a secrets
// engine's account and the lease that lends it). Create one with Join. A
// Joint is safe for concurrent use.
type Joint struct {
	base   Store
	pa, pb string
	guards []guard // of both views (see Guard), a's first
	na     int     // how many of guards are a's
}

// Join returns the Joint of a and b. a and b must be views of one store
// (the store itself, or Sub views of it, at any depth) under prefixes that
// do not overlap, so that a transaction of that store holds both and
// neither view writes the other's keys. Otherwise Join fails with an error
// of kind keel.KindInvalid naming both prefixes: two stores, a sealed and
// an unsealed view of one store, or views one inside the other.
func Join(a, b Store) (*Joint, error) {
	ba, pa, ga := split(a)
	bb, pb, gb := split(b)
	if !sameStore(ba, bb) {
		return nil, fmt.Errorf("storage: join %q and %q: %w", pa, pb, keel.Invalid("", "the two views are not of one store (a different store, or one sealed and one not)"))
	}
	if strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa) {
		return nil, fmt.Errorf("storage: join %q and %q: %w", pa, pb, keel.Invalid("", "the two views overlap: one would write the other's keys"))
	}
	return &Joint{base: ba, pa: pa, pb: pb, guards: append(ga[:len(ga):len(ga)], gb...), na: len(ga)}, nil
}

// Update runs fn in one Update of the store under the Joint's views, with
// ta the first view's and tb the second view's part of its transaction:
// the writes through both commit together, or none does. The guards of
// both views are checked first (see Guard).
func (j *Joint) Update(ctx context.Context, fn func(ctx context.Context, ta, tb Tx) error) error {
	return j.base.Update(ctx, func(ctx context.Context, tx Tx) error {
		if err := checkGuards(tx, j.guards); err != nil {
			return err
		}
		return fn(ctx, SubTx(tx, j.pa), SubTx(tx, j.pb))
	})
}

// Holds reports whether s is the first view the Joint was made of (Join's
// a): a view of the same store under the same prefix, with the same
// guards.
func (j *Joint) Holds(s Store) bool {
	base, prefix, guards := split(s)
	if !sameStore(base, j.base) || prefix != j.pa || len(guards) != j.na {
		return false
	}
	for i, g := range guards {
		if j.guards[i].key != g.key {
			return false
		}
	}
	return true
}

// Split returns the store under s and the prefix of s in it: s and "" when
// s is not a Sub view. The guards of s (see Guard) do not hold on base.
func Split(s Store) (base Store, prefix string) {
	base, prefix, _ = split(s)
	return base, prefix
}

// sameStore reports whether a and b are the same store, without panicking
// on stores of types that cannot be compared.
func sameStore(a, b Store) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}
