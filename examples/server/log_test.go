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

	"github.com/keelhq/keel"
)

func TestLogRequests(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	tokens := newTokenTable()
	tokens.add("t-alice-s3cret", keel.Principal{ID: "alice"})
	h := authenticate(tokens, logRequests(logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	h := logRequests(slog.New(slog.NewJSONHandler(&buf, nil)), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["status"] != float64(200) || line["principal"] != "" {
		t.Errorf("status %v, principal %q; want 200 and anonymous", line["status"], line["principal"])
	}
}
