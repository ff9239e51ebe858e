package peering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Query is how Get and List read: the partition, and, for a blocking
// query (Consul's: the reads' one way of watching), the index the caller
// already has and how long to wait for a newer one. The call returns as
// soon as the index of its result is above MinIndex, or when WaitTime has
// passed; the index it returns is the MinIndex of the caller's next Query.
// The zero Query reads at once.
//
// Query is one domain value shared by both reads rather than a GetRequest
// and a ListRequest: the same three fields drive both, and a
// peering.ListRequest would read as keel.ListRequest, a page of a list,
// which List is not.
type Query struct {
	// MinIndex is the index the caller already has; 0 does not block.
	MinIndex uint64
	// WaitTime bounds the wait of a blocking query. Zero: DefaultWait;
	// above MaxWait: MaxWait; negative is refused.
	WaitTime time.Duration
	// Partition must be empty or DefaultPartition.
	Partition string
}

// List is the result of List: every peering the caller may read, as of
// one index.
type List struct {
	// Peerings are the peerings the caller may read, by name; never nil.
	Peerings []*Peering
	// Index is the index of the whole set of peerings; at least 1.
	Index uint64
	// Filtered says that the caller's rights left peerings out.
	Filtered bool
}

// checkQuery validates q and returns it with its wait set: DefaultWait for
// none, at most MaxWait.
func checkQuery(q Query) (Query, error) {
	o := q
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
func (s *Service) block(ctx context.Context, q Query, read func() (uint64, error)) error {
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
		if err != nil && !errors.Is(err, keel.KindNotFound) {
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

// Get returns the peering named name and its index (its ModifyIndex, or
// the index of all peerings when it does not exist). It needs
// peering:read on "peering/<name>". A missing peering gives
// keel.KindNotFound with the index, so that a blocking query can wait for
// it to appear. With q.MinIndex, it blocks as Query says.
func (s *Service) Get(ctx context.Context, name string, q Query) (_ *Peering, _ uint64, err error) {
	defer prefixErr(&err)
	ctx, op, err := keel.Begin(ctx, s.obs, s.clock, "peering.Get", name, q)
	if err != nil {
		return nil, 0, err
	}
	p, index, err := s.doGet(ctx, name, q)
	if op != nil {
		op.End(p, err)
	}
	return p, index, err
}

func (s *Service) doGet(ctx context.Context, name string, q Query) (_ *Peering, _ uint64, err error) {
	defer prefixErr(&err)
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
				return fmt.Errorf("peering %q: %w", name, keel.KindNotFound)
			}
			p, idx = r.peering(), r.ModifyIndex
			return nil
		})
		return idx, err
	})
	if p == nil && err == nil {
		err = fmt.Errorf("peering %q: %w", name, keel.KindNotFound)
	}
	return p, max(idx, 1), err
}

// List returns the peerings the caller may read (peering:read on
// "peering/<name>" of each), and whether others were left out. A caller
// with peering:read on no peering at all is refused (keel.KindForbidden),
// as Consul refuses a token without peering:read. With q.MinIndex, it
// blocks as Query says.
//
// List is not paged by a cursor, as keel's unbounded lists are
// (keel.ListRequest): it is a blocking query, whose answer is the whole
// set as of one Index, read in one transaction, so that a caller who
// waits on that Index misses no change. Pages read one after another
// would each have their own index: a peering made between two of them,
// before the cursor, would be missing from the result with no index
// saying so. The set is the one the Service itself tends in full: each
// peering is a stream with a peer cluster, made by a caller with
// peering:write, and every Step reads all of them in one transaction.
func (s *Service) List(ctx context.Context, q Query) (_ *List, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "peering.List", "", q, func(ctx context.Context) (*List, error) {
		return s.doList(ctx, q)
	})
}

func (s *Service) doList(ctx context.Context, q Query) (_ *List, err error) {
	defer prefixErr(&err)
	o, err := checkQuery(q)
	if err != nil {
		return nil, err
	}
	// A caller with peering:read on no peering at all is refused, as
	// Consul refuses a token without peering:read; one with the right
	// on some gets those, the list marked Filtered.
	if err := keel.AuthorizeAny(ctx, s.authz, keel.CapPeeringRead, resource("")); err != nil {
		return nil, wrapf(err, "list")
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

// DeleteRequest is the optional input of Delete; the zero value is the
// default.
type DeleteRequest struct {
	// Partition must be empty or DefaultPartition.
	Partition string
}

// Delete requests the deletion of the peering named name. It needs
// peering:write on "peering/<name>". The peering becomes TERMINATED with
// DeletedAt and stays readable; the worker (Step) tells the peer, removes
// the imported services, then the peering. Deleting a missing peering, or
// one being deleted, succeeds and changes nothing, as Consul's delete
// does. A partition other than DefaultPartition is keel.KindInvalid on
// "Partition".
func (s *Service) Delete(ctx context.Context, name string, req DeleteRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "peering.Delete", name, req, func(ctx context.Context) error {
		return s.doDelete(ctx, name, req)
	})
}

func (s *Service) doDelete(ctx context.Context, name string, req DeleteRequest) (err error) {
	defer prefixErr(&err)
	var v keel.Validation
	checkPartition(&v, req.Partition)
	if err := v.Err(); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, s.authz, keel.CapPeeringWrite, resource(name)); err != nil {
		return err
	}
	now := s.clock.Now()
	err = s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByName(tx, name)
		if errors.Is(err, keel.KindNotFound) {
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
		return wrapf(err, "delete peering %q", name)
	}
	s.Wake()
	return nil
}

// PutExportedServices replaces the service names this cluster exports to
// the peer named name with services (kept sorted, without duplicates;
// an empty name is keel.KindInvalid on "ExportedServices"). It needs
// peering:write on "peering/<name>". The peer sees them as imported at
// the next heartbeat. A missing peering gives keel.KindNotFound, one being
// deleted keel.KindConflict. PutExportedServicesEntry sets the exports of
// every peering from Consul's config entry instead.
func (s *Service) PutExportedServices(ctx context.Context, name string, services []string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "peering.PutExportedServices", name, services, func(ctx context.Context) error {
		return s.putExportedServices(ctx, name, services)
	})
}

func (s *Service) putExportedServices(ctx context.Context, name string, services []string) (err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, s.authz, keel.CapPeeringWrite, resource(name)); err != nil {
		return err
	}
	var v keel.Validation
	names := normServices(&v, services)
	if err := v.Err(); err != nil {
		return err
	}
	err = s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByName(tx, name)
		if err != nil {
			return false, err
		}
		if !r.DeletedAt.IsZero() {
			return false, fmt.Errorf("peering %q is being deleted: %w", name, keel.KindConflict)
		}
		r.Exported = names
		r.NextHeartbeat = time.Time{} // tell the peer at once
		return true, put(tx, r, idx)
	})
	if err != nil {
		return wrapf(err, "export services to %q", name)
	}
	s.Wake()
	return nil
}
