package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keelhq/keel"
)

func TestLogRequests(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	tokens := newTokenTable()
	tokens.add("t-alice-s3cret", keel.Principal{ID: "alice"})
	h := authenticate(tokens, observeRequests(requestLog{logger}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout")
	})))

	req := httptest.NewRequest(http.MethodPost, "/v1/secret/x?token=q-s3cret", nil)
	req.Header.Set(headerSecretsToken, "t-alice-s3cret")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTeapot {
		t.Fatalf("status %d, want 418", rec.Code)
	}

	out := buf.String()
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want one log line, got:\n%s", out)
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the log shows a token: %s", out)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"msg": "request", "method": "POST", "path": "/v1/secret/x",
		"status": float64(418), "bytes": float64(len("short and stout")), "principal": "alice",
	} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v", k, line[k], want)
		}
	}
	if _, ok := line["duration"].(float64); !ok {
		t.Errorf("duration = %v, want a number", line["duration"])
	}
}

func TestLogRequestsDefaultStatus(t *testing.T) {
	var buf bytes.Buffer
	h := observeRequests(requestLog{slog.New(slog.NewJSONHandler(&buf, nil))}, nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["status"] != float64(200) || line["principal"] != "" {
		t.Errorf("status %v, principal %q; want 200 and anonymous", line["status"], line["principal"])
	}
}

// The sleeps of TestLineBufferWritesLate are on synctest's fake clock.
func TestLineBufferWritesLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		lb := newLineBuffer(&out, 100*time.Millisecond)
		io.WriteString(lb, "one\n")
		time.Sleep(50 * time.Millisecond)
		io.WriteString(lb, "two\n")
		synctest.Wait()
		if got := out.String(); got != "" {
			t.Fatalf("written before the delay: %q", got)
		}
		time.Sleep(50 * time.Millisecond) // 100 ms after the first line
		synctest.Wait()
		if got := out.String(); got != "one\ntwo\n" {
			t.Fatalf("after the delay: %q", got)
		}
		io.WriteString(lb, "three\n")
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := out.String(); got != "one\ntwo\nthree\n" {
			t.Fatalf("a second batch: %q", got)
		}
		io.WriteString(lb, "four\n")
		if err := lb.Close(); err != nil || out.String() != "one\ntwo\nthree\nfour\n" {
			t.Fatalf("Close: %v, %q", err, out.String())
		}
		io.WriteString(lb, "five\n")
		if !strings.HasSuffix(out.String(), "four\nfive\n") {
			t.Fatalf("after Close: %q", out.String())
		}
	})
}

func TestLineBufferFlushesWhenFull(t *testing.T) {
	var out bytes.Buffer
	lb := newLineBuffer(&out, time.Hour)
	line := strings.Repeat("x", 99) + "\n"
	n := 0
	for out.Len() == 0 {
		io.WriteString(lb, line)
		n++
		if n > flushSize {
			t.Fatal("never flushed")
		}
	}
	if out.Len() < flushSize || out.Len()%len(line) != 0 {
		t.Errorf("flushed %d bytes, want at least %d in whole lines", out.Len(), flushSize)
	}
	io.WriteString(lb, "last\n")
	if err := lb.Close(); err != nil || !strings.HasSuffix(out.String(), "last\n") {
		t.Errorf("Close: %v; the last line missing", err)
	}
}
