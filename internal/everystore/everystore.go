// Package everystore runs a domain package's tests on every store keel
// ships: memstore, boltstore and etcdstore (a real etcd: one etcd process
// per test binary, see etcdtest). It is the one harness of the domain suites, so that a rule
// that holds on a map and a bbolt file is also shown to hold within etcd's
// limits (128 operations and 128 compares per transaction).
//
// A package whose tests use it calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { everystore.Main(m) }
//
// and a test that must hold on every store runs its body through Run:
//
//	func TestSomething(t *testing.T) {
//		everystore.Run(t, func(t *testing.T, open everystore.Open) {
//			store := open(t)
//			...
//		})
//	}
//
// Each call of open returns a fresh, empty store closed when its test ends
// (the etcd ones under a fresh key prefix of the binary's one server).
// Without an etcd (the etcd binary is not installed: apt-get install
// etcd-server; see etcdtest) the etcdstore subtests are skipped with the
// reason; the other stores still run.
package everystore

import (
	"path/filepath"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/memstore"
)

// Open returns a fresh, empty store, closed when t ends; it fails or skips
// t when it cannot.
type Open func(t testing.TB) storage.Store

// Kind is one of the stores the suites run on.
type Kind struct {
	Name string // "memstore", "boltstore" or "etcdstore"
	Open Open
}

// Kinds are the stores Run runs on, in that order.
var Kinds = []Kind{
	{"memstore", Mem},
	{"boltstore", Bolt},
	{"etcdstore", Etcd},
}

// Main runs the tests of m with one etcd process for the binary, started
// when a test first needs it and killed when they end (or the etcd of
// $KEEL_ETCD_ENDPOINTS), and exits with their code; see etcdtest.Main.
func Main(m *testing.M) { etcdtest.Main(m) }

// Run runs fn once per store of Kinds, as a subtest named after the store.
// The subtests run one after the other; fn may call t.Parallel.
func Run(t *testing.T, fn func(t *testing.T, open Open)) {
	t.Helper()
	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) { fn(t, k.Open) })
	}
}

// Mem opens an empty memstore with its default limits.
func Mem(t testing.TB) storage.Store {
	t.Helper()
	s := memstore.New(nil)
	t.Cleanup(func() { s.Close() })
	return s
}

// Bolt opens an empty boltstore in t's temporary directory, without fsync
// (the tests do not crash the machine).
func Bolt(t testing.TB) storage.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "keel.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Etcd opens an etcdstore with its default limits under a fresh prefix of
// the binary's etcd, or skips t when there is none (see etcdtest.Endpoints).
func Etcd(t testing.TB) storage.Store {
	t.Helper()
	s := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: etcdtest.Prefix()})
	t.Cleanup(func() { s.Close() })
	return s
}

// Another returns a second handle on the data of s, as another process
// would open it: for an etcdstore, a Store of a client of its own on the
// same prefix, closed when t ends; for the in-process stores, which no
// other process can open, s itself.
func Another(t testing.TB, s storage.Store) storage.Store {
	t.Helper()
	if es, ok := s.(*etcdstore.Store); ok {
		other := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: es.Prefix()})
		t.Cleanup(func() { other.Close() })
		return other
	}
	return s
}
