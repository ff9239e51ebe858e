package storage

import (
	"fmt"
	"strings"
	"sync"

	"github.com/keelhq/keel"
)

// Claims records, for one store in one process, which kind of component
// owns each part of it: a composition root claims the parts it lays out
// (package mount "kv/" for kv engines, "identity/" for identity groups,
// and so on), and each component checks its view against the claims when
// it is built (CheckClaim). A component built by hand over a view that
// holds a root's parts (a kv engine over the whole store), or inside a part
// claimed for another kind (identity groups inside a kv mount's data), is
// then refused when the program starts, instead of writing over another
// component's keys. The zero Claims is empty and ready to use; it is safe
// for concurrent use. Stores keep one and return it from their Claims
// method (see ClaimsOf).
type Claims struct {
	mu     sync.Mutex
	byPath map[string]string // prefix -> kind
}

// claimsKeeper is implemented by the stores that keep Claims.
type claimsKeeper interface{ Claims() *Claims }

// ClaimsOf returns the Claims of s, a store that keeps them (memstore,
// boltstore and etcdstore do; sealstore and faultstore return their inner
// store's), or nil.
func ClaimsOf(s Store) *Claims {
	if k, ok := s.(claimsKeeper); ok {
		return k.Claims()
	}
	return nil
}

// Claim records that the keys under view (a Sub view of a store, or the
// store itself) belong to components of kind. Claiming a part for the
// kind that holds it already does nothing, so that two roots over one
// store (two tables of package mount) claim alike. Claim fails with an
// error of kind keel.KindInvalid when the part overlaps a part claimed for
// another kind. A store that keeps no Claims records nothing.
func Claim(view Store, kind string) error {
	base, prefix := Split(view)
	c := ClaimsOf(base)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, k := range c.byPath {
		if k != kind && overlap(p, prefix) {
			return fmt.Errorf("storage: claim %q for %s: %w", prefix, kind, keel.Invalid("Store", "overlaps %q, which holds %s", p, k))
		}
	}
	if c.byPath == nil {
		c.byPath = map[string]string{}
	}
	c.byPath[prefix] = kind
	return nil
}

// CheckClaim fails with an error of kind keel.KindInvalid, naming the
// field "Store", when a component of kind built over view would share keys
// with another component: view holds a claimed part (it lies above it), or
// lies inside a part claimed for another kind. It does nothing on a store
// that keeps no Claims, or where nothing is claimed.
func CheckClaim(view Store, kind string) error {
	base, prefix := Split(view)
	c := ClaimsOf(base)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, k := range c.byPath {
		switch {
		case len(prefix) < len(p) && strings.HasPrefix(p, prefix):
			return keel.Invalid("Store", "holds %q, which holds %s: build %s over a part of its own", p, k, kind)
		case strings.HasPrefix(prefix, p) && k != kind:
			return keel.Invalid("Store", "lies inside %q, which holds %s, not %s", p, k, kind)
		}
	}
	return nil
}

// overlap reports whether one of a and b is a prefix of the other.
func overlap(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }

// A Part is a part of a store a composition root lays out: the keys under
// Prefix, kept by components of Kind.
type Part struct{ Prefix, Kind string }

// CheckRoot checks what every composition root requires of its caller
// and claims the parts it lays out (Claim): a store, and an Authorizer
// (allowing everything, anonymous callers included, is never a default:
// keel.AllowAll{} must be asked for). more adds the root's own checks of
// its other arguments to v, between the two. The error is of kind
// keel.KindInvalid, naming the fields, and nothing is claimed then.
func CheckRoot(store Store, authz keel.Authorizer, parts []Part, more func(v *keel.Validation)) error {
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	}
	if more != nil {
		more(&v)
	}
	if authz == nil {
		v.Add("Authorizer", "is required: keel.AllowAll{} allows every caller everything")
	}
	if err := v.Err(); err != nil {
		return err
	}
	for _, p := range parts {
		if err := Claim(Sub(store, p.Prefix), p.Kind); err != nil {
			return err
		}
	}
	return nil
}
