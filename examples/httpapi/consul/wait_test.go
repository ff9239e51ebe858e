package consul_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage/memstore"
)

// plainWriter hides the ResponseWriter beneath (it has no Unwrap), so that
// http.ResponseController cannot move the write deadline.
type plainWriter struct{ w http.ResponseWriter }

func (p plainWriter) Header() http.Header         { return p.w.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(code int)        { p.w.WriteHeader(code) }

// blockingServer serves a peering service with clock through an
// httptest server whose WriteTimeout is writeTimeout; hide, when set,
// hides the ResponseWriter's Unwrap from the handler.
func blockingServer(t *testing.T, clock keel.Clock, writeTimeout time.Duration, hide bool) *httptest.Server {
	t.Helper()
	store := memstore.New(nil)
	t.Cleanup(func() { store.Close() })
	svc, err := peering.New(store, &peeringtest.Network{}, &peering.Options{
		Datacenter: "dc1", Addresses: []string{"127.0.0.1:1"}, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	consul.New(svc, nil).Register(mux)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(keel.WithPrincipal(r.Context(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}}))
		if hide {
			w = plainWriter{w}
		}
		mux.ServeHTTP(w, r)
	}))
	ts.Config.WriteTimeout = writeTimeout
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// client gives up on an answer after 15 s, so that a lost answer fails
// the test instead of hanging it.
var client = &http.Client{Timeout: 15 * time.Second}

// get sends GET url and returns the status and X-Consul-Index, or fails t
// when the connection ends without an answer.
func get(t *testing.T, url string) (int, uint64) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: no answer: %v", url, err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("GET %s: body cut: %v", url, err)
	}
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64)
	return resp.StatusCode, idx
}

// TestBlockingReadOutlivesWriteTimeout: a blocking read whose wait is
// longer than the server's WriteTimeout still gets its answer, for ?wait,
// for the 5-minute default of a read with ?index alone, and behind a
// writer that cannot move its deadline (the wait is shortened).
func TestBlockingReadOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	t.Run("wait longer than the write timeout", func(t *testing.T) {
		ts := blockingServer(t, keel.SystemClock{}, writeTimeout, false)
		_, idx := get(t, ts.URL+"/v1/peering/nobody")
		start := time.Now()
		for _, path := range []string{"/v1/peering/nobody", "/v1/peerings"} {
			code, _ := get(t, fmt.Sprintf("%s%s?index=%d&wait=1s", ts.URL, path, idx))
			if code != http.StatusNotFound && code != http.StatusOK {
				t.Fatalf("%s: status %d", path, code)
			}
		}
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("the reads answered after %v: they did not wait", d)
		}
	})
	t.Run("default wait with ?index alone", func(t *testing.T) {
		clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		ts := blockingServer(t, clock, writeTimeout, false)
		_, idx := get(t, ts.URL+"/v1/peering/nobody")
		done := make(chan int, 1)
		go func() {
			resp, err := client.Get(fmt.Sprintf("%s/v1/peering/nobody?index=%d", ts.URL, idx))
			if err != nil {
				done <- -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
		defer cancel()
		if err := clock.BlockUntil(ctx, 1); err != nil {
			t.Fatal("the read did not block:", err)
		}
		// Past the server's write deadline, which is net/http's, on the
		// real clock: the passage of real time is what is simulated.
		time.Sleep(2 * writeTimeout)
		clock.Advance(peering.DefaultWait)
		if code := <-done; code != http.StatusNotFound {
			t.Fatalf("status %d, want 404 after the default wait (-1: no answer)", code)
		}
	})
	t.Run("writer that cannot move its deadline", func(t *testing.T) {
		// The wait becomes half of the write timeout, so that the answer
		// is written before the real-clock deadline. A loaded machine can
		// delay the answer past it: the scenario is then made again, on
		// a new server, up to three times.
		const longer = 600 * time.Millisecond
		for attempt := 1; ; attempt++ {
			ts := blockingServer(t, keel.SystemClock{}, longer, true)
			_, idx := get(t, ts.URL+"/v1/peering/nobody")
			start := time.Now()
			code := -1 // no answer: cut by the write deadline
			if resp, err := client.Get(fmt.Sprintf("%s/v1/peering/nobody?index=%d&wait=75s", ts.URL, idx)); err == nil {
				if _, err := io.ReadAll(resp.Body); err == nil {
					code = resp.StatusCode
				}
				resp.Body.Close()
			}
			d := time.Since(start)
			if code == http.StatusNotFound && d <= longer {
				break
			}
			if attempt == 3 {
				t.Fatalf("status %d (-1: no answer) after %v, at the third attempt", code, d)
			}
			t.Logf("attempt %d: status %d (-1: no answer) after %v; again", attempt, code, d)
		}
	})
}
