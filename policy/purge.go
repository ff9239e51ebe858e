package policy

import (
	"context"

	"github.com/keelhq/keel/storage"
)

// purge deletes every key of the organization org: the project.PurgeFunc
// New registers with the catalog. It runs once the organization reads as
// not found, so that nothing adds to what it deletes, and it is resumable:
// each step visits what is still there.
//
//  1. the sets of org, found through orgset/<org>/: for each, its edges
//     (to policies, workspaces, projects and excluded workspaces, both
//     sides), then the name index setname/<org>/, then the set's record
//     with its orgset key, so that a set whose record is gone has no edge
//     left;
//  2. the policies of org, found through ix/<org>/: the record, the code
//     and the index key together (their edges went with the sets: a set
//     and its members are of one organization);
//  3. count/<org>.
func (s *Service) purge(ctx context.Context, org string, store storage.Store) error {
	if err := indexSets(ctx, store); err != nil {
		return err
	}
	var sets []string
	err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		sets, err = keysUnder(tx, orgSets(org))
		return err
	})
	if err != nil {
		return err
	}
	for _, set := range sets {
		for _, m := range setMembers {
			prefix := m.setSide(set)
			_, err := storage.Batch(ctx, store, prefix, &storage.BatchOptions{Writes: 2, KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
				if err := tx.Delete(m.memberSide(key[len(prefix):]) + set); err != nil {
					return err
				}
				return tx.Delete(key)
			})
			if err != nil {
				return err
			}
		}
	}
	if _, err := storage.DeletePrefix(ctx, store, setNames(org)); err != nil {
		return err
	}
	_, err = storage.Batch(ctx, store, orgSets(org), &storage.BatchOptions{Writes: 2, KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
		if set := key[len(orgSets(org)):]; validID(set) {
			if err := tx.Delete(setKey(set)); err != nil {
				return err
			}
		}
		return tx.Delete(key)
	})
	if err != nil {
		return err
	}
	_, err = storage.Batch(ctx, store, nameIx(org), &storage.BatchOptions{Writes: 3}, func(tx storage.Tx, key string, value []byte) error {
		if id := string(value); validID(id) {
			if err := tx.Delete(polKey(id)); err != nil {
				return err
			}
			if err := tx.Delete(codeKey(id)); err != nil {
				return err
			}
		}
		return tx.Delete(key)
	})
	if err != nil {
		return err
	}
	return store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(countKey(org))
	})
}

// setsIndexed marks a store whose every set has its orgset and setname
// keys: sets created before these keys existed get them from indexSets,
// once. (A store marked "v/orgset" only, by an earlier version, is
// indexed again.)
const setsIndexed = "v/setname"

// indexSets gives every set of store its orgset key, and its setname key
// when the name is free in its organization, unless setsIndexed says it
// is done, then writes setsIndexed. It is resumable, and safe to run
// beside CreateSet, which writes the same keys.
func indexSets(ctx context.Context, store storage.Store) error {
	done := false
	err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get(setsIndexed)
		done = err == nil
		if isNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil || done {
		return err
	}
	_, err = storage.Batch(ctx, store, "set/", &storage.BatchOptions{Writes: 2, Reads: 1}, func(tx storage.Tx, key string, value []byte) error {
		var rec setRecord
		if err := decode(value, &rec); err != nil || !validID(rec.Org) || rec.ID != key[len("set/"):] {
			return nil // no organization to file it under: GetSet reports it corrupt
		}
		if err := tx.Put(orgSets(rec.Org)+rec.ID, nil); err != nil {
			return err
		}
		name := setNames(rec.Org) + fold(rec.Name)
		if _, err := tx.Get(name); !isNotFound(err) {
			return err // taken (two sets of one name, from before names were unique), or a failure
		}
		return tx.Put(name, []byte(rec.ID))
	})
	if err != nil {
		return err
	}
	return store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(setsIndexed, nil)
	})
}
