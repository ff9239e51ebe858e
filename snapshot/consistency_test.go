package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// consistencyKeys is how many keys TestSaveWhileWritingIsOneInstant saves:
// -snapshot.keys when given (the 1,000,000), else a number that
// keeps the test a few seconds under -race.
func consistencyKeys() int {
	n := 20_000
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "snapshot.keys" {
			n = *benchKeys
		}
	})
	return n
}

const clients = 32

// The keys of the test: client c owns slots clientSlot(c, j), j < m, and
// its head clientHead(c).
func clientSlot(c, j int) string { return fmt.Sprintf("c%02d/s%08d", c, j) }
func clientHead(c int) string    { return fmt.Sprintf("c%02d/head", c) }

// A value: the client's write number s, the neighbour's head h it read in
// the same transaction, and padding to 100 bytes as the benchmark's.
func encodeWrite(s, h int64) []byte {
	v := make([]byte, 100)
	binary.BigEndian.PutUint64(v, uint64(s))
	binary.BigEndian.PutUint64(v[8:], uint64(h))
	return v
}

func decodeWrite(v []byte) (s, h int64, ok bool) {
	if len(v) != 100 {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), true
}

// TestSaveWhileWritingIsOneInstant is issue 28's must-show: a Save of a
// boltstore taken while 32 clients write gives, restored, the state of one
// instant. Client c's write number s (1, 2, …) is one transaction of two
// keys: it reads the head of client c+1 (h), and puts (s, h) at its slot
// (s-1) mod m and at its head. Save begins once the clients write, and its
// stream is held back until they have committed more, so that they commit
// while its View is open. Restored:
//
//   - every write acknowledged before Save began is in it (each head is at
//     least the count acknowledged then) and none not yet begun when Save
//     returned;
//   - no write is half in it, and each client's keys are a prefix of its
//     writes: with S the restored head, every slot holds the last write of
//     the first S that went to it, with the h that write read;
//   - the clients' prefixes are of one instant: a write in it that read
//     client c+1's head at h finds c+1's prefix at least h long.
//
// With -snapshot.keys=N the store holds N keys (the 1,000,000).
func TestSaveWhileWritingIsOneInstant(t *testing.T) {
	n := consistencyKeys()
	m := max(n/clients, 1) // slots a client
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "src.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fillStart := time.Now()
	zero := encodeWrite(0, 0)
	var keys []string
	for c := range clients {
		keys = append(keys, clientHead(c))
		for j := range m {
			keys = append(keys, clientSlot(c, j))
		}
	}
	for i := 0; i < len(keys); i += 1000 {
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for _, k := range keys[i:min(i+1000, len(keys))] {
				if err := tx.Put(k, zero); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("filled %d keys in %s", len(keys), time.Since(fillStart).Round(time.Millisecond))

	// The clients. started[c] is the write client c began last, acked[c]
	// the last one its Update acknowledged, reads[c][s] what write s read
	// (its closure's last run: the one committed).
	var (
		started, acked [clients]atomic.Int64
		reads          [clients][]int64
		wg             sync.WaitGroup
	)
	wctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	for c := range clients {
		reads[c] = []int64{0}
		wg.Go(func() {
			for s := int64(1); ; s++ {
				started[c].Store(s)
				var h int64
				err := store.Update(wctx, func(ctx context.Context, tx storage.Tx) error {
					v, err := tx.Get(clientHead((c + 1) % clients))
					if err != nil {
						return err
					}
					h, _, _ = decodeWrite(v)
					w := encodeWrite(s, h)
					if err := tx.Put(clientSlot(c, int((s-1)%int64(m))), w); err != nil {
						return err
					}
					return tx.Put(clientHead(c), w)
				})
				if err != nil {
					if wctx.Err() == nil {
						t.Errorf("client %d, write %d: %v", c, s, err)
					}
					return
				}
				reads[c] = append(reads[c], h)
				acked[c].Store(s)
			}
		})
	}
	total := func() (sum int64) {
		for c := range clients {
			sum += acked[c].Load()
		}
		return sum
	}
	// waitFor waits until the clients have acknowledged want writes in all,
	// or a client failed.
	waitFor := func(want int64) {
		for total() < want && !t.Failed() {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(2 * clients)
	if t.Failed() {
		t.FailNow()
	}

	var before [clients]int64
	for c := range clients {
		before[c] = acked[c].Load()
	}
	out := &heldWriter{hold: func() { waitFor(sumOf(before[:]) + 4*clients) }}
	saveStart, cpu0 := time.Now(), keeltest.CPUTime()
	res, err := snapshot.Save(ctx, store, out, nil)
	saveWall, saveCPU := time.Since(saveStart), keeltest.CPUTime()-cpu0
	var after [clients]int64
	for c := range clients {
		after[c] = started[c].Load()
	}
	if err != nil {
		t.Fatal(err)
	}
	stop()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("saved %d keys (%.1f MiB) in %s wall, %s CPU (the clients' included), while %d writes committed",
		res.Keys, float64(res.Bytes)/(1<<20), saveWall.Round(time.Millisecond), saveCPU.Round(time.Millisecond),
		sumOf(after[:])-sumOf(before[:]))
	if res.Keys != int64(len(keys)) {
		t.Fatalf("Save wrote %d keys, want %d", res.Keys, len(keys))
	}

	restored, err := boltstore.Open(filepath.Join(t.TempDir(), "copy.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	restoreStart := time.Now()
	rres, err := snapshot.Restore(ctx, bytes.NewReader(out.buf.Bytes()), restored, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored %d keys in %s", rres.Keys, time.Since(restoreStart).Round(time.Millisecond))
	got := make(map[string][]byte, len(keys))
	err = restored.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{}, func(key string, value []byte) error {
			got[key] = value
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("restored %d keys, want %d", len(got), len(keys))
	}

	// Each client's prefix S.
	var prefix [clients]int64
	for c := range clients {
		s, _, ok := decodeWrite(got[clientHead(c)])
		if !ok {
			t.Fatalf("%s: %x is not a write", clientHead(c), got[clientHead(c)])
		}
		if s < before[c] {
			t.Errorf("client %d: write %d was acknowledged before Save began, the copy holds %d writes", c, before[c], s)
		}
		if s > after[c] {
			t.Errorf("client %d: the copy holds %d writes, only %d had begun when Save returned", c, s, after[c])
		}
		prefix[c] = s
	}
	if t.Failed() {
		t.FailNow()
	}
	// Every key is what the first prefix[c] writes of its client left.
	bad := 0
	for c := range clients {
		S := prefix[c]
		check := func(key string, s int64) {
			want := encodeWrite(s, reads[c][s])
			if !bytes.Equal(got[key], want) {
				gs, gh, _ := decodeWrite(got[key])
				if bad++; bad <= 10 {
					t.Errorf("client %d holds %d writes, but %s is (write %d, read %d), want (write %d, read %d)",
						c, S, key, gs, gh, s, reads[c][s])
				}
			}
			if h := reads[c][s]; s > 0 && h > prefix[(c+1)%clients] {
				if bad++; bad <= 10 {
					t.Errorf("client %d's write %d read client %d's head at %d, but the copy holds only %d writes of client %d: not one instant",
						c, s, (c+1)%clients, h, prefix[(c+1)%clients], (c+1)%clients)
				}
			}
		}
		check(clientHead(c), S)
		for j := range int64(m) {
			// The last write s ≤ S with (s-1) mod m == j, or none.
			var s int64
			if S >= j+1 {
				s = j + 1 + int64(m)*((S-1-j)/int64(m))
			}
			check(clientSlot(c, int(j)), s)
		}
	}
	if bad > 10 {
		t.Errorf("%d keys wrong in all", bad)
	}
}

func sumOf(v []int64) (sum int64) {
	for _, x := range v {
		sum += x
	}
	return sum
}

// heldWriter keeps what is written; its first Write calls hold first.
type heldWriter struct {
	hold func()
	once sync.Once
	buf  bytes.Buffer
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.once.Do(w.hold)
	return w.buf.Write(p)
}
