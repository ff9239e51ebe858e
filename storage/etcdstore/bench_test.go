package etcdstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// The benchmarks run each operation on etcdstore, on the raw etcd client
// doing the same requests, and on boltstore (durable, fsync per commit),
// in the same run. See BENCHMARKS.md.

func benchStores(b *testing.B) (etcd storage.Store, raw *clientv3.Client, rawPrefix string, bolt storage.Store) {
	b.Helper()
	client := etcdtest.Client(b)
	etcd = etcdstore.New(client, &etcdstore.Options{Prefix: etcdtest.Prefix()})
	bs, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { etcd.Close(); bs.Close() })
	return etcd, client, etcdtest.Prefix(), bs
}

func mustUpdate(b *testing.B, s storage.Store, fn func(ctx context.Context, tx storage.Tx) error) {
	if err := s.Update(context.Background(), fn); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkGet(b *testing.B) {
	etcd, raw, rp, bolt := benchStores(b)
	ctx := context.Background()
	value := []byte("a value of some thirty-two bytes")
	for _, s := range []storage.Store{etcd, bolt} {
		mustUpdate(b, s, func(ctx context.Context, tx storage.Tx) error { return tx.Put("k", value) })
	}
	if _, err := raw.Put(ctx, rp+"k", string(value)); err != nil {
		b.Fatal(err)
	}
	get := func(s storage.Store) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
					_, err := tx.Get("k")
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("etcdstore", get(etcd))
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := raw.Get(ctx, rp+"k"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("boltstore", get(bolt))
}

// BenchmarkUpdate: Put is an Update that writes one key without reading
// (raw: one Put); Increment reads a counter and writes it back (raw: a Get,
// then a Txn that compares its mod revision and puts).
func BenchmarkUpdate(b *testing.B) {
	etcd, raw, rp, bolt := benchStores(b)
	ctx := context.Background()
	value := []byte("a value of some thirty-two bytes")
	put := func(s storage.Store) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				mustUpdate(b, s, func(ctx context.Context, tx storage.Tx) error { return tx.Put("k", value) })
			}
		}
	}
	incr := func(s storage.Store) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				mustUpdate(b, s, func(ctx context.Context, tx storage.Tx) error {
					v, err := tx.Get("n")
					n := 0
					if err == nil {
						n, _ = strconv.Atoi(string(v))
					}
					return tx.Put("n", []byte(strconv.Itoa(n+1)))
				})
			}
		}
	}
	b.Run("Put/etcdstore", put(etcd))
	b.Run("Put/raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := raw.Put(ctx, rp+"k", string(value)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Put/boltstore", put(bolt))
	b.Run("Increment/etcdstore", incr(etcd))
	b.Run("Increment/raw", func(b *testing.B) {
		for b.Loop() {
			resp, err := raw.Get(ctx, rp+"n")
			if err != nil {
				b.Fatal(err)
			}
			n, rev := 0, int64(0)
			if len(resp.Kvs) > 0 {
				n, _ = strconv.Atoi(string(resp.Kvs[0].Value))
				rev = resp.Kvs[0].ModRevision
			}
			tr, err := raw.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(rp+"n"), "=", rev)).
				Then(clientv3.OpPut(rp+"n", strconv.Itoa(n+1))).Commit()
			if err != nil || !tr.Succeeded {
				b.Fatal(err, tr)
			}
		}
	})
	b.Run("Increment/boltstore", incr(bolt))
}

// BenchmarkConcurrentWriters: one op is a round of 32 goroutines that each
// write their own key (read, then write: an Increment of its own counter).
func BenchmarkConcurrentWriters(b *testing.B) {
	const writers = 32
	etcd, raw, rp, bolt := benchStores(b)
	ctx := context.Background()
	round := func(b *testing.B, write func(i int) error) {
		for b.Loop() {
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() { errs[i] = write(i) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	store := func(s storage.Store) func(b *testing.B) {
		return func(b *testing.B) {
			round(b, func(i int) error {
				key := fmt.Sprintf("w/%02d", i)
				return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					v, err := tx.Get(key)
					n := 0
					if err == nil {
						n, _ = strconv.Atoi(string(v))
					}
					return tx.Put(key, []byte(strconv.Itoa(n+1)))
				})
			})
		}
	}
	b.Run("etcdstore", store(etcd))
	b.Run("raw", func(b *testing.B) {
		round(b, func(i int) error {
			key := fmt.Sprintf("%sw/%02d", rp, i)
			resp, err := raw.Get(ctx, key)
			if err != nil {
				return err
			}
			n, rev := 0, int64(0)
			if len(resp.Kvs) > 0 {
				n, _ = strconv.Atoi(string(resp.Kvs[0].Value))
				rev = resp.Kvs[0].ModRevision
			}
			tr, err := raw.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
				Then(clientv3.OpPut(key, strconv.Itoa(n+1))).Commit()
			if err == nil && !tr.Succeeded {
				err = fmt.Errorf("raw: conflict on %s", key)
			}
			return err
		})
	})
	b.Run("boltstore", store(bolt))
}
