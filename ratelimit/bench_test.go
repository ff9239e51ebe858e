package ratelimit

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkAllow is the check every request pays, beside its yardstick in
// the same run: a bare lookup of a string in a small map (what any
// routing of a request costs at least). "none" is a Limiter with no
// quota; "few-unmatched" has five quotas none of which covers the path
// (their paths looked up per segment); "few-matched" counts the request
// under one (the clock read, the lock of a part of the client table);
// "parallel" is few-matched from every P, one client each.
func BenchmarkAllow(b *testing.B) {
	ctx := context.Background()
	const path, client = "secret/app/db/password", "10.1.2.3"
	b.Run("yardstick-map-lookup", func(b *testing.B) {
		m := map[string]int{"secret": 1, "sys": 2, "kv": 3, "ldap": 4, "openldap": 5}
		var n int
		for b.Loop() {
			n += m[path[:6]]
		}
		_ = n
	})
	b.Run("none", func(b *testing.B) {
		l := open(b, memstore.New(nil), nil)
		for b.Loop() {
			if err := l.Allow(ctx, path, client); err != nil {
				b.Fatal(err)
			}
		}
	})
	few := func(b *testing.B) *Limiter {
		l := open(b, memstore.New(nil), &Options{Clock: keel.SystemClock{}})
		for i, p := range []string{"sys/", "kv/", "ldap/", "openldap/", "secret/app/db"} {
			put(b, l, Quota{Name: fmt.Sprint("q", i), Path: p, Rate: 1e9, Interval: time.Hour})
		}
		return l
	}
	b.Run("few-unmatched", func(b *testing.B) {
		l := few(b)
		for b.Loop() {
			if err := l.Allow(ctx, "cubbyhole/app/db/password", client); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("few-matched", func(b *testing.B) {
		l := few(b)
		for b.Loop() {
			if err := l.Allow(ctx, path, client); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := few(b)
		var id int64
		b.RunParallel(func(pb *testing.PB) {
			c := fmt.Sprint("10.0.0.", id)
			id++ // RunParallel calls this one goroutine at a time
			for pb.Next() {
				if err := l.Allow(ctx, path, c); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkReadQuotasPerRequest is what reading the quota record in each
// request would cost instead of the Limiter's watched copy: a View that
// gets and decodes the record of five quotas, on memstore and on bbolt.
func BenchmarkReadQuotasPerRequest(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"memstore", "boltstore"} {
		b.Run(name, func(b *testing.B) {
			var store storage.Store = memstore.New(nil)
			if name == "boltstore" {
				s, err := boltstore.Open(filepath.Join(b.TempDir(), "keel.db"), &boltstore.Options{NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				store = s
			}
			defer store.Close()
			l := open(b, store, nil)
			for i, p := range []string{"sys/", "kv/", "ldap/", "openldap/", "secret/app/db"} {
				put(b, l, Quota{Name: fmt.Sprint("q", i), Path: p, Rate: 1e9})
			}
			for b.Loop() {
				err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
					_, err := load(tx)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClientTable reports the heap a counted client costs (B/client),
// over 100,000 clients (in a table bounded at 200,000, so that no part
// of it is full).
func BenchmarkClientTable(b *testing.B) {
	ctx := context.Background()
	clients := make([]string, 100_000)
	for i := range clients {
		clients[i] = fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)
	}
	for b.Loop() {
		l := open(b, memstore.New(nil), &Options{Clock: keel.SystemClock{}, MaxClients: 2 * len(clients)})
		put(b, l, Quota{Name: "g", Rate: 1e9, Interval: time.Hour})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, c := range clients {
			if err := l.Allow(ctx, "x", c); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n := l.clients(); n != len(clients) {
			b.Fatalf("%d clients held", n)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(clients)), "B/client")
		l.Close()
	}
}
