package main

import (
	"log/slog"
	"net/http"
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
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
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
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
