package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func TestMain(m *testing.M) { everystore.Main(m) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func open(t testing.TB, store storage.Store, o *Options) *Limiter {
	t.Helper()
	l, err := Open(context.Background(), store, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func put(t testing.TB, l *Limiter, q Quota) Quota {
	t.Helper()
	q, err := l.Put(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// refused returns the *QuotaError of err, failing t when there is none.
func refused(t *testing.T, err error) *QuotaError {
	t.Helper()
	var qe *QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("got %v, want a *QuotaError", err)
	}
	return qe
}

func fieldsOf(err error) []string {
	var out []string
	for _, fe := range keel.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	return out
}

// TestPutRefusesMalformedQuotas: every broken rule of a quota is named by
// its Go path at once, and nothing is stored.
func TestPutRefusesMalformedQuotas(t *testing.T) {
	ctx := context.Background()
	l := open(t, memstore.New(nil), nil)
	cases := []struct {
		q    Quota
		want []string
	}{
		{Quota{Name: "", Path: "/secret", Rate: 0, Interval: -1, BlockInterval: -1}, []string{"Name", "Path", "Rate", "Interval", "BlockInterval"}},
		{Quota{Name: "a/b", Path: "secret/a*", Rate: math.NaN()}, []string{"Name", "Path", "Rate"}},
		{Quota{Name: "x", Path: "secret//a", Rate: 2e9}, []string{"Path", "Rate"}},
		{Quota{Name: "x", Path: "secret/../a", Rate: -1}, []string{"Path", "Rate"}},
		{Quota{Name: "x\n", Path: "se\x01cret", Rate: 1}, []string{"Name", "Path"}},
	}
	for _, c := range cases {
		_, err := l.Put(ctx, c.q)
		if keel.KindOf(err) != keel.KindInvalid || !slices.Equal(fieldsOf(err), c.want) {
			t.Errorf("Put(%+v): %v, fields %v, want %v", c.q, err, fieldsOf(err), c.want)
		}
	}
	put(t, l, Quota{Name: "a", Path: "secret/", Rate: 1})
	_, err := l.Put(ctx, Quota{Name: "b", Path: "secret/*", Rate: 1})
	if !slices.Equal(fieldsOf(err), []string{"Path"}) {
		t.Errorf("a second quota on secret/: %v, want a Path error", err)
	}
	qs, err := l.List(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != "a" {
		t.Fatalf("stored after the refusals: %v, %v", qs, err)
	}
	for i := 1; i < maxQuotas; i++ {
		put(t, l, Quota{Name: fmt.Sprintf("q%03d", i), Path: fmt.Sprintf("p%d", i), Rate: 1})
	}
	if _, err := l.Put(ctx, Quota{Name: "one-too-many", Path: "more", Rate: 1}); keel.KindOf(err) != keel.KindTooLarge {
		t.Fatalf("quota 101: %v, want too large", err)
	}
	if _, err := l.Put(ctx, Quota{Name: "a", Path: "other", Rate: 3}); err != nil {
		t.Fatalf("replacing one of 100: %v", err)
	}
}

// TestQuotaRoundTrip: Put stores the default interval, Get, List and
// Delete see what it stored, each asks the Authorizer for its right, and
// a missing quota is not found.
func TestQuotaRoundTrip(t *testing.T) {
	ctx := context.Background()
	var rec keeltest.Recorder
	l := open(t, memstore.New(nil), &Options{Authorizer: &rec})
	got := put(t, l, Quota{Name: "kv", Path: "secret/", Rate: 2.5, BlockInterval: time.Minute})
	want := Quota{Name: "kv", Path: "secret/", Rate: 2.5, Interval: time.Second, BlockInterval: time.Minute}
	if got != want {
		t.Fatalf("Put: %+v, want %+v", got, want)
	}
	if q, err := l.Get(ctx, "kv"); err != nil || q != want {
		t.Fatalf("Get: %+v, %v", q, err)
	}
	if qs, err := l.List(ctx); err != nil || !slices.Equal(qs, []Quota{want}) {
		t.Fatalf("List: %+v, %v", qs, err)
	}
	if err := l.Delete(ctx, "kv"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "kv"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := l.Delete(ctx, "kv"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("Delete of a missing quota: %v", err)
	}
	wantAsks := []keeltest.Ask{
		{Cap: keel.CapUpdate, Resource: "sys/quotas/rate-limit/kv"},
		{Cap: keel.CapRead, Resource: "sys/quotas/rate-limit/kv"},
		{Cap: keel.CapList, Resource: "sys/quotas/rate-limit"},
		{Cap: keel.CapDelete, Resource: "sys/quotas/rate-limit/kv"},
		{Cap: keel.CapRead, Resource: "sys/quotas/rate-limit/kv"},
		{Cap: keel.CapDelete, Resource: "sys/quotas/rate-limit/kv"},
	}
	if asks := rec.Take(); !slices.Equal(asks, wantAsks) {
		t.Fatalf("asked %v, want %v", asks, wantAsks)
	}
	rec.SetDeny(true)
	if _, err := l.Put(ctx, Quota{Name: "x", Rate: 1}); keel.KindOf(err) != keel.KindForbidden {
		t.Fatalf("Put denied: %v", err)
	}
	rec.SetDeny(false)
	if qs, _ := l.List(ctx); len(qs) != 0 {
		t.Fatalf("a denied Put stored %v", qs)
	}
	if err := l.Allow(ctx, "secret/a", "10.0.0.1"); err != nil {
		t.Fatalf("Allow asks no right: %v", err)
	}
}

// TestMostSpecificQuotaApplies: the quota of the longest path covering a
// request applies, alone; a trailing "/*" is the path itself; a path is
// covered segment by segment ("secret/app" does not cover "secret/app2").
func TestMostSpecificQuotaApplies(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(epoch)
	l := open(t, memstore.New(nil), &Options{Clock: clock})
	put(t, l, Quota{Name: "global", Path: "", Rate: 3})
	put(t, l, Quota{Name: "mount", Path: "secret/", Rate: 2})
	put(t, l, Quota{Name: "app", Path: "secret/app/*", Rate: 1})
	for _, c := range []struct{ path, quota string }{
		{"secret/app/db", "app"},
		{"secret/app", "app"},
		{"secret/app/", "app"},
		{"/secret/app/x/y", "app"},
		{"secret/app2", "mount"},
		{"secret", "mount"},
		{"sys/mounts", "global"},
	} {
		client := "client of " + c.path
		var err error
		n := 0
		for ; err == nil && n < 10; n++ {
			err = l.Allow(ctx, c.path, client)
		}
		qe := refused(t, err)
		want := map[string]int{"global": 3, "mount": 2, "app": 1}[c.quota]
		if qe.Name != c.quota || n-1 != want || qe.Limit != want {
			t.Errorf("%s: refused by %q after %d requests, want %q after %d", c.path, qe.Name, n-1, c.quota, want)
		}
	}
	// The counts of one quota are not another's: secret/app/… used app's.
	if err := l.Allow(ctx, "secret/x", "client of secret/app/db"); err != nil {
		t.Fatalf("mount quota after the app quota ran out: %v", err)
	}
}

// TestWindowRefills: a client has round(Rate) requests (at least one) per
// Interval from its first request; beyond, it is refused until its window
// ends, with RetryAfter and keel.RetryAfterOf saying when; then its next
// window starts full. Clients count apart.
func TestWindowRefills(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(epoch)
	l := open(t, memstore.New(nil), &Options{Clock: clock})
	put(t, l, Quota{Name: "kv", Path: "secret", Rate: 2.6, Interval: 10 * time.Second})
	for i := range 3 {
		if err := l.Allow(ctx, "secret/a", "1.1.1.1"); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	clock.Advance(4 * time.Second)
	err := l.Allow(ctx, "secret/a", "1.1.1.1")
	qe := refused(t, err)
	want := QuotaError{Name: "kv", Path: "secret", Limit: 3, Interval: 10 * time.Second, RequestPath: "secret/a",
		Client: "1.1.1.1", RetryAfter: 6 * time.Second}
	if *qe != want {
		t.Fatalf("refusal: %+v, want %+v", *qe, want)
	}
	if d, ok := keel.RetryAfterOf(err); !ok || d != 6*time.Second || keel.KindOf(err) != keel.KindTooLarge {
		t.Fatalf("hint %v %v, kind %v", d, ok, keel.KindOf(err))
	}
	if msg := err.Error(); msg != `ratelimit: request path "secret/a": rate limit quota "kv" exceeded: at most 3 requests per 10s` {
		t.Fatalf("message %q", msg)
	}
	if err := l.Allow(ctx, "secret/a", "2.2.2.2"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	clock.Advance(6*time.Second - 1)
	refused(t, l.Allow(ctx, "secret/a", "1.1.1.1"))
	clock.Advance(1)
	for i := range 3 {
		if err := l.Allow(ctx, "secret/a", "1.1.1.1"); err != nil {
			t.Fatalf("second window, request %d: %v", i+1, err)
		}
	}
	refused(t, l.Allow(ctx, "secret/a", "1.1.1.1"))

	// A rate below one half still allows one request per window.
	put(t, l, Quota{Name: "slow", Path: "slow", Rate: 0.2})
	if err := l.Allow(ctx, "slow", "1.1.1.1"); err != nil {
		t.Fatal(err)
	}
	refused(t, l.Allow(ctx, "slow", "1.1.1.1"))
}

// TestBlockInterval: a client that goes beyond the rate of a quota with a
// BlockInterval is refused every request for BlockInterval from then,
// though its windows refill, and counts anew after.
func TestBlockInterval(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(epoch)
	l := open(t, memstore.New(nil), &Options{Clock: clock})
	put(t, l, Quota{Name: "b", Path: "", Rate: 1, BlockInterval: 30 * time.Second})
	if err := l.Allow(ctx, "a", "c"); err != nil {
		t.Fatal(err)
	}
	qe := refused(t, l.Allow(ctx, "a", "c"))
	if !qe.Blocked || qe.RetryAfter != 30*time.Second {
		t.Fatalf("first refusal: %+v", qe)
	}
	clock.Advance(2 * time.Second) // a new window, still blocked
	qe = refused(t, l.Allow(ctx, "a", "c"))
	if !qe.Blocked || qe.RetryAfter != 28*time.Second {
		t.Fatalf("refusal while blocked: %+v", qe)
	}
	if err := l.Allow(ctx, "a", "other"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	clock.Advance(28 * time.Second)
	if err := l.Allow(ctx, "a", "c"); err != nil {
		t.Fatalf("after the block: %v", err)
	}
	if qe := refused(t, l.Allow(ctx, "a", "c")); !qe.Blocked {
		t.Fatalf("beyond again: %+v", qe)
	}
}

// TestExemptPaths: Vault's default exempt paths are never limited;
// Options.Exempt replaces them, with "*" prefixes; empty exempts none.
func TestExemptPaths(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	l := open(t, store, &Options{Clock: keel.NewFakeClock(epoch)})
	put(t, l, Quota{Name: "g", Rate: 1})
	for range 3 {
		for _, p := range []string{"sys/health", "sys/seal-status", "sys/unseal", "sys/generate-root/attempt"} {
			if err := l.Allow(ctx, p, "c"); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
	}
	custom := open(t, store, &Options{Clock: keel.NewFakeClock(epoch), Exempt: []string{"sys/metrics", "auth/*"}})
	for range 3 {
		for _, p := range []string{"sys/metrics", "auth/token/lookup-self"} {
			if err := custom.Allow(ctx, p, "c"); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
	}
	custom.Allow(ctx, "sys/health", "c")
	refused(t, custom.Allow(ctx, "sys/health", "c"))
	none := open(t, store, &Options{Clock: keel.NewFakeClock(epoch), Exempt: []string{}})
	none.Allow(ctx, "sys/health", "c")
	refused(t, none.Allow(ctx, "sys/health", "c"))
}

// TestIdleClientsAreForgotten: a client whose window has ended is
// forgotten by the next sweep of its part of the table, and the table
// never holds more than MaxClients; a client forgotten for room starts a
// full window.
func TestIdleClientsAreForgotten(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(epoch)
	l := open(t, memstore.New(nil), &Options{Clock: clock})
	put(t, l, Quota{Name: "g", Rate: 1, Interval: 10 * time.Second})
	for i := range 100 {
		l.Allow(ctx, "x", fmt.Sprint("old", i))
	}
	if n := l.clients(); n != 100 {
		t.Fatalf("%d clients, want 100", n)
	}
	clock.Advance(sweepEvery)
	// 1,000 new clients reach every part of the table (each misses it
	// with a chance of (31/32)^1000), which forgets its old clients.
	for i := range 1000 {
		if err := l.Allow(ctx, "x", fmt.Sprint("new", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.clients(); n != 1000 {
		t.Fatalf("%d clients after the sweep, want the 1000 new ones", n)
	}

	bounded := open(t, memstore.New(nil), &Options{Clock: clock, MaxClients: 64})
	put(t, bounded, Quota{Name: "g", Rate: 1, Interval: time.Hour})
	for i := range 5000 {
		if err := bounded.Allow(ctx, "x", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if n := bounded.clients(); n > 64 {
			t.Fatalf("%d clients held, at most 64", n)
		}
	}
}

// TestChangesFromAnotherProcess: a quota put, changed or deleted through
// another Limiter on the same store (another process on etcd) applies
// here soon after; a quota a change leaves as it was keeps its counts.
func TestChangesFromAnotherProcess(t *testing.T) {
	everystore.Run(t, func(t *testing.T, openStore everystore.Open) {
		ctx := context.Background()
		store := openStore(t)
		clock := keel.NewFakeClock(epoch)
		a := open(t, store, &Options{Clock: clock})
		b := open(t, everystore.Another(t, store), &Options{Clock: clock})
		applied := func(l *Limiter, path string, rate float64) func() bool {
			return func() bool {
				q := l.table.Load().byPath[path]
				return rate == 0 && q == nil || q != nil && q.q.Rate == rate
			}
		}
		put(t, a, Quota{Name: "kv", Path: "secret/", Rate: 1})
		keeltest.Until(t, "the quota applied by the other limiter", applied(b, "secret", 1))
		if err := b.Allow(ctx, "secret/x", "c"); err != nil {
			t.Fatal(err)
		}
		refused(t, b.Allow(ctx, "secret/x", "c"))

		put(t, a, Quota{Name: "other", Path: "sys/", Rate: 5})
		keeltest.Until(t, "the second quota applied", applied(b, "sys", 5))
		refused(t, b.Allow(ctx, "secret/x", "c")) // kv's count kept

		put(t, a, Quota{Name: "kv", Path: "secret/", Rate: 2})
		keeltest.Until(t, "the changed quota applied", applied(b, "secret", 2))
		for range 2 {
			if err := b.Allow(ctx, "secret/x", "c"); err != nil {
				t.Fatalf("a changed quota counts anew: %v", err)
			}
		}
		refused(t, b.Allow(ctx, "secret/x", "c"))

		if err := a.Delete(ctx, "kv"); err != nil {
			t.Fatal(err)
		}
		keeltest.Until(t, "the deletion applied", applied(b, "secret", 0))
		if err := b.Allow(ctx, "secret/x", "c"); err != nil {
			t.Fatalf("after the deletion: %v", err)
		}
	})
}

// TestClose: after Close every operation fails with KindUnavailable, Allow
// too; a second Close returns nil.
func TestClose(t *testing.T) {
	ctx := context.Background()
	l := open(t, memstore.New(nil), nil)
	put(t, l, Quota{Name: "g", Rate: 100})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Allow(ctx, "x", "c"); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("Allow after Close: %v", err)
	}
	if _, err := l.Put(ctx, Quota{Name: "h", Rate: 1}); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("Put after Close: %v", err)
	}
	if _, err := l.List(ctx); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("List after Close: %v", err)
	}
}

// TestOpenRefusesBadArguments: a nil store and a negative MaxClients are
// named.
func TestOpenRefusesBadArguments(t *testing.T) {
	_, err := Open(context.Background(), nil, &Options{MaxClients: -1})
	if !slices.Equal(fieldsOf(err), []string{"Store", "Options.MaxClients"}) {
		t.Fatalf("Open: %v", err)
	}
}

// TestConcurrentAllowAndChanges: requests counted from many goroutines
// while quotas are put and deleted (run with -race); a client of a quota
// never gets more than its rate within one window.
func TestConcurrentAllowAndChanges(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(epoch)
	l := open(t, memstore.New(nil), &Options{Clock: clock, MaxClients: 64})
	put(t, l, Quota{Name: "kv", Path: "secret/", Rate: 5, Interval: time.Hour})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			put(t, l, Quota{Name: "churn", Path: fmt.Sprint("p", i%3), Rate: 1})
			if err := l.Delete(ctx, "churn"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	allowed := make(chan int, 8)
	for g := range 8 {
		go func() {
			n := 0
			for i := range 500 {
				if l.Allow(ctx, "secret/x", "shared") == nil {
					n++
				}
				l.Allow(ctx, "p1/x", fmt.Sprint(g, "-", i%100))
			}
			allowed <- n
		}()
	}
	total := 0
	for range 8 {
		total += <-allowed
	}
	<-done
	if total != 5 {
		t.Fatalf("%d requests of one client allowed in one window of a rate of 5", total)
	}
}
