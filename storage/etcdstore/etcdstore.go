package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/internal/txbase"
)

// The defaults of Options.
const (
	// DefaultPrefix is the key prefix of a Store whose Options name none.
	DefaultPrefix = "keel/"
	// defaultMaxRetries is how many times Update runs a closure again
	// after a conflict, by default.
	defaultMaxRetries = 16
	// 5s bounds each etcd call of a transaction, by
	// default (see Options.RequestTimeout).
	defaultRequestTimeout = 5 * time.Second
	// maxCompares is how many comparisons one commit may carry: etcd's
	// default --max-txn-ops, which bounds the comparisons of a Txn as it
	// bounds its operations. It is the MaxTxReads of DefaultLimits(): an
	// Update that wrote and read more keys and ranges fails with
	// storage.ErrTxTooLarge (see the package documentation).
	maxCompares = 128
	// maxRequestBytes is the size of the largest request a commit may
	// send: etcd's default --max-request-bytes (1.5 MiB).
	maxRequestBytes = 3 << 19
	// pageSize is how many keys one range request of a Scan asks for.
	pageSize = 256
)

// DefaultLimits returns the limits of a Store whose Options set none: they
// keep a commit within etcd's default --max-txn-ops (128 operations, and
// 128 comparisons: MaxTxReads) and --max-request-bytes (1.5 MiB), leaving
// room for the key prefix and the comparisons of the keys read.
func DefaultLimits() storage.Limits {
	return storage.Limits{
		MaxKeySize:   4 << 10,
		MaxValueSize: 1400<<10 - 4<<10,
		MaxTxOps:     128,
		MaxTxBytes:   1400 << 10,
		MaxTxReads:   maxCompares,
	}
}

// Options configure a Store. A nil *Options means defaults.
type Options struct {
	// Prefix is prepended to every key, so that several deployments
	// share one etcd. Empty means DefaultPrefix.
	Prefix string
	// MaxRetries is how many times Update runs its closure again after
	// a conflicting commit before it fails with keel.KindConflict. Zero
	// means 16; a negative value means no retry.
	MaxRetries int
	// Limits replaces DefaultLimits() when it has any field set. Raise
	// them only with the limits of the etcd server. A zero MaxTxReads in
	// it means 128: etcd always bounds the comparisons of a
	// commit.
	Limits storage.Limits
	// DialTimeout bounds how long Open waits for a first connection.
	// Zero means 5 seconds.
	DialTimeout time.Duration
	// RequestTimeout bounds each etcd call of a transaction: a read, or
	// the commit. A call etcd has not answered by then (as when the
	// cluster has lost its quorum, where etcd waits for a leader) fails
	// with an error of kind keel.KindUnavailable that names this bound;
	// a commit that timed out may or may not have been applied. The
	// caller's ctx still ends a call sooner, with its own error. Zero
	// means 5s; a negative value means no bound but
	// the caller's ctx.
	RequestTimeout time.Duration
}

// Store is a storage.Store over etcd. Create one with Open or New. It is safe
// for concurrent use, by the goroutines of one process and by any number of
// processes that use the same etcd and Prefix.
type Store struct {
	client *clientv3.Client
	owned  bool // Close closes client
	// watches is the parent of the Store's watches: Close cancels it,
	// which ends them, whether or not the Store owns its client.
	watches     context.Context
	stopWatches context.CancelFunc
	prefix      string
	end         string // the etcd range end of prefix
	maxRetries  int
	limits      storage.Limits
	gate        txbase.Gate
	timeout     time.Duration // Options.RequestTimeout; <= 0: none

	retry     chan struct{} // buffered 1: held by an Update that runs after a conflict
	contended atomic.Int32  // Updates holding or waiting for retry
	claims    storage.Claims
}

// Claims returns the parts of the store claimed by the components built
// over it in this process (see storage.Claims); another process on the
// same etcd keeps its own.
func (s *Store) Claims() *storage.Claims { return &s.claims }

var _ storage.Store = (*Store)(nil)

// Open connects to the etcd cluster at endpoints and returns a Store over
// it. The Store owns the client: Close closes it. Open fails with an error
// of kind keel.KindUnavailable when no endpoint answers within
// Options.DialTimeout.
func Open(ctx context.Context, endpoints []string, opts *Options) (*Store, error) {
	timeout := 5 * time.Second
	if opts != nil && opts.DialTimeout > 0 {
		timeout = opts.DialTimeout
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: timeout,
		Context:     context.WithoutCancel(ctx),
		Logger:      nopLogger(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect to %v: %w", endpoints, classify(err))
	}
	// clientv3.New does not wait for a connection: ask for the status of
	// one endpoint, so that an unreachable cluster fails here.
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var serr error
	for _, ep := range endpoints {
		if _, serr = client.Status(sctx, ep); serr == nil {
			break
		}
	}
	if serr != nil {
		client.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("etcdstore: connect to %v: %v: %w", endpoints, serr, keel.KindUnavailable)
	}
	s := New(client, opts)
	s.owned = true
	return s, nil
}

// New returns a Store over client. The caller keeps the client: Close does
// not close it.
func New(client *clientv3.Client, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = defaultMaxRetries
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = defaultRequestTimeout
	}
	limits := DefaultLimits()
	if o.Limits != (storage.Limits{}) {
		limits = o.Limits
		if limits.MaxTxReads <= 0 {
			limits.MaxTxReads = maxCompares
		}
	}
	watches, stopWatches := context.WithCancel(context.Background())
	return &Store{
		watches:     watches,
		stopWatches: stopWatches,
		client:      client,
		prefix:      o.Prefix,
		end:         clientv3.GetPrefixRangeEnd(o.Prefix),
		maxRetries:  o.MaxRetries,
		limits:      limits,
		timeout:     o.RequestTimeout,
		retry:       make(chan struct{}, 1),
	}
}

// Limits returns the store's limits.
func (s *Store) Limits() storage.Limits { return s.limits }

// Prefix returns the key prefix of the store.
func (s *Store) Prefix() string { return s.prefix }

// Close waits for running transactions, then closes the client when Open
// created it.
func (s *Store) Close() error {
	if !s.gate.Close() {
		return nil
	}
	s.stopWatches()
	if s.owned {
		if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("etcdstore: close: %w", err)
		}
	}
	return nil
}

// View runs fn over one revision of etcd: the first read fixes the
// revision, and every later read asks for it.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	t := &tx{s: s}
	t.Init(ctx, s, &s.limits, false)
	defer t.Finish()
	return fn(t, t)
}

// errConflict is what a commit whose comparisons failed returns; Update
// runs the closure again.
var errConflict = errors.New("etcdstore: conflict")

// Update runs fn against reads of one etcd revision, buffering its writes,
// then commits them in one etcd Txn whose comparisons check that nothing fn
// read has changed since. When a comparison fails, fn runs again, up to
// Options.MaxRetries times, then Update fails with keel.KindConflict.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	queued := false
	defer func() {
		if queued {
			<-s.retry
			s.contended.Add(-1)
		}
	}()
	for attempt := 0; ; attempt++ {
		if !queued && (attempt > 0 || s.contended.Load() > 0) {
			// Writers of this Store that conflicted run one at a time,
			// and so do new ones while any waits: they then conflict
			// only with other processes.
			s.contended.Add(1)
			select {
			case s.retry <- struct{}{}:
				queued = true
			case <-ctx.Done():
				s.contended.Add(-1)
				return ctx.Err()
			}
		}
		err := s.attempt(ctx, fn)
		if !errors.Is(err, errConflict) {
			return err
		}
		if attempt >= s.maxRetries {
			return fmt.Errorf("etcdstore: %d attempts conflicted with other writers: %w", attempt+1, keel.KindConflict)
		}
		// Spread the next attempts of writers that conflicted together.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5)))
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// attempt runs fn once and commits its writes; errConflict means it is to
// run again.
func (s *Store) attempt(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := &tx{s: s, writes: map[string]write{}, reads: map[string]int64{}}
	t.Init(ctx, s, &s.limits, true)
	err := func() error {
		defer t.Finish()
		return fn(t, t)
	}()
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return errConflict
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(t.writes) == 0 {
		// Every read was of one revision: nothing to check or commit.
		return nil
	}
	return t.commit(ctx)
}

// write is a buffered Put, or a Delete when del.
type write struct {
	value []byte
	del   bool
}

// scanned is a key range [start, end) that a Scan of an Update went
// through, in keys without the prefix; end "" means the end of the store.
type scanned struct{ start, end string }

type tx struct {
	txbase.Base
	s      *Store
	rev    int64            // the revision read; 0 before the first read
	writes map[string]write // Update only
	reads  map[string]int64 // Update only: key -> mod revision read (0: missing)
	ranges []scanned        // Update only
}

// rangeOpts adds the revision of t to the options of a read, once fixed.
func (t *tx) rangeOpts(extra ...clientv3.OpOption) []clientv3.OpOption {
	if t.rev != 0 {
		extra = append(extra, clientv3.WithRev(t.rev))
	}
	return extra
}

// fetch reads at t's revision, fixing it on the first read.
func (t *tx) fetch(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	rctx, cancel := t.s.requestContext(t.Base.Context)
	defer cancel()
	resp, err := t.s.client.Get(rctx, key, t.rangeOpts(opts...)...)
	if err != nil {
		if derr := t.s.deadlineErr(t.Base.Context, rctx, "read", "", err); derr != nil {
			return nil, derr
		}
		return nil, t.fail(err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp, nil
}

// fail turns an error of the client into one of the store.
func (t *tx) fail(err error) error {
	if cerr := t.Base.Context.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		// The revision read was compacted away: an Update runs again
		// at a newer one; a View fails with a conflict, to be run again.
		return fmt.Errorf("etcdstore: revision %d was compacted away while the transaction read it (run it again): %w: %w", t.rev, err, keel.KindConflict)
	}
	return fmt.Errorf("etcdstore: %w", classify(err))
}

// requestContext returns ctx bounded by Options.RequestTimeout, for one
// etcd call.
func (s *Store) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

// deadlineErr returns the error of an etcd call, made with rctx (ctx bounded
// by requestContext), that failed with err, when a deadline ended it: ctx's
// error when ctx's deadline came first, or one of kind keel.KindUnavailable
// naming Options.RequestTimeout, and note (what it means for the caller),
// when ours did. It returns nil when no deadline ended the call.
//
// etcd ends a call at the deadline the client sent it too, and may answer
// before the client's own timer fires, with an Unknown status "context
// deadline exceeded", or in its own words ("request timed out, possibly due
// to connection lost" when it has lost its leader): so err is read as well as
// the contexts, and a failure that arrives once ctx's deadline has passed is
// reported as that deadline whatever its words.
func (s *Store) deadlineErr(ctx, rctx context.Context, call, note string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if theirs, ok := ctx.Deadline(); ok && !time.Now().Before(theirs) {
		return context.DeadlineExceeded
	}
	ours, ok := rctx.Deadline()
	if !ok || (rctx.Err() == nil && !isDeadline(err)) {
		return nil
	}
	if theirs, ok := ctx.Deadline(); ok && !theirs.After(ours) {
		return context.DeadlineExceeded
	}
	// The etcd error is not wrapped: its context.DeadlineExceeded is not
	// the caller's.
	return fmt.Errorf("etcdstore: %s: etcd did not answer within %v (Options.RequestTimeout; has the cluster lost its quorum?)%s: %v: %w", call, s.timeout, note, err, keel.KindUnavailable)
}

// isDeadline reports whether err says that a deadline passed, as the client
// or etcd saw it.
func isDeadline(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && (st.Code() == codes.DeadlineExceeded ||
		st.Code() == codes.Unknown && st.Message() == context.DeadlineExceeded.Error())
}

// classify wraps err with keel.KindUnavailable when etcd cannot be reached.
func classify(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%v: %w", err, keel.KindUnavailable)
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted:
			return fmt.Errorf("%v: %w", err, keel.KindUnavailable)
		}
	}
	if errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTimeout) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) || errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost) ||
		errors.Is(err, clientv3.ErrNoAvailableEndpoints) || errors.Is(err, rpctypes.ErrStopped) {
		return fmt.Errorf("%v: %w", err, keel.KindUnavailable)
	}
	return err
}

func (t *tx) Get(key string) ([]byte, error) {
	if err := t.CheckRead(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, storage.ErrEmptyKey
	}
	if w, ok := t.writes[key]; ok {
		if w.del {
			return nil, storage.ErrNotFound
		}
		return clone(w.value), nil
	}
	resp, err := t.fetch(t.s.prefix + key)
	if err != nil {
		return nil, err
	}
	var modRev int64
	var value []byte
	if len(resp.Kvs) > 0 {
		modRev, value = resp.Kvs[0].ModRevision, resp.Kvs[0].Value
	}
	if t.reads != nil {
		t.reads[key] = modRev
	}
	if len(resp.Kvs) == 0 {
		return nil, storage.ErrNotFound
	}
	return clone(value), nil
}

func (t *tx) Put(key string, value []byte) error {
	if err := t.CheckPut(key, value); err != nil {
		return err
	}
	t.writes[key] = write{value: clone(value)}
	return nil
}

func (t *tx) Delete(key string) error {
	if err := t.CheckDelete(key); err != nil {
		return err
	}
	t.writes[key] = write{del: true}
	return nil
}

type entry struct {
	key   string
	value []byte
}

func (t *tx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	start := max(prefix, opts.From)
	if opts.After != "" && opts.After >= start {
		start = opts.After + "\x00"
	}
	end := prefixEnd(prefix) // "": the end of the store
	if end != "" && start >= end {
		return nil // nothing can be in the range
	}
	inRange := func(k string) bool { return k >= start && (end == "" || k < end) }

	// The transaction's own writes in the range, as they are now: writes
	// made by fn during the scan are not visited.
	var own []string
	for k := range t.writes {
		if inRange(k) {
			own = append(own, k)
		}
	}
	slices.Sort(own)

	etcdEnd := t.s.end
	if end != "" {
		etcdEnd = t.s.prefix + end
	}
	cur := start
	visited := "" // the last key given to fn
	done := false
	defer func() {
		if t.reads == nil {
			return
		}
		// Record what the scan went through: to its end, or to the
		// last key it visited.
		switch {
		case done:
			t.ranges = append(t.ranges, scanned{start, end})
		case visited != "":
			t.ranges = append(t.ranges, scanned{start, visited + "\x00"})
		}
	}()
	for {
		if err := t.CheckRead(); err != nil {
			return err
		}
		ropts := []clientv3.OpOption{clientv3.WithRange(etcdEnd), clientv3.WithLimit(pageSize)}
		if opts.KeysOnly {
			ropts = append(ropts, clientv3.WithKeysOnly())
		}
		resp, err := t.fetch(t.s.prefix+cur, ropts...)
		if err != nil {
			return err
		}
		// The page covers [cur, bound]; bound "" is the end of the range.
		bound := ""
		if resp.More && len(resp.Kvs) > 0 {
			bound = string(resp.Kvs[len(resp.Kvs)-1].Key)[len(t.s.prefix):]
		}
		n := len(own)
		if bound != "" {
			n, _ = slices.BinarySearch(own, bound+"\x00")
		}
		pageOwn := own[:n]
		own = own[n:]
		var page []entry
		modRevs := map[string]int64{}
		kvs := resp.Kvs
		for i, j := 0, 0; i < len(kvs) || j < len(pageOwn); {
			var ek string
			if i < len(kvs) {
				ek = string(kvs[i].Key)[len(t.s.prefix):]
			}
			if j < len(pageOwn) && (i == len(kvs) || pageOwn[j] <= ek) {
				k := pageOwn[j]
				j++
				if i < len(kvs) && ek == k {
					i++ // shadowed by the transaction's write
				}
				if w := t.writes[k]; !w.del {
					page = append(page, entry{key: k, value: w.value})
				}
				continue
			}
			page = append(page, entry{key: ek, value: kvs[i].Value})
			modRevs[ek] = kvs[i].ModRevision
			i++
		}
		for _, e := range page {
			var v []byte
			if !opts.KeysOnly {
				v = clone(e.value)
			}
			if t.reads != nil {
				if rev, ok := modRevs[e.key]; ok {
					t.reads[e.key] = rev
				}
			}
			visited = e.key
			if err := fn(e.key, v); err != nil {
				if err == storage.StopScan {
					return nil
				}
				return err
			}
		}
		if bound == "" {
			done = true
			return nil
		}
		cur = bound + "\x00"
	}
}

// commit sends one Txn: the comparisons of every key and range read, then
// every write. It returns errConflict when a comparison failed.
func (t *tx) commit(ctx context.Context) error {
	s := t.s
	cmps := make([]clientv3.Cmp, 0, len(t.reads)+len(t.ranges))
	size := 0
	for k, rev := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.prefix+k), "=", rev))
		size += len(s.prefix) + len(k) + 16
	}
	for _, r := range t.ranges {
		end := s.end
		if r.end != "" {
			end = s.prefix + r.end
		}
		// Every key in the range is at most as recent as the revision
		// read: no key was created or changed in it since. (Deletions
		// are caught by the comparisons of the keys visited.)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.prefix+r.start), "<", t.rev+1).WithRange(end))
		size += 2*len(s.prefix) + len(r.start) + len(r.end) + 16
	}
	if len(cmps) > s.limits.MaxTxReads {
		return fmt.Errorf("%w: the transaction read %d keys and ranges, at most %d (Limits.MaxTxReads) are checked in one commit", storage.ErrTxTooLarge, len(cmps), s.limits.MaxTxReads)
	}
	ops := make([]clientv3.Op, 0, len(t.writes))
	for k, w := range t.writes {
		if w.del {
			ops = append(ops, clientv3.OpDelete(s.prefix+k))
			size += len(s.prefix) + len(k) + 8
		} else {
			ops = append(ops, clientv3.OpPut(s.prefix+k, string(w.value)))
			size += len(s.prefix) + len(k) + len(w.value) + 8
		}
	}
	if size > maxRequestBytes-4<<10 {
		return fmt.Errorf("%w: the commit would send about %d bytes, etcd accepts %d", storage.ErrTxTooLarge, size, maxRequestBytes)
	}
	var resp *clientv3.TxnResponse
	var err error
	rctx, cancel := s.requestContext(ctx)
	defer cancel()
	if len(cmps) == 0 && len(ops) == 1 {
		// A blind write of one key: a plain Put or Delete, cheaper than a
		// Txn for etcd.
		_, err = s.client.Do(rctx, ops[0])
		resp = &clientv3.TxnResponse{Succeeded: true}
	} else {
		resp, err = s.client.Txn(rctx).If(cmps...).Then(ops...).Commit()
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if derr := s.deadlineErr(ctx, rctx, "commit", ", so the commit may or may not have been applied", err); derr != nil {
			return derr
		}
		if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
			return fmt.Errorf("etcdstore: commit: %v: %w", err, storage.ErrTxTooLarge)
		}
		return fmt.Errorf("etcdstore: commit: %w", classify(err))
	}
	if !resp.Succeeded {
		return errConflict
	}
	return nil
}

// prefixEnd returns the first key after every key that starts with prefix,
// or "" when there is none (prefix is empty or all 0xff bytes).
func prefixEnd(prefix string) string {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xff {
			return prefix[:i] + string([]byte{prefix[i] + 1})
		}
	}
	return ""
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}
