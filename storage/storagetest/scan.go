package storagetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel/storage"
)

// orderedKeys are in byte-wise ascending order, which is not the order of
// their runes nor of their lengths.
var orderedKeys = []string{"a", "a\x00", "a/", "a/b", "a/b/c", "ab", "a\xff", "b"}

// testOrderingAndScan: Scan visits keys byte-wise in ascending order, within
// its prefix, strictly after After, stops early, and pages.
func testOrderingAndScan(t *testing.T, s storage.Store) {
	shuffled := slices.Clone(orderedKeys)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, k := range shuffled { // one Update each, in random order
		putAll(t, s, kv{k, "v" + k})
	}
	all := make([]kv, len(orderedKeys))
	for i, k := range orderedKeys {
		all[i] = kv{k, "v" + k}
	}
	keys := func(ks ...string) []kv {
		out := []kv{}
		for _, k := range ks {
			out = append(out, kv{k, "v" + k})
		}
		return out
	}

	t.Run("Prefix", func(t *testing.T) {
		for _, c := range []struct {
			prefix string
			want   []kv
		}{
			{"", all},
			{"a", all[:len(all)-1]},
			{"a/", keys("a/", "a/b", "a/b/c")},
			{"a/b", keys("a/b", "a/b/c")},
			{"a/b/c", keys("a/b/c")},
			{"a/b/c/", nil},
			{"a\xff", keys("a\xff")},
			{"b", keys("b")},
			{"c", nil},
			{"\x00", nil},
		} {
			wantScan(t, s, c.prefix, storage.ScanOptions{}, c.want...)
		}
	})

	t.Run("After", func(t *testing.T) {
		for _, c := range []struct {
			prefix, after string
			want          []kv
		}{
			{"", "a", all[1:]},
			{"", "a/b", keys("a/b/c", "ab", "a\xff", "b")},
			{"", "a/a", keys("a/b", "a/b/c", "ab", "a\xff", "b")}, // not a key
			{"", "b", nil},
			{"", "a\xff\xff", keys("b")},
			{"", "\xff", nil},
			{"a/", "a/b", keys("a/b/c")},
			{"a/", "a/", keys("a/b", "a/b/c")},         // the prefix itself
			{"a/", "a/a", keys("a/b", "a/b/c")},        // not a key
			{"a/", "a/b/", keys("a/b/c")},              // not a key
			{"a/", "a", keys("a/", "a/b", "a/b/c")},    // before the prefix
			{"a/", "\x00", keys("a/", "a/b", "a/b/c")}, // well before it
			{"a/", "a/b/c", nil},                       // the last key of the prefix
			{"a/", "a0", nil},                          // beyond the prefix
			{"a/", "b", nil},                           // well beyond it
		} {
			wantScan(t, s, c.prefix, storage.ScanOptions{After: c.after}, c.want...)
		}
	})

	t.Run("From", func(t *testing.T) {
		for _, c := range []struct {
			prefix, from, after string
			want                []kv
		}{
			{"", "a/b", "", keys("a/b", "a/b/c", "ab", "a\xff", "b")}, // inclusive
			{"", "a0", "", keys("ab", "a\xff", "b")},                  // past all of "a/"
			{"", "a/a", "", keys("a/b", "a/b/c", "ab", "a\xff", "b")}, // not a key
			{"", "c", "", nil},
			{"a/", "a", "", keys("a/", "a/b", "a/b/c")}, // before the prefix
			{"a/", "a/b/c", "", keys("a/b/c")},
			{"a/", "a0", "", nil},                                 // beyond the prefix
			{"", "a/b", "a/b", keys("a/b/c", "ab", "a\xff", "b")}, // After wins when later
			{"", "ab", "a/b", keys("ab", "a\xff", "b")},           // From wins when later
		} {
			wantScan(t, s, c.prefix, storage.ScanOptions{From: c.from, After: c.after}, c.want...)
		}
	})

	t.Run("StopScan", func(t *testing.T) {
		view(t, s, func(ctx context.Context, tx storage.Tx) error {
			var got []string
			err := tx.Scan("", storage.ScanOptions{}, func(key string, value []byte) error {
				got = append(got, key)
				if len(got) == 3 {
					return storage.StopScan
				}
				return nil
			})
			if err != nil {
				t.Errorf("Scan stopped by StopScan = %v, want nil", err)
			}
			if !slices.Equal(got, orderedKeys[:3]) {
				t.Errorf("Scan stopped by StopScan at the third key visited %q, want %q", got, orderedKeys[:3])
			}
			return nil
		})
	})

	t.Run("Error", func(t *testing.T) {
		errStop := fmt.Errorf("stop here: %w", errTest)
		var calls int
		err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			err := tx.Scan("a/", storage.ScanOptions{}, func(key string, value []byte) error {
				calls++
				if calls == 2 {
					return errStop
				}
				return nil
			})
			if !errors.Is(err, errStop) {
				t.Errorf("Scan whose callback failed = %v, want the callback's error %v", err, errStop)
			}
			return err
		})
		if !errors.Is(err, errTest) {
			t.Errorf("View returning a Scan's callback error = %v, want it", err)
		}
		if calls != 2 {
			t.Errorf("Scan called its callback %d times, want 2: it must stop at the first error", calls)
		}
	})

	t.Run("KeysOnly", func(t *testing.T) {
		view(t, s, func(ctx context.Context, tx storage.Tx) error {
			var got []string
			err := tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(key string, value []byte) error {
				if value != nil {
					t.Errorf("Scan with KeysOnly gave %q the value %q, want nil", key, value)
				}
				got = append(got, key)
				return nil
			})
			if err != nil {
				return err
			}
			if !slices.Equal(got, orderedKeys) {
				t.Errorf("Scan with KeysOnly visited %q, want %q", got, orderedKeys)
			}
			return nil
		})
	})

	t.Run("Paging", func(t *testing.T) { testPaging(t, s) })
}

// pagingKeys is how many keys the Paging case scans: more than a page of
// etcdstore's range requests (256 keys) several times over, and more than
// a transaction of storage.Batch on a store without limits (1,000 keys).
const pagingKeys = 1100

// testPaging: over pagingKeys keys, a Scan visits every one once in order,
// paging with After visits them all, whatever the page size, and a Scan in
// an Update merges the transaction's own writes (overwrites, deletes, new
// keys) with the stored keys across the pages of the store.
func testPaging(t *testing.T, s storage.Store) {
	// Keys of different lengths, so that byte order differs from numeric
	// order.
	seen := map[string]bool{}
	var keys []kv
	for len(keys) < pagingKeys {
		k := fmt.Sprintf("pg/%x", rand.Uint32()>>rand.IntN(32))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, kv{k, "v" + k})
		}
	}
	putAll(t, s, keys...)
	want := slices.SortedFunc(slices.Values(keys), func(a, b kv) int { return strings.Compare(a.key, b.key) })

	t.Run("One", func(t *testing.T) {
		if got := scanAll(t, s, "pg/", storage.ScanOptions{}); !slices.Equal(got, want) {
			t.Errorf("one Scan of %d keys visited %d: %s", len(want), len(got), firstDiff(got, want))
		}
		for _, from := range []int{255, 256, 1000, len(want) - 1} {
			opts := storage.ScanOptions{From: want[from].key}
			if got := scanAll(t, s, "pg/", opts); !slices.Equal(got, want[from:]) {
				t.Errorf("Scan from key number %d, %q, visited %d keys, want the %d from there: %s", from, want[from].key, len(got), len(want)-from, firstDiff(got, want[from:]))
			}
		}
	})

	// Pages of 20 keys, of 300 (each crossing an etcd page) and of 1,000.
	for _, size := range []int{20, 300, 1000} {
		t.Run(fmt.Sprintf("By%d", size), func(t *testing.T) {
			var got []kv
			after := ""
			for range len(want)/size + 2 {
				var p []kv
				view(t, s, func(ctx context.Context, tx storage.Tx) error {
					p = nil
					return tx.Scan("pg/", storage.ScanOptions{After: after}, func(key string, value []byte) error {
						p = append(p, kv{key, string(value)})
						if len(p) == size {
							return storage.StopScan
						}
						return nil
					})
				})
				if len(p) == 0 {
					break
				}
				if p[0].key <= after {
					t.Fatalf("page after %q starts at %q", after, p[0].key)
				}
				got = append(got, p...)
				after = p[len(p)-1].key
			}
			if !slices.Equal(got, want) {
				t.Errorf("paging by %d collected %d keys, want %d in order: %s", size, len(got), len(want), firstDiff(got, want))
			}
		})
	}

	t.Run("OwnWrites", func(t *testing.T) { testPagingOwnWrites(t, s, want) })
}

// testPagingOwnWrites: an Update writes around the keys where a store
// paging by 256 keys (etcdstore) ends its pages, and at both ends, then
// scans every key, in one Scan and from within the range; the scans see
// its writes, and nothing else changes. The closure then fails, so that
// the Update, which read more than a store bounding MaxTxReads allows,
// commits nothing.
func testPagingOwnWrites(t *testing.T, s storage.Store, stored []kv) {
	l := s.Limits()
	// The writes, by index of the stored key they are next to: an
	// overwrite, a delete, or a new key right after it (key + "\x00",
	// which sorts before the next stored key). A store paging by 256 keys
	// ends its pages of a Scan of the whole range at 255, 511, 767, 1023.
	type write struct {
		at   int
		kind string // "put", "delete" or "new"
	}
	last := len(stored) - 1
	writes := []write{
		{0, "put"}, {0, "new"},
		{254, "delete"}, {255, "put"}, {255, "new"}, {256, "delete"},
		{511, "delete"}, {511, "new"}, {512, "put"},
		{767, "put"}, {768, "delete"}, {768, "new"},
		{999, "delete"}, {1000, "put"}, {1000, "new"},
		{1023, "delete"}, {1023, "new"}, {1024, "put"},
		{last, "new"}, {last, "delete"},
	}
	// Within the store's limits: at most MaxTxOps writes of at most half
	// MaxTxBytes (a wrapper may count more than the key and value).
	n, bytes := 0, 0
	for n < len(writes) {
		e := stored[writes[n].at]
		size := len(e.key) + 1 + len("own")
		if l.MaxTxOps > 0 && n+1 > l.MaxTxOps || l.MaxTxBytes > 0 && bytes+size > l.MaxTxBytes/2 {
			break
		}
		n++
		bytes += size
	}
	if n < len(writes) {
		t.Logf("limits %+v: %d writes of the %d planned", l, n, len(writes))
		writes = writes[:n]
	}
	if len(writes) == 0 {
		t.Fatalf("limits %+v allow no write", l)
	}

	// The expected state, as the Update sees it after its writes.
	m := map[string]string{}
	for _, e := range stored {
		m[e.key] = e.value
	}
	for _, w := range writes {
		k := stored[w.at].key
		switch w.kind {
		case "new":
			m[k+"\x00"] = "own"
		case "put":
			m[k] = "own"
		case "delete":
			delete(m, k)
		}
	}
	var want []kv
	for _, k := range slices.Sorted(maps.Keys(m)) {
		want = append(want, kv{k, m[k]})
	}

	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for _, w := range writes {
			k := stored[w.at].key
			var err error
			switch w.kind {
			case "new":
				err = tx.Put(k+"\x00", []byte("own"))
			case "put":
				err = tx.Put(k, []byte("own"))
			case "delete":
				err = tx.Delete(k)
			}
			if err != nil {
				return fmt.Errorf("%s next to %q: %w", w.kind, k, err)
			}
		}
		got, err := scanTx(tx, "pg/", storage.ScanOptions{})
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			t.Errorf("Scan in an Update after %d writes visited %d keys, want %d: %s", len(writes), len(got), len(want), firstDiff(got, want))
		}
		// From within the range, and by pages of 300 with After.
		from := stored[600].key
		i, _ := slices.BinarySearchFunc(want, from, func(e kv, k string) int { return strings.Compare(e.key, k) })
		got, err = scanTx(tx, "pg/", storage.ScanOptions{From: from})
		if err != nil {
			return err
		}
		if !slices.Equal(got, want[i:]) {
			t.Errorf("Scan in an Update from %q visited %d keys, want %d: %s", from, len(got), len(want)-i, firstDiff(got, want[i:]))
		}
		var paged []kv
		after := ""
		for range len(want)/300 + 2 {
			var p []kv
			err := tx.Scan("pg/", storage.ScanOptions{After: after}, func(key string, value []byte) error {
				p = append(p, kv{key, string(value)})
				if len(p) == 300 {
					return storage.StopScan
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(p) == 0 {
				break
			}
			paged = append(paged, p...)
			after = p[len(p)-1].key
		}
		if !slices.Equal(paged, want) {
			t.Errorf("paging by 300 in an Update after %d writes collected %d keys, want %d: %s", len(writes), len(paged), len(want), firstDiff(paged, want))
		}
		return errTest
	})
	if !errors.Is(err, errTest) {
		t.Errorf("Update whose closure failed after scanning = %v, want the closure's error", err)
	}
	if got := scanAll(t, s, "pg/", storage.ScanOptions{}); !slices.Equal(got, stored) {
		t.Errorf("after an Update that failed, Scan visited %d keys, want the %d stored before, unchanged: %s", len(got), len(stored), firstDiff(got, stored))
	}
}

// firstDiff describes where got first differs from want, which are too
// long to print whole.
func firstDiff(got, want []kv) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("entry number %d is %v, want %v", i, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("%d entries too many, from %v", len(got)-len(want), got[len(want)])
	case len(got) < len(want):
		return fmt.Sprintf("%d entries missing, from %v", len(want)-len(got), want[len(got)])
	}
	return "no difference"
}

// testScanWhileWriting: the callback of a Scan in an Update may write
// through the same Tx; the scan still visits each key it started with once,
// in order, and the writes commit.
func testScanWhileWriting(t *testing.T, s storage.Store) {
	const n = 9
	var originals []string
	for i := range n {
		originals = append(originals, fmt.Sprintf("s/%02d", i))
	}
	early := originals[0] + "/early" // sorts before every original but the first
	for _, k := range originals {
		putAll(t, s, kv{k, "o"})
	}
	written := func(key string) bool { return strings.HasSuffix(key, "/new") || key == early }

	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		// A write before the scan, so that the scan starts on state the
		// transaction already changed.
		if err := tx.Put("u/start", []byte("u")); err != nil {
			return err
		}
		var visited []string
		i := 0
		err := tx.Scan("s/", storage.ScanOptions{}, func(key string, value []byte) error {
			if n := len(visited); n > 0 && key <= visited[n-1] {
				t.Errorf("Scan visited %q after %q: not ascending", key, visited[n-1])
			}
			visited = append(visited, key)
			if written(key) {
				return nil // written by this scan: it may be visited or not
			}
			var w []kv // the writes; a nil value deletes
			switch i % 3 {
			case 0: // overwrite the key visited, add one right after it
				w = []kv{{key, "changed"}, {key + "/new", "n"}}
			case 1: // delete the key visited
				w = []kv{{key, ""}}
			case 2: // delete it, add one right after it, and one behind the scan
				w = []kv{{key, ""}, {key + "/new", "n"}, {early, "e"}}
			}
			w = append(w, kv{"u/" + key, "u"}) // outside the prefix
			for _, e := range w {
				var err error
				if e.value == "" {
					err = tx.Delete(e.key)
				} else {
					err = tx.Put(e.key, []byte(e.value))
				}
				if err != nil {
					return fmt.Errorf("write of %v during Scan: %w", e, err)
				}
			}
			if i%3 != 1 {
				if v, err := tx.Get(key + "/new"); err != nil || string(v) != "n" {
					t.Errorf("Get(%q) during Scan, after its Put = %q, %v; want n", key+"/new", v, err)
				}
			}
			i++
			return nil
		})
		if err != nil {
			return err
		}
		var orig []string
		for _, k := range visited {
			if !written(k) {
				orig = append(orig, k)
			}
		}
		if !slices.Equal(orig, originals) {
			t.Errorf("Scan writing as it went visited the keys it started with as %q, want %q once each", orig, originals)
		}
		return nil
	})

	want := []kv{{originals[0], "changed"}, {early, "e"}}
	var outside []kv
	for i, k := range originals {
		switch i % 3 {
		case 0:
			if i > 0 {
				want = append(want, kv{k, "changed"})
			}
			want = append(want, kv{k + "/new", "n"})
		case 2:
			want = append(want, kv{k + "/new", "n"})
		}
		outside = append(outside, kv{"u/" + k, "u"})
	}
	wantScan(t, s, "s/", storage.ScanOptions{}, want...)
	outside = append(outside, kv{"u/start", "u"}) // "u/s/…" < "u/start"
	wantScan(t, s, "u/", storage.ScanOptions{}, outside...)
}
