package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

// The benchmarks compare the stores with yardsticks, in one run:
//
//   - engine=map: a Go map guarded by a sync.RWMutex, copying values in and
//     out: the yardstick of memstore;
//   - engine=bbolt-raw: go.etcd.io/bbolt used directly, with the options of
//     boltstore (fsync on, hashmap freelist): the yardstick of boltstore;
//   - engine=memstore, engine=boltstore, and engine=sealstore-bolt (sealstore
//     with a 32-byte key over boltstore).
//
// Bolt files live in b.TempDir(); every commit of a bolt engine is synced.
// They run with -benchtime 1x too (as in CI); see BENCHMARKS.md at the root
// of the module for figures.

const benchValueSize = 100

var (
	benchValue  = bytes.Repeat([]byte("v"), benchValueSize)
	benchBucket = []byte("keel") // boltstore's bucket, for bbolt-raw alike
	benchSeal   = bytes.Repeat([]byte{0x5e}, sealstore.KeySize)
	benchSink   []byte
	benchKey    string
)

// storeEngines are the engines that are storage.Stores.
var storeEngines = []string{"memstore", "boltstore", "sealstore-bolt"}

// openStore opens an empty store of engine, with its files in dir, and
// closes it at the end of owner (b or a parent of b).
func openStore(b, owner *testing.B, engine, dir string) storage.Store {
	b.Helper()
	var s storage.Store
	switch engine {
	case "memstore":
		s = memstore.New(nil)
	case "boltstore", "sealstore-bolt":
		bs, err := boltstore.Open(filepath.Join(dir, engine+".db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		s = bs
		if engine == "sealstore-bolt" {
			if s, err = sealstore.New(bs, benchSeal, nil); err != nil {
				b.Fatal(err)
			}
		}
	default:
		b.Fatalf("unknown engine %q", engine)
	}
	owner.Cleanup(func() {
		if err := s.Close(); err != nil {
			owner.Error(err)
		}
	})
	return s
}

// openRaw opens a bbolt file in dir as boltstore does, with its bucket, and
// closes it at the end of owner (b or a parent of b).
func openRaw(b, owner *testing.B, dir string) *bolt.DB {
	b.Helper()
	db, err := bolt.Open(filepath.Join(dir, "raw.db"), 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	owner.Cleanup(func() {
		if err := db.Close(); err != nil {
			owner.Error(err)
		}
	})
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(benchBucket)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func benchKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%08d", prefix, i)
	}
	return keys
}

// loadStore puts benchValue at every key in one Update.
func loadStore(b *testing.B, s storage.Store, keys []string) {
	b.Helper()
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for _, k := range keys {
			if err := tx.Put(k, benchValue); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// loadRaw puts benchValue at every key in one bbolt transaction.
func loadRaw(b *testing.B, db *bolt.DB, keys []string) {
	b.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(benchBucket)
		for _, k := range keys {
			if err := bk.Put([]byte(k), benchValue); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// rwMap is the yardstick of memstore.
type rwMap struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (m *rwMap) get(key string) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.m[key]
	if !ok {
		return nil, false
	}
	return append(make([]byte, 0, len(v)), v...), true
}

func (m *rwMap) put(keys []string, value []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		m.m[k] = append(make([]byte, 0, len(value)), value...)
	}
}

// BenchmarkGet: a View (or its equivalent) with one Get of one of 1,000
// keys.
func BenchmarkGet(b *testing.B) {
	keys := benchKeys("g/", 1000)
	ctx := context.Background()

	b.Run("engine=map", func(b *testing.B) {
		m := &rwMap{m: make(map[string][]byte)}
		m.put(keys, benchValue)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			v, ok := m.get(keys[i%len(keys)])
			if !ok {
				b.Fatal("missing key")
			}
			benchSink = v
			i++
		}
	})

	b.Run("engine=bbolt-raw", func(b *testing.B) {
		db := openRaw(b, b, b.TempDir())
		loadRaw(b, db, keys)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			err := db.View(func(tx *bolt.Tx) error {
				v := tx.Bucket(benchBucket).Get([]byte(keys[i%len(keys)]))
				if v == nil {
					return storage.ErrNotFound
				}
				benchSink = bytes.Clone(v)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})

	for _, engine := range storeEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			s := openStore(b, b, engine, b.TempDir())
			loadStore(b, s, keys)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
					v, err := tx.Get(keys[i%len(keys)])
					benchSink = v
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkUpdate1: one Update putting one key, over 1,000 keys in turn.
func BenchmarkUpdate1(b *testing.B) { benchUpdate(b, 1) }

// BenchmarkUpdate10: one Update putting 10 keys, over 1,000 keys in turn.
func BenchmarkUpdate10(b *testing.B) { benchUpdate(b, 10) }

func benchUpdate(b *testing.B, perTx int) {
	keys := benchKeys("u/", 1000)
	ctx := context.Background()
	// batch returns the perTx keys written by iteration i.
	batch := func(i int) []string {
		j := (i * perTx) % len(keys)
		return keys[j : j+perTx]
	}

	b.Run("engine=map", func(b *testing.B) {
		m := &rwMap{m: make(map[string][]byte)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.put(batch(i), benchValue)
			i++
		}
	})

	b.Run("engine=bbolt-raw", func(b *testing.B) {
		db := openRaw(b, b, b.TempDir())
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			err := db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(benchBucket)
				for _, k := range batch(i) {
					// Copies, as a store must: bbolt keeps
					// the slices until the commit.
					if err := bk.Put([]byte(k), bytes.Clone(benchValue)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})

	for _, engine := range storeEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			s := openStore(b, b, engine, b.TempDir())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					for _, k := range batch(i) {
						if err := tx.Put(k, benchValue); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

const pageSize = 20

// BenchmarkPage: a page of 20 keys with their values, after the key in the
// middle of a prefix of 100 or 100,000 keys.
func BenchmarkPage(b *testing.B) {
	ctx := context.Background()
	parent := b // owns the files and closes them once every round is done
	prefix := "p/"
	for _, n := range []int{100, 100_000} {
		keys := benchKeys(prefix, n)
		after := keys[n/2]
		// The files are filled once, on first use, and kept for every
		// -count round: filling 100,000 keys dominates otherwise.
		dir := b.TempDir()
		var rawDB *bolt.DB
		stores := make(map[string]storage.Store)

		b.Run(fmt.Sprintf("keys=%d/engine=bbolt-raw", n), func(b *testing.B) {
			if rawDB == nil {
				rawDB = openRaw(b, parent, dir)
				loadRaw(b, rawDB, keys)
			}
			db := rawDB
			p, a := []byte(prefix), []byte(after)
			b.ReportAllocs()
			for b.Loop() {
				count := 0
				err := db.View(func(tx *bolt.Tx) error {
					c := tx.Bucket(benchBucket).Cursor()
					k, v := c.Seek(a)
					if bytes.Equal(k, a) {
						k, v = c.Next()
					}
					for ; k != nil && bytes.HasPrefix(k, p) && count < pageSize; k, v = c.Next() {
						benchKey = string(k) // a page hands out keys as strings
						benchSink = bytes.Clone(v)
						count++
					}
					return nil
				})
				if err != nil || count != pageSize {
					b.Fatalf("page of %d keys: %v", count, err)
				}
			}
		})

		for _, engine := range storeEngines {
			b.Run(fmt.Sprintf("keys=%d/engine=%s", n, engine), func(b *testing.B) {
				s := stores[engine]
				if s == nil {
					s = openStore(b, parent, engine, dir)
					loadStore(b, s, keys)
					stores[engine] = s
				}
				b.ReportAllocs()
				for b.Loop() {
					count := 0
					err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
						return tx.Scan(prefix, storage.ScanOptions{After: after}, func(key string, value []byte) error {
							benchKey = key
							benchSink = value
							if count++; count == pageSize {
								return storage.StopScan
							}
							return nil
						})
					})
					if err != nil || count != pageSize {
						b.Fatalf("page of %d keys: %v", count, err)
					}
				}
			})
		}
	}
}

// BenchmarkConcurrent: single-key durable Updates by 1 or 32 goroutines;
// updates/s is the figure to compare. bbolt-raw runs a db.Update per key,
// bbolt-raw-batch a db.Batch (which waits up to 10ms to group calls).
func BenchmarkConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, writers := range []int{1, 32} {
		for _, engine := range []string{"bbolt-raw", "bbolt-raw-batch", "boltstore"} {
			b.Run(fmt.Sprintf("writers=%d/engine=%s", writers, engine), func(b *testing.B) {
				var update func(key string) error
				switch engine {
				case "boltstore":
					s := openStore(b, b, engine, b.TempDir())
					update = func(key string) error {
						return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
							return tx.Put(key, benchValue)
						})
					}
				default:
					db := openRaw(b, b, b.TempDir())
					run := db.Update
					if engine == "bbolt-raw-batch" {
						run = db.Batch
					}
					update = func(key string) error {
						return run(func(tx *bolt.Tx) error {
							return tx.Bucket(benchBucket).Put([]byte(key), bytes.Clone(benchValue))
						})
					}
				}
				keys := benchKeys("c/", b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				for range writers {
					wg.Go(func() {
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return
							}
							if err := update(keys[i]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			})
		}
	}
}
