package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keelhq/keel"
)

// logLine parses a line of the request log: its keys and values,
// unquoting the quoted ones.
func logLine(t *testing.T, line string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rest := strings.TrimSuffix(line, "\n")
	for rest != "" {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			t.Fatalf("no key=value at %q in %q", rest, line)
		}
		if strings.HasPrefix(v, `"`) {
			q, err := strconv.QuotedPrefix(v)
			if err != nil {
				t.Fatalf("bad quoting at %q: %v", v, err)
			}
			out[k], _ = strconv.Unquote(q)
			rest = strings.TrimPrefix(v[len(q):], " ")
		} else {
			val, after, _ := strings.Cut(v, " ")
			out[k], rest = val, after
		}
	}
	return out
}

func TestLogRequests(t *testing.T) {
	var buf bytes.Buffer
	tokens := newTokenTable()
	tokens.add("t-alice-s3cret", keel.Principal{ID: "alice"})
	h := authenticate(tokens, observeRequests(requestLog{w: &buf}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	line := logLine(t, out)
	for k, want := range map[string]string{
		"level": "INFO", "msg": "request", "method": "POST", "path": "/v1/secret/x",
		"status": "418", "bytes": strconv.Itoa(len("short and stout")), "principal": "alice",
	} {
		if line[k] != want {
			t.Errorf("%s = %q, want %q", k, line[k], want)
		}
	}
	if _, err := time.ParseDuration(line["duration"]); err != nil {
		t.Errorf("duration = %q: %v", line["duration"], err)
	}
	if _, err := time.Parse(time.RFC3339, line["time"]); err != nil {
		t.Errorf("time = %q: %v", line["time"], err)
	}
}

func TestLogRequestsDefaultStatus(t *testing.T) {
	var buf bytes.Buffer
	h := observeRequests(requestLog{w: &buf}, nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	line := logLine(t, buf.String())
	if line["status"] != "200" || line["principal"] != "" {
		t.Errorf("status %q, principal %q; want 200 and anonymous", line["status"], line["principal"])
	}
}

// TestRequestLogLineIsSlogs: the request log's line, made by hand, is the
// line slog's text handler writes for the same values, whatever the path
// and principal hold (spaces, quotes, '=', control characters, invalid
// UTF-8, other scripts).
func TestRequestLogLineIsSlogs(t *testing.T) {
	at := time.Date(2026, 11, 28, 2, 30, 0, 123456789, time.FixedZone("", 3600))
	for _, v := range []string{
		"/v1/secret/x", "", "/v1/a b", `/v1/a"b`, "/v1/k=v", "/v1/tab\there", "/v1/\x00\x7f", "/v1/\xff\xfe",
		"/v1/ключ", "/v1/\u00a0nbsp", "/v1/a\\b", "/v1/\u200bzw", "/v1/é=", "alice@example.com", "/v1/\n",
	} {
		var got bytes.Buffer
		op := &keel.Op{Name: requestOp, Resource: "GET " + v, Principal: keel.Principal{ID: v}, Start: at, Duration: 1234567 * time.Nanosecond,
			Output: &httpResult{Status: 200, Bytes: 42}}
		requestLog{w: &got, stamps: new(stamps)}.End(context.Background(), op)

		var want bytes.Buffer
		l := slog.New(slog.NewTextHandler(&want, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				a.Value = slog.TimeValue(at.Add(op.Duration))
			}
			return a
		}}))
		l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("path", v),
			slog.Int("status", 200), slog.Int64("bytes", 42), slog.Duration("duration", op.Duration), slog.String("principal", v))
		if got.String() != want.String() {
			t.Errorf("value %q:\n got %s\nwant %s", v, got.String(), want.String())
		}
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

// The request log's times, formatted from the last second's text, are
// AppendFormat's: across second boundaries, locations (a zone's change of
// offset included), and years of other lengths.
func TestStampsAreAppendFormats(t *testing.T) {
	locs := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -(9*3600 + 30*60))}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		locs = append(locs, ny)
	}
	var s stamps
	rng := rand.New(rand.NewPCG(1, 2))
	starts := []time.Time{
		time.Date(2026, 3, 8, 6, 59, 58, 0, time.UTC), // New York's change to summer time at 07:00 UTC
		time.Date(2026, 11, 28, 2, 30, 59, 999_000_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, start := range starts {
		at := start
		for range 2000 {
			at = at.Add(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
			loc := locs[rng.IntN(len(locs))]
			tm := at.In(loc)
			got := string(s.append([]byte("x"), tm))
			if want := "x" + tm.Format(stampLayout); got != want {
				t.Fatalf("%v: got %s, want %s", tm, got, want)
			}
		}
	}
}
