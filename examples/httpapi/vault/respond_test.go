package vault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// TestWriteJSONMatchesEncodingJSON checks that the hand-written encoder of
// the envelope writes what encoding/json's Encoder writes for it.
func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	odd := "a\"b\\c\n\r\t\b\f\x01<>&\u2028\u2029é\xff日本"
	secret := map[string]any{"password": odd, "n": json.Number("12.50"), "list": []any{"x", true, nil}}
	stored, err := json.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	large := map[string]any{"v": strings.Repeat(odd, largeData/len(odd)+1)}
	storedLarge, err := json.Marshal(large)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		resp *response
		want *response // what encoding/json is given; nil: resp
	}{
		{name: "nil data", resp: &response{RequestID: "r-1"}},
		{name: "keys", resp: &response{RequestID: "r", Data: keysData{"a", "b/", odd, ""}},
			want: &response{RequestID: "r", Data: map[string]any{"keys": []string{"a", "b/", odd, ""}}}},
		{name: "keys map", resp: &response{Data: map[string]any{"keys": []string{"x", odd}}}},
		{name: "empty keys", resp: &response{Data: keysData{}}, want: &response{Data: map[string]any{"keys": []string{}}}},
		{name: "raw", resp: &response{RequestID: "r", LeaseID: "secret/x/" + odd, Renewable: true, LeaseDuration: 2764800, Data: rawData(stored), MountType: "kv"},
			want: &response{RequestID: "r", LeaseID: "secret/x/" + odd, Renewable: true, LeaseDuration: 2764800, Data: secret, MountType: "kv"}},
		{name: "raw, large", resp: &response{RequestID: "r", LeaseID: "secret/x/" + odd + `"data":null`, Data: rawData(storedLarge), MountType: "kv"},
			want: &response{RequestID: "r", LeaseID: "secret/x/" + odd + `"data":null`, Data: large, MountType: "kv"}},
		{name: "map", resp: &response{Data: map[string]any{"id": "x", "ttl": int64(-3)}, Warnings: []string{odd}}},
		{name: "secret map", resp: &response{LeaseID: "l", Data: secret}},
		{name: "odd keys", resp: &response{Data: map[string]any{odd: odd, "": nil, "<": map[string]any{"z": 1, "a": 2}}}},
		{name: "nil map", resp: &response{Data: map[string]any(nil)}},
		{name: "lookup", resp: &response{Data: &leaseLookupData{ID: "i", IssueTime: "t", ExpireTime: nil, TTL: 5}},
			want: &response{Data: map[string]any{"id": "i", "issue_time": "t", "expire_time": nil, "last_renewal_time": nil, "renewable": false, "ttl": 5}}},
		{name: "empty warnings", resp: &response{Warnings: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeJSON(rec, 200, tc.resp)
			want := tc.want
			if want == nil {
				want = tc.resp
			}
			var buf bytes.Buffer
			if err := json.NewEncoder(&buf).Encode(want); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != buf.String() {
				t.Errorf("got  %s\nwant %s", got, buf.String())
			}
			if rec.Header().Get("Content-Length") != strings.TrimSpace(itoa(buf.Len())) {
				t.Errorf("Content-Length %q, want %d", rec.Header().Get("Content-Length"), buf.Len())
			}
		})
	}
}

// discardWriter is an http.ResponseWriter that drops what it is given.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || strings.Count(id, "-") != 4 {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
	}
}

func BenchmarkWriteJSONList(b *testing.B) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "key-" + itoa(100000+i)
	}
	for _, impl := range []string{"keel", "encoding-json"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w := discardWriter{http.Header{}}
			for b.Loop() {
				if impl == "keel" {
					writeJSON(w, 200, newResponse("kv", keysData(keys)))
				} else {
					json.NewEncoder(w).Encode(newResponse("kv", map[string]any{"keys": keys}))
				}
			}
		})
	}
}

// TestWriteErrorRetryAfter: an error that carries a retry hint answers a
// Retry-After header in whole seconds, rounded up, with its kind's status;
// one without a hint has no header.
func TestWriteErrorRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		header string
	}{
		{keel.WithRetryAfter(fmt.Errorf("settling: %w", keel.KindUnavailable), 1500*time.Millisecond), http.StatusServiceUnavailable, "2"},
		{keel.WithRetryAfter(fmt.Errorf("busy: %w", keel.KindConflict), 3*time.Second), http.StatusBadRequest, "3"},
		{keel.WithRetryAfter(keel.KindUnavailable, 0), http.StatusServiceUnavailable, "1"}, // at least a second
		{fmt.Errorf("down: %w", keel.KindUnavailable), http.StatusServiceUnavailable, ""},
	} {
		rec := httptest.NewRecorder()
		writeError(rec, tc.err)
		if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.header {
			t.Errorf("writeError(%v): %d Retry-After %q, want %d %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.header)
		}
	}
}

// TestWriteErrorDropsThePackage: a library error's message reaches the
// client without the package that starts it, as Vault words its own.
func TestWriteErrorDropsThePackage(t *testing.T) {
	for msg, want := range map[string]string{
		`ldapengine: library set "team": no service accounts available`: `library set "team": no service accounts available`,
		`kv: read "a": the store is closed`:                             `read "a": the store is closed`,
		`ldapengine: passwordpolicy: no policy "p"`:                     `no policy "p"`,
		`ldap: the directory is down`:                                   `ldap: the directory is down`,
	} {
		rec := httptest.NewRecorder()
		writeError(rec, fmt.Errorf("%s: %w", msg, keel.KindConflict))
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 || body.Errors[0] != want+": conflict" {
			t.Errorf("%q: %s, want %q", msg, rec.Body.String(), want+": conflict")
		}
	}
}

// The values of the Content-Type and Cache-Control headers of JSON answers
// are shared between answers (issue 32: two allocations fewer each); a
// header added to one answer does not reach the next.
func TestJSONHeadersSharedButNotChanged(t *testing.T) {
	first := httptest.NewRecorder()
	writeJSON(first, http.StatusOK, map[string]string{"a": "b"})
	first.Header().Add("Cache-Control", "private")
	first.Header().Add("Content-Type", "charset=utf-8")
	next := httptest.NewRecorder()
	writeJSON(next, http.StatusOK, map[string]string{"a": "b"})
	if got := next.Header().Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
		t.Errorf("Cache-Control = %q, want [no-store]", got)
	}
	if got := next.Header().Values("Content-Type"); len(got) != 1 || got[0] != "application/json" {
		t.Errorf("Content-Type = %q, want [application/json]", got)
	}
}

// The envelope of a kv read (its data the stored JSON, no wrap_info, no
// auth) is encoded without an allocation into a buffer large enough
// (issue 32): an absent value is written as null without json.Marshal.
func TestEnvelopeOfARawReadAllocatesNothing(t *testing.T) {
	r := leasedResponse("kv", "", false, 0, rawData(`{"password":"hunter2"}`))
	buf := make([]byte, 0, sizeHint(r))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := appendResponse(buf[:0], r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("appendResponse allocates %v times, want 0", allocs)
	}
	got, _ := appendResponse(nil, r)
	plain := *r
	plain.Data = json.RawMessage(r.Data.(rawData))
	want, _ := json.Marshal(plain)
	if string(got) != string(want) {
		t.Errorf("appendResponse = %s\nwant %s", got, want)
	}
}
