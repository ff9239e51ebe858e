package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel/storage"
)

// batchKeys is how many keys the Batch case works on: enough for several
// transactions on a store with etcd's limits, and for two on a store
// without limits, whose transactions of Batch hold 1,000 keys.
const batchKeys = 1100

// refusals wraps a store and counts the Updates it refused with
// storage.ErrTxTooLarge: storage.Batch sizes its transactions from the
// store's Limits, so a store whose Limits state every bound refuses none.
type refusals struct {
	storage.Store
	n atomic.Int32
}

func (r *refusals) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	err := r.Store.Update(ctx, fn)
	if errors.Is(err, storage.ErrTxTooLarge) {
		r.n.Add(1)
	}
	return err
}

// watch returns a store that is s, and the refusals that count what it
// refuses. A Sub view stays one, so that Batch sees its prefix.
func watch(s storage.Store) (storage.Store, *refusals) {
	base, prefix := storage.Split(s)
	r := &refusals{Store: base}
	if prefix == "" {
		return r, r
	}
	return storage.Sub(r, prefix), r
}

// wantNoRefusal fails t when r refused a transaction of Batch.
func wantNoRefusal(t testing.TB, r *refusals, what string) {
	t.Helper()
	if n := r.n.Load(); n > 0 {
		t.Errorf("%s: the store refused %d of its transactions as too large: its Limits() = %+v do not state every bound it has", what, n, r.Limits())
	}
}

// batchData returns batchKeys keys under prefix (prefix + 4 digits) with
// values of about 100 bytes, less when the store's limits want smaller ones,
// or ok false when the limits are too small for the case.
func batchData(t testing.TB, l storage.Limits, prefix string) (kvs []kv, ok bool) {
	t.Helper()
	size := 100
	if l.MaxValueSize > 0 {
		size = min(size, l.MaxValueSize)
	}
	if l.MaxTxBytes > 0 {
		// Room for two writes of a key and its value per transaction.
		size = min(size, l.MaxTxBytes/2-len(prefix)-4)
	}
	if size < 8 || l.MaxKeySize > 0 && len(prefix)+4 > l.MaxKeySize {
		t.Logf("limits %+v too small for the keys and values of this case: not tested", l)
		return nil, false
	}
	kvs = make([]kv, batchKeys)
	for i := range kvs {
		id := fmt.Sprintf("%04d", i)
		kvs[i] = kv{prefix + id, id + strings.Repeat("v", size-len(id))}
	}
	return kvs, true
}

// countKeys returns how many keys are under prefix, in a new View.
func countKeys(t testing.TB, s storage.Store, prefix string) int {
	t.Helper()
	return len(scanAll(t, s, prefix, storage.ScanOptions{KeysOnly: true}))
}

// testBatch: storage.Batch and storage.DeletePrefix visit, rewrite and
// delete every key of a prefix of batchKeys keys in transactions the store
// accepts, whatever its limits, and a DeletePrefix interrupted midway by an
// error or a canceled context leaves exactly the keys of the batch that
// failed and those after it, which a second run deletes.
func testBatch(t *testing.T, s storage.Store) {
	t.Run("Visit", func(t *testing.T) { testBatchVisit(t, s) })
	t.Run("DeletePrefix", func(t *testing.T) { testBatchDeletePrefix(t, s) })
	t.Run("Interrupted", func(t *testing.T) { testBatchInterrupted(t, s) })
	t.Run("ReadsAndWrites", func(t *testing.T) { testBatchReadsAndWrites(t, s) })
}

// neighbours are keys next to prefix p that no Batch over p may touch.
func neighbours(p string) []kv {
	base := strings.TrimSuffix(p, "/")
	return []kv{{base, "n"}, {base + ".x", "n"}, {base + "0", "n"}}
}

// wantNeighbours fails t unless the neighbours of p are as putAll left them.
func wantNeighbours(t testing.TB, s storage.Store, p string) {
	t.Helper()
	for _, e := range neighbours(p) {
		wantValue(t, s, e.key, e.value)
	}
}

func testBatchVisit(t *testing.T, s storage.Store) {
	const p = "bv/"
	kvs, ok := batchData(t, s.Limits(), p)
	if !ok {
		return
	}
	putAll(t, s, append(kvs, neighbours(p)...)...)
	w, r := watch(s)
	got := map[string]string{}
	n, err := storage.Batch(context.Background(), w, p, nil, func(tx storage.Tx, key string, value []byte) error {
		got[key] = string(value)
		return nil
	})
	if err != nil || n != len(kvs) {
		t.Errorf("Batch over %d keys = %d, %v; want %d, nil", len(kvs), n, err, len(kvs))
	}
	if len(got) != len(kvs) {
		t.Errorf("Batch called its callback for %d keys, want %d", len(got), len(kvs))
	}
	for _, e := range kvs {
		if v, ok := got[e.key]; !ok || v != e.value {
			t.Errorf("Batch gave %q = %q (visited: %v), want %q", e.key, v, ok, e.value)
			break
		}
	}
	wantNoRefusal(t, r, "Batch")
}

func testBatchDeletePrefix(t *testing.T, s storage.Store) {
	const p = "bd/"
	kvs, ok := batchData(t, s.Limits(), p)
	if !ok {
		return
	}
	putAll(t, s, append(kvs, neighbours(p)...)...)
	w, r := watch(s)
	n, err := storage.DeletePrefix(context.Background(), w, p)
	if err != nil || n != len(kvs) {
		t.Errorf("DeletePrefix over %d keys = %d, %v; want %d, nil", len(kvs), n, err, len(kvs))
	}
	if left := countKeys(t, s, p); left != 0 {
		t.Errorf("DeletePrefix left %d keys", left)
	}
	wantNeighbours(t, s, p)
	wantNoRefusal(t, r, "DeletePrefix")
	if n, err := storage.DeletePrefix(context.Background(), s, p); err != nil || n != 0 {
		t.Errorf("DeletePrefix of an empty prefix = %d, %v; want 0, nil", n, err)
	}
}

func testBatchInterrupted(t *testing.T, s storage.Store) {
	const p = "bi/"
	kvs, ok := batchData(t, s.Limits(), p)
	if !ok {
		return
	}
	putAll(t, s, append(kvs, neighbours(p)...)...)
	left := len(kvs)
	// deleteUntil deletes keys of p with Batch, and calls stop instead of
	// deleting on the callback's call number at.
	deleteUntil := func(ctx context.Context, at int, stop func() error) (int, error) {
		calls := 0
		return storage.Batch(ctx, s, p, &storage.BatchOptions{KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
			if calls++; calls == at {
				if err := stop(); err != nil {
					return err
				}
			}
			return tx.Delete(key)
		})
	}
	// wantLeft fails t unless the interrupted run deleted exactly the n
	// keys it reports.
	wantLeft := func(what string, n int) {
		t.Helper()
		if n < 0 || n >= left {
			t.Fatalf("%s: Batch reports %d keys deleted of %d", what, n, left)
		}
		left -= n
		if got := countKeys(t, s, p); got != left {
			t.Errorf("%s: Batch reports %d keys deleted, and %d are left, want %d: a failed batch was committed, or a committed one not counted", what, n, got, left)
		}
	}

	// The callback fails on its 500th call.
	n, err := deleteUntil(context.Background(), 500, func() error { return errTest })
	if !errors.Is(err, errTest) {
		t.Errorf("Batch whose callback failed returned %v, want the callback's error", err)
	}
	wantLeft("a callback error", n)

	// The context is canceled on the 250th call: the Delete fails.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err = deleteUntil(ctx, 250, func() error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Batch canceled midway returned %v, want context.Canceled", err)
	}
	wantLeft("a canceled context", n)

	// Run again, DeletePrefix deletes what is left, and only that.
	w, r := watch(s)
	n, err = storage.DeletePrefix(context.Background(), w, p)
	if err != nil || n != left {
		t.Errorf("DeletePrefix after two interrupted runs = %d, %v; want %d, nil", n, err, left)
	}
	if got := countKeys(t, s, p); got != 0 {
		t.Errorf("DeletePrefix run again left %d keys", got)
	}
	wantNeighbours(t, s, p)
	wantNoRefusal(t, r, "DeletePrefix")
}

func testBatchReadsAndWrites(t *testing.T, s storage.Store) {
	const src, ref, dst = "bw/src/", "bw/ref/", "bw/dst/"
	kvs, ok := batchData(t, s.Limits(), src)
	if !ok {
		return
	}
	refs := make([]kv, len(kvs))
	for i := range refs {
		id := fmt.Sprintf("%04d", i)
		refs[i] = kv{ref + id, "ref" + id}
	}
	putAll(t, s, kvs...)
	putAll(t, s, refs...)
	w, r := watch(s)
	// Each key is rewritten to its final form, and a key of dst gets the
	// value of a key of ref: two writes and one read besides the key
	// itself, which is read again for free.
	n, err := storage.Batch(context.Background(), w, src, &storage.BatchOptions{Writes: 2, Reads: 1}, func(tx storage.Tx, key string, value []byte) error {
		id := strings.TrimPrefix(key, src)
		again, err := tx.Get(key)
		if err != nil {
			return fmt.Errorf("Get(%q) of the key given: %w", key, err)
		}
		if string(again) != string(value) {
			return fmt.Errorf("Get(%q) of the key given returned %q, the callback was given %q", key, again, value)
		}
		v, err := tx.Get(ref + id)
		if err != nil {
			return fmt.Errorf("Get(%q): %w", ref+id, err)
		}
		if err := tx.Put(dst+id, v); err != nil {
			return fmt.Errorf("Put(%q): %w", dst+id, err)
		}
		return tx.Put(key, []byte("done"+id))
	})
	if err != nil || n != len(kvs) {
		t.Errorf("Batch with 2 writes and 1 read per key over %d keys = %d, %v; want %d, nil", len(kvs), n, err, len(kvs))
	}
	wantNoRefusal(t, r, "Batch with 2 writes and 1 read per key")
	got := scanAll(t, s, "bw/", storage.ScanOptions{})
	want := make(map[string]string, 3*len(kvs))
	for i, e := range refs {
		id := strings.TrimPrefix(e.key, ref)
		want[e.key] = e.value
		want[dst+id] = e.value
		want[kvs[i].key] = "done" + id
	}
	if len(got) != len(want) {
		t.Errorf("after Batch, %d keys under bw/, want %d", len(got), len(want))
	}
	for _, e := range got {
		if w, ok := want[e.key]; !ok || w != e.value {
			t.Errorf("after Batch, %q = %q, want %q (expected: %v)", e.key, e.value, w, ok)
			break
		}
	}
}
