package etcdstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// lateContext is a context whose deadline has passed but whose timer has
// not fired yet, as a loaded machine leaves it for a moment.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestDeadlineErrAfterCallersDeadline: etcd may end a call at the caller's
// deadline in its own words ("request timed out, possibly due to connection
// lost") before the caller's timer has fired; the caller still gets its
// deadline, and the same words before the deadline are not a deadline.
func TestDeadlineErrAfterCallersDeadline(t *testing.T) {
	s := &Store{timeout: time.Minute}
	etcdErr := rpctypes.ErrTimeoutDueToConnectionLost

	late := lateContext{context.Background()}
	rctx, cancel := s.requestContext(late)
	defer cancel()
	if err := s.deadlineErr(late, rctx, "commit", "", etcdErr); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the caller's deadline: deadlineErr = %v, want context.DeadlineExceeded", err)
	}

	early, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, cancel = s.requestContext(early)
	defer cancel()
	if err := s.deadlineErr(early, rctx, "commit", "", etcdErr); err != nil {
		t.Errorf("before any deadline: deadlineErr = %v, want nil (not a deadline)", err)
	}
}

// TestCompactedReadIsConflict: a transaction whose revision etcd compacted
// away fails with keel.KindConflict (a View may be run again; an Update is,
// on errors.Is(err, rpctypes.ErrCompacted)), not with an error of no kind.
func TestCompactedReadIsConflict(t *testing.T) {
	tx := &tx{rev: 42}
	tx.Base.Context = context.Background()
	err := tx.fail(rpctypes.ErrCompacted)
	if keel.KindOf(err) != keel.KindConflict || !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("fail(ErrCompacted) = %v (kind %v), want kind conflict wrapping ErrCompacted", err, keel.KindOf(err))
	}
}
