package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// TidyResult counts what Tidy found and repaired.
type TidyResult struct {
	// Scanned is the number of lease records read.
	Scanned int
	// Reindexed counts leases whose expiry-index entry was missing and
	// has been written again.
	Reindexed int
	// IrrevocableReindexed counts irrevocable leases whose
	// irrevocable-index entry was missing or wrong and has been written
	// again.
	IrrevocableReindexed int
	// DanglingDue counts expiry-index entries removed: malformed, naming
	// no lease, or not the current entry of their lease.
	DanglingDue int
	// DanglingIrrevocable counts irrevocable-index entries removed:
	// naming no lease, or a lease that is not irrevocable.
	DanglingIrrevocable int
	// Orphaned counts live leases whose mount has no registered revoker,
	// queued for revocation (which fails until the mount is registered
	// again, so that they end up irrevocable and visible).
	Orphaned int
	// Corrupt counts lease records that cannot be decoded. Tidy leaves
	// them in place and logs their ids; RevokeForce removes them.
	Corrupt int
	// Skipped reports that another Tidy was running: this one did
	// nothing and succeeded, as Vault's does.
	Skipped bool
}

// Tidy repairs the lease storage, and needs keel.CapUpdate on
// "sys/leases/tidy". It reads every lease record, writes the index entries
// a lease lacks, and queues the revocation of live leases whose mount has
// no registered revoker; then it removes the index entries that dangle
// (see TidyResult). Vault's tidy revokes the leases whose token is gone;
// keel's leases belong to no token, so the dangling state Tidy looks for
// is that of its own indexes.
//
// Tidy works in batches of Limits().Batch, each read and repaired in one
// transaction, so that it never decides on stale data; an error stops it
// with the batches before done, and the counts up to there. It reads every
// key of the manager: use it sparingly. Only one Tidy runs at a time.
func (m *Manager) Tidy(ctx context.Context) (r TidyResult, err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Tidy", "sys/leases/tidy", nil)
	if err != nil {
		return TidyResult{}, err
	}
	if op != nil {
		defer func() { op.End(r, err) }()
	}
	return m.tidy(ctx)
}

func (m *Manager) tidy(ctx context.Context) (TidyResult, error) {
	if err := m.authorize(ctx, "tidy", keel.CapUpdate, "sys/leases/tidy"); err != nil {
		return TidyResult{}, err
	}
	if !m.tidying.CompareAndSwap(false, true) {
		m.log.Warn("tidy of leases already in progress")
		return TidyResult{Skipped: true}, nil
	}
	defer m.tidying.Store(false)
	defer m.Wake()
	var res TidyResult
	now := m.now()
	m.log.Info("tidy of leases started")
	for _, pass := range []struct {
		prefix string
		fn     func(tx storage.Tx, page []keyValue, res *TidyResult) ([]string, error)
	}{
		{idPrefix, func(tx storage.Tx, page []keyValue, res *TidyResult) ([]string, error) {
			return m.tidyRecords(tx, page, res, now)
		}},
		{duePrefix, tidyDue},
		{irrPrefix, tidyIrrevocable},
	} {
		after := ""
		for {
			var page []keyValue
			var got TidyResult
			var corrupt []string
			err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				var err error
				page, err = scanPage(tx, pass.prefix, after, m.batch)
				if err != nil {
					return err
				}
				got = TidyResult{}
				corrupt, err = pass.fn(tx, page, &got)
				return err
			})
			if err != nil {
				return res, fmt.Errorf("lease: tidy: %w", err)
			}
			for _, id := range corrupt {
				m.log.Error("tidy: undecodable lease record", "lease_id", id)
			}
			res.add(got)
			if len(page) < m.batch {
				break
			}
			after = page[len(page)-1].key
		}
	}
	m.log.Info("tidy of leases done", "scanned", res.Scanned, "reindexed", res.Reindexed,
		"irrevocable_reindexed", res.IrrevocableReindexed, "dangling_due", res.DanglingDue,
		"dangling_irrevocable", res.DanglingIrrevocable, "orphaned", res.Orphaned, "corrupt", res.Corrupt)
	return res, nil
}

func (r *TidyResult) add(o TidyResult) {
	r.Scanned += o.Scanned
	r.Reindexed += o.Reindexed
	r.IrrevocableReindexed += o.IrrevocableReindexed
	r.DanglingDue += o.DanglingDue
	r.DanglingIrrevocable += o.DanglingIrrevocable
	r.Orphaned += o.Orphaned
	r.Corrupt += o.Corrupt
}

// tidyRecords repairs the index entries of the leases of page, and
// returns the ids of the records it cannot decode.
func (m *Manager) tidyRecords(tx storage.Tx, page []keyValue, res *TidyResult, now time.Time) ([]string, error) {
	var corrupt []string
	for _, kv := range page {
		res.Scanned++
		id := idOf(kv.key)
		e, err := decodeEntry(id, kv.value)
		if err != nil {
			res.Corrupt++
			corrupt = append(corrupt, id)
			continue
		}
		due := dueKey(e.NextAttempt, id)
		switch _, err := tx.Get(due); {
		case errors.Is(err, storage.ErrNotFound):
			if err := tx.Put(due, emptyValue); err != nil {
				return nil, err
			}
			res.Reindexed++
		case err != nil:
			return nil, err
		}
		if e.Irrevocable {
			want := encodeIrr(e.Mount, e.LastError)
			got, err := tx.Get(irrKey(id))
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return nil, err
			}
			if err != nil || string(got) != string(want) {
				if err := tx.Put(irrKey(id), want); err != nil {
					return nil, err
				}
				res.IrrevocableReindexed++
			}
		}
		if _, _, ok := m.mountFor(id); !ok && e.ExpireTime.After(now) {
			if err := queueEntry(tx, &e, now); err != nil {
				return nil, err
			}
			res.Orphaned++
		}
	}
	return corrupt, nil
}

// tidyDue removes the expiry-index entries of page that dangle.
func tidyDue(tx storage.Tx, page []keyValue, res *TidyResult) ([]string, error) {
	for _, kv := range page {
		_, id, err := parseDueKey(kv.key)
		if err == nil {
			raw, err := tx.Get(idKey(id))
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return nil, err
			}
			if err == nil {
				e, err := decodeEntry(id, raw)
				if err != nil || dueKey(e.NextAttempt, id) == kv.key {
					continue // a corrupt record keeps its entry; Step drops it
				}
			}
		}
		if err := tx.Delete(kv.key); err != nil {
			return nil, err
		}
		res.DanglingDue++
	}
	return nil, nil
}

// tidyIrrevocable removes the irrevocable-index entries of page that
// dangle.
func tidyIrrevocable(tx storage.Tx, page []keyValue, res *TidyResult) ([]string, error) {
	for _, kv := range page {
		id := kv.key[len(irrPrefix):]
		raw, err := tx.Get(idKey(id))
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
		if err == nil {
			if e, err := decodeEntry(id, raw); err != nil || e.Irrevocable {
				continue
			}
		}
		if err := tx.Delete(kv.key); err != nil {
			return nil, err
		}
		res.DanglingIrrevocable++
	}
	return nil, nil
}
