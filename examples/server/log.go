package main

import (
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/keelhq/keel"
)

// logRequests writes one log line per request: method, path, status, size,
// duration and the ID of the principal (empty for an anonymous caller). It
// never logs headers, which carry tokens, nor the query string, where some
// clients put them.
func logRequests(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		p, _ := keel.PrincipalFrom(r.Context())
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", time.Since(start)),
			slog.String("principal", p.ID),
		)
	})
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
	allowance   int64 // the response's bytes reserved in advance
	respCounted int64 // the response's bytes added beyond allowance
	counted     int64 // all the bytes added, the response's and the body's
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
