package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

func TestMain(m *testing.M) { everystore.Main(m) }

// kv is one key of a dump.
type kv struct {
	key   string
	value string
}

// dump returns every key of s with its value, in order.
func dump(t testing.TB, s storage.Store) []kv {
	t.Helper()
	var all []kv
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{}, func(key string, value []byte) error {
			all = append(all, kv{key, string(value)})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// put writes the keys of kvs in Updates of 100, within etcd's limits.
func put(t testing.TB, s storage.Store, kvs []kv) {
	t.Helper()
	for len(kvs) > 0 {
		n := min(len(kvs), 100)
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for _, e := range kvs[:n] {
				if err := tx.Put(e.key, []byte(e.value)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		kvs = kvs[n:]
	}
}

// sample returns n keys under each of prefixes, with values of varied
// sizes (the empty one included).
func sample(n int, prefixes ...string) []kv {
	var kvs []kv
	for _, p := range prefixes {
		for i := range n {
			kvs = append(kvs, kv{fmt.Sprintf("%s%05d", p, i), strings.Repeat("v", i%300)})
		}
	}
	return kvs
}

func save(t testing.TB, s storage.Store, opts *snapshot.SaveOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := snapshot.Save(context.Background(), s, &buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func equal(t testing.TB, got, want []kv) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("key %d: %q=%.20q, want %q=%.20q", i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
	}
}

// TestRoundTrip: a stream restored into an empty store of every kind gives
// the same keys and values, and saving that store gives the same bytes
// (Save and Restore on every store; batches within etcd's 128 operations).
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(nil)
	defer src.Close()
	want := sample(150, "a/", "b/")
	put(t, src, want)
	stream := save(t, src, nil)
	part := save(t, src, &snapshot.SaveOptions{Prefix: "b/"})
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		dst := open(t)
		res, err := snapshot.Restore(ctx, bytes.NewReader(stream), dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Keys != int64(len(want)) || res.Prefix != "" {
			t.Errorf("result %+v, want %d keys", res, len(want))
		}
		equal(t, dump(t, dst), want)
		if again := save(t, dst, nil); !bytes.Equal(again, stream) {
			t.Errorf("saved again: %d bytes differ from the %d restored", len(again), len(stream))
		}

		// A part: restored under its prefix, into a store empty there.
		dst = open(t)
		put(t, dst, []kv{{"a/other", "kept"}})
		if _, err := snapshot.Restore(ctx, bytes.NewReader(part), dst, nil); err != nil {
			t.Fatal(err)
		}
		equal(t, dump(t, dst), append([]kv{{"a/other", "kept"}}, want[150:]...))

		// The whole stream over it, replacing what it holds.
		res, err = snapshot.Restore(ctx, bytes.NewReader(stream), dst, &snapshot.RestoreOptions{Replace: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != 151 {
			t.Errorf("%d deleted, want 151", res.Deleted)
		}
		equal(t, dump(t, dst), want)
	})
}

// TestSaveIsOneInstant: a Save taken while writers commit is the state of
// one instant. Each writer keeps two keys, far apart in key order, equal
// in every Update; in the restored copy every pair is equal, and holds at
// least the value acknowledged before Save began.
func TestSaveIsOneInstant(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		const writers = 4
		// Filler between the two keys of each pair, so that a scan
		// takes time between them.
		put(t, store, sample(1000, "m/"))
		pair := func(w int) (string, string) { return fmt.Sprintf("a/%d", w), fmt.Sprintf("z/%d", w) }
		ctx, cancel := context.WithCancel(context.Background())
		var acked [writers]atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				a, z := pair(w)
				for v := int64(1); ctx.Err() == nil; v++ {
					err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
						val := []byte(strconv.FormatInt(v, 10))
						if err := tx.Put(a, val); err != nil {
							return err
						}
						return tx.Put(z, val)
					})
					if err != nil {
						return
					}
					acked[w].Store(v)
				}
			})
		}
		defer func() { cancel(); wg.Wait() }()
		keeltest.Until(t, "every writer committed", func() bool {
			for w := range writers {
				if acked[w].Load() < 2 {
					return false
				}
			}
			return true
		})
		var before [writers]int64
		for w := range writers {
			before[w] = acked[w].Load()
		}
		stream := save(t, store, nil)
		var during int64
		for w := range writers {
			during += acked[w].Load() - before[w]
		}
		cancel()
		wg.Wait()
		t.Logf("%d commits acknowledged while Save ran", during)

		copied := memstore.New(nil)
		defer copied.Close()
		if _, err := snapshot.Restore(context.Background(), bytes.NewReader(stream), copied, nil); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range dump(t, copied) {
			got[e.key] = e.value
		}
		for w := range writers {
			a, z := pair(w)
			if got[a] != got[z] {
				t.Errorf("writer %d: %s=%s but %s=%s: not one instant", w, a, got[a], z, got[z])
			}
			if v, _ := strconv.ParseInt(got[a], 10, 64); v < before[w] {
				t.Errorf("writer %d: %d saved, %d was acknowledged before Save began", w, v, before[w])
			}
		}
	})
}

// TestRestoreRefusesCorruptStream: a stream truncated anywhere, or with any
// one byte flipped, is refused with keel.KindInvalid before anything is
// written, even with Replace: the target is as it was. Both ways of
// reading it twice are covered: rewinding an io.ReadSeeker, and spooling
// a plain reader.
func TestRestoreRefusesCorruptStream(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(nil)
	defer src.Close()
	put(t, src, sample(20, "k/"))
	stream := save(t, src, nil)

	target := memstore.New(nil)
	defer target.Close()
	put(t, target, []kv{{"k/old", "old"}, {"x", "y"}})
	before := dump(t, target)
	dir := t.TempDir()
	refused := func(what string, b []byte, spool bool) {
		t.Helper()
		var in io.Reader = bytes.NewReader(b)
		if spool {
			in = io.MultiReader(in) // not a Seeker
		}
		_, err := snapshot.Restore(ctx, in, target, &snapshot.RestoreOptions{Replace: true, TempDir: dir})
		if keel.KindOf(err) != keel.KindInvalid || !strings.HasPrefix(fmt.Sprint(err), "snapshot: ") {
			t.Fatalf("%s (spooled %v): %v, want a snapshot error of kind invalid", what, spool, err)
		}
		equal(t, dump(t, target), before)
	}
	for n := range len(stream) {
		refused(fmt.Sprintf("truncated to %d bytes", n), stream[:n], n%7 == 0)
	}
	for i := range stream {
		b := bytes.Clone(stream)
		b[i] ^= 0x20
		refused(fmt.Sprintf("byte %d flipped", i), b, i%7 == 0)
	}
	refused("data after the trailer", append(bytes.Clone(stream), 0), true)

	// Another version, with a checksum that holds.
	b := bytes.Clone(stream[:len(stream)-sha256.Size])
	binary.BigEndian.PutUint16(b[8:], 2)
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	_, err := snapshot.Restore(ctx, bytes.NewReader(b), target, &snapshot.RestoreOptions{Replace: true})
	if keel.KindOf(err) != keel.KindInvalid || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
	equal(t, dump(t, target), before)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestRestoreRefusesTooLarge: a key or value beyond the target's limits is
// refused with keel.KindTooLarge before anything is written.
func TestRestoreRefusesTooLarge(t *testing.T) {
	src := memstore.New(nil)
	defer src.Close()
	put(t, src, []kv{{"a", "short"}, {"b", strings.Repeat("x", 100)}})
	target := memstore.New(&memstore.Options{Limits: storage.Limits{MaxValueSize: 50}})
	defer target.Close()
	_, err := snapshot.Restore(context.Background(), bytes.NewReader(save(t, src, nil)), target, nil)
	if keel.KindOf(err) != keel.KindTooLarge {
		t.Fatalf("%v, want kind too large", err)
	}
	equal(t, dump(t, target), nil)
}

// TestRestoreRefusesNonEmptyTarget: a target holding keys under the
// stream's prefix is refused with keel.KindConflict and left as it was;
// with Replace its keys under the prefix are replaced, the others kept.
func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(nil)
	defer src.Close()
	put(t, src, sample(3, "b/"))
	stream := save(t, src, &snapshot.SaveOptions{Prefix: "b/"})
	target := memstore.New(nil)
	defer target.Close()
	put(t, target, []kv{{"a/keep", "1"}, {"b/zzz", "old"}})
	before := dump(t, target)
	_, err := snapshot.Restore(ctx, bytes.NewReader(stream), target, nil)
	if keel.KindOf(err) != keel.KindConflict {
		t.Fatalf("%v, want kind conflict", err)
	}
	equal(t, dump(t, target), before)
	res, err := snapshot.Restore(ctx, bytes.NewReader(stream), target, &snapshot.RestoreOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 1 || res.Keys != 3 {
		t.Errorf("result %+v, want 1 deleted, 3 written", res)
	}
	equal(t, dump(t, target), append([]kv{{"a/keep", "1"}}, sample(3, "b/")...))
}

// TestRestoreBatchesWithinLimits: Restore writes a stream of more keys
// than one transaction of the target takes (etcd's 128 operations, on a
// memstore that keeps them), and splits a batch the target refuses all
// the same (a sealstore counts its overhead against MaxTxBytes).
func TestRestoreBatchesWithinLimits(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(nil)
	defer src.Close()
	want := sample(1000, "k/")
	put(t, src, want)
	stream := save(t, src, nil)

	mem := memstore.New(&memstore.Options{Limits: etcdstore.DefaultLimits()})
	defer mem.Close()
	target := &refusals{Store: mem}
	if _, err := snapshot.Restore(ctx, bytes.NewReader(stream), target, nil); err != nil {
		t.Fatal(err)
	}
	equal(t, dump(t, target), want)
	if n := target.refused.Load(); n != 0 {
		t.Errorf("%d batches refused as too large: not sized from the limits", n)
	}

	inner := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxBytes: 8 << 10}})
	defer inner.Close()
	sealed, err := sealstore.New(inner, sealstore.GenerateKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	split := &refusals{Store: sealed}
	if _, err := snapshot.Restore(ctx, bytes.NewReader(stream), split, nil); err != nil {
		t.Fatal(err)
	}
	equal(t, dump(t, sealed), want)
	if split.refused.Load() == 0 {
		t.Error("no batch refused: the sealstore case tests nothing")
	}
}

// refusals counts the Updates of a store refused as too large.
type refusals struct {
	storage.Store
	refused atomic.Int64
}

func (r *refusals) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	err := r.Store.Update(ctx, fn)
	if errors.Is(err, storage.ErrTxTooLarge) {
		r.refused.Add(1)
	}
	return err
}

// TestSnapshotOfInnerStoreStaysSealed: a snapshot of the store inside a
// sealstore holds the values sealed, and opens with the same key once
// restored.
func TestSnapshotOfInnerStoreStaysSealed(t *testing.T) {
	ctx := context.Background()
	key := sealstore.GenerateKey()
	inner := memstore.New(nil)
	defer inner.Close()
	sealed, err := sealstore.New(inner, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, sealed, []kv{{"secret", "s3cr3t-value"}})
	stream := save(t, inner, nil)
	if bytes.Contains(stream, []byte("s3cr3t-value")) {
		t.Fatal("the stream holds the value in clear")
	}
	copied := memstore.New(nil)
	defer copied.Close()
	if _, err := snapshot.Restore(ctx, bytes.NewReader(stream), copied, nil); err != nil {
		t.Fatal(err)
	}
	opened, err := sealstore.New(copied, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, dump(t, opened), []kv{{"secret", "s3cr3t-value"}})
}

// TestRequired: a nil store, writer or reader is a field error.
func TestRequired(t *testing.T) {
	ctx := context.Background()
	_, err := snapshot.Save(ctx, nil, nil, nil)
	if f := keel.FieldErrors(err); len(f) != 2 || f[0].Field != "Store" || f[1].Field != "Out" {
		t.Errorf("Save: %v", err)
	}
	_, err = snapshot.Restore(ctx, nil, nil, nil)
	if f := keel.FieldErrors(err); len(f) != 2 || f[0].Field != "In" {
		t.Errorf("Restore: %v", err)
	}
	_, err = snapshot.Migrate(ctx, nil, nil, nil)
	if f := keel.FieldErrors(err); len(f) != 2 || f[0].Field != "From" {
		t.Errorf("Migrate: %v", err)
	}
}

var errDisk = errors.New("disk full")

// failing fails every Write and Read with errDisk.
type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errDisk }
func (failing) Read([]byte) (int, error)  { return 0, errDisk }

// TestIOErrors: an error of the caller's writer or reader is
// keel.KindUnavailable, and keeps the error it wraps.
func TestIOErrors(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(nil)
	defer src.Close()
	put(t, src, sample(100, "k/"))
	_, err := snapshot.Save(ctx, src, failing{}, nil)
	if keel.KindOf(err) != keel.KindUnavailable || !errors.Is(err, errDisk) {
		t.Errorf("Save: %v", err)
	}
	_, err = snapshot.Restore(ctx, failing{}, memstore.New(nil), &snapshot.RestoreOptions{TempDir: t.TempDir()})
	if keel.KindOf(err) != keel.KindUnavailable || !errors.Is(err, errDisk) {
		t.Errorf("Restore: %v", err)
	}
}
