package sealstore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

func mustNew(t testing.TB, inner storage.Store, active []byte, previous ...[]byte) *sealstore.Store {
	t.Helper()
	s, err := sealstore.New(inner, active, &sealstore.Options{Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t testing.TB, s storage.Store, key, value string) {
	t.Helper()
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(key, []byte(value))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func get(s storage.Store, key string) (string, error) {
	var out []byte
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get(key)
		out = v
		return err
	})
	return string(out), err
}

func raw(t testing.TB, s storage.Store, key string) []byte {
	t.Helper()
	var out []byte
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get(key)
		out = v
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValuesAreSealedAtRest(t *testing.T) {
	inner := memstore.New(nil)
	s := mustNew(t, inner, sealstore.GenerateKey())
	put(t, s, "kv/secret/db", "hunter2-plaintext")

	stored := raw(t, inner, "kv/secret/db")
	if bytes.Contains(stored, []byte("hunter2")) {
		t.Fatalf("the underlying store holds the value in clear: %q", stored)
	}
	if len(stored) != len("hunter2-plaintext")+overhead {
		t.Fatalf("sealed size = %d, want value + overhead = %d", len(stored), len("hunter2-plaintext")+overhead)
	}
	if got, err := get(s, "kv/secret/db"); err != nil || got != "hunter2-plaintext" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	// Two seals of the same value differ (random nonce).
	put(t, s, "kv/secret/db2", "hunter2-plaintext")
	if bytes.Equal(raw(t, inner, "kv/secret/db2")[5:], stored[5:]) {
		t.Fatal("two seals of one value are identical: nonce is not random")
	}
}

func TestWrongKeyIsAClearError(t *testing.T) {
	inner := memstore.New(nil)
	k1, k2 := sealstore.GenerateKey(), sealstore.GenerateKey()
	put(t, mustNew(t, inner, k1), "a", "secret")

	_, err := get(mustNew(t, inner, k2), "a")
	if !errors.Is(err, keel.KindUnavailable) {
		t.Fatalf("open with another key: err = %v, want kind unavailable", err)
	}
	if !strings.Contains(err.Error(), sealstore.KeyID(k1)) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("error %q does not name the missing key id %s", err, sealstore.KeyID(k1))
	}
}

func TestTamperedOrMovedValueDoesNotOpen(t *testing.T) {
	inner := memstore.New(nil)
	s := mustNew(t, inner, sealstore.GenerateKey())
	put(t, s, "a", "secret-a")
	sealed := raw(t, inner, "a")

	cases := map[string]struct {
		key   string
		value []byte
	}{
		"moved to another key": {"b", sealed},
		"flipped bit":          {"a", func() []byte { v := bytes.Clone(sealed); v[len(v)-1] ^= 1; return v }()},
		"truncated":            {"a", sealed[:10]},
		"never sealed":         {"a", []byte("plain value that is long enough to pass the size check")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := inner.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				return tx.Put(c.key, c.value)
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := get(s, c.key)
			if !errors.Is(err, keel.KindInternal) {
				t.Fatalf("Get = %q, %v; want kind internal", got, err)
			}
			if got != "" {
				t.Fatalf("returned %q alongside the error", got)
			}
		})
	}
}

func TestRotationKeepsOldValuesReadableAndResealRewrites(t *testing.T) {
	inner := memstore.New(nil)
	old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
	s1 := mustNew(t, inner, old)
	for i := range 300 {
		put(t, s1, fmt.Sprintf("k/%03d", i), fmt.Sprintf("v%d", i))
	}
	put(t, s1, "other", "outside the prefix")

	s2 := mustNew(t, inner, next, old)
	if got, err := get(s2, "k/007"); err != nil || got != "v7" {
		t.Fatalf("old value through rotated store: %q, %v", got, err)
	}
	put(t, s2, "k/new", "fresh")
	if id := raw(t, inner, "k/new")[1:5]; hex.EncodeToString(id) != sealstore.KeyID(next) {
		t.Fatalf("new write sealed with key %x, want active %s", id, sealstore.KeyID(next))
	}

	n, err := s2.Reseal(context.Background(), "k/", 64)
	if err != nil {
		t.Fatal(err)
	}
	if n != 300 {
		t.Fatalf("Reseal rewrote %d values, want 300", n)
	}
	onlyNew := mustNew(t, inner, next)
	for i := range 300 {
		k := fmt.Sprintf("k/%03d", i)
		if got, err := get(onlyNew, k); err != nil || got != fmt.Sprintf("v%d", i) {
			t.Fatalf("%s after reseal without old key: %q, %v", k, got, err)
		}
	}
	if _, err := get(onlyNew, "other"); !errors.Is(err, keel.KindUnavailable) {
		t.Fatalf("value outside the resealed prefix: err = %v, want it still sealed with the old key", err)
	}
	if n, err := s2.Reseal(context.Background(), "k/", 64); err != nil || n != 0 {
		t.Fatalf("second Reseal = %d, %v; want 0, nil", n, err)
	}
}

func TestLimitsLeaveRoomForOverhead(t *testing.T) {
	inner := memstore.New(&memstore.Options{Limits: storage.Limits{MaxKeySize: 64, MaxValueSize: 100}})
	s := mustNew(t, inner, sealstore.GenerateKey())
	if got := s.Limits().MaxValueSize; got != 100-overhead {
		t.Fatalf("MaxValueSize = %d, want %d", got, 100-overhead)
	}
	ok := strings.Repeat("x", 100-overhead)
	put(t, s, "fits", ok)
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("too-big", []byte(ok+"x"))
	})
	if !errors.Is(err, storage.ErrValueTooLarge) {
		t.Fatalf("err = %v, want ErrValueTooLarge", err)
	}
}

func TestNewRefusesBadKeys(t *testing.T) {
	_, err := sealstore.New(memstore.New(nil), make([]byte, 16), nil)
	if fes := keel.FieldErrors(err); !errors.Is(err, keel.KindInvalid) || len(fes) != 1 || fes[0].Field != "Active" {
		t.Fatalf("16-byte key: err = %v, want kind invalid on Active", err)
	}
	_, err = sealstore.New(memstore.New(nil), sealstore.GenerateKey(), &sealstore.Options{Previous: [][]byte{sealstore.GenerateKey(), []byte("short")}})
	if fes := keel.FieldErrors(err); !errors.Is(err, keel.KindInvalid) || len(fes) != 1 || fes[0].Field != "Options.Previous[1]" {
		t.Fatalf("short previous key: err = %v, want kind invalid on Options.Previous[1]", err)
	}
	_, err = sealstore.New(nil, sealstore.GenerateKey(), nil)
	if fes := keel.FieldErrors(err); !errors.Is(err, keel.KindInvalid) || len(fes) != 1 || fes[0].Field != "Store" {
		t.Fatalf("nil store: err = %v, want kind invalid on Store", err)
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := sealstore.GenerateKey(), sealstore.GenerateKey()
	text := "# keys, newest first\n\n" + hex.EncodeToString(k1) + "\n  " + base64.StdEncoding.EncodeToString(k2) + "  \n"
	active, previous, err := sealstore.ParseKeys([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(active, k1) || len(previous) != 1 || !bytes.Equal(previous[0], k2) {
		t.Fatalf("ParseKeys = %x, %x", active, previous)
	}
	for name, text := range map[string]string{
		"empty":      "# nothing\n",
		"not a key":  "zz-not-base64!\n",
		"short key":  base64.StdEncoding.EncodeToString(make([]byte, 16)) + "\n",
		"second bad": hex.EncodeToString(k1) + "\nabc\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := sealstore.ParseKeys([]byte(text))
			if fes := keel.FieldErrors(err); !errors.Is(err, keel.KindInvalid) || len(fes) != 1 || fes[0].Field != "Text" {
				t.Fatalf("err = %v, want kind invalid on Text", err)
			}
		})
	}
}

func TestKeyIDIsStableAndDoesNotRevealTheKey(t *testing.T) {
	k := sealstore.GenerateKey()
	if sealstore.KeyID(k) != sealstore.KeyID(bytes.Clone(k)) {
		t.Fatal("KeyID differs for equal keys")
	}
	if id := sealstore.KeyID(k); len(id) != 8 || strings.Contains(hex.EncodeToString(k), id) {
		t.Fatalf("KeyID = %q: want 8 hex digits not taken from the key", id)
	}
}

// Reseal's transaction closure may run more than once: a rerun must not
// skip the keys the rolled-back run visited.
func TestResealIsSafeWhenClosuresRerun(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
	s1 := mustNew(t, fs, old)
	for i := range 10 {
		put(t, s1, fmt.Sprintf("s/%02d", i), "secret")
	}
	fs.Rerun(true)
	n, err := mustNew(t, fs, next, old).Reseal(context.Background(), "s/", 4)
	if err != nil || n != 10 {
		t.Fatalf("Reseal = %d, %v; want 10, nil", n, err)
	}
	onlyNew := mustNew(t, fs, next)
	for i := range 10 {
		if _, err := get(onlyNew, fmt.Sprintf("s/%02d", i)); err != nil {
			t.Fatalf("s/%02d not resealed: %v", i, err)
		}
	}
}

// putSealed stores n values under prefix through s, in as few Updates as
// the limits allow, and returns their keys and values.
func putSealed(t testing.TB, s storage.Store, prefix string, n int) map[string]string {
	t.Helper()
	kvs := make(map[string]string, n)
	for i := range n {
		kvs[fmt.Sprintf("%s%04d", prefix, i)] = fmt.Sprintf("value %d %s", i, strings.Repeat("x", 80))
	}
	keys := slices.Sorted(maps.Keys(kvs))
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 100)]
		keys = keys[len(batch):]
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for _, k := range batch {
				if err := tx.Put(k, []byte(kvs[k])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return kvs
}

// wantOpens fails t unless every value of kvs opens through s.
func wantOpens(t testing.TB, s storage.Store, kvs map[string]string) {
	t.Helper()
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for k, want := range kvs {
			got, err := tx.Get(k)
			if err != nil {
				return err
			}
			if string(got) != want {
				return fmt.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Reseal fits a store with etcd's limits (128 operations and 128 reads per
// transaction: memstore enforces both), rewrites only the stale values, and
// a second run is a no-op.
func TestResealFitsEtcdLimits(t *testing.T) {
	inner := memstore.New(&memstore.Options{Limits: etcdstore.DefaultLimits()})
	old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
	stale := putSealed(t, mustNew(t, inner, old), "k/", 1000)
	s := mustNew(t, inner, next, old)
	fresh := putSealed(t, s, "k/new/", 100) // sealed with the active key already
	before := map[string][]byte{}
	for k := range fresh {
		before[k] = raw(t, inner, k)
	}

	n, err := s.Reseal(context.Background(), "k/", 0)
	if err != nil || n != len(stale) {
		t.Fatalf("Reseal = %d, %v; want %d, nil", n, err, len(stale))
	}
	onlyNew := mustNew(t, inner, next)
	wantOpens(t, onlyNew, stale)
	wantOpens(t, onlyNew, fresh)
	for k, v := range before {
		if !bytes.Equal(raw(t, inner, k), v) {
			t.Fatalf("Reseal rewrote %s, which was sealed with the active key already", k)
		}
	}
	if n, err := s.Reseal(context.Background(), "k/", 0); err != nil || n != 0 {
		t.Fatalf("second Reseal = %d, %v; want 0, nil", n, err)
	}
}

// A Reseal that fails midway keeps the batches it committed, and run again
// rewrites exactly the values left stale.
func TestResealResumes(t *testing.T) {
	fs := faultstore.New(memstore.New(&memstore.Options{Limits: etcdstore.DefaultLimits()}))
	old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
	kvs := putSealed(t, mustNew(t, fs, old), "k/", 1000)
	s := mustNew(t, fs, next, old)
	errBoom := errors.New("boom")
	fs.Fail(faultstore.OpPut, "k/0700", 1, errBoom)

	n1, err := s.Reseal(context.Background(), "k/", 0)
	if !errors.Is(err, errBoom) {
		t.Fatalf("Reseal with a failing Put = %d, %v; want the Put's error", n1, err)
	}
	if n1 <= 0 || n1 >= 700 {
		t.Fatalf("Reseal failing at the 701st value reports %d rewritten, want the batches before it", n1)
	}
	n2, err := s.Reseal(context.Background(), "k/", 0)
	if err != nil || n1+n2 != len(kvs) {
		t.Fatalf("Reseal run again = %d, %v; want %d, nil", n2, err, len(kvs)-n1)
	}
	wantOpens(t, mustNew(t, fs, next), kvs)
}

// Reseal of 10,000 values with its default batch works on every store,
// etcd included (its batches fit 128 operations and 128 compares), and
// leaves every value opening with the new key alone.
func TestResealTenThousandOnEveryStore(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		inner := open(t)
		old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
		stale := putSealed(t, mustNew(t, inner, old), "k/", 10000)
		n, err := mustNew(t, inner, next, old).Reseal(context.Background(), "k/", 0)
		if err != nil || n != len(stale) {
			t.Fatalf("Reseal = %d, %v; want %d, nil", n, err, len(stale))
		}
		wantOpens(t, mustNew(t, inner, next), stale)
	})
}

func TestMain(m *testing.M) { everystore.Main(m) }

// overhead is how many bytes sealing adds to a value, as the package doc
// states: a format byte, the key id, a 12-byte nonce and a 16-byte tag.
const overhead = 1 + 4 + 12 + 16
