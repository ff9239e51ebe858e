package memstore

// maxItems is the most items a node holds; odd, so that a full node splits
// around its middle item into two nodes of minItems.
const (
	maxItems = 15
	minItems = maxItems / 2
)

// item is a key and its value, both strings: never modified once in a
// tree, and 32 bytes, where a []byte value would make it 40 (every node a
// writer copies is mostly its items).
type item struct {
	key string
	val string
}

// node is a node of a persistent B-tree. Items [0, n) are sorted; in an
// inner node, kids[i] holds the keys between items[i-1] and items[i]. A
// node belongs to the writer whose gen it carries: only that writer
// modifies it, and only while the node is not yet reachable from a
// published root or a snapshot (writer.snapshot moves the writer to a new
// gen).
type node struct {
	gen   uint64
	n     int
	items [maxItems]item
	kids  *[maxItems + 1]*node // nil in a leaf; else inner.kids of the same allocation
}

// inner is an inner node and its kids, allocated together: a copy of an
// inner node is one allocation, not two.
type inner struct {
	node
	kids [maxItems + 1]*node
}

// newInner returns an inner node of gen without items or kids.
func newInner(gen uint64) *node {
	in := &inner{}
	in.node.gen, in.node.kids = gen, &in.kids
	return &in.node
}

// find returns the index of the first item not less than key, and whether
// it is key.
func (n *node) find(key string) (int, bool) {
	lo, hi := 0, n.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.items[m].key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < n.n && n.items[lo].key == key
}

// get returns the value of key in the tree of root.
func get(root *node, key string) (string, bool) {
	for n := root; n != nil; {
		i, ok := n.find(key)
		if ok {
			return n.items[i].val, true
		}
		if n.kids == nil {
			return "", false
		}
		n = n.kids[i]
	}
	return "", false
}

// ascend calls fn with the items of the tree of n from the first key not
// less than start, in order, until fn returns false; it returns false then.
func ascend(n *node, start string, fn func(*item) bool) bool {
	i := 0
	if start != "" {
		// Only kids[i] may hold keys on both sides of start.
		var ok bool
		i, ok = n.find(start)
		if !ok && n.kids != nil && !ascend(n.kids[i], start, fn) {
			return false
		}
		if i < n.n && !fn(&n.items[i]) {
			return false
		}
		i++
	}
	for ; i <= n.n; i++ {
		if n.kids != nil && !ascend(n.kids[i], "", fn) {
			return false
		}
		if i < n.n && !fn(&n.items[i]) {
			return false
		}
	}
	return true
}

// writer changes a tree by path copying. The nodes it copied or made carry
// its gen and are changed in place until the next snapshot.
type writer struct {
	root *node
	gen  uint64
	// next returns a gen that no node of the store carries yet.
	next func() uint64
}

// snapshot returns the current root, which the writer's later changes do
// not touch.
func (w *writer) snapshot() *node {
	w.gen = w.next()
	return w.root
}

// own returns n if the writer owns it, else a copy of n that it owns.
func (w *writer) own(n *node) *node {
	if n.gen == w.gen {
		return n
	}
	if n.kids == nil {
		return &node{gen: w.gen, n: n.n, items: n.items}
	}
	c := newInner(w.gen)
	c.n, c.items, *c.kids = n.n, n.items, *n.kids
	return c
}

// kid returns kids[i] of n (owned), owned.
func (w *writer) kid(n *node, i int) *node {
	c := w.own(n.kids[i])
	n.kids[i] = c
	return c
}

// put sets key to val.
func (w *writer) put(key, val string) {
	if w.root == nil {
		r := &node{gen: w.gen, n: 1}
		r.items[0] = item{key, val}
		w.root = r
		return
	}
	r := w.own(w.root)
	if r.n == maxItems {
		mid, right := w.split(r)
		top := newInner(w.gen)
		top.n, top.items[0] = 1, mid
		top.kids[0], top.kids[1] = r, right
		r = top
	}
	w.root = r
	for n := r; ; {
		i, ok := n.find(key)
		if ok {
			n.items[i].val = val
			return
		}
		if n.kids == nil {
			copy(n.items[i+1:n.n+1], n.items[i:n.n])
			n.items[i] = item{key, val}
			n.n++
			return
		}
		if n.kids[i].n == maxItems {
			mid, right := w.split(w.kid(n, i))
			copy(n.items[i+1:n.n+1], n.items[i:n.n])
			copy(n.kids[i+2:n.n+2], n.kids[i+1:n.n+1])
			n.items[i], n.kids[i+1] = mid, right
			n.n++
			switch {
			case key == mid.key:
				n.items[i].val = val
				return
			case key > mid.key:
				i++
			}
		}
		n = w.kid(n, i)
	}
}

// split moves the upper half of the full node n (owned) to a new node and
// returns the middle item and that node.
func (w *writer) split(n *node) (item, *node) {
	const m = maxItems / 2
	right := &node{gen: w.gen}
	if n.kids != nil {
		right = newInner(w.gen)
	}
	right.n = n.n - m - 1
	copy(right.items[:], n.items[m+1:n.n])
	mid := n.items[m]
	clear(n.items[m:n.n])
	if n.kids != nil {
		copy(right.kids[:], n.kids[m+1:n.n+1])
		clear(n.kids[m+1 : n.n+1])
	}
	n.n = m
	return mid, right
}

// del removes key and reports whether it was there. A missing key copies
// nothing.
func (w *writer) del(key string) bool {
	if _, ok := get(w.root, key); !ok {
		return false
	}
	r := w.own(w.root)
	w.remove(r, key, false)
	switch {
	case r.n > 0:
		w.root = r
	case r.kids != nil:
		w.root = r.kids[0]
	default:
		w.root = nil
	}
	return true
}

// remove removes key, or the greatest item when last is set, from the tree
// of n (owned), which holds more than minItems items unless it is the
// root, and returns the item removed. The item must be there.
func (w *writer) remove(n *node, key string, last bool) item {
	for {
		var i int
		var ok bool
		if last {
			i, ok = n.n, n.kids == nil
			if ok {
				i--
			}
		} else {
			i, ok = n.find(key)
		}
		if n.kids == nil {
			out := n.items[i]
			copy(n.items[i:n.n-1], n.items[i+1:n.n])
			n.n--
			n.items[n.n] = item{}
			return out
		}
		if n.kids[i].n <= minItems {
			w.grow(n, i)
			continue
		}
		c := w.kid(n, i)
		if ok {
			out := n.items[i]
			n.items[i] = w.remove(c, "", true)
			return out
		}
		n = c
	}
}

// grow gives kids[i] of n (owned), which holds minItems items, one more,
// from a sibling that can spare one, or else merges it with a sibling and
// the item between them.
func (w *writer) grow(n *node, i int) {
	switch {
	case i > 0 && n.kids[i-1].n > minItems:
		left, c := w.kid(n, i-1), w.kid(n, i)
		copy(c.items[1:c.n+1], c.items[:c.n])
		c.items[0] = n.items[i-1]
		n.items[i-1] = left.items[left.n-1]
		left.items[left.n-1] = item{}
		if c.kids != nil {
			copy(c.kids[1:c.n+2], c.kids[:c.n+1])
			c.kids[0] = left.kids[left.n]
			left.kids[left.n] = nil
		}
		left.n--
		c.n++
	case i < n.n && n.kids[i+1].n > minItems:
		c, right := w.kid(n, i), w.kid(n, i+1)
		c.items[c.n] = n.items[i]
		n.items[i] = right.items[0]
		copy(right.items[:right.n-1], right.items[1:right.n])
		right.items[right.n-1] = item{}
		if c.kids != nil {
			c.kids[c.n+1] = right.kids[0]
			copy(right.kids[:right.n], right.kids[1:right.n+1])
			right.kids[right.n] = nil
		}
		right.n--
		c.n++
	default:
		if i == n.n {
			i--
		}
		left, right := w.kid(n, i), n.kids[i+1]
		left.items[left.n] = n.items[i]
		copy(left.items[left.n+1:], right.items[:right.n])
		if left.kids != nil {
			copy(left.kids[left.n+1:], right.kids[:right.n+1])
		}
		left.n += right.n + 1
		copy(n.items[i:n.n-1], n.items[i+1:n.n])
		copy(n.kids[i+1:n.n], n.kids[i+2:n.n+1])
		n.n--
		n.items[n.n] = item{}
		n.kids[n.n+1] = nil
	}
}
