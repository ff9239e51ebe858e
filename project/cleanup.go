package project

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// The access keys of a deleted team or project (ix/<org>/access/<prj>/<team>)
// are deleted after the transaction that deletes it, in as many
// transactions as the store's limits require: a team may have access to
// any number of projects, and a project give access to any number of
// teams, more than one transaction of etcd holds.
//
//  1. The deleting transaction deletes the record and its name, and writes
//     the pending cleanup cleanup/team/<id> or cleanup/prj/<id>, whose
//     value is the organization. From then on the team or project reads as
//     not found, and no access to it can be given (setTeamAccess reads
//     both records).
//  2. The access keys are deleted with storage.Batch; a team's also lower
//     the team counts of their projects.
//  3. One transaction deletes the pending cleanup.
//
// A cleanup stopped between 1 and 3 (an error, a crash) is finished by
// FinishDeletions. Until then, ListTeamAccesses and GetTeamAccess leave out the
// access of a team being cleaned up, and a project's TeamCount still counts
// it.

const cleanupPrefix = "cleanup/"

// The kinds of cleanups, the second segment of their keys.
const (
	cleanupTeam    = "team"
	cleanupProject = "prj"
)

func cleanupKey(kind, id string) string { return cleanupPrefix + kind + "/" + id }

// teamCleanups is the prefix of the pending cleanups of teams.
const teamCleanups = cleanupPrefix + cleanupTeam + "/"

// finishCleanup deletes the access keys left by the team or project id
// (kind cleanupTeam or cleanupProject) of org, then its pending cleanup.
// Run again, it deletes what is left.
func (c *Catalog) finishCleanup(ctx context.Context, kind, org, id string) error {
	var err error
	switch kind {
	case cleanupProject:
		_, err = storage.DeletePrefix(ctx, c.store, prjAccess(org, id))
	case cleanupTeam:
		prefix := orgIx(org) + "access/"
		_, err = storage.Batch(ctx, c.store, prefix, &storage.BatchOptions{Writes: 2, Reads: 1, KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
			prj, team, ok := strings.Cut(key[len(prefix):], "/")
			if !ok || team != id {
				return nil
			}
			p, err := getProject(tx, prj)
			switch {
			case err == nil:
				p.TeamCount--
				if err := putJSON(tx, prjKey(p.ID), p); err != nil {
					return err
				}
			case !errors.Is(err, keel.KindNotFound): // a project deleted meanwhile: its own cleanup
				return err
			}
			return tx.Delete(key)
		})
	default:
		err = fmt.Errorf("unknown kind %q: %w", kind, keel.KindInternal)
	}
	if err == nil {
		err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.Delete(cleanupKey(kind, id))
		})
	}
	if err != nil {
		return errPrefix.Wrapf(err, "access of the deleted %s %q", map[string]string{cleanupTeam: "team", cleanupProject: "project"}[kind], id)
	}
	return nil
}

// finishCleanups finishes every pending cleanup.
func (c *Catalog) finishCleanups(ctx context.Context) error {
	type pending struct{ kind, org, id string }
	var all []pending
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		all = all[:0]
		return tx.Scan(cleanupPrefix, storage.ScanOptions{}, func(key string, v []byte) error {
			kind, id, ok := strings.Cut(key[len(cleanupPrefix):], "/")
			if !ok {
				return fmt.Errorf("pending cleanup %q: malformed key: %w", key, keel.KindInternal)
			}
			all = append(all, pending{kind, string(v), id})
			return nil
		})
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range all {
		if !validID(p.org) {
			errs = append(errs, fmt.Errorf("pending cleanup of %s %q: organization %q: %w", p.kind, p.id, p.org, keel.KindInternal))
			continue
		}
		errs = append(errs, c.finishCleanup(ctx, p.kind, p.org, p.id))
	}
	return errors.Join(errs...)
}

// teamsCleanedUp returns the ids of the teams whose cleanup is pending, in
// tx: their access is left out of reads.
func teamsCleanedUp(tx storage.Tx) (map[string]bool, error) {
	var out map[string]bool
	err := tx.Scan(teamCleanups, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
		if out == nil {
			out = map[string]bool{}
		}
		out[key[len(teamCleanups):]] = true
		return nil
	})
	return out, err
}
