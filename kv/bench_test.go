package kv_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
)

// The benchmarks put the engine next to its yardstick, in one run:
//
//   - Read: kv Read of a secret (impl=kv) against a View doing the single
//     Get of the same key, whose value is the same JSON bytes (impl=raw);
//   - Write: kv Write overwriting a secret (impl=kv) against an Update
//     doing the single Put of the same JSON bytes (impl=raw);
//   - List: kv List of the 20 folders at the top of a memstore holding
//     keys=N secrets (20 folders of N/20 each), for N = 20 and a large N.
//
// Read and Write run on memstore and on boltstore (default options: fsync
// on every commit). The large List has 100,000 keys unless KEEL_BENCH_FULL
// is set and -benchtime is not 1x, when it has 1,000,000:
//
//	KEEL_BENCH_FULL=1 go test -run '^$' -bench 'List' -benchtime 1s ./kv/
//
// Figures and how to reproduce them: BENCHMARKS.md at the root of the module.

// benchSecret is the secret of the Read and Write benchmarks; benchJSON is
// its encoding, what the engine stores and the raw engines read and write.
var (
	benchSecret = map[string]any{
		"username": "app-user",
		"password": "correct-horse-battery-staple",
		"url":      "postgres://db.internal:5432/app",
		"ttl":      "1h",
	}
	benchJSON, _ = json.Marshal(benchSecret)
)

const benchSecrets = 1000 // secrets in the store of Read and Write

var benchStores = []string{"memstore", "boltstore"}

// openBenchStore returns an empty store of the kind named, closed at the
// end of b.
func openBenchStore(b *testing.B, kind string) storage.Store {
	b.Helper()
	var s storage.Store
	switch kind {
	case "memstore":
		s = memstore.New(nil)
	case "boltstore":
		bs, err := boltstore.Open(filepath.Join(b.TempDir(), "kv.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		s = bs
	default:
		b.Fatalf("unknown store %q", kind)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func benchPath(i int) string { return fmt.Sprintf("app/%04d", i%benchSecrets) }

// fillBench stores benchJSON at every benchPath, in one Update.
func fillBench(b *testing.B, s storage.Store) {
	b.Helper()
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for i := range benchSecrets {
			if err := tx.Put(benchPath(i), benchJSON); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	for _, kind := range benchStores {
		b.Run("store="+kind+"/impl=kv", func(b *testing.B) {
			s := openBenchStore(b, kind)
			fillBench(b, s)
			e := newEngine(b, s, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				secret, err := e.Read(ctx, benchPath(i))
				if err != nil || len(secret.Data) != len(benchSecret) {
					b.Fatal(secret, err)
				}
				i++
			}
		})
		b.Run("store="+kind+"/impl=raw", func(b *testing.B) {
			s := openBenchStore(b, kind)
			fillBench(b, s)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var v []byte
				err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
					var err error
					v, err = tx.Get(benchPath(i))
					return err
				})
				if err != nil || len(v) != len(benchJSON) {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	ctx := context.Background()
	for _, kind := range benchStores {
		b.Run("store="+kind+"/impl=kv", func(b *testing.B) {
			s := openBenchStore(b, kind)
			fillBench(b, s)
			e := newEngine(b, s, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := e.Write(ctx, benchPath(i), benchSecret); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("store="+kind+"/impl=raw", func(b *testing.B) {
			s := openBenchStore(b, kind)
			fillBench(b, s)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					return tx.Put(benchPath(i), benchJSON)
				})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// listKeys returns the number of keys of the large List benchmark.
func listKeys() int {
	full := os.Getenv("KEEL_BENCH_FULL") != ""
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		full = false
	}
	if full {
		return 1_000_000
	}
	return 100_000
}

// listEngines caches the engines of BenchmarkList by number of keys, so that
// the large store is filled once per process, outside the timer.
var listEngines = map[int]*kv.Engine{}

// listEngine returns an engine over a memstore holding keys secrets in 20
// folders: "f00/k0000000" and so on.
func listEngine(b *testing.B, keys int) *kv.Engine {
	b.Helper()
	if e, ok := listEngines[keys]; ok {
		return e
	}
	s := memstore.New(nil)
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for f := range 20 {
			for k := range keys / 20 {
				if err := tx.Put(fmt.Sprintf("f%02d/k%07d", f, k), benchJSON); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC() // so that marking the new heap does not fall in the timed loop
	e := newEngine(b, s, nil)
	listEngines[keys] = e
	return e
}

func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	for _, keys := range []int{20, listKeys()} {
		b.Run(fmt.Sprintf("store=memstore/keys=%d", keys), func(b *testing.B) {
			e := listEngine(b, keys)
			b.ReportAllocs()
			for b.Loop() {
				names, err := listAll(e, ctx, "")
				if err != nil || len(names) != 20 {
					b.Fatal(names, err)
				}
			}
		})
	}
}

// BenchmarkLargeSecret writes and reads one secret of 4 MiB on the memory
// store, against the raw store's Put and Get of the same JSON: B/op shows
// the copies kv makes of a large value (encoded, decoded) beyond the
// store's own. The read with a Reserver in its context reserves the value
// before it loads it (keel.Reserver).
func BenchmarkLargeSecret(b *testing.B) {
	ctx := context.Background()
	value := strings.Repeat("x", 4<<20)
	data := map[string]any{"v": value}
	raw, err := json.Marshal(data)
	if err != nil {
		b.Fatal(err)
	}
	reserving := keel.WithReserver(ctx, func(context.Context, int64) error { return nil })
	for _, op := range []string{"write", "read"} {
		b.Run("op="+op+"/impl=kv", func(b *testing.B) {
			e := newEngine(b, memstore.New(nil), nil)
			mustWrite(b, ctx, e, "big", data)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if op == "write" {
					mustWrite(b, ctx, e, "big", data)
				} else if s, err := e.Read(ctx, "big"); err != nil || len(s.JSON) != len(raw) {
					b.Fatal(err)
				}
			}
		})
		if op == "read" {
			b.Run("op=read/impl=kv-reserving", func(b *testing.B) {
				e := newEngine(b, memstore.New(nil), nil)
				mustWrite(b, ctx, e, "big", data)
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if s, err := e.Read(reserving, "big"); err != nil || len(s.JSON) != len(raw) {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("op="+op+"/impl=raw", func(b *testing.B) {
			s := memstore.New(nil)
			put := func() error {
				return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put("big", raw) })
			}
			if err := put(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if op == "write" {
					err = put()
				} else {
					err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error { _, err := tx.Get("big"); return err })
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
