package storage

import (
	"fmt"

	"github.com/keelhq/keel"
)

// Guard returns a view of s that lives as long as the key of s does:
// every View and Update of the view, and of the views made from it by Sub
// and Join, first reads key in the transaction it runs, and fails without
// calling its closure when key is missing, with an error of kind
// keel.KindNotFound whose text is gone. Deleting key thus ends the view
// in every process at the commit that deletes it: on a shared store a
// transaction that read key conflicts with that commit, and runs again.
//
// A guard is how an object that owns a part of a store (a mount and its
// engine's data) keeps a stale handle, held by another process or kept
// across a removal, from writing into that part after the object is gone.
// Each guard costs one read per transaction, counted in Limits.MaxTxReads.
func Guard(s Store, key, gone string) Store {
	inner, prefix, guards := split(s)
	guards = append(guards[:len(guards):len(guards)], guard{key: prefix + key, gone: gone})
	return &subStore{inner: inner, prefix: prefix, guards: guards}
}

// guard is a key that must exist for a view's transactions to run.
type guard struct {
	key  string // in the store under the view
	gone string // the error's text when it is missing
}

// checkGuards fails when the key of a guard is missing from tx.
func checkGuards(tx Tx, guards []guard) error {
	for _, g := range guards {
		// Has reads the key without copying its value where tx can.
		if found, err := Has(tx, g.key); err != nil {
			return err
		} else if !found {
			return fmt.Errorf("%s: %w", g.gone, keel.KindNotFound)
		}
	}
	return nil
}

// split returns the store under s, the prefix of s in it and its guards.
func split(s Store) (base Store, prefix string, guards []guard) {
	if sub, ok := s.(*subStore); ok {
		return sub.inner, sub.prefix, sub.guards
	}
	return s, "", nil
}
