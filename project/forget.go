package project

import (
	"context"
	"maps"
	"slices"

	"github.com/keelhq/keel/storage"
)

// ForgetKind is the kind of object a Catalog deleted.
type ForgetKind uint8

// The objects whose deletion a registered service hears of.
const (
	ForgetWorkspace ForgetKind = iota + 1 // a workspace, by DeleteWorkspace
	ForgetProject                         // a project, by Delete
)

// Forgotten names an object the Catalog deletes: its kind, its
// organization and its id.
type Forgotten struct {
	Kind ForgetKind
	Org  string
	ID   string
}

// ForgetFunc deletes what a registered service keeps about an object the
// Catalog deletes (a policy set's attachment to a workspace or project).
// It runs inside the Catalog's transaction, with tx the service's view of
// it: the object and the service's references go together or not at all.
// It must not start a transaction, and it may run more than once, as any
// Update closure.
type ForgetFunc func(ctx context.Context, tx storage.Tx, f Forgotten) error

// OnForget makes the Catalog call fn in every transaction that deletes a
// workspace or a project, so that the service keeps no reference to it
// (policy.New sets it). A later call replaces fn; nil removes it.
func (r *Registration) OnForget(fn ForgetFunc) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.forget = fn
}

// forgetFunc tells the registered services that an object is deleted.
type forgetFunc func(Forgotten) error

// update runs fn in one Update of the Catalog's store; when services
// registered a ForgetFunc, the transaction spans their views too, and
// forget calls them in it (in the order of their views).
func (c *Catalog) update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, forget forgetFunc) error) error {
	c.mu.Lock()
	var hooks []*Registration
	fns := map[*Registration]ForgetFunc{}
	services := maps.Clone(c.services)
	for _, p := range slices.Sorted(maps.Keys(services)) {
		if r := services[p]; r.forget != nil {
			hooks = append(hooks, r)
			fns[r] = r.forget
		}
	}
	c.mu.Unlock()
	if len(hooks) == 0 {
		return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return fn(ctx, tx, func(Forgotten) error { return nil })
		})
	}
	_, cat := storage.Split(c.store)
	return hooks[0].base.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		forget := func(f Forgotten) error {
			for _, r := range hooks {
				if err := fns[r](ctx, storage.SubTx(tx, r.prefix), f); err != nil {
					return err
				}
			}
			return nil
		}
		return fn(ctx, storage.SubTx(tx, cat), forget)
	})
}
