package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/keelhq/keel/leader"
)

// DefaultLeaderTTL is the session TTL of a Leader whose options set none.
const DefaultLeaderTTL = 10 * time.Second

// LeaderOptions configure a Leader. A nil *LeaderOptions means defaults.
type LeaderOptions struct {
	// TTL is the lifetime of the etcd lease behind a term, renewed while
	// the process lives: a crashed leader is replaced after it. It is
	// rounded up to whole seconds. Zero means DefaultLeaderTTL.
	TTL time.Duration
	// ID names the process in the election key's value. Empty means
	// "hostname/pid".
	ID string
}

// Leader is a leader.Leader over etcd's election
// (go.etcd.io/etcd/client/v3/concurrency): the processes that use the same
// etcd and key take turns, in the order they asked.
//
// A term holds an etcd lease of LeaderOptions.TTL, which the Leader renews
// every TTL/3. Lost is closed when a renewal has not succeeded by a quarter
// of the TTL before etcd may expire the lease (or when the session ends):
// the holder's work then has that quarter to stop before another process
// may lead. Release resigns and revokes the lease, so that the next process
// leads at once.
type Leader struct {
	client *clientv3.Client
	key    string
	ttl    int64 // seconds
	id     string
}

var _ leader.Leader = (*Leader)(nil)

// newLeader returns a Leader of the election at key (an etcd key prefix,
// used as is) among the processes that use client's etcd.
func newLeader(client *clientv3.Client, key string, opts *LeaderOptions) *Leader {
	var o LeaderOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = DefaultLeaderTTL
	}
	if o.ID == "" {
		host, _ := os.Hostname()
		o.ID = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	return &Leader{client: client, key: key, ttl: int64(math.Ceil(o.TTL.Seconds())), id: o.ID}
}

// Leader returns a Leader of the election name among the Stores that use
// the same etcd and prefix. Its key is "keel-leader/" + prefix + name +
// "/", outside the keys of the store.
func (s *Store) Leader(name string, opts *LeaderOptions) *Leader {
	return newLeader(s.client, "keel-leader/"+s.prefix+name+"/", opts)
}

// Acquire campaigns in the election and returns when the caller leads.
func (l *Leader) Acquire(ctx context.Context) (leader.Term, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	grant, err := l.client.Grant(ctx, l.ttl)
	if err != nil {
		return nil, l.fail(ctx, "grant a lease", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	sess, err := concurrency.NewSession(l.client, concurrency.WithLease(grant.ID), concurrency.WithContext(sctx))
	if err != nil {
		cancel()
		l.revoke(grant.ID)
		return nil, l.fail(ctx, "start a session", err)
	}
	t := &term{l: l, sess: sess, cancel: cancel, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	t.deadline = start.Add(time.Duration(grant.TTL) * time.Second)
	t.e = concurrency.NewElection(sess, l.key)
	if err := t.e.Campaign(ctx, l.id); err != nil {
		t.close()
		return nil, l.fail(ctx, "campaign", err)
	}
	go t.watch()
	return t, nil
}

func (l *Leader) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("etcdstore: leader %s: %s: %w", l.key, what, classify(err))
}

func (l *Leader) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), leader.ReleaseTimeout)
	defer cancel()
	l.client.Revoke(ctx, id)
}

type term struct {
	l        *Leader
	sess     *concurrency.Session
	e        *concurrency.Election
	cancel   context.CancelFunc
	deadline time.Time // when etcd may expire the lease, at the earliest

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{} // closed by Release: the watcher ends
	done     chan struct{} // closed when the watcher ended
	release  sync.Once
	err      error
}

func (t *term) Lost() <-chan struct{} { return t.lost }

func (t *term) markLost() { t.lostOnce.Do(func() { close(t.lost) }) }

// watch renews the lease every TTL/3, or sooner when less time is left
// before the margin (an Acquire slowed by load leaves less of the first
// TTL), and closes lost when the renewal fails past the margin, or the
// session ends.
func (t *term) watch() {
	defer close(t.done)
	ttl := time.Duration(t.l.ttl) * time.Second
	margin := ttl / 4
	for {
		next := ttl / 3
		if half := time.Until(t.deadline.Add(-margin)) / 2; half < next {
			next = max(half, 0)
		}
		wait := time.NewTimer(next)
		select {
		case <-t.stop:
			wait.Stop()
			return
		case <-t.sess.Done():
			wait.Stop()
			t.markLost()
			return
		case <-wait.C:
		}
		sent := time.Now()
		limit := t.deadline.Add(-margin)
		if !sent.Before(limit) {
			t.markLost()
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), limit)
		resp, err := t.l.client.KeepAliveOnce(ctx, t.sess.Lease())
		cancel()
		if err != nil || resp.TTL <= 0 {
			if time.Now().Before(limit) && err != nil && !isLeaseGone(err) {
				continue // try again before the limit
			}
			t.markLost()
			return
		}
		t.deadline = sent.Add(time.Duration(resp.TTL) * time.Second)
	}
}

func isLeaseGone(err error) bool { return errorsIsLeaseNotFound(err) }

// Release resigns and revokes the lease of the term.
func (t *term) Release(ctx context.Context) error {
	t.release.Do(func() {
		close(t.stop)
		<-t.done
		t.markLost()
		t.err = t.close()
	})
	return t.err
}

// close ends the session, revoking its lease: the election key goes with it.
func (t *term) close() error {
	err := t.sess.Close() // revokes the lease, within the session's TTL
	t.cancel()
	if err != nil && !errorsIsLeaseNotFound(err) {
		return fmt.Errorf("etcdstore: leader %s: release: %w", t.l.key, classify(err))
	}
	return nil
}

func errorsIsLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound)
}
