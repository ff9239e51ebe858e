package peering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// HandleHeartbeat is the acceptor's side of the stream: the transport's
// server calls it with each heartbeat of the dialer. It checks the stream
// secret (keel.KindForbidden when it does not match), records the
// services the dialer exports as imported, makes the peering ACTIVE and
// answers with the services exported to the dialer. A peering that is
// missing gives keel.KindNotFound; one that is TERMINATED gives
// keel.KindConflict: the dialer then marks its side TERMINATED.
func (s *Service) HandleHeartbeat(ctx context.Context, req *HeartbeatRequest) (_ *HeartbeatResponse, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "peering.HandleHeartbeat", "", req, func(ctx context.Context) (*HeartbeatResponse, error) {
		return s.handleHeartbeat(ctx, req)
	})
}

func (s *Service) handleHeartbeat(ctx context.Context, req *HeartbeatRequest) (_ *HeartbeatResponse, err error) {
	defer prefixErr(&err)
	var resp *HeartbeatResponse
	now := s.clock.Now()
	err = s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByID(tx, req.PeerID)
		if err != nil {
			return false, err
		}
		if !sameSecret(r.StreamSecret, req.StreamSecret) {
			return false, fmt.Errorf("heartbeat for %q: %w: %w", r.Name, errRefused, keel.KindForbidden)
		}
		if r.State == StateTerminated {
			return false, fmt.Errorf("peering %q is terminated: %w", r.Name, keel.KindConflict)
		}
		var v keel.Validation
		r.Imported = normServices(&v, req.ExportedServices)
		r.State = StateActive
		r.LastHeartbeat, r.LastReceive, r.LastSend = now, now, now
		resp = &HeartbeatResponse{ExportedServices: slices.Clone(r.Exported)}
		return true, put(tx, r, idx)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// HandleTerminate is the receiving side of the peer's deletion: the
// transport's server calls it. It checks the stream secret
// (keel.KindForbidden when it does not match), makes the peering
// TERMINATED without DeletedAt and drops the imported services; the
// record stays until it is deleted here. A missing peering succeeds.
func (s *Service) HandleTerminate(ctx context.Context, req *TerminateRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "peering.HandleTerminate", "", req, func(ctx context.Context) error {
		return s.handleTerminate(ctx, req)
	})
}

func (s *Service) handleTerminate(ctx context.Context, req *TerminateRequest) (err error) {
	defer prefixErr(&err)
	return s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		r, err := getByID(tx, req.PeerID)
		if errors.Is(err, keel.KindNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !sameSecret(r.StreamSecret, req.StreamSecret) {
			return false, fmt.Errorf("terminate %q: %w: %w", r.Name, errRefused, keel.KindForbidden)
		}
		return terminated(tx, r, idx)
	})
}

// terminated records that the peer ended the peering.
func terminated(tx storage.Tx, r *record, idx uint64) (bool, error) {
	if r.State == StateTerminated {
		return false, nil
	}
	r.State, r.Imported, r.PeerTold = StateTerminated, nil, true
	return true, put(tx, r, idx)
}

// Step does the peering work due at now and returns when more is due
// (after now), or the zero time when nothing is scheduled:
//   - the dialing side of each ACTIVE or FAILING peering sends a
//     heartbeat every Options.HeartbeatInterval with the services it
//     exports, and imports the services of the answer; a peer that
//     answers that the peering is missing or TERMINATED makes it
//     TERMINATED here;
//   - a peering that received nothing for Options.HeartbeatTimeout
//     becomes FAILING;
//   - a deleted peering tells its peer (until it succeeds or
//     HeartbeatTimeout has passed since the deletion), then loses its
//     imported services and is removed.
//
// Messages are sent outside any transaction; each outcome is stored in a
// transaction of its own that re-reads the peering. Step returns an error
// only for ctx or the store. Steps run one at a time.
func (s *Service) Step(ctx context.Context, now time.Time) (_ time.Time, err error) {
	defer prefixErr(&err)
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	var recs []*record
	err = s.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
		recs = recs[:0]
		return tx.Scan(namePrefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			r, err := getByName(tx, key[len(namePrefix):])
			if err != nil {
				return err
			}
			recs = append(recs, r)
			return nil
		})
	})
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	due := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		var at time.Time
		var err error
		switch {
		case !r.DeletedAt.IsZero():
			at, err = s.cleanUp(ctx, now, r)
		case r.State == StateActive || r.State == StateFailing:
			at, err = s.tend(ctx, now, r)
		}
		if err != nil {
			return time.Time{}, err
		}
		due(at)
	}
	return next, nil
}

// tend sends the heartbeat of a dialer and detects silence.
func (s *Service) tend(ctx context.Context, now time.Time, r *record) (time.Time, error) {
	deadline := r.LastReceive.Add(s.opts.HeartbeatTimeout)
	if r.Role != roleDialer {
		if !now.Before(deadline) && r.State == StateActive {
			return time.Time{}, s.change(ctx, r, func(c *record) bool {
				if c.State != StateActive || now.Before(c.LastReceive.Add(s.opts.HeartbeatTimeout)) {
					return false
				}
				c.State = StateFailing
				return true
			})
		}
		if r.State == StateActive {
			return deadline, nil
		}
		return time.Time{}, nil
	}
	if now.Before(r.NextHeartbeat) {
		return r.NextHeartbeat, nil
	}
	resp, err := s.transport.Heartbeat(ctx, r.PeerServerAddresses, &HeartbeatRequest{
		PeerID: r.PeerID, StreamSecret: r.StreamSecret, ExportedServices: r.Exported,
	})
	if ctx.Err() != nil {
		return time.Time{}, ctx.Err()
	}
	next := now.Add(s.opts.HeartbeatInterval)
	kind, sendErr := keel.KindOf(err), err
	err = s.change(ctx, r, func(c *record) bool {
		c.NextHeartbeat = next
		switch {
		case kind == keel.KindNone:
			var v keel.Validation
			c.Imported = normServices(&v, resp.ExportedServices)
			c.State = StateActive
			c.LastHeartbeat, c.LastReceive, c.LastSend = now, now, now
		case kind == keel.KindNotFound || kind == keel.KindConflict:
			c.State, c.Imported, c.PeerTold = StateTerminated, nil, true
		case !now.Before(c.LastReceive.Add(s.opts.HeartbeatTimeout)):
			c.State = StateFailing
		}
		return true
	})
	if err != nil {
		return time.Time{}, err
	}
	if kind != keel.KindNone {
		s.log.Warn("peering: heartbeat failed", "peer", r.Name, "error", sendErr)
	}
	return next, nil
}

// cleanUp tells the peer of a deletion, then removes the peering.
func (s *Service) cleanUp(ctx context.Context, now time.Time, r *record) (time.Time, error) {
	retryUntil := r.DeletedAt.Add(s.opts.HeartbeatTimeout)
	if !r.PeerTold && now.Before(retryUntil) {
		err := s.transport.Terminate(ctx, r.PeerServerAddresses, &TerminateRequest{PeerID: r.PeerID, StreamSecret: r.StreamSecret})
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		if err != nil {
			s.log.Warn("peering: telling the peer of the deletion failed", "peer", r.Name, "error", err)
			if at := now.Add(s.opts.Retry); at.Before(retryUntil) {
				return at, nil
			}
			return retryUntil, nil
		}
	}
	return time.Time{}, s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		c, err := getByName(tx, r.Name)
		if errors.Is(err, keel.KindNotFound) || err == nil && c.ID != r.ID {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// The imported data goes first (here, in the same transaction),
		// then the peering.
		c.Imported = nil
		return true, remove(tx, c)
	})
}

// change applies fn to the current record of r, when it is still the
// same peering and not deleted, and stores it when fn says so.
func (s *Service) change(ctx context.Context, r *record, fn func(c *record) bool) error {
	return s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		c, err := getByName(tx, r.Name)
		if errors.Is(err, keel.KindNotFound) || err == nil && (c.ID != r.ID || !c.DeletedAt.IsZero()) {
			return false, nil
		}
		if err != nil || !fn(c) {
			return false, err
		}
		return true, put(tx, c, idx)
	})
}

// Wake makes the worker of Start run a Step now. It never blocks.
func (s *Service) Wake() { s.worker.Wake() }

// Start starts the worker (a leader.Worker of Step): a goroutine that
// calls Step with the clock's time and sleeps on a timer of the clock until
// more is due, or until Wake (called by Establish, Delete,
// PutExportedServices and PutExportedServicesEntry). When Step fails, the
// worker logs it and tries again after Options.Retry. With Options.Leader
// it runs only while this process leads. Start does nothing when the
// worker runs; a stopped worker can be started again.
func (s *Service) Start() { s.worker.Start() }

// Stop stops the worker: it cancels the running Step and waits for the
// goroutine to end. It does nothing when the worker does not run.
func (s *Service) Stop() { s.worker.Stop() }
