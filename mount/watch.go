package mount

import (
	"context"
	"maps"
	"time"
)

// reconciler makes the table follow the stored one, changed by another
// table on the same store (another process on a shared etcd, or another
// Table of this one) until Close: the store's watch of the table's key
// signals each change.
func (t *Table) reconciler() {
	defer close(t.ended)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-t.done:
			return
		case <-t.changed:
		}
		err := t.reconcile(ctx)
		if err == nil || ctx.Err() != nil {
			continue // done, or closing
		}
		// Try again after a second, or at the next change.
		t.log.Error("mount: reading the table changed by another table", "error", err)
		timer := t.clock.NewTimer(time.Second)
		select {
		case <-t.done:
			timer.Stop()
			return
		case <-timer.C():
		case <-t.changed:
			timer.Stop()
		}
		t.signal()
	}
}

// signal tells the reconciler that the stored table may have changed.
func (t *Table) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// reconcile reads the stored table and brings the table's mounts in line
// with it: it drops the mounts that are gone (their workers stopped and
// their leases unregistered), stops serving those being disabled, builds
// the engines of new mounts and rebuilds those of tuned ones. Mounts this
// table changed itself are already in line and are left alone.
func (t *Table) reconcile(ctx context.Context) error {
	t.opMu.Lock()
	defer t.opMu.Unlock()
	if t.isClosed() {
		return nil
	}
	entries, err := t.readTable(ctx)
	if err != nil {
		return err
	}
	stored := make(map[string]Entry, len(entries))
	for _, e := range entries {
		stored[e.Path] = e
	}
	// Drop first: a new mount may be below or above one that is gone, and
	// the lease manager refuses overlapping mounts.
	for _, m := range t.list() {
		if e, ok := stored[m.Path]; !ok || e.UUID != m.UUID {
			t.drop(m)
		}
	}
	for _, e := range entries {
		t.mu.RLock()
		cur, ok := t.mounts[e.Path]
		t.mu.RUnlock()
		switch {
		case !ok:
			t.log.Info("mount enabled by another table", "path", e.Path, "type", e.Type)
			t.serve(t.open(e))
		case e.Disabling && !cur.Disabling:
			t.log.Info("mount being disabled by another table", "path", e.Path)
			stop(cur)
			marked := *cur
			marked.Disabling = true
			t.mu.Lock()
			t.mounts[e.Path] = &marked
			t.mu.Unlock()
		case !sameEntry(cur.Entry, e) && !e.Disabling:
			t.log.Info("mount tuned by another table", "path", e.Path)
			t.unbuild(cur)
			t.serve(t.open(e))
		}
	}
	return nil
}

// drop forgets m, removed from the stored table (or replaced by a mount
// of another UUID): its worker stops and its leases are unregistered.
func (t *Table) drop(m *Mount) {
	t.log.Info("mount disabled by another table", "path", m.Path)
	t.unbuild(m)
	t.mu.Lock()
	delete(t.mounts, m.Path)
	t.mu.Unlock()
}

// serve puts m in the table and starts its engine's work, unless the
// table is closed.
func (t *Table) serve(m *Mount) {
	t.mu.Lock()
	t.mounts[m.Path] = m
	closed := t.closed
	t.mu.Unlock()
	if !closed {
		start(m)
	}
}

func (t *Table) isClosed() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.closed
}

// sameEntry reports whether a and b are the same entry, as stored.
func sameEntry(a, b Entry) bool {
	return a.Path == b.Path && a.Type == b.Type && a.Description == b.Description && a.UUID == b.UUID &&
		a.Accessor == b.Accessor && maps.Equal(a.Options, b.Options) && a.DefaultTTL == b.DefaultTTL &&
		a.MaxTTL == b.MaxTTL && a.Disabling == b.Disabling && a.Data == b.Data
}
