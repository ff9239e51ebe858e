package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/policy"
)

// The limits the server puts on every request, whatever its dialect, before
// an adapter sees it (checkPath, limitBodies). They live here, in the
// server, not in each adapter: one place for the three dialects.
const (
	// maxPathBytes is the longest request path (decoded, query excluded)
	// served; a longer one answers 400. It is the stores' default key
	// size (storage.DefaultLimits().MaxKeySize, 4 KiB) and Linux's PATH_MAX:
	// nothing longer could be stored as a key anyway.
	maxPathBytes = 4096
	// maxSegmentBytes is the longest segment of a path (between two "/")
	// served; a longer one answers 400. It bounds a mount path, a secret's
	// name or a group's name to what a file name of most file systems
	// holds, four times over (NAME_MAX is 255).
	maxSegmentBytes = 1024

	// defaultMaxInflight is the default of -max-inflight-bytes: Vault's
	// max_request_size (32 MiB), the largest body an adapter reads. One
	// body of that size is in flight at a time, or many smaller ones.
	defaultMaxInflight = 32 << 20
	// bodyCopies is how many times its length a request body is reserved
	// for: the heap a body costs while it is served. A write holds the
	// bytes read (the strings decoded from them are slices of them:
	// jsonobj.DecodeOwned), the value encoded to be stored, the store's
	// copy of it (in memory, the value stored), and the pages its commit
	// writes to a bbolt file (an etcd client's request, to etcd). A body
	// of a quarter of the bound or more runs alone: with 16 chunked
	// writes of 30 MiB and a bound of 64 MiB, the server's peak RSS over
	// its idle RSS is about 110 MiB over a bbolt file, and 560 MiB on the
	// memory store, 480 MiB of them the values (TestInflightMemoryBound).
	bodyCopies = 4
	// inflightWait is how long a request waits for room before it is
	// answered 503.
	inflightWait = 10 * time.Second
	// inflightRetryAfter is the Retry-After of that 503, in seconds.
	inflightRetryAfter = "1"
	// smallBody is the size of a request below which it does not queue
	// behind larger ones: it is admitted at once when it fits.
	smallBody = 64 << 10
	// collectAfter is the size of the bodies of a request from which
	// its end runs a garbage collection before it gives its reservation
	// back: the copies of its bodies are garbage then, and without it
	// the Go runtime lets the heap grow to twice the live data (GOGC=100)
	// before it collects, which with a store of large values in memory
	// is far beyond the bodies in flight; run in the background, the
	// collection would let the next request allocate before the copies
	// are freed. A collection costs the marking of the heap's pointers,
	// not of the bodies' bytes.
	collectAfter = 4 << 20
	// anonInflight is the budget of the requests that carry no known
	// token, apart from the shared one: what anonymous connections hold
	// never keeps an authenticated caller waiting.
	anonInflight = 2 << 20
	// minBodyRate is the slowest a request body may arrive, in bytes per
	// second, after bodyGrace: a body that trickles slower is cut off, so
	// that it does not hold its reservation until the read timeout.
	minBodyRate = 64 << 10
	bodyGrace   = 2 * time.Second
)

// routeCap returns the largest body the adapter of r's path reads: a
// reservation never exceeds it, and a body announced beyond it is refused
// before it is read.
func routeCap(r *http.Request) int64 {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/v2/policies/") && strings.HasSuffix(p, "/upload"):
		return policy.MaxCodeSize
	case strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/.well-known/"):
		return tfe.MaxDocument
	case isConsulPath(p):
		return consul.MaxBody
	default:
		return vault.MaxBody
	}
}

// checkPath answers 400 for a request whose path is longer than
// maxPathBytes, or has a segment longer than maxSegmentBytes, in the
// dialect of the path (refuse); else next serves it.
func checkPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := pathProblem(r.URL.Path); msg != "" {
			refuse(w, r, http.StatusBadRequest, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathProblem says what is wrong with the length of path p, or "".
func pathProblem(p string) string {
	if len(p) > maxPathBytes {
		return "path: longer than " + strconv.Itoa(maxPathBytes) + " bytes"
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if i-start > maxSegmentBytes {
				return "path: a segment is longer than " + strconv.Itoa(maxSegmentBytes) + " bytes"
			}
			start = i + 1
		}
	}
	return ""
}

// refuse answers status with msg as the adapter of r's path would write
// an error: a JSON:API error document under /api/ and /.well-known/,
// Consul's plain text under Consul's paths, else Vault's {"errors":[msg]}.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p := r.URL.Path
	h := w.Header()
	var body []byte
	switch {
	case strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/.well-known/"):
		h.Set("Content-Type", "application/vnd.api+json")
		body, _ = json.Marshal(map[string]any{"errors": []map[string]string{{
			"status": strconv.Itoa(status), "title": strings.ToLower(http.StatusText(status)), "detail": msg,
		}}})
	case isConsulPath(p):
		h.Set("Content-Type", "text/plain; charset=utf-8")
		body = []byte(msg)
	default:
		h.Set("Content-Type", "application/json")
		body, _ = json.Marshal(map[string][]string{"errors": {msg}})
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// isConsulPath reports whether p is one of the Consul adapter's paths.
func isConsulPath(p string) bool {
	return p == "/v1/peerings" || p == "/v1/config" ||
		strings.HasPrefix(p, "/v1/peering/") || strings.HasPrefix(p, "/v1/config/") ||
		strings.HasPrefix(p, "/v1/internal/peering/")
}

// budget bounds the bytes of request and response bodies in flight. A
// request reserves, before it is served, what its body costs (bodyCopies
// times its length); while it is served, the size of the large values it
// loads (keel.Reserver); the bytes of a response beyond what was reserved
// are counted as they are written; all is given back when the request
// ends. A request that does not fit waits, in order of arrival, up to
// wait; then it is refused. A reservation larger than the whole limit is
// lowered to it: such a request runs alone. The zero value is not usable;
// newBudget makes one. It is safe for concurrent use.
type budget struct {
	limit int64
	wait  time.Duration

	mu    sync.Mutex
	used  int64
	queue []*waiter // first come, first served
}

// waiter is a request waiting for room: n bytes; ready is closed once they
// are granted.
type waiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

func newBudget(limit int64, wait time.Duration) *budget {
	return &budget{limit: limit, wait: wait}
}

// acquire reserves n bytes: at once when they fit (and no larger request
// waits before, unless n is small), else after waiting for room up to
// b.wait. It reports false, having reserved nothing, when the wait ends or
// ctx does first. It returns the bytes reserved: n, or b.limit when n is
// larger.
func (b *budget) acquire(ctx context.Context, n int64) (int64, bool) {
	n = min(n, b.limit)
	b.mu.Lock()
	if b.used+n <= b.limit && (len(b.queue) == 0 || n <= smallBody) {
		b.used += n
		b.mu.Unlock()
		return n, true
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()

	t := time.NewTimer(b.wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return n, true
	case <-t.C:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted { // granted while it stopped waiting
		return n, true
	}
	for i, q := range b.queue {
		if q == w {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.grantLocked() // those behind it may fit
	return 0, false
}

// add counts n more bytes, room or not: bytes already in memory (a
// response being written, a body longer than announced).
func (b *budget) add(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// tryAdd counts n more bytes when they fit, and reports whether they did.
func (b *budget) tryAdd(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// release gives n bytes back and admits the waiters that now fit.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked admits the waiters at the head of the queue that fit.
func (b *budget) grantLocked() {
	for len(b.queue) > 0 && b.used+b.queue[0].n <= b.limit {
		w := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.used += w.n
		w.granted = true
		close(w.ready)
	}
}

// inUse returns the bytes reserved or counted now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// limitBodies serves r within a budget: shared, the one of the requests
// whose token is known (authenticate runs before it), or anon, the small
// one of the others. It refuses at once (413) a body announced beyond the
// cap of its route (routeCap); it reserves bodyCopies times the length of
// r's body (or of the route's cap when it is not known); a request
// that gets no room within the budget's wait is answered 503 with
// Retry-After, in the dialect of its path (refuse). A body that arrives
// slower than minBodyRate after bodyGrace is cut off. The large values
// the request loads are reserved through the keel.Reserver of its context
// (a reservation that gets no room fails Unavailable, answered 503 with
// Retry-After by the adapter); the bytes of the response beyond what was
// reserved are counted as they are written. Everything is given back when
// next returns.
func limitBodies(shared, anon *budget, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w}
		}
		b := shared
		if _, known := keel.PrincipalFrom(r.Context()); !known {
			b = anon
		}
		limit := routeCap(r)
		if r.ContentLength > limit {
			refuse(rec, r, http.StatusRequestEntityTooLarge, "request body: "+strconv.FormatInt(r.ContentLength, 10)+" bytes, over the "+strconv.FormatInt(limit, 10)+" this path reads")
			return
		}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rec.body = rateBody{ReadCloser: r.Body, rw: rec}
			r.Body = &rec.body
		}
		// A body of unknown length (chunked) reserves the route's cap:
		// counted only as it arrived, concurrent ones would each hold a
		// part of the budget and none could finish. A body costs
		// bodyCopies times its length.
		body := r.ContentLength
		if body < 0 {
			body = limit
		}
		held := int64(0)
		if body > 0 {
			var ok bool
			if held, ok = b.acquire(r.Context(), bodyCopies*body); !ok {
				rec.Header().Set("Retry-After", inflightRetryAfter)
				refuse(rec, r, http.StatusServiceUnavailable, "the server holds as many request and response bodies as it may (-max-inflight-bytes): retry later")
				return
			}
		}
		if r.ContentLength < 0 && held < limit {
			// The reservation was lowered to the whole budget, below the
			// body's cap: the bytes beyond are counted as they arrive.
			r.Body = &countedBody{ReadCloser: r.Body, rec: rec, b: b, reserved: held}
		}
		// The response's bytes count once beyond what was reserved for
		// it: the values the request loads.
		rec.budget, rec.held, rec.allowance, rec.respCounted, rec.counted = b, held, 0, 0, 0
		if !rec.reserving {
			r = r.WithContext(keel.WithReserver(r.Context(), rec.reserve))
		}
		next.ServeHTTP(rec, r)
		if held+rec.counted >= collectAfter {
			runtime.GC()
		}
		b.release(held + rec.counted)
		rec.budget = nil
	})
}

// reserve is the keel.Reserver of a request limitBodies counts: it adds
// n bytes to the budget the request draws from. A request never asks for
// more than the whole budget less what it holds: with all of it, it runs
// alone. It waits only when it holds nothing: two requests that each held
// a part while waiting for more could wait for each other. After the
// request, it reserves nothing.
func (rec *statusRecorder) reserve(ctx context.Context, n int64) error {
	b := rec.budget
	if b == nil {
		return nil
	}
	has := rec.held + rec.counted
	if n = min(n, b.limit-has); n <= 0 {
		return nil
	}
	got, ok := n, false
	if has == 0 {
		got, ok = b.acquire(ctx, n)
	} else {
		ok = b.tryAdd(n)
	}
	if !ok {
		rec.Header().Set("Retry-After", inflightRetryAfter)
		return errValuesFull
	}
	rec.allowance += got
	rec.counted += got
	return nil
}

// errValuesFull is the error of a keel.Reserver that got no room.
var errValuesFull = fmt.Errorf("the server holds as many request and response bodies as it may (-max-inflight-bytes): retry later: %w", keel.KindUnavailable)

// countedBody counts the bytes read from a body of unknown length beyond
// the bytes reserved for it, as they arrive, and refuses those that would
// pass the budget's bound: the read fails with errBodiesFull, which the
// adapters answer 413.
type countedBody struct {
	io.ReadCloser
	rec      *statusRecorder
	b        *budget
	reserved int64
	read     int64
	added    int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.read += int64(n)
	if over := c.read - c.reserved; over > c.added && c.rec.budget != nil {
		d := over - c.added
		if !c.b.tryAdd(d) {
			return 0, errBodiesFull
		}
		c.added += d
		c.rec.counted += d
	}
	return n, err
}

// errBodiesFull is the read error of a body of unknown length that would
// pass the bound on the bodies in flight.
var errBodiesFull = fmt.Errorf("request body: the server holds as many bodies as it may (-max-inflight-bytes): %w", keel.KindTooLarge)

// rateBody cuts a request body off when it arrives slower than
// minBodyRate after bodyGrace, counted from its first read (a request
// waiting for room in the budget reads nothing meanwhile): before each
// read it sets the connection's read deadline to the time by which the
// bytes read so far, and the next one, were due. A connection that cannot
// take deadlines (HTTP/2 streams may not) keeps the server's read timeout.
type rateBody struct {
	io.ReadCloser
	rw    http.ResponseWriter // whose connection's read deadline it sets
	start time.Time           // of the first read
	read  int64
}

func (b *rateBody) Read(p []byte) (int, error) {
	if b.start.IsZero() {
		b.start = time.Now()
	}
	due := b.start.Add(bodyGrace + time.Duration((b.read+1)*int64(time.Second)/minBodyRate))
	_ = http.NewResponseController(b.rw).SetReadDeadline(due) // not supported: the read timeout holds
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}
