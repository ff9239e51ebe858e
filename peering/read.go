package peering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// QueryOptions drive a blocking read: the call returns as soon as the
// index of its result is above MinIndex, or when WaitTime has passed.
// The zero value reads at once.
type QueryOptions struct {
	// MinIndex is the index the caller already has; 0 does not block.
	MinIndex uint64
	// WaitTime bounds the wait. Zero: DefaultWait; above MaxWait: MaxWait.
	WaitTime time.Duration
	// Partition must be empty or DefaultPartition.
	Partition string
}

// List is the result of List.
type List struct {
	// Peerings are the peerings the caller may read, by name; never nil.
	Peerings []*Peering
	// Index is the index of the whole set of peerings; at least 1.
	Index uint64
	// Filtered says that the caller's rights left peerings out.
	Filtered bool
}

func checkQuery(q *QueryOptions) (QueryOptions, error) {
	var o QueryOptions
	if q != nil {
		o = *q
	}
	var v keel.Validation
	checkPartition(&v, o.Partition)
	if o.WaitTime < 0 {
		v.Add("WaitTime", "must not be negative")
	}
	if o.WaitTime == 0 {
		o.WaitTime = DefaultWait
	}
	o.WaitTime = min(o.WaitTime, MaxWait)
	return o, v.Err()
}

// block runs read until the index it returns is above q.MinIndex, or the
// wait ends, or ctx ends (its error is returned). It is woken by this
// Service's commits, and by the store's watch of the index (storage.Watch)
// for the commits of other processes on a shared store.
func (s *Service) block(ctx context.Context, q QueryOptions, read func() (uint64, error)) error {
	var timer keel.Timer
	var stopWatch func()
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if stopWatch != nil {
			stopWatch()
		}
	}()
	var expired <-chan time.Time
	remote := make(chan struct{}, 1)
	for {
		ch := s.watch()
		idx, err := read()
		if err != nil && !errors.Is(err, keel.ErrNotFound) {
			return err
		}
		if q.MinIndex == 0 || idx > q.MinIndex {
			return err
		}
		if stopWatch == nil {
			// Watch, then read again: a change between the read and the
			// watch is seen by that read.
			stop, err := storage.Watch(ctx, s.store, indexKey, func(string) {
				select {
				case remote <- struct{}{}:
				default:
				}
			})
			if err != nil {
				// In-process signals and the wait's end still answer.
				s.log.Warn("peering: blocking read without the store's watch", "error", err)
				stop = func() {}
			}
			stopWatch = stop
			continue
		}
		if timer == nil {
			timer = s.clock.NewTimer(q.WaitTime)
			expired = timer.C()
		}
		select {
		case <-ch:
		case <-remote:
		case <-expired:
			_, err := read()
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Read returns the peering named name and its index (its ModifyIndex, or
// the index of all peerings when it does not exist). It needs
// peering:read on "peering/<name>". A missing peering gives
// keel.ErrNotFound with the index. With q.MinIndex, it blocks as
// QueryOptions says.
func (s *Service) Read(ctx context.Context, name string, q *QueryOptions) (*Peering, uint64, error) {
	if err := keel.Authorize(ctx, s.authz, keel.CapPeeringRead, resource(name)); err != nil {
		return nil, 0, err
	}
	o, err := checkQuery(q)
	if err != nil {
		return nil, 0, err
	}
	var p *Peering
	var idx uint64
	err = s.block(ctx, o, func() (uint64, error) {
		p, idx = nil, 0
		err := s.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
			r, err := getByName(tx, name)
			if err != nil {
				if idx, err = currentIndex(tx); err != nil {
					return err
				}
				return fmt.Errorf("peering %q: %w", name, keel.ErrNotFound)
			}
			p, idx = r.peering(), r.ModifyIndex
			return nil
		})
		return idx, err
	})
	if p == nil && err == nil {
		err = fmt.Errorf("peering %q: %w", name, keel.ErrNotFound)
	}
	return p, max(idx, 1), err
}

// List returns the peerings the caller may read (peering:read on
// "peering/<name>" of each), and whether others were left out. With
// q.MinIndex, it blocks as QueryOptions says.
func (s *Service) List(ctx context.Context, q *QueryOptions) (*List, error) {
	o, err := checkQuery(q)
	if err != nil {
		return nil, err
	}
	// A caller with peering:read on no peering at all is refused, as
	// Consul refuses a token without peering:read; one with the right
	// on some gets those, the list marked Filtered.
	if err := keel.AuthorizeAny(ctx, s.authz, keel.CapPeeringRead, resource("")); err != nil {
		return nil, fmt.Errorf("peering: list: %w", err)
	}
	var out *List
	err = s.block(ctx, o, func() (uint64, error) {
		out = &List{Peerings: []*Peering{}}
		var recs []*record
		err := s.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
			recs = recs[:0]
			idx, err := currentIndex(tx)
			if err != nil {
				return err
			}
			out.Index = idx
			return tx.Scan(namePrefix, storage.ScanOptions{}, func(key string, _ []byte) error {
				r, err := getByName(tx, key[len(namePrefix):])
				if err != nil {
					return err
				}
				recs = append(recs, r)
				return nil
			})
		})
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			err := keel.Authorize(ctx, s.authz, keel.CapPeeringRead, resource(r.Name))
			switch {
			case keel.KindOf(err) == keel.KindForbidden:
				out.Filtered = true
			case err != nil:
				return 0, err
			default:
				out.Peerings = append(out.Peerings, r.peering())
			}
		}
		return out.Index, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteOptions are the options of Delete. A nil *DeleteOptions is the
// zero value.
type DeleteOptions struct {
	// Partition must be empty or DefaultPartition.
	Partition string
}

// Delete requests the deletion of the peering named name. It needs
// peering:write on "peering/<name>". The peering becomes TERMINATED with
// DeletedAt and stays readable; the worker (Step) tells the peer, removes
// the imported services, then the peering. Deleting a missing peering, or
// one being deleted, succeeds and changes nothing. A partition other than
// DefaultPartition is keel.ErrInvalid on "Partition".
func (s *Service) Delete(ctx context.Context, name string, opts *DeleteOptions) error {
	if opts != nil {
		var v keel.Validation
		checkPartition(&v, opts.Partition)
		if err := v.Err(); err != nil {
			return err
		}
	}
	if err := keel.Authorize(ctx, s.authz, keel.CapPeeringWrite, resource(name)); err != nil {
		return err
	}
	now := s.clock.Now()
	err := s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByName(tx, name)
		if errors.Is(err, keel.ErrNotFound) {
			return false, nil
		}
		if err != nil || !r.DeletedAt.IsZero() {
			return false, err
		}
		if r.State == StateTerminated || r.StreamSecret == "" {
			r.PeerTold = true // the peer knows, or never knew
		}
		r.State, r.DeletedAt = StateTerminated, now
		r.SecretDigest = nil
		return true, put(tx, r, idx)
	})
	if err != nil {
		return fmt.Errorf("delete peering %q: %w", name, err)
	}
	s.Wake()
	return nil
}

// SetExportedServices sets the service names this cluster exports to the
// peer named name (sorted, without duplicates; empty names are
// keel.ErrInvalid). It needs peering:write on "peering/<name>". The peer
// sees them as imported at the next heartbeat. A peering being deleted
// gives keel.ErrConflict.
func (s *Service) SetExportedServices(ctx context.Context, name string, services []string) error {
	if err := keel.Authorize(ctx, s.authz, keel.CapPeeringWrite, resource(name)); err != nil {
		return err
	}
	var v keel.Validation
	names := normServices(&v, services)
	if err := v.Err(); err != nil {
		return err
	}
	err := s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByName(tx, name)
		if err != nil {
			return false, err
		}
		if !r.DeletedAt.IsZero() {
			return false, fmt.Errorf("peering %q is being deleted: %w", name, keel.ErrConflict)
		}
		r.Exported = names
		r.NextHeartbeat = time.Time{} // tell the peer at once
		return true, put(tx, r, idx)
	})
	if err != nil {
		return fmt.Errorf("export services to %q: %w", name, err)
	}
	s.Wake()
	return nil
}
