package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

// batches wraps a store and records, for each Update that committed, how
// many keys the callback of Batch handled in the closure's last run, and
// how many Updates the store refused as too large.
type batches struct {
	storage.Store
	sizes   []int
	cur     int
	refused int
}

func (b *batches) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	err := b.Store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		b.cur = 0
		return fn(ctx, tx)
	})
	switch {
	case err == nil:
		b.sizes = append(b.sizes, b.cur)
	case errors.Is(err, storage.ErrTxTooLarge):
		b.refused++
	}
	return err
}

// fill stores n keys prefix+4 digits with values of valueSize bytes, one
// per Update, so as to fit any limits.
func fill(t testing.TB, s storage.Store, prefix string, n, valueSize int) {
	t.Helper()
	for i := range n {
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.Put(fmt.Sprintf("%s%04d", prefix, i), []byte(strings.Repeat("v", valueSize)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// left returns how many keys are under prefix.
func left(t testing.TB, s storage.Store, prefix string) int {
	t.Helper()
	n := 0
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantSizes is the batches of total keys, each of size but the last.
func wantSizes(total, size int) []int {
	var out []int
	for ; total > size; total -= size {
		out = append(out, size)
	}
	return append(out, total)
}

// TestBatchSizes: Batch makes its transactions as large as the store's
// limits allow, and no larger: memstore enforces every limit, MaxTxReads
// included, so a batch one key too large would be refused.
func TestBatchSizes(t *testing.T) {
	etcd := storage.Limits{MaxKeySize: 4 << 10, MaxValueSize: 1 << 20, MaxTxOps: 128, MaxTxBytes: 1400 << 10, MaxTxReads: 128}
	cases := []struct {
		name      string
		limits    storage.Limits
		sub       string // Batch over a Sub view of the store with this prefix
		opts      *storage.BatchOptions
		keys      int
		valueSize int
		want      int // keys per batch
	}{
		// 126 keys, the key that ends the batch and the scan: 128 reads.
		{"etcd, one write", etcd, "", nil, 1000, 100, 126},
		{"etcd, keys only", etcd, "", &storage.BatchOptions{KeysOnly: true}, 1000, 100, 126},
		// 64 keys would be 128 writes, but 64*2+2 = 130 reads.
		{"etcd, two writes and a read", etcd, "", &storage.BatchOptions{Writes: 2, Reads: 1}, 1000, 100, 63},
		{"operations only", storage.Limits{MaxTxOps: 50}, "", &storage.BatchOptions{Writes: 3}, 100, 10, 16},
		{"reads only", storage.Limits{MaxTxReads: 50}, "", &storage.BatchOptions{Reads: 3}, 100, 10, 12},
		{"no limits", storage.DefaultLimits(), "", nil, 1500, 10, 1000},
		// A key of 6 bytes and a value of 94: 10 rewrites in 1,000 bytes.
		{"bytes", storage.Limits{MaxTxBytes: 1000}, "", nil, 100, 94, 10},
		{"bytes, two writes", storage.Limits{MaxTxBytes: 1000}, "", &storage.BatchOptions{Writes: 2}, 100, 94, 5},
		// Deletes count the key alone.
		{"bytes, keys only", storage.Limits{MaxTxBytes: 600}, "", &storage.BatchOptions{KeysOnly: true}, 500, 1, 100},
		// The store below a Sub view counts the view's prefix too: 14
		// + 6 + 94 bytes per key.
		{"bytes under a Sub view", storage.Limits{MaxTxBytes: 1000}, "a/long/prefix/", nil, 100, 94, 8},
		{"one operation at most", storage.Limits{MaxTxOps: 1}, "", nil, 20, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &batches{Store: memstore.New(&memstore.Options{Limits: c.limits})}
			var s storage.Store = b
			if c.sub != "" {
				s = storage.Sub(b, c.sub)
			}
			fill(t, s, "k/", c.keys, c.valueSize)
			b.sizes = nil
			var o storage.BatchOptions
			if c.opts != nil {
				o = *c.opts
			}
			n, err := storage.Batch(context.Background(), s, "k/", c.opts, func(tx storage.Tx, key string, value []byte) error {
				b.cur++
				// Read o.Reads keys other than key, and write o.Writes
				// times: key's value, then keys elsewhere.
				for i := range o.Reads {
					if _, err := tx.Get(fmt.Sprintf("other/%s/%d", key, i)); !errors.Is(err, storage.ErrNotFound) {
						return fmt.Errorf("Get: %v", err)
					}
				}
				for i := range max(o.Writes, 1) {
					if i > 0 {
						// As large as key.
						if err := tx.Put(fmt.Sprintf("%d%s", i, key[1:]), value); err != nil {
							return err
						}
						continue
					}
					if o.KeysOnly {
						if err := tx.Delete(key); err != nil {
							return err
						}
						continue
					}
					if err := tx.Put(key, value); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil || n != c.keys {
				t.Fatalf("Batch = %d, %v; want %d, nil", n, err, c.keys)
			}
			if b.refused > 0 {
				t.Errorf("the store refused %d transactions of Batch", b.refused)
			}
			if want := wantSizes(c.keys, c.want); !slices.Equal(b.sizes, want) {
				t.Errorf("batches of %v keys, want %v", b.sizes, want)
			}
		})
	}
}

// padded is a wrapper that writes more bytes than it is given, as sealstore
// does, without saying so in its Limits.
type padded struct{ storage.Store }

func (p padded) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return p.Store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, paddedTx{tx})
	})
}

type paddedTx struct{ storage.Tx }

func (t paddedTx) Put(key string, value []byte) error {
	return t.Tx.Put(key, append(slices.Clone(value), make([]byte, 50)...))
}

// TestBatchShrinksWhenRefused: a batch that the store refuses as too large,
// though Batch sized it from the Limits, is tried again with fewer keys;
// one key too large alone ends Batch with the error, after the batches
// before it committed.
func TestBatchShrinksWhenRefused(t *testing.T) {
	b := &batches{Store: memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxBytes: 1000}})}
	s := padded{b}
	fill(t, b, "k/", 100, 44) // 50 bytes per key, 100 once padded
	b.sizes = nil
	n, err := storage.Batch(context.Background(), s, "k/", nil, func(tx storage.Tx, key string, value []byte) error {
		b.cur++
		return tx.Put(key, value)
	})
	if err != nil || n != 100 {
		t.Fatalf("Batch over a padding wrapper = %d, %v; want 100, nil", n, err)
	}
	// The 11th Put of the first batch of 20 is refused: batches of 10.
	if b.refused != 1 || !slices.Equal(b.sizes, wantSizes(100, 10)) {
		t.Errorf("refused %d, then batches of %v keys; want 1 refusal, then batches of 10", b.refused, b.sizes)
	}

	// The same over a store that refuses at commit: memstore checks
	// MaxTxReads there.
	b = &batches{Store: memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxReads: 21}})}
	fill(t, b, "k/", 100, 1)
	b.sizes = nil
	n, err = storage.Batch(context.Background(), b, "k/", &storage.BatchOptions{Reads: 1}, func(tx storage.Tx, key string, value []byte) error {
		b.cur++
		// Two reads besides key, where Batch was told of one.
		for _, k := range []string{"x/" + key, "y/" + key} {
			if _, err := tx.Get(k); !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("Get(%q): %v", k, err)
			}
		}
		return tx.Put(key, value)
	})
	if err != nil || n != 100 {
		t.Fatalf("Batch reading more than it said = %d, %v; want 100, nil", n, err)
	}
	// Batch sizes batches of 9 keys, which read 29 keys and are refused
	// at commit; half as many read 14.
	if b.refused != 1 || !slices.Equal(b.sizes, wantSizes(100, 4)) {
		t.Errorf("refused %d, then batches of %v keys; want 1 refusal, then batches of 4", b.refused, b.sizes)
	}

	// k/0050 is too large for a transaction of its own once padded.
	b = &batches{Store: memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxBytes: 1000}})}
	s = padded{b}
	fill(t, b, "k/", 100, 44)
	err = b.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("k/0050", make([]byte, 990))
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err = storage.Batch(context.Background(), s, "k/", nil, func(tx storage.Tx, key string, value []byte) error {
		return tx.Put(key, value)
	})
	if !errors.Is(err, storage.ErrTxTooLarge) || n != 50 {
		t.Fatalf("Batch over a key too large = %d, %v; want 50, ErrTxTooLarge", n, err)
	}
}

// TestBatchCount: Batch returns how many keys it visited in committed
// batches; a failing batch is rolled back and not counted, and a second run
// handles exactly what is left.
func TestBatchCount(t *testing.T) {
	s := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 10}})
	fill(t, s, "k/", 95, 1)
	errStop := errors.New("stop")
	calls := 0
	n, err := storage.Batch(context.Background(), s, "k/", nil, func(tx storage.Tx, key string, _ []byte) error {
		if calls++; calls == 57 {
			return errStop
		}
		return tx.Delete(key)
	})
	if !errors.Is(err, errStop) || n != 50 {
		t.Fatalf("Batch failing on the 57th key = %d, %v; want 50, the callback's error", n, err)
	}
	if got := left(t, s, "k/"); got != 45 {
		t.Fatalf("%d keys left, want 45: the failing batch was not rolled back", got)
	}
	n, err = storage.DeletePrefix(context.Background(), s, "k/")
	if err != nil || n != 45 {
		t.Fatalf("DeletePrefix run again = %d, %v; want 45, nil", n, err)
	}
	if got := left(t, s, "k/"); got != 0 {
		t.Fatalf("%d keys left after DeletePrefix", got)
	}
}

// TestBatchStopScan: a callback that returns StopScan ends Batch without an
// error; its batch, that key's writes included, commits.
func TestBatchStopScan(t *testing.T) {
	s := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 10}})
	fill(t, s, "k/", 95, 1)
	calls := 0
	n, err := storage.Batch(context.Background(), s, "k/", nil, func(tx storage.Tx, key string, _ []byte) error {
		if err := tx.Delete(key); err != nil {
			return err
		}
		if calls++; calls == 25 {
			return storage.StopScan
		}
		return nil
	})
	if err != nil || n != 25 {
		t.Fatalf("Batch stopped on the 25th key = %d, %v; want 25, nil", n, err)
	}
	if got := left(t, s, "k/"); got != 70 {
		t.Fatalf("%d keys left, want 70", got)
	}
}

// TestBatchClosuresRerun: a store that runs each closure twice makes Batch
// neither skip nor miscount a key.
func TestBatchClosuresRerun(t *testing.T) {
	fs := faultstore.New(memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 10}}))
	fill(t, fs, "k/", 95, 1)
	fs.Rerun(true)
	n, err := storage.DeletePrefix(context.Background(), fs, "k/")
	if err != nil || n != 95 {
		t.Fatalf("DeletePrefix = %d, %v; want 95, nil", n, err)
	}
	if got := left(t, fs, "k/"); got != 0 {
		t.Fatalf("%d keys left", got)
	}
}

func ExampleDeletePrefix() {
	ctx := context.Background()
	// etcd's limits: 128 operations and 128 reads per transaction.
	store := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 128, MaxTxReads: 128}})
	defer store.Close()
	for start := 0; start < 1000; start += 100 {
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for i := start; i < start+100; i++ {
				if err := tx.Put(fmt.Sprintf("sessions/%04d", i), []byte("{}")); err != nil {
					return err
				}
			}
			return tx.Put("users/ada", []byte("{}"))
		})
		if err != nil {
			panic(err)
		}
	}

	// One Update could not delete 1,000 keys; DeletePrefix uses as many as
	// it takes. After an error, run it again: it deletes what is left.
	n, err := storage.DeletePrefix(ctx, store, "sessions/")
	fmt.Println("deleted", n, err)

	_ = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			fmt.Println("left", key)
			return nil
		})
	})
	// Output:
	// deleted 1000 <nil>
	// left users/ada
}

func ExampleBatch() {
	ctx := context.Background()
	store := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 128, MaxTxReads: 128}})
	defer store.Close()
	err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, name := range []string{"ada", "alan", "grace"} {
			if err := tx.Put("users/"+name, []byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	// Rewrite every user to a final form: a second run, after an error,
	// finds the users done already and leaves them as they are.
	n, err := storage.Batch(ctx, store, "users/", nil, func(tx storage.Tx, key string, value []byte) error {
		return tx.Put(key, []byte(strings.ToUpper(string(value))))
	})
	fmt.Println("rewrote", n, err)

	_ = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, _ := tx.Get("users/grace")
		fmt.Println(string(v))
		return nil
	})
	// Output:
	// rewrote 3 <nil>
	// GRACE
}
