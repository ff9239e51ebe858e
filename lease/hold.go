package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// holdKey, present, holds the revocations of every Manager of the store.
const holdKey = "hold"

// Hold stops the worker's revocations of due leases, in every Manager of
// the store (every process of a shared one), until Release: due leases
// are kept, Get reports them Held, and Step revokes nothing. It is meant
// for a store restored from a copy, whose leases may have passed their
// time while their credentials are still in use. Revocations asked for
// by a caller (Revoke, RevokePrefix, RevokeForce) still run. Hold needs
// keel.CapSudo on "sys/leases/hold"; holding a held store changes nothing.
func (m *Manager) Hold(ctx context.Context) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Hold", "sys/leases/hold", nil)
	if err != nil {
		return err
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.hold(ctx)
}

func (m *Manager) hold(ctx context.Context) error {
	if err := m.authorize(ctx, "hold", keel.CapSudo, "sys/leases/hold"); err != nil {
		return err
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(holdKey, []byte{1})
	})
	if err != nil {
		return fmt.Errorf("lease: hold: %w", err)
	}
	m.log.Warn("lease revocations held: due leases are kept until Release")
	return nil
}

// Release ends Hold, in every Manager of the store, and this Manager's
// Options.Held; the worker then revokes what is due (this process's at
// once, another's within Options.RetryBase). It needs keel.CapSudo on
// "sys/leases/hold"; releasing a store that is not held changes nothing.
func (m *Manager) Release(ctx context.Context) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Release", "sys/leases/hold", nil)
	if err != nil {
		return err
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.release(ctx)
}

func (m *Manager) release(ctx context.Context) error {
	if err := m.authorize(ctx, "release", keel.CapSudo, "sys/leases/hold"); err != nil {
		return err
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(holdKey)
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("lease: release: %w", err)
	}
	m.heldHere.Store(false)
	m.log.Info("lease revocations released")
	m.Wake()
	return nil
}

// Held reports whether the worker's revocations are held (Hold, or this
// Manager's Options.Held). It needs keel.CapRead on "sys/leases/hold".
func (m *Manager) Held(ctx context.Context) (bool, error) {
	if err := m.authorize(ctx, "held", keel.CapRead, "sys/leases/hold"); err != nil {
		return false, err
	}
	var held bool
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		held, err = m.held(tx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("lease: held: %w", err)
	}
	return held, nil
}

// held reports whether revocations are held, as tx sees the store.
func (m *Manager) held(tx storage.Tx) (bool, error) {
	if m.heldHere.Load() {
		return true, nil
	}
	_, err := tx.Get(holdKey)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
