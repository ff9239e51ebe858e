package etcdstore_test

import (
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

func TestConformance(t *testing.T) {
	client := etcdtest.Client(t)
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return etcdstore.New(client, &etcdstore.Options{Prefix: etcdtest.Prefix()})
	})
}

// TestConformanceSmallLimits runs the suite over limits small enough that
// every one of them is tested at its boundary, MaxTxReads (given in
// Options) included.
func TestConformanceSmallLimits(t *testing.T) {
	client := etcdtest.Client(t)
	limits := storage.Limits{MaxKeySize: 64, MaxValueSize: 128, MaxTxOps: 32, MaxTxBytes: 2048, MaxTxReads: 32}
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s := etcdstore.New(client, &etcdstore.Options{Prefix: etcdtest.Prefix(), Limits: limits})
		if got := s.Limits(); got != limits {
			t.Fatalf("Limits() = %+v, want the %+v given in Options", got, limits)
		}
		return s
	})
}

// TestLimits: the default limits state etcd's bound on comparisons, and
// limits given in Options without MaxTxReads keep it.
func TestLimits(t *testing.T) {
	if got := etcdstore.New(nil, nil).Limits(); got != etcdstore.DefaultLimits() || got.MaxTxReads != 128 {
		t.Errorf("Limits() without Options = %+v, want DefaultLimits with MaxTxReads %d", got, 128)
	}
	given := storage.Limits{MaxTxOps: 64}
	want := given
	want.MaxTxReads = 128
	if got := etcdstore.New(nil, &etcdstore.Options{Limits: given}).Limits(); got != want {
		t.Errorf("Limits() with Options.Limits %+v = %+v, want %+v", given, got, want)
	}
}
