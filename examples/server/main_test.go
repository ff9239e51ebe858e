package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// wait bounds every wait of these tests: keeltest.WaitBound, which load
// can slow a test towards but not past.
const wait = keeltest.WaitBound

// syncBuffer is a bytes.Buffer that the server's goroutines may write while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a server started by serve in a goroutine.
type testServer struct {
	t      testing.TB
	url    string // http://addr
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error // receives serve's result, once

	stopOnce sync.Once
	err      error
}

// start runs serve with args on 127.0.0.1:0 (args may set another -addr)
// and returns once it listens. The server is stopped at the end of the
// test if the test has not stopped it.
func start(t testing.TB, h hooks, args ...string) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{t: t, stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	h.ready = func(addr string) { ready <- addr }
	args = append([]string{"-addr", "127.0.0.1:0"}, args...)
	go func() { ts.done <- serve(ctx, args, ts.stderr, h) }()
	select {
	case addr := <-ready:
		ts.url = "http://" + addr
	case err := <-ts.done:
		cancel()
		t.Fatalf("server did not start: %v\nstderr:\n%s", err, ts.stderr)
	case <-time.After(wait):
		cancel()
		t.Fatalf("server did not start within %v\nstderr:\n%s", wait, ts.stderr)
	}
	t.Cleanup(func() { ts.stop() })
	return ts
}

// stop cancels the server's context and returns serve's result.
func (ts *testServer) stop() error {
	ts.stopOnce.Do(func() {
		ts.cancel()
		select {
		case ts.err = <-ts.done:
		case <-time.After(wait):
			ts.t.Fatalf("server did not stop within %v\nstderr:\n%s", wait, ts.stderr)
		}
	})
	return ts.err
}

var client = &http.Client{Timeout: wait}

// get requests path with the given headers (name, value, name, value...)
// and returns the status and body.
func (ts *testServer) get(path string, headers ...string) (int, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+path, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// mountWhoami adds GET /test/whoami, which answers with the principal of
// the request, or 401 when it is anonymous.
func mountWhoami(mux *routes, _ *deps) {
	mux.HandleFunc("GET /test/whoami", func(w http.ResponseWriter, r *http.Request) {
		p, ok := keel.PrincipalFrom(r.Context())
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(p)
	})
}

// whoami returns the principal the server sees for the given headers.
func (ts *testServer) whoami(headers ...string) (keel.Principal, bool) {
	ts.t.Helper()
	status, body := ts.get("/test/whoami", headers...)
	if status == http.StatusUnauthorized {
		return keel.Principal{}, false
	}
	if status != http.StatusOK {
		ts.t.Fatalf("whoami: status %d: %s", status, body)
	}
	var p keel.Principal
	if err := json.Unmarshal(body, &p); err != nil {
		ts.t.Fatalf("whoami: %v: %s", err, body)
	}
	return p, true
}

var rootTokenLine = regexp.MustCompile(`(?m)^Root Token: (.*)$`)

func TestRootTokenGeneratedAndPrintedOnce(t *testing.T) {
	ts := start(t, hooks{mount: mountWhoami}, "-data", "memory")

	lines := rootTokenLine.FindAllStringSubmatch(ts.stderr.String(), -1)
	if len(lines) != 1 {
		t.Fatalf("want one Root Token line, got %d; stderr:\n%s", len(lines), ts.stderr)
	}
	tok := lines[0][1]
	if !regexp.MustCompile(`^kr\.[0-9A-Za-z]{24}$`).MatchString(tok) {
		t.Errorf("root token %q is not kr. and 24 base62 characters", tok)
	}

	p, ok := ts.whoami(headerSecretsToken, tok)
	if !ok {
		t.Fatal("the printed root token is not accepted")
	}
	want := keel.Principal{ID: "root", DisplayName: "root", ClientTokenID: tokenID(tok), Policies: []string{keel.RootPolicy}}
	if !principalsEqual(p, want) {
		t.Errorf("root token's principal = %+v, want %+v", p, want)
	}

	if err := ts.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if n := strings.Count(ts.stderr.String(), tok); n != 1 {
		t.Errorf("the root token appears %d times on stderr, want once; stderr:\n%s", n, ts.stderr)
	}
}

func TestRootTokenGivenIsNotPrinted(t *testing.T) {
	const tok = "given-root-token-s3cret"
	ts := start(t, hooks{mount: mountWhoami}, "-data", "memory", "-root-token", tok)

	p, ok := ts.whoami(headerAuthz, "Bearer "+tok)
	if !ok || p.ID != "root" || !slices.Equal(p.Policies, []string{keel.RootPolicy}) {
		t.Errorf("the given root token authenticates %+v (%v), want root", p, ok)
	}
	if _, ok := ts.whoami(headerSecretsToken, "kr.not-the-root-token"); ok {
		t.Error("an unknown token authenticated")
	}
	if err := ts.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	out := ts.stderr.String()
	if strings.Contains(out, "Root Token") || strings.Contains(out, tok) {
		t.Errorf("stderr shows the given root token:\n%s", out)
	}
}

func TestConfigTokens(t *testing.T) {
	cfg := writeFile(t, "config.json", `{
		"policies": {"reader": [{"path": "secret/*", "capabilities": ["read", "list"]}]},
		"tokens": [{"token": "t-alice", "principal": {"id": "alice", "display_name": "Alice", "entity_id": "e-1"}, "policies": ["reader"]}]
	}`)
	var authz keel.Authorizer
	ts := start(t, hooks{mount: func(mux *routes, d *deps) {
		mountWhoami(mux, d)
		authz = d.authorizer
	}}, "-data", "memory", "-config", cfg)

	p, ok := ts.whoami(headerClusterToken, "t-alice")
	want := keel.Principal{ID: "alice", DisplayName: "Alice", EntityID: "e-1", ClientTokenID: tokenID("t-alice"), Policies: []string{"reader"}}
	if !ok || !principalsEqual(p, want) {
		t.Fatalf("t-alice authenticates %+v (%v), want %+v", p, ok, want)
	}
	ctx := context.Background()
	if err := authz.Authorize(ctx, p, keel.CapRead, "secret/app/db"); err != nil {
		t.Errorf("alice cannot read secret/app/db: %v", err)
	}
	if err := authz.Authorize(ctx, p, keel.CapUpdate, "secret/app/db"); !errors.Is(err, keel.KindForbidden) {
		t.Errorf("alice updating secret/app/db: %v, want forbidden", err)
	}
	if err := authz.Authorize(ctx, keel.Principal{}, keel.CapRead, "secret/app/db"); !errors.Is(err, keel.KindForbidden) {
		t.Errorf("anonymous reading secret/app/db: %v, want forbidden", err)
	}
}

// TestGracefulShutdown cancels the server's context while a request is in
// flight: the server stops accepting connections, lets the request finish,
// runs the adapters' closers while the store is still open, closes the
// store (releasing the bbolt file) and returns nil.
func TestGracefulShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keel.db")
	entered, release, shuttingDown := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var (
		mu     sync.Mutex
		events []string
	)
	event := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	h := hooks{
		mount: func(mux *routes, d *deps) {
			mux.HandleFunc("GET /test/slow", func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release
				event("request finished")
				io.WriteString(w, "done")
			})
			d.onClose(func() error {
				event("closer")
				return d.store.View(context.Background(), func(context.Context, storage.Tx) error { return nil })
			})
		},
		shutdown: func() { close(shuttingDown) },
	}
	ts := start(t, h, "-data", path)

	type result struct {
		status int
		body   string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := client.Get(ts.url + "/test/slow")
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		res <- result{resp.StatusCode, string(body), err}
	}()
	waitFor(t, entered, "the slow request to reach its handler")

	ts.cancel()
	waitFor(t, shuttingDown, "the shutdown to begin")
	select {
	case err := <-ts.done:
		t.Fatalf("serve returned (%v) while a request was in flight", err)
	default:
	}
	fresh := &http.Client{Timeout: wait, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := fresh.Get(ts.url + "/v1/sys/health"); err == nil {
		resp.Body.Close()
		t.Errorf("a new connection was accepted during shutdown: status %d", resp.StatusCode)
	}

	close(release)
	select {
	case r := <-res:
		if r.err != nil || r.status != http.StatusOK || r.body != "done" {
			t.Errorf("in-flight request: status %d, body %q, error %v; want 200 \"done\"", r.status, r.body, r.err)
		}
	case <-time.After(wait):
		t.Fatal("the in-flight request did not complete")
	}
	if err := ts.stop(); err != nil {
		t.Errorf("serve = %v, want nil", err)
	}
	mu.Lock()
	if want := []string{"request finished", "closer"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	mu.Unlock()

	bs, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the bolt file is still locked after serve returned: %v", err)
	}
	bs.Close()
	if !strings.Contains(ts.stderr.String(), "msg=stopped") {
		t.Errorf("no \"stopped\" log line:\n%s", ts.stderr)
	}
}

func TestStartupErrors(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "keel.db")
	badKeys := writeFile(t, "bad.key", "not a key\n")
	badConfig := writeFile(t, "bad.json", `{"tokens": [{"token": "x", "principal": {"id": "x"}, "policies": ["nope"]}]}`)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"seal key file missing", []string{"-data", dbPath, "-seal-key-file", filepath.Join(dir, "missing.key")}, "missing.key"},
		{"seal key file bad", []string{"-data", dbPath, "-seal-key-file", badKeys}, "not a key"},
		{"config missing", []string{"-data", "memory", "-config", filepath.Join(dir, "missing.json")}, "missing.json"},
		{"config bad", []string{"-data", "memory", "-config", badConfig}, `policy "nope" is not defined`},
		{"bad address", []string{"-data", "memory", "-addr", "127.0.0.1:notaport"}, "notaport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(stderr.String(), "Root Token") {
				t.Errorf("a server that did not start printed a root token:\n%s", &stderr)
			}
		})
	}

	// A failed start leaves the bolt file unlocked.
	bs, err := boltstore.Open(dbPath, &boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the bolt file is locked after failed starts: %v", err)
	}
	bs.Close()
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var stderr bytes.Buffer
	err := run(ctx, []string{"-no-such-flag"}, &stderr)
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(stderr.String(), "Usage: server") {
		t.Errorf("unknown flag: %v, stderr %q; want a usageError and the usage", err, &stderr)
	}
	stderr.Reset()
	if err := run(ctx, []string{"-data", "memory", "extra"}, &stderr); !errors.As(err, &usage) || !strings.Contains(err.Error(), `"extra"`) {
		t.Errorf("extra argument: %v, want a usageError naming it", err)
	}
	stderr.Reset()
	// A prefix without its slash would start another deployment's ("prod"
	// and "prod2/"); each wrong flag is named alone.
	if err := run(ctx, []string{"-etcd-prefix", "prod"}, &stderr); !errors.As(err, &usage) || err.Error() != `-etcd-prefix: must end with "/"` {
		t.Errorf("-etcd-prefix prod: %v, want a usageError naming the flag alone", err)
	}
	if err := run(ctx, []string{"-leader-ttl", "10ms"}, &stderr); !errors.As(err, &usage) || err.Error() != "-leader-ttl: must be at least 1s" {
		t.Errorf("-leader-ttl 10ms: %v, want a usageError naming the flag alone", err)
	}
	stderr.Reset()
	if err := run(ctx, []string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-seal-key-file") {
		t.Errorf("-h: %v, stderr %q; want flag.ErrHelp and the usage", err, &stderr)
	}
}

// principalsEqual compares principals field by field (Meta is not used
// here).
func principalsEqual(a, b keel.Principal) bool {
	return a.ID == b.ID && a.DisplayName == b.DisplayName && a.EntityID == b.EntityID &&
		a.ClientTokenID == b.ClientTokenID && slices.Equal(a.Policies, b.Policies) && len(a.Meta) == 0 && len(b.Meta) == 0
}

// writeFile writes content to a new file name in a temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor waits for ch to close, failing the test after wait.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
	}
}
