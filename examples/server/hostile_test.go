package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/internal/keeltest"
)

// hostileCase is a request of the hostile-input suite and what must come
// of it: the status, and a piece of the body (the field or parameter
// named, the message).
type hostileCase struct {
	method, path, body string
	status             int
	want               string
}

// do sends the case to ts with the header (name, value) and returns the
// status and body.
func (ts *testServer) send(t *testing.T, method, path, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %.80s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func runHostile(t *testing.T, ts *testServer, cases map[string]hostileCase, header ...string) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, body := ts.send(t, tc.method, tc.path, tc.body, header...)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s %.80s: %d %.300s, want %d with %q", tc.method, tc.path, status, body, tc.status, tc.want)
			}
		})
	}
}

const hostileToken = "hostile-root"

// TestHostileVault is the hostile-input suite of the Vault dialect, as
// the server serves it: numbers beyond a duration or an int, negative
// ones, data after the JSON value, long paths. None answers 500, none is
// stored, and each problem names its field.
func TestHostileVault(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", hostileToken)
	header := []string{"X-Vault-Token", hostileToken}
	long := strings.Repeat("a", 900<<10)
	runHostile(t, ts, map[string]hostileCase{
		// Overflow and negative numbers.
		"renew increment beyond a duration": {"PUT", "/v1/sys/leases/renew", `{"lease_id":"secret/x/1","increment":18446744074}`, 400, "increment"},
		"renew increment string beyond":     {"PUT", "/v1/sys/leases/renew", `{"lease_id":"secret/x/1","increment":"18446744074"}`, 400, "increment"},
		"renew increment negative":          {"PUT", "/v1/sys/leases/renew", `{"lease_id":"secret/x/1","increment":-1}`, 400, "increment"},
		"renew increment in hours beyond":   {"PUT", "/v1/sys/leases/renew", `{"lease_id":"secret/x/1","increment":"9999999999h"}`, 400, "increment"},
		"mount default_lease_ttl beyond":    {"POST", "/v1/sys/mounts/m1", `{"type":"kv","config":{"default_lease_ttl":"18446744074"}}`, 400, "default_lease_ttl"},
		"mount max_lease_ttl negative":      {"POST", "/v1/sys/mounts/m2", `{"type":"kv","config":{"max_lease_ttl":"-5"}}`, 400, "max_lease_ttl"},
		"ldap length beyond an int":         {"POST", "/v1/ldap/config", `{"binddn":"cn=a","bindpass":"b","url":"ldap://127.0.0.1:1","length":99999999999999999999}`, 400, "length"},
		"ldap length negative":              {"POST", "/v1/ldap/config", `{"binddn":"cn=a","bindpass":"b","url":"ldap://127.0.0.1:1","length":-1}`, 400, "length"},
		"ldap ttl beyond":                   {"POST", "/v1/ldap/config", `{"binddn":"cn=a","bindpass":"b","url":"ldap://127.0.0.1:1","request_timeout":18446744074}`, 400, "request_timeout"},
		"irrevocable limit beyond":          {"GET", "/v1/sys/leases?type=irrevocable&limit=99999999999999999999", "", 400, "limit"},
		"irrevocable limit negative":        {"GET", "/v1/sys/leases?type=irrevocable&limit=-3", "", 400, "limit"},
		"health code beyond":                {"GET", "/v1/sys/health?activecode=99999999999999999999", "", 400, "activecode"},
		// Data after the JSON value: refused, and nothing stored.
		"kv write":          {"PUT", "/v1/secret/trailing", `{"a":"b"}{"c":"d"}`, 400, "after the JSON value"},
		"kv write garbage":  {"PUT", "/v1/secret/trailing", `{"a":"b"} x`, 400, "failed to parse JSON input"},
		"mount":             {"POST", "/v1/sys/mounts/trailing", `{"type":"kv"}{"type":"kv"}`, 400, "after the JSON value"},
		"group":             {"PUT", "/v1/identity/group/name/trailing", `{"policies":["a"]}{"c":"d"}`, 400, "after the JSON value"},
		"password policy":   {"PUT", "/v1/sys/policies/password/trailing", `{"policy":"length=20\nrule \"charset\" { charset = \"abc\" }"}{"c":"d"}`, 400, "after the JSON value"},
		"renew":             {"PUT", "/v1/sys/leases/renew", `{"lease_id":"secret/x/1"}{"increment":5}`, 400, "after the JSON value"},
		"revoke":            {"PUT", "/v1/sys/leases/revoke", `{"lease_id":"secret/x/1"}{}`, 400, "after the JSON value"},
		"ldap config":       {"POST", "/v1/ldap/config", `{"binddn":"cn=a"}{"url":"ldap://x"}`, 400, "after the JSON value"},
		"trailing space ok": {"PUT", "/v1/secret/spaced", "{\"a\":\"b\"}  \n\t", 204, ""},
		// Long paths and segments (limits.go).
		"900 KiB mount path":  {"POST", "/v1/sys/mounts/" + long, `{"type":"kv"}`, 400, "path: longer than 4096 bytes"},
		"long kv path":        {"PUT", "/v1/secret/" + strings.Repeat("a/", 2100), `{"a":"b"}`, 400, "path: longer"},
		"long segment":        {"PUT", "/v1/secret/" + strings.Repeat("s", 1025), `{"a":"b"}`, 400, "path: a segment is longer than 1024 bytes"},
		"long group name":     {"GET", "/v1/identity/group/name/" + strings.Repeat("g", 2000), "", 400, `{"errors":["path: a segment`},
		"segment at the edge": {"PUT", "/v1/secret/" + strings.Repeat("s", 1024), `{"a":"b"}`, 204, ""},
	}, header...)

	// Nothing of the refused writes was stored.
	for _, p := range []string{"/v1/secret/trailing", "/v1/identity/group/name/trailing", "/v1/sys/policies/password/trailing"} {
		if status, body := ts.send(t, "GET", p, "", header...); status != http.StatusNotFound {
			t.Errorf("GET %s after a refused write: %d %s, want 404", p, status, body)
		}
	}
	for _, p := range []string{"/v1/sys/mounts/m1", "/v1/sys/mounts/m2", "/v1/sys/mounts/trailing"} {
		if status, body := ts.send(t, "GET", p, "", header...); status != http.StatusBadRequest || !strings.Contains(body, "No secret engine mount") {
			t.Errorf("GET %s after a refused mount: %d %s, want 400 No secret engine mount", p, status, body)
		}
	}
}

// TestHostileTFE is the hostile-input suite of the JSON:API dialect.
func TestHostileTFE(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", hostileToken)
	header := []string{"Authorization", "Bearer " + hostileToken, "Content-Type", "application/vnd.api+json"}
	if status, body := ts.send(t, "POST", "/api/v2/organizations", `{"data":{"type":"organizations","attributes":{"name":"hostile","email":"a@example.com"}}}`, header...); status != http.StatusCreated {
		t.Fatalf("create organization: %d %s", status, body)
	}
	org := "/api/v2/organizations/hostile"
	runHostile(t, ts, map[string]hostileCase{
		// Page numbers and sizes beyond an int, negative, zero.
		"policies page number beyond":   {"GET", org + "/policies?page%5Bnumber%5D=99999999999999999999", "", 422, `"parameter":"page[number]"`},
		"policies page size negative":   {"GET", org + "/policies?page%5Bsize%5D=-1", "", 422, `"parameter":"page[size]"`},
		"projects page number zero":     {"GET", org + "/projects?page%5Bnumber%5D=0", "", 422, `"parameter":"page[number]"`},
		"workspaces page number 2^31":   {"GET", org + "/workspaces?page%5Bnumber%5D=2147483648", "", 422, `"parameter":"page[number]"`},
		"teams page size beyond":        {"GET", org + "/teams?page%5Bsize%5D=9223372036854775808", "", 422, `"parameter":"page[size]"`},
		"policy sets page number minus": {"GET", org + "/policy-sets?page%5Bnumber%5D=-9223372036854775808", "", 422, `"parameter":"page[number]"`},
		"session timeout beyond an int": {"POST", "/api/v2/organizations",
			`{"data":{"type":"organizations","attributes":{"name":"st1","email":"a@example.com","session-timeout":99999999999999999999}}}`, 422, `"pointer":"/data/attributes/session-timeout"`},
		"session timeout negative": {"POST", "/api/v2/organizations",
			`{"data":{"type":"organizations","attributes":{"name":"st2","email":"a@example.com","session-timeout":-5}}}`, 422, `"pointer":"/data/attributes/session-timeout"`},
		// Data after the document: refused, nothing created.
		"organization": {"POST", "/api/v2/organizations",
			`{"data":{"type":"organizations","attributes":{"name":"trailing","email":"a@example.com"}}}{"data":{}}`, 422, "data after the document"},
		"project": {"POST", org + "/projects",
			`{"data":{"type":"projects","attributes":{"name":"trailing"}}} x`, 422, "malformed JSON:API document"},
		// Long paths and segments.
		"long organization name": {"GET", "/api/v2/organizations/" + strings.Repeat("o", 2000), "", 400, `"detail":"path: a segment is longer than 1024 bytes"`},
		"long path":              {"GET", "/api/v2/organizations/" + strings.Repeat("o/", 2100), "", 400, `"status":"400"`},
	}, header...)
	if status, body := ts.send(t, "GET", "/api/v2/organizations/trailing", "", header...); status != http.StatusNotFound {
		t.Errorf("organization of a refused document: %d %s, want 404", status, body)
	}
}

// TestHostileConsul is what the Consul dialect refuses: long paths (the
// server), in Consul's plain text, and data after the JSON value (the
// adapter).
func TestHostileConsul(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", hostileToken)
	runHostile(t, ts, map[string]hostileCase{
		"long peer name": {"GET", "/v1/peering/" + strings.Repeat("p", 2000), "", 400, "path: a segment is longer than 1024 bytes"},
		"long path":      {"GET", "/v1/config/" + strings.Repeat("c/", 2100), "", 400, "path: longer than 4096 bytes"},
		"trailing data":  {"POST", "/v1/peering/token", `{"PeerName":"b"}{"PeerName":"c"}`, 400, "data after the JSON value"},
		"index overflow": {"GET", "/v1/peering/b?index=18446744073709551616", "", 400, "index"},
		"index negative": {"GET", "/v1/peering/b?index=-1", "", 400, "index"},
		"wait negative":  {"GET", "/v1/peering/b?index=1&wait=-5s", "", 400, "wait"},
		"wait overflow":  {"GET", "/v1/peering/b?index=1&wait=9999999999999h", "", 400, "wait"},
		"wait seconds":   {"GET", "/v1/peering/b?index=1&wait=4294967296", "", 400, "wait"},
		"case":           {"GET", "/v1/peering/B", "", 404, "not found"},
	}, "X-Cluster-Token", hostileToken)
}

// TestHostileConcurrentWrites: 16 concurrent writes of 256 KiB through a
// server that holds 1 MiB of bodies at most. Every request answers, 204
// or 503 with Retry-After; a client that retries after it gets all
// written; every write reads back.
func TestHostileConcurrentWrites(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", hostileToken, "-max-inflight-bytes", "1048576")
	const writers, size = 16, 256 << 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for i := range writers {
		wg.Go(func() {
			path := fmt.Sprintf("/v1/secret/concurrent/%d", i)
			value := strings.Repeat(string(rune('A'+i)), size)
			began := time.Now()
			for {
				req, _ := http.NewRequest("PUT", ts.url+path, strings.NewReader(`{"v":"`+value+`"}`))
				req.Header.Set("X-Vault-Token", hostileToken)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				// A client that honours Retry-After, with its own shorter
				// pause (the sleep is the client simulated), for as long as
				// load may make the others' writes take.
				if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" && time.Since(began) < keeltest.WaitBound {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if resp.StatusCode != http.StatusNoContent {
					errs <- fmt.Errorf("write %d: %d", i, resp.StatusCode)
					return
				}
				break
			}
			status, body := ts.send(t, "GET", path, "", "X-Vault-Token", hostileToken)
			var got struct {
				Data struct{ V string } `json:"data"`
			}
			if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || got.Data.V != value {
				errs <- fmt.Errorf("read %d: %d, %d bytes, %v", i, status, len(got.Data.V), err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBudget: a request that finds no room within the wait is answered
// 503 with Retry-After in its dialect; one that fits waits its turn, and
// gets in when an earlier one ends; small requests pass larger waiters
// when they fit; a request larger than the limit runs alone.
func TestBudget(t *testing.T) {
	b := newBudget(100, 50*time.Millisecond)
	ctx := context.Background()
	if n, ok := b.acquire(ctx, 80); !ok || n != 80 {
		t.Fatalf("acquire 80 of 100: %d %v", n, ok)
	}
	if _, ok := b.acquire(ctx, 30); ok {
		t.Fatal("acquire 30 more: admitted beyond the limit")
	}
	if n, ok := b.acquire(ctx, 10); !ok || n != 10 {
		t.Fatalf("acquire 10 more: %d %v, want admitted", n, ok)
	}
	// The waiter: its wait far longer than the test can be slowed, and
	// in the queue (a barrier, not a sleep) before room is released.
	b.wait = keeltest.WaitBound
	done := make(chan bool)
	go func() { _, ok := b.acquire(ctx, 50); done <- ok }()
	keeltest.Until(t, "the acquire of 50 waits", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 1
	})
	b.release(80)
	if !<-done {
		t.Fatal("a waiter was not admitted when room was released")
	}
	b.release(10)
	b.release(50)
	if n, ok := b.acquire(ctx, 1000); !ok || n != 100 {
		t.Fatalf("acquire 1000 of 100 with nothing in flight: %d %v, want 100 true", n, ok)
	}
	b.release(100)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use after all released: %d", got)
	}

	// Through limitBodies: the first request holds the whole budget
	// while the second one arrives.
	b = newBudget(1000, 20*time.Millisecond)
	inside, leave := make(chan struct{}), make(chan struct{})
	h := limitBodies(b, b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/secret/hold" {
			close(inside)
			<-leave
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/secret/hold", strings.NewReader(strings.Repeat("x", 1000))))
	}()
	<-inside
	for _, tc := range []struct{ path, ctype, want string }{
		{"/v1/secret/other", "application/json", `{"errors":["the server holds`},
		{"/api/v2/organizations", "application/vnd.api+json", `"status":"503"`},
		{"/v1/peering/p", "text/plain; charset=utf-8", "the server holds"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", tc.path, strings.NewReader(strings.Repeat("y", 100<<10))))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != inflightRetryAfter ||
			rec.Header().Get("Content-Type") != tc.ctype || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s while the budget is full: %d %v %s", tc.path, rec.Code, rec.Header(), rec.Body)
		}
	}
	close(leave)
	keeltest.Until(t, "the budget is free again", func() bool { return b.inUse() == 0 })
}

// TestReservedValues: the keel.Reserver a request's context carries grows
// its reservation, which its response's bytes then use before they are
// counted; it is given back when the request ends; one that gets no room
// within the wait fails Unavailable, sets Retry-After and reserves nothing.
func TestReservedValues(t *testing.T) {
	b := newBudget(4<<20, 20*time.Millisecond)
	var inUse []int64
	var reserveErr error
	h := limitBodies(b, b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reserve := keel.ReserverFrom(r.Context())
		if reserve == nil {
			t.Fatal("no Reserver in the request's context")
		}
		reserveErr = reserve(r.Context(), 3<<20)
		inUse = append(inUse, b.inUse())
		if reserveErr != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write(make([]byte, 3<<20)) // the value reserved: nothing more counted
		inUse = append(inUse, b.inUse())
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/secret/big", nil))
	if reserveErr != nil || !slices.Equal(inUse, []int64{3 << 20, 3 << 20}) {
		t.Errorf("reserved %v, in use %v; want 3 MiB then the same after the response", reserveErr, inUse)
	}
	if got := b.inUse(); got != 0 {
		t.Errorf("%d still in use after the request", got)
	}

	// With 2 MiB held elsewhere, 3 MiB get no room.
	held, _ := b.acquire(context.Background(), 2<<20)
	inUse = nil
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/secret/big", nil))
	if keel.KindOf(reserveErr) != keel.KindUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("reservation with no room: %v, Retry-After %q; want Unavailable with Retry-After", reserveErr, rec.Header().Get("Retry-After"))
	}
	if !slices.Equal(inUse, []int64{2 << 20}) {
		t.Errorf("in use %v after a refused reservation, want only the 2 MiB held elsewhere", inUse)
	}
	b.release(held)
	if got := b.inUse(); got != 0 {
		t.Errorf("%d still in use after the request", got)
	}
}

// TestChunkedBodiesReserveTheirCap: a body of unknown length reserves what
// a body of the cap of its route costs (bodyCopies times it, at most the
// whole budget) before it is read, so that concurrent ones queue instead
// of each holding a part of the budget.
func TestChunkedBodiesReserveTheirCap(t *testing.T) {
	b := newBudget(64<<20, 20*time.Millisecond)
	var seen int64
	h := limitBodies(b, b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = b.inUse()
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	for path, want := range map[string]int64{"/v1/secret/x": min(bodyCopies*vault.MaxBody, 64<<20), "/api/v2/organizations": bodyCopies * tfe.MaxDocument} {
		req := httptest.NewRequest("PUT", path, strings.NewReader("{}"))
		req.ContentLength = -1
		h.ServeHTTP(httptest.NewRecorder(), req)
		if seen != want {
			t.Errorf("chunked body to %s: %d reserved, want %d", path, seen, want)
		}
	}
}

// TestPathProblem: the caps on the path and its segments.
func TestPathProblem(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/v1/secret/a", true},
		{"/" + strings.Repeat("a", maxSegmentBytes), true},
		{"/" + strings.Repeat("a", maxSegmentBytes+1), false},
		{strings.Repeat("/a", maxPathBytes/2), true},
		{strings.Repeat("/a", maxPathBytes/2) + "/", false},
		{"/x/" + strings.Repeat("a", maxSegmentBytes+1) + "/y", false},
	} {
		if got := pathProblem(tc.path) == ""; got != tc.ok {
			t.Errorf("pathProblem(%d bytes): ok %v, want %v", len(tc.path), got, tc.ok)
		}
	}
}

// TestChunkedBodiesCountAsTheyArrive: a body of unknown length whose
// route's cap is over the whole bound reserves the bound, counts what it
// reads beyond as it arrives, and fails its read
// (kind TooLarge: the adapters answer 413) once it would pass the bound,
// which then holds; everything is given back at the end.
func TestChunkedBodiesCountAsTheyArrive(t *testing.T) {
	b := newBudget(2<<20, 20*time.Millisecond)
	var read int64
	var readErr error
	var peak int64
	h := limitBodies(b, b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Body.Read(buf)
			read += int64(n)
			peak = max(peak, b.inUse())
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				break
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, size := range []int{3 << 19, 3 << 20} { // 1.5 MiB fits, 3 MiB does not
		read, readErr, peak = 0, nil, 0
		req := httptest.NewRequest("PUT", "/v1/secret/chunked", strings.NewReader(strings.Repeat("x", size)))
		req.ContentLength = -1 // chunked: the length is not announced
		h.ServeHTTP(httptest.NewRecorder(), req)
		switch {
		case size < 2<<20 && (readErr != nil || read != int64(size)):
			t.Errorf("%d bytes within the bound: read %d, %v", size, read, readErr)
		case size > 2<<20 && (keel.KindOf(readErr) != keel.KindTooLarge || read > 2<<20):
			t.Errorf("%d bytes beyond the bound: read %d, %v; want the read refused TooLarge at the bound", size, read, readErr)
		}
		if peak > 2<<20 {
			t.Errorf("%d bytes: %d in use at the peak, over the bound", size, peak)
		}
		if got := b.inUse(); got != 0 {
			t.Errorf("%d bytes: %d still in use after the request", size, got)
		}
	}
}
