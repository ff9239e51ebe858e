package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// The largest limits the suite reaches; larger ones are logged and left out.
const (
	maxTestedValueSize = 64 << 20
	maxTestedTxBytes   = 64 << 20
	maxTestedTxOps     = 100_000
	maxTestedTxReads   = 10_000
)

// testLimits: each non-zero limit holds exactly at its boundary, fails with
// keel.KindTooLarge beyond it, and a failed write leaves the store as it
// was.
func testLimits(t *testing.T, s storage.Store) {
	l := s.Limits()
	t.Logf("limits: %+v", l)
	if l.MaxKeySize < 0 || l.MaxValueSize < 0 || l.MaxTxOps < 0 || l.MaxTxBytes < 0 || l.MaxTxReads < 0 {
		t.Fatalf("Limits() = %+v: a limit is negative", l)
	}
	t.Run("MaxKeySize", func(t *testing.T) { testMaxKeySize(t, s, l) })
	t.Run("MaxValueSize", func(t *testing.T) { testMaxValueSize(t, s, l) })
	t.Run("MaxTxOps", func(t *testing.T) { testMaxTxOps(t, s, l) })
	t.Run("MaxTxBytes", func(t *testing.T) { testMaxTxBytes(t, s, l) })
	t.Run("MaxTxReads", func(t *testing.T) { testMaxTxReads(t, s, l) })
}

// keyOfSize returns a key of n bytes starting with prefix, or with as much of
// prefix as fits.
func keyOfSize(prefix string, n int) string {
	if n <= len(prefix) {
		return prefix[:n]
	}
	return prefix + strings.Repeat("x", n-len(prefix))
}

// tooLarge runs an Update that writes a marker, then calls write, which must
// fail with sentinel. It checks the error inside and out of the closure, and
// that the Update, which returns the error, stored nothing.
func tooLarge(t testing.TB, s storage.Store, what string, sentinel error, write func(tx storage.Tx) error) {
	t.Helper()
	const marker = "limits-marker"
	var inner error
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		inner = nil
		if err := tx.Put(marker, []byte("m")); err != nil {
			return fmt.Errorf("Put(%q): %w", marker, err)
		}
		inner = write(tx)
		if inner == nil {
			return errors.New("the write beyond the limit succeeded")
		}
		return inner
	})
	wantErr(t, what+" (in the closure)", inner, sentinel, keel.KindTooLarge)
	wantErr(t, what+" (returned by Update)", err, sentinel, keel.KindTooLarge)
	if !errors.Is(err, keel.KindTooLarge) {
		t.Errorf("%s: %v does not wrap keel.KindTooLarge", what, err)
	}
	wantMissing(t, s, marker)
}

func testMaxKeySize(t *testing.T, s storage.Store, l storage.Limits) {
	if l.MaxKeySize == 0 {
		// No limit: a key much larger than usual is accepted.
		key := keyOfSize("lk/", 8<<10)
		putAll(t, s, kv{key, "v"})
		wantValue(t, s, key, "v")
		t.Log("no MaxKeySize; an 8 KiB key is accepted")
		return
	}
	maxKey := keyOfSize("lk/", l.MaxKeySize)
	over := keyOfSize("lk/", l.MaxKeySize+1)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put(maxKey, []byte("v")); err != nil {
			t.Errorf("Put of a key of MaxKeySize (%d) bytes: %v", l.MaxKeySize, err)
		}
		return nil
	})
	wantValue(t, s, maxKey, "v")
	wantScan(t, s, maxKey, storage.ScanOptions{}, kv{maxKey, "v"})

	tooLarge(t, s, "Put of a key of MaxKeySize+1 bytes", storage.ErrKeyTooLarge, func(tx storage.Tx) error {
		return tx.Put(over, []byte("v"))
	})
	tooLarge(t, s, "Delete of a key of MaxKeySize+1 bytes", storage.ErrKeyTooLarge, func(tx storage.Tx) error {
		return tx.Delete(over)
	})

	// The failed write leaves the store as it was, even when the closure
	// goes on and commits.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		wantErr(t, "Put of a key of MaxKeySize+1 bytes", tx.Put(over, []byte("v")), storage.ErrKeyTooLarge, keel.KindTooLarge)
		return tx.Delete(maxKey)
	})
	wantMissing(t, s, maxKey)
	wantScan(t, s, "lk/", storage.ScanOptions{KeysOnly: true})
}

func testMaxValueSize(t *testing.T, s storage.Store, l storage.Limits) {
	if l.MaxValueSize == 0 {
		putAll(t, s, kv{"lv/big", strings.Repeat("v", 1<<20)})
		if v, _ := get(t, s, "lv/big"); len(v) != 1<<20 {
			t.Errorf("Get of a 1 MiB value returned %d bytes", len(v))
		}
		t.Log("no MaxValueSize; a 1 MiB value is accepted")
		return
	}
	if l.MaxValueSize > maxTestedValueSize {
		t.Logf("MaxValueSize %d is above %d: not tested", l.MaxValueSize, maxTestedValueSize)
		return
	}
	buf := make([]byte, l.MaxValueSize+1)
	for i := 0; i < len(buf); i += 4093 {
		buf[i] = byte(i / 4093)
	}
	maxVal := buf[:l.MaxValueSize]
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("lv/maxVal", maxVal); err != nil {
			t.Errorf("Put of a value of MaxValueSize (%d) bytes: %v", l.MaxValueSize, err)
		}
		return nil
	})
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("lv/maxVal")
		if err != nil {
			t.Errorf("Get of a value of MaxValueSize bytes: %v", err)
		} else if !bytes.Equal(v, maxVal) {
			t.Errorf("Get of a value of MaxValueSize bytes returned %d bytes, not the value put", len(v))
		}
		return nil
	})

	tooLarge(t, s, "Put of a value of MaxValueSize+1 bytes", storage.ErrValueTooLarge, func(tx storage.Tx) error {
		return tx.Put("lv/over", buf)
	})
	// The failed write leaves the store as it was, even when the closure
	// goes on and commits. (A small value, to keep big copies few.)
	putAll(t, s, kv{"lv/small", "s"})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		wantErr(t, "Put of a value of MaxValueSize+1 bytes over an existing key", tx.Put("lv/small", buf), storage.ErrValueTooLarge, keel.KindTooLarge)
		return tx.Delete("lv/maxVal")
	})
	wantValue(t, s, "lv/small", "s")
	wantMissing(t, s, "lv/maxVal")
}

func testMaxTxOps(t *testing.T, s storage.Store, l storage.Limits) {
	n := l.MaxTxOps
	if n == 0 {
		t.Log("no MaxTxOps")
		keys := make([]kv, 1000)
		for i := range keys {
			keys[i] = kv{fmt.Sprintf("lo/%04d", i), ""}
		}
		putAll(t, s, keys...)
		if got := scanAll(t, s, "lo/", storage.ScanOptions{KeysOnly: true}); len(got) != len(keys) {
			t.Errorf("stored %d keys, Scan found %d", len(keys), len(got))
		}
		return
	}
	if n > maxTestedTxOps {
		t.Logf("MaxTxOps %d is above %d: not tested", n, maxTestedTxOps)
		return
	}
	key := func(i int) string { return fmt.Sprintf("lo/%08d", i) }
	if l.MaxTxBytes > 0 && (n+1)*len(key(0)) > l.MaxTxBytes {
		t.Logf("MaxTxOps %d operations on %d-byte keys exceed MaxTxBytes %d: not tested", n, len(key(0)), l.MaxTxBytes)
		return
	}
	if l.MaxKeySize > 0 && len(key(0)) > l.MaxKeySize {
		t.Logf("MaxKeySize %d is too small for the keys of this test: MaxTxOps not tested", l.MaxKeySize)
		return
	}
	tooLarge(t, s, fmt.Sprintf("Put number %d, beyond MaxTxOps", n+1), storage.ErrTxTooLarge, func(tx storage.Tx) error {
		for i := range n - 1 { // the marker is the first operation
			if err := tx.Put(key(i), nil); err != nil {
				return fmt.Errorf("put number %d of MaxTxOps %d: %v", i+2, n, err) // not wrapped: must not pass for ErrTxTooLarge
			}
		}
		return tx.Put(key(n), nil)
	})
	tooLarge(t, s, fmt.Sprintf("Delete number %d, beyond MaxTxOps", n+1), storage.ErrTxTooLarge, func(tx storage.Tx) error {
		for i := range n - 1 {
			if err := tx.Delete(key(i)); err != nil {
				return fmt.Errorf("delete number %d of MaxTxOps %d: %v", i+2, n, err)
			}
		}
		return tx.Delete(key(n))
	})

	// Exactly MaxTxOps operations commit.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for i := range n {
			if err := tx.Put(key(i), []byte("v")); err != nil {
				return fmt.Errorf("put number %d of MaxTxOps %d: %w", i+1, n, err)
			}
		}
		return nil
	})
	if got := scanAll(t, s, "lo/", storage.ScanOptions{KeysOnly: true}); len(got) != n {
		t.Errorf("after an Update of MaxTxOps (%d) Puts, Scan found %d keys", n, len(got))
	}
}

func testMaxTxBytes(t *testing.T, s storage.Store, l storage.Limits) {
	limit := l.MaxTxBytes
	if limit == 0 {
		t.Log("no MaxTxBytes")
		return
	}
	if limit > maxTestedTxBytes {
		t.Logf("MaxTxBytes %d is above %d: not tested", limit, maxTestedTxBytes)
		return
	}
	key := func(i int) string { return fmt.Sprintf("lb/%06d", i) }
	if l.MaxKeySize > 0 && len(key(0)) > l.MaxKeySize {
		t.Logf("MaxKeySize %d is too small for the keys of this test: MaxTxBytes not tested", l.MaxKeySize)
		return
	}
	// Values as large as allowed, so that few operations reach the limit.
	size := l.MaxValueSize
	if size == 0 || size > 32<<20 {
		size = 32 << 20
	}
	// slack is how far below MaxTxBytes a store may refuse: a wrapper may
	// count a few bytes per operation more than the caller wrote, as a
	// prefix view counts its prefix.
	slack := min(1<<10, limit/16)
	ops := (limit+1)/(len(key(0))+size) + 2 // with the marker
	if l.MaxTxOps > 0 && ops > l.MaxTxOps {
		t.Logf("MaxTxBytes %d needs about %d operations of %d bytes, beyond MaxTxOps %d: not tested", limit, ops, size, l.MaxTxOps)
		return
	}
	buf := make([]byte, size)

	tooLarge(t, s, "Put beyond MaxTxBytes", storage.ErrTxTooLarge, func(tx storage.Tx) error {
		written := len("limits-marker") + 1 // tooLarge's marker
		for i := 0; ; i++ {
			k := key(i)
			// The last Put goes exactly one byte beyond the limit.
			v := min(size, max(0, limit-written-len(k)+1))
			after := written + len(k) + v
			err := tx.Put(k, buf[:v])
			switch {
			case err == nil && after > limit:
				return fmt.Errorf("a Put took the transaction to %d bytes, beyond MaxTxBytes %d, and succeeded", after, limit)
			case err == nil:
				written = after
			case !errors.Is(err, storage.ErrTxTooLarge):
				return fmt.Errorf("a Put taking the transaction to %d bytes: %v", after, err) // not wrapped
			case after <= limit-slack:
				return fmt.Errorf("a Put taking the transaction to %d bytes, within MaxTxBytes %d, failed: %v", after, limit, err)
			default:
				t.Logf("Put taking the transaction to %d bytes (MaxTxBytes %d): %v", after, limit, err)
				return err
			}
		}
	})
	wantScan(t, s, "lb/", storage.ScanOptions{KeysOnly: true})
}

// testMaxTxReads: an Update that writes and reads MaxTxReads keys and scans
// commits; one that reads one more fails with keel.KindTooLarge and writes
// nothing. A key counts once however often it is read, found or not; a
// Scan counts one, plus one per key it visits.
func testMaxTxReads(t *testing.T, s storage.Store, l storage.Limits) {
	n := l.MaxTxReads
	if n == 0 {
		t.Log("no MaxTxReads")
		return
	}
	if n > maxTestedTxReads {
		t.Logf("MaxTxReads %d is above %d: not tested", n, maxTestedTxReads)
		return
	}
	key := func(i int) string { return fmt.Sprintf("lr/%06d", i) }
	if l.MaxKeySize > 0 && len(key(0)) > l.MaxKeySize {
		t.Logf("MaxKeySize %d is too small for the keys of this test: MaxTxReads not tested", l.MaxKeySize)
		return
	}
	keys := make([]kv, n+1)
	for i := range keys {
		keys[i] = kv{key(i), "v"}
	}
	putAll(t, s, keys...)

	gets := func(keys ...string) func(tx storage.Tx) error {
		return func(tx storage.Tx) error {
			for _, k := range keys {
				if _, err := tx.Get(k); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return fmt.Errorf("Get(%q): %w", k, err)
				}
			}
			return nil
		}
	}
	// scan visits the first visits keys of lr/, stopping the scan on the
	// last one, and returns their names.
	scan := func(tx storage.Tx, visits int) ([]string, error) {
		var seen []string
		err := tx.Scan("lr/", storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			seen = append(seen, k)
			if len(seen) == visits {
				return storage.StopScan
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("Scan(%q): %w", "lr/", err)
		}
		if len(seen) != visits {
			return nil, fmt.Errorf("the Scan visited %d keys, want %d", len(seen), visits)
		}
		return seen, nil
	}
	var first, all, missing []string
	for i := range n + 1 {
		all = append(all, key(i))
		missing = append(missing, fmt.Sprintf("lr-missing/%06d", i))
	}
	first = all[:n]
	cases := []struct {
		name  string
		fits  bool
		scans bool // the case needs MaxTxReads >= 2
		reads func(tx storage.Tx) error
	}{
		{"Gets of MaxTxReads keys", true, false, gets(first...)},
		{"Gets of MaxTxReads+1 keys", false, false, gets(all...)},
		{"Gets of MaxTxReads+1 missing keys", false, false, gets(missing...)},
		{"Gets of MaxTxReads keys, each twice", true, false, gets(append(slices.Clone(first), first...)...)},
		{"a Scan that visits MaxTxReads-1 keys", true, true, func(tx storage.Tx) error {
			_, err := scan(tx, n-1)
			return err
		}},
		{"a Scan that visits MaxTxReads keys", false, false, func(tx storage.Tx) error {
			_, err := scan(tx, n)
			return err
		}},
		{"a Scan that visits MaxTxReads-1 keys, then Gets of each", true, true, func(tx storage.Tx) error {
			seen, err := scan(tx, n-1)
			if err != nil {
				return err
			}
			return gets(seen...)(tx)
		}},
		{"a Scan that visits MaxTxReads-1 keys, then a Get of another", false, true, func(tx storage.Tx) error {
			if _, err := scan(tx, n-1); err != nil {
				return err
			}
			return gets(key(n))(tx)
		}},
	}
	const marker = "reads-marker"
	for _, c := range cases {
		if c.scans && n < 2 {
			continue
		}
		var inner error
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			inner = nil
			if err := tx.Put(marker, []byte("m")); err != nil {
				return fmt.Errorf("Put(%q): %w", marker, err)
			}
			inner = c.reads(tx)
			return inner
		})
		if c.fits {
			if err != nil {
				t.Errorf("%s (MaxTxReads %d) and a Put: %v", c.name, n, err)
			}
			wantValue(t, s, marker, "m")
			update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Delete(marker) })
			continue
		}
		if inner != nil && !errors.Is(inner, storage.ErrTxTooLarge) {
			t.Errorf("%s (MaxTxReads %d) and a Put: a read failed: %v", c.name, n, inner)
			continue
		}
		wantErr(t, fmt.Sprintf("%s (MaxTxReads %d) and a Put", c.name, n), err, storage.ErrTxTooLarge, keel.KindTooLarge)
		wantMissing(t, s, marker)
	}
}
