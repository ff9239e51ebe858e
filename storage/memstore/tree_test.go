package memstore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// model is what a tree must hold: a map, read in sorted order.
type model map[string]string

// check compares the tree of root with m: every Get, a full scan, and a
// scan from start; and the B-tree's own invariants.
func (m model) check(t *testing.T, root *node, start string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(m))
	var got []string
	if root != nil {
		ascend(root, "", func(it *item) bool {
			got = append(got, it.key)
			if string(it.val) != m[it.key] {
				t.Fatalf("scan: %q holds %q, want %q", it.key, it.val, m[it.key])
			}
			return true
		})
	}
	if !slices.Equal(got, keys) {
		i := 0
		for i < min(len(got), len(keys)) && got[i] == keys[i] {
			i++
		}
		t.Fatalf("scan: %d keys, want %d; they differ from key %d on: %q, want %q",
			len(got), len(keys), i, got[i:min(len(got), i+3)], keys[i:min(len(keys), i+3)])
	}
	for k, v := range m {
		if got, ok := get(root, k); !ok || string(got) != v {
			t.Fatalf("get(%q) = %q, %v; want %q", k, got, ok, v)
		}
	}
	i, _ := slices.BinarySearch(keys, start)
	got = got[:0]
	if root != nil {
		ascend(root, start, func(it *item) bool {
			got = append(got, it.key)
			return len(got) < 7 // a scan stopped early
		})
	}
	want := keys[i:min(len(keys), i+7)]
	if !slices.Equal(got, want) {
		t.Fatalf("scan from %q: keys %q, want %q", start, got, want)
	}
	if root != nil {
		checkNode(t, root, true, "", "")
	}
}

// checkNode checks the sizes and order of the node n and below, whose keys
// lie strictly between lo and hi ("" for no bound), and returns its height.
func checkNode(t *testing.T, n *node, root bool, lo, hi string) int {
	t.Helper()
	if n.n > maxItems || (!root && n.n < minItems) || n.n == 0 {
		t.Fatalf("a node holds %d items", n.n)
	}
	for i := range n.n {
		k := n.items[i].key
		if (lo != "" && k <= lo) || (hi != "" && k >= hi) || (i > 0 && k <= n.items[i-1].key) {
			t.Fatalf("key %q out of order", k)
		}
	}
	for i := n.n; i < maxItems; i++ {
		if n.items[i].key != "" || n.items[i].val != "" {
			t.Fatalf("a node keeps item %q past its %d items", n.items[i].key, n.n)
		}
	}
	if n.kids == nil {
		return 1
	}
	for i := n.n + 1; i <= maxItems; i++ {
		if n.kids[i] != nil {
			t.Fatalf("a node keeps a kid past its %d items", n.n)
		}
	}
	h := 0
	for i := 0; i <= n.n; i++ {
		l, r := lo, hi
		if i > 0 {
			l = n.items[i-1].key
		}
		if i < n.n {
			r = n.items[i].key
		}
		kh := checkNode(t, n.kids[i], false, l, r)
		if h != 0 && kh != h {
			t.Fatalf("leaves at heights %d and %d", h, kh)
		}
		h = kh
	}
	return h + 1
}

// run applies ops (a byte stream read as operations) to a writer and to a
// model, checks them against each other, and checks that the snapshots
// taken midway, and the roots of earlier writers, never change.
func run(t *testing.T, ops []byte, keySpace int) {
	var gen uint64
	next := func() uint64 { gen++; return gen }
	w := &writer{next: next}
	w.gen = next()
	m := model{}
	type snap struct {
		root *node
		m    model
	}
	var snaps []snap
	for len(ops) >= 3 {
		op, k, v := ops[0], ops[1], ops[2]
		ops = ops[3:]
		key := fmt.Sprintf("k%03d", (int(k)<<8|int(v))%keySpace)
		switch op % 8 {
		case 0, 1, 2:
			val := fmt.Sprintf("v%d", len(ops))
			w.put(key, val)
			m[key] = val
		case 3, 4:
			_, had := m[key]
			if w.del(key) != had {
				t.Fatalf("del(%q) reported %v, want %v", key, !had, had)
			}
			delete(m, key)
		case 5:
			got, ok := get(w.root, key)
			if want, had := m[key]; ok != had || string(got) != want {
				t.Fatalf("get(%q) = %q, %v; want %q, %v", key, got, ok, want, had)
			}
		case 6:
			// A snapshot, as a Scan in an Update or a commit takes.
			snaps = append(snaps, snap{w.snapshot(), maps.Clone(m)})
		case 7:
			// A new writer over the current root, as the next Update.
			w = &writer{root: w.root, next: next}
			w.gen = next()
		}
	}
	m.check(t, w.root, "k05")
	for _, s := range snaps {
		s.m.check(t, s.root, "k1")
	}
}

// TestTreeModel runs random operations on the tree and on a sorted map and
// compares them: Gets, scans from a key, and snapshots that later writes of
// the same and of later writers must not change.
func TestTreeModel(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := range 60 {
		ops := make([]byte, 3*(100+r.IntN(3000)))
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		// Few keys for deletes that empty the tree; many for a deep one.
		keySpace := []int{5, 40, 256, 1000}[round%4]
		run(t, ops, keySpace)
	}
}

// TestTreeDeep fills a tree to three levels and empties it again in an
// order that merges and rotates at every level, checking it all along.
func TestTreeDeep(t *testing.T) {
	var gen uint64
	w := &writer{next: func() uint64 { gen++; return gen }}
	w.gen = w.next()
	m := model{}
	const n = 3000
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		k := fmt.Sprintf("key/%05d", i)
		w.put(k, k)
		m[k] = k
	}
	m.check(t, w.root, "key/01500")
	if h := checkNode(t, w.root, true, "", ""); h < 3 {
		t.Fatalf("height %d, want at least 3", h)
	}
	old, oldM := w.snapshot(), maps.Clone(m)
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i%3 == 0 {
			continue
		}
		w.del(k)
		delete(m, k)
		if i%97 == 0 {
			m.check(t, w.root, strings.TrimSuffix(k, "0"))
		}
	}
	for k := range m {
		w.del(k)
		delete(m, k)
	}
	if w.root != nil {
		t.Fatalf("an emptied tree has a root of %d items", w.root.n)
	}
	oldM.check(t, old, "key/02000")
}

func FuzzTree(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 2, 3, 6, 0, 0, 3, 1, 0, 5, 2, 0}, uint8(4))
	f.Fuzz(func(t *testing.T, ops []byte, keySpace uint8) {
		run(t, ops, int(keySpace)+1)
	})
}
