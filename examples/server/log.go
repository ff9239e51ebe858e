package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

// requestOp is the name under which the server reports each request
// through the instrumentation seam (keel.Observer).
const requestOp = "http.Request"

// observeRequests reports each request to obs as the operation requestOp:
// its resource is the method and the path (never the query string, where
// some clients put tokens), its caller the authenticated principal, and
// it ends with an *httpResult, its Output when the status is below 400
// and its Err otherwise (whose kind is the status's, see kindOfStatus).
// The request log (requestLog), the request metrics and the traces are
// consumers of it. A request obs refuses is answered 503, unserved.
func observeRequests(obs keel.Observer, clock keel.Clock, next http.Handler) http.Handler {
	return front(nil, obs, clock, next)
}

// requestObserver returns what is told of the server's requests: the
// telemetry, when there is one, and the request log, written to w.
func (d *deps) requestObserver(w io.Writer) keel.Observer {
	var tel keel.Observer
	if d.telemetry != nil {
		tel = d.telemetry
	}
	return keel.Observers(tel, requestLog{w: w, stamps: new(stamps)})
}

// httpResult is how a request ended: its status and the bytes of its
// body. As an error (a status of 400 or more) it wraps the keel.Kind of
// its status, so that a consumer counts outcomes as for the library's
// operations.
type httpResult struct {
	Status int
	Bytes  int64
}

func (r *httpResult) Error() string { return "HTTP status " + strconv.Itoa(r.Status) }

func (r *httpResult) Unwrap() error { return kindOfStatus(r.Status) }

// kindOfStatus is the keel.Kind of an HTTP status of 400 or more.
func kindOfStatus(status int) keel.Kind {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusMethodNotAllowed:
		return keel.KindInvalid
	case http.StatusUnauthorized:
		return keel.KindUnauthenticated
	case http.StatusForbidden:
		return keel.KindForbidden
	case http.StatusNotFound:
		return keel.KindNotFound
	case http.StatusConflict, http.StatusPreconditionFailed:
		return keel.KindConflict
	case http.StatusRequestEntityTooLarge:
		return keel.KindTooLarge
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway:
		return keel.KindUnavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return keel.KindDeadlineExceeded
	}
	return keel.KindInternal
}

// requestLog is the consumer of the seam that writes the request log: one
// line per request (the operation requestOp; it ignores the others), with
// its method, path, status, size, duration and the ID of its principal
// (empty for an anonymous caller). It never logs headers, which carry
// tokens, nor the query string. The line is the one slog's text handler
// writes at level INFO with the message "request" (appendLogValue), made
// by hand: through slog it cost about 5% of a request's CPU.
type requestLog struct {
	w      io.Writer
	stamps *stamps // nil: each time formatted whole
}

func (requestLog) Begin(ctx context.Context, _ *keel.Op) (context.Context, error) { return ctx, nil }

func (rl requestLog) End(_ context.Context, op *keel.Op) {
	if op.Name != requestOp {
		return
	}
	res, _ := op.Output.(*httpResult)
	if res == nil {
		res, _ = op.Err.(*httpResult)
	}
	if res == nil {
		return
	}
	method, path, _ := strings.Cut(op.Resource, " ")
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], "time="...)
	b = rl.stamps.append(b, op.Start.Add(op.Duration))
	b = append(b, " level=INFO msg=request method="...)
	b = appendLogValue(b, method)
	b = append(b, " path="...)
	b = appendLogValue(b, path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(res.Status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, res.Bytes, 10)
	b = append(b, " duration="...)
	b = append(b, op.Duration.String()...)
	b = append(b, " principal="...)
	b = appendLogValue(b, op.Principal.ID)
	b = append(b, '\n')
	rl.w.Write(b)
	*bp = b
	linePool.Put(bp)
}

// stampLayout is the layout of the request log's times, slog's.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// stamps formats the request log's times as time.Time.AppendFormat does
// with stampLayout, from the text of the last second it formatted: a line
// of the same second, in the same location, appends that text with its
// own milliseconds, which is what AppendFormat writes (a location and an
// instant fix the wall clock and the offset). Through AppendFormat alone
// a line's time was about 2% of a kv request's CPU. It is safe for
// concurrent use.
type stamps struct{ last atomic.Pointer[stamp] }

// stamp is one second formatted: text[:20] is "2006-01-02T15:04:05.",
// text[23:] the zone.
type stamp struct {
	sec  int64
	loc  *time.Location
	text []byte
}

func (s *stamps) append(b []byte, t time.Time) []byte {
	if s == nil {
		return t.AppendFormat(b, stampLayout)
	}
	sec := t.Unix()
	if st := s.last.Load(); st != nil && st.sec == sec && st.loc == t.Location() {
		ms := t.Nanosecond() / int(time.Millisecond)
		b = append(b, st.text[:20]...)
		b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
		return append(b, st.text[23:]...)
	}
	n := len(b)
	b = t.AppendFormat(b, stampLayout)
	// Kept only in the usual shape: a year of four digits.
	if text := b[n:]; len(text) >= 24 && text[19] == '.' && text[4] == '-' {
		s.last.Store(&stamp{sec: sec, loc: t.Location(), text: slices.Clone(text)})
	}
	return b
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendLogValue appends s as a value of the text format: bare when it is
// not empty and every character is printable and neither a space, '=' nor
// '"'; quoted (strconv.AppendQuote) otherwise, so that a path cannot add
// a key of its own to the line.
func appendLogValue(b []byte, s string) []byte {
	if s == "" {
		return append(b, `""`...)
	}
	for _, r := range s {
		if r == utf8.RuneError || r == '=' || r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(b, s...)
}

// statusRecorder remembers the status and counts the body bytes of a
// response. Unwrap lets http.ResponseController reach the writer beneath
// (to flush, or to set deadlines).
//
// It also carries what limitBodies counts of the request (budget, nil
// when not counted): the bytes of the response beyond allowance are added
// to the budget as they are written, and counted sums all the bytes added
// so, given back when the request ends.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64

	budget      *budget
	held        int64 // the bytes acquired for the request before it was served
	allowance   int64 // the response's bytes reserved in advance
	respCounted int64 // the response's bytes added beyond allowance
	counted     int64 // all the bytes added, the response's and the body's

	// Kept here so that a request allocates them with the recorder:
	// observeRequests's result, and limitBodies's rateBody.
	result httpResult
	body   rateBody
	// reserving: the request's context holds reserve as its
	// keel.Reserver (front put it there).
	reserving bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 { // 1xx responses are not the final status
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.budget != nil {
		// Counted before they are written: a slow client holds them.
		if over := s.bytes + int64(len(b)) - s.allowance; over > s.respCounted {
			d := over - s.respCounted
			s.budget.add(d)
			s.respCounted += d
			s.counted += d
		}
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// lineBuffer collects the request log's lines and writes them to w in
// batches: when it holds flushSize bytes, or delay after the first line of
// a batch, whichever comes first. Under load a request so shares one
// write(2) with a few hundred others instead of paying its own; when
// requests are few, a line is written at most delay after it was logged.
// Lines still buffered when the process is killed are lost; Close writes
// them out.
//
// It is safe for concurrent use; slog handlers write each record with one
// Write, so lines are never split.
type lineBuffer struct {
	mu     sync.Mutex
	w      io.Writer
	delay  time.Duration
	buf    []byte
	timer  *time.Timer // writes the batch out; nil until the first line
	closed bool        // by Close: lines go straight to w
}

// flushSize is the size of the batches a lineBuffer writes.
const flushSize = 32 << 10

func newLineBuffer(w io.Writer, delay time.Duration) *lineBuffer {
	return &lineBuffer{w: w, delay: delay, buf: make([]byte, 0, flushSize+1024)}
}

// Write buffers p, and reports the error of a write of the batch to w, if
// it made one.
func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= flushSize {
		return len(p), b.flushLocked()
	}
	if len(b.buf) == len(p) { // the first line of a batch
		if b.timer == nil {
			b.timer = time.AfterFunc(b.delay, func() { b.Flush() })
		} else {
			b.timer.Reset(b.delay)
		}
	}
	return len(p), nil
}

// Flush writes out what is buffered.
func (b *lineBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// Close writes out what is buffered and stops the timer; later lines are
// written as they come.
func (b *lineBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.flushLocked()
}

func (b *lineBuffer) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}
