package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/errprefix"
	"github.com/keelhq/keel/storage"
)

const errPrefix errprefix.Prefix = "ratelimit: "

// prefixErr starts *err with "ratelimit: ", once.
func prefixErr(err *error) { errPrefix.Set(err) }

// claimKind is the kind of the part of a store the Limiter keeps (see
// storage.CheckClaim).
const claimKind = "ratelimit"

const (
	// shards is how many parts the client table has, each with its lock.
	shards = 32
	// sweepEvery is how often a part of the client table forgets its
	// clients whose window has ended, at most.
	sweepEvery = time.Minute
	// evictSample is how many clients a full part looks at to choose the
	// one a new client replaces.
	evictSample = 8
	// retryLoad is how long the watcher waits before it reads the quotas
	// again after a failed read.
	retryLoad = time.Second
)

// defaultExempt are Vault's default rate_limit_exempt_paths, without their
// "/v1/".
var defaultExempt = []string{
	"sys/generate-recovery-token/attempt",
	"sys/generate-recovery-token/update",
	"sys/generate-root/attempt",
	"sys/generate-root/update",
	"sys/health",
	"sys/seal-status",
	"sys/unseal",
}

// Options configure a Limiter. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Authorizer decides the rights of the callers of Put, Get, List and
	// Delete. Nil: everything is allowed.
	Authorizer keel.Authorizer
	// Clock tells the time of the windows. Nil: the system clock.
	Clock keel.Clock
	// Logger reports the reloads of the quotas that failed. Nil: discard.
	Logger *slog.Logger
	// Exempt are the request paths no quota limits: a path as Allow takes
	// it, or a prefix ending with "*". Nil: Vault's default
	// rate_limit_exempt_paths (sys/health, sys/seal-status, sys/unseal,
	// sys/generate-root/attempt and /update,
	// sys/generate-recovery-token/attempt and /update); empty but not nil:
	// none.
	Exempt []string
	// MaxClients bounds how many clients the Limiter counts at once, over
	// all quotas (see the package doc's "Memory"). Zero: 100,000; it must
	// not be negative.
	MaxClients int
}

// Limiter keeps the rate-limit quotas of a store and applies them to the
// requests of this process. Create one with Open; its zero value is not
// usable. It is safe for concurrent use.
type Limiter struct {
	store storage.Store
	auth  keel.Authorizer
	clock keel.Clock
	log   *slog.Logger

	exact    map[string]bool // Options.Exempt without a "*"
	prefixes []string        // Options.Exempt ending with "*", without it
	perShard int             // clients a part of the table holds at most
	seed     maphash.Seed

	table  atomic.Pointer[table]
	parts  [shards]shard
	loadMu sync.Mutex // one reload at a time

	stopWatch func()
	changed   chan struct{} // the record may have changed
	cancel    func()        // ends the watcher
	ended     chan struct{} // closed when the watcher ends
	closeOnce sync.Once
}

// table is the quotas a Limiter applies, by canonical path.
type table struct {
	byPath map[string]*applied
	global *applied        // the quota of "", or nil
	first  map[string]bool // the first segments of the paths but ""
	depth  int             // the most segments of a path
	closed bool
}

// applied is a quota as Allow applies it. A quota put anew is a new
// applied: the counts of its clients, keyed by it, start anew.
type applied struct {
	q        Quota
	limit    int64
	interval int64 // ns
	block    int64 // ns
}

// shard is a part of the client table.
type shard struct {
	mu        sync.Mutex
	clients   map[clientKey]*bucket
	nextSweep int64 // unix ns
	_         [40]byte
}

type clientKey struct {
	q      *applied
	client string
}

// bucket is the count of one client under one quota.
type bucket struct {
	start   int64 // the start of its first window, unix ns
	window  int64 // the index of the window avail counts in
	avail   int64 // requests left in it
	blocked int64 // refused until then, unix ns (0: not blocked)
}

// idleAt is when b is as good as forgotten: its window has ended and it is
// not blocked.
func (b *bucket) idleAt(q *applied) int64 {
	return max(b.start+(b.window+1)*q.interval, b.blocked)
}

// Open returns the Limiter of the quotas kept in store, a view its caller
// has scoped to them (the example server gives it "ratelimit/" of its
// store): it reads them and watches them for changes until Close. It
// fails with an error of kind keel.KindInvalid naming "Store" (nil, or a
// view claimed for another component, see storage.CheckClaim),
// "Options.MaxClients" (negative), or with the store's error.
func Open(ctx context.Context, store storage.Store, opts *Options) (_ *Limiter, err error) {
	defer prefixErr(&err)
	var o Options
	if opts != nil {
		o = *opts
	}
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	}
	if o.MaxClients < 0 {
		v.Add("Options.MaxClients", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := storage.CheckClaim(store, claimKind); err != nil {
		return nil, err
	}
	if o.MaxClients == 0 {
		o.MaxClients = 100_000
	}
	if o.Exempt == nil {
		o.Exempt = defaultExempt
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Limiter{
		store: store, auth: o.Authorizer, clock: keel.ClockOrSystem(o.Clock), log: o.Logger,
		exact: map[string]bool{}, perShard: max(1, (o.MaxClients+shards-1)/shards), seed: maphash.MakeSeed(),
		changed: make(chan struct{}, 1), ended: make(chan struct{}),
	}
	for _, p := range o.Exempt {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			l.prefixes = append(l.prefixes, pre)
		} else {
			l.exact[p] = true
		}
	}
	for i := range l.parts {
		l.parts[i].clients = map[clientKey]*bucket{}
	}
	l.table.Store(&table{})
	// Watch before reading: a change committed after the read is seen.
	stop, err := storage.Watch(ctx, store, quotasKey, func(string) {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watching the quotas: %w", err)
	}
	l.stopWatch = stop
	if err := l.reload(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("reading the quotas: %w", err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go l.watch(wctx)
	return l, nil
}

// Close stops watching the store and returns once the watcher has ended.
// Every operation after it fails with keel.KindUnavailable, Allow too. A
// second Close does nothing and returns nil.
func (l *Limiter) Close() error {
	l.closeOnce.Do(func() {
		l.stopWatch()
		l.cancel()
		<-l.ended
		l.loadMu.Lock()
		l.table.Store(&table{closed: true})
		l.loadMu.Unlock()
	})
	return nil
}

var errClosed = fmt.Errorf("the limiter is closed: %w", keel.KindUnavailable)

func (l *Limiter) open() error {
	if l.table.Load().closed {
		return errClosed
	}
	return nil
}

// watch reloads the quotas whenever the store reports a change of their
// record, until ctx ends (Close); a failed reload is tried again after
// retryLoad.
func (l *Limiter) watch(ctx context.Context) {
	defer close(l.ended)
	var retry keel.Timer
	for {
		var again <-chan time.Time
		if retry != nil {
			again = retry.C()
		}
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			return
		case <-l.changed:
		case <-again:
		}
		if retry != nil {
			retry.Stop()
			retry = nil
		}
		if err := l.reload(ctx); err != nil && ctx.Err() == nil {
			l.log.Error("ratelimit: reading the quotas", "error", err)
			retry = l.clock.NewTimer(retryLoad)
		}
	}
}

// applyNow reloads the quotas after this Limiter changed them, so that
// the change applies when Put or Delete returns; when the read fails, the
// watcher applies it.
func (l *Limiter) applyNow(ctx context.Context) {
	if err := l.reload(ctx); err != nil {
		l.log.Error("ratelimit: reading the quotas", "error", err)
	}
}

// reload reads the quotas and makes them the ones Allow applies. A quota
// that is as it was keeps its applied, and so its clients' counts.
func (l *Limiter) reload(ctx context.Context) error {
	var recs []record
	err := l.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		recs, err = load(tx)
		return err
	})
	if err != nil {
		return err
	}
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	old := l.table.Load()
	if old.closed {
		return nil
	}
	t := &table{byPath: make(map[string]*applied, len(recs)), first: map[string]bool{}}
	for _, r := range recs {
		q := r.quota()
		c := canon(q.Path)
		a := old.byPath[c]
		if a == nil || a.q != q {
			a = &applied{q: q, limit: q.limit(), interval: max(1, int64(q.Interval)), block: int64(q.BlockInterval)}
		}
		t.byPath[c] = a
		if c == "" {
			t.global = a
		} else {
			first, _, _ := strings.Cut(c, "/")
			t.first[first] = true
			t.depth = max(t.depth, strings.Count(c, "/")+1)
		}
	}
	l.table.Store(t)
	return nil
}

// QuotaError is the error of a request a rate-limit quota refuses
// (errors.As finds it in the error of Allow). It wraps keel.KindTooLarge.
type QuotaError struct {
	Name        string        // the quota's name
	Path        string        // the quota's path, as set
	Limit       int           // the requests a window allows
	Interval    time.Duration // the quota's window
	RequestPath string        // the path of the request refused
	Client      string        // the client refused
	// RetryAfter is how long until the client may be allowed again: the
	// end of its window, or of its block.
	RetryAfter time.Duration
	// Blocked reports that the client is refused for the quota's
	// BlockInterval, not only until its window ends.
	Blocked bool
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("ratelimit: request path %q: rate limit quota %q exceeded: at most %d requests per %s", e.RequestPath, e.Name, e.Limit, e.Interval)
}

// Unwrap returns keel.KindTooLarge.
func (e *QuotaError) Unwrap() error { return keel.KindTooLarge }

// Allow counts a request of client for path and returns nil when the
// quota that applies to it allows it (or none applies, or path is
// exempt), and otherwise a *QuotaError, with keel.RetryAfterOf's hint of
// its RetryAfter. path is the request's path under the API's root (Vault's
// request path: "secret/app/db" for /v1/secret/app/db), client the
// address the request comes from (the IP address, as Vault's CE counts).
// After Close it fails with keel.KindUnavailable.
func (l *Limiter) Allow(ctx context.Context, path, client string) error {
	t := l.table.Load()
	if len(t.byPath) == 0 {
		if t.closed {
			return errClosed
		}
		return nil
	}
	path = strings.TrimPrefix(path, "/")
	a := t.match(path)
	if a == nil || l.exempt(path) {
		return nil
	}
	retry, blocked, ok := l.take(a, client)
	if ok {
		return nil
	}
	return keel.WithRetryAfter(&QuotaError{
		Name: a.q.Name, Path: a.q.Path, Limit: int(a.limit), Interval: a.q.Interval,
		RequestPath: path, Client: client, RetryAfter: time.Duration(retry), Blocked: blocked,
	}, time.Duration(retry))
}

func (l *Limiter) exempt(path string) bool {
	if l.exact[path] {
		return true
	}
	for _, p := range l.prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// match returns the most specific quota that covers path: the one of the
// longest path among path and its parents, up to "". A path whose first
// segment starts no quota's path has only the global quota, if any; the
// others are looked up from the depth of the deepest quota up.
func (t *table) match(path string) *applied {
	c := strings.TrimSuffix(path, "/")
	first, _, _ := strings.Cut(c, "/")
	if !t.first[first] {
		return t.global
	}
	for i, n := 0, 0; i < len(c); i++ {
		if c[i] == '/' {
			if n++; n == t.depth {
				c = c[:i]
				break
			}
		}
	}
	for {
		if a := t.byPath[c]; a != nil {
			return a
		}
		if c == "" {
			return nil
		}
		i := strings.LastIndexByte(c, '/')
		if i < 0 {
			c = ""
		} else {
			c = c[:i]
		}
	}
}

// take counts a request of client under a: ok, or how long until it may
// be allowed (ns) and whether it is blocked.
func (l *Limiter) take(a *applied, client string) (retry int64, blocked, ok bool) {
	now := l.clock.Now().UnixNano()
	s := &l.parts[maphash.String(l.seed, client)%shards]
	key := clientKey{a, client}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now >= s.nextSweep {
		s.sweep(now)
	}
	b := s.clients[key]
	if b == nil {
		if len(s.clients) >= l.perShard {
			s.evict(now)
		}
		b = &bucket{start: now, avail: a.limit}
		s.clients[key] = b
	}
	if b.blocked != 0 {
		if now < b.blocked {
			return b.blocked - now, true, false
		}
		b.blocked = 0
	}
	if w := (now - b.start) / a.interval; now >= b.start && w > b.window {
		b.window, b.avail = w, a.limit
	}
	if b.avail > 0 {
		b.avail--
		return 0, false, true
	}
	if a.block > 0 {
		b.blocked = now + a.block
		return a.block, true, false
	}
	return b.start + (b.window+1)*a.interval - now, false, false
}

// sweep forgets the clients that are idle at now.
func (s *shard) sweep(now int64) {
	s.nextSweep = now + int64(sweepEvery)
	for k, b := range s.clients {
		if b.idleAt(k.q) <= now {
			delete(s.clients, k)
		}
	}
}

// evict forgets one client to make room: of evictSample, the first idle
// one, else the one that is idle first.
func (s *shard) evict(now int64) {
	var victim clientKey
	first, n := int64(0), 0
	for k, b := range s.clients {
		at := b.idleAt(k.q)
		if at <= now {
			victim = k
			break
		}
		if n == 0 || at < first {
			victim, first = k, at
		}
		if n++; n == evictSample {
			break
		}
	}
	delete(s.clients, victim)
}

// clients reports how many clients the Limiter counts now.
func (l *Limiter) clients() int {
	n := 0
	for i := range l.parts {
		s := &l.parts[i]
		s.mu.Lock()
		n += len(s.clients)
		s.mu.Unlock()
	}
	return n
}
