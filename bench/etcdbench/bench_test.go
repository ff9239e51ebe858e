package etcdbench

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// The benchmarks run each operation of opCases through keel (impl=keel),
// its yardstick through the raw client (impl=clientv3), and both in turn
// (impl=alternating), on the binary's one etcd. See the package
// documentation, and BENCHMARKS.md for figures.

func BenchmarkKVWrite(b *testing.B)        { benchOp(b, setupKVWrite) }
func BenchmarkLeaseIssue(b *testing.B)     { benchOp(b, setupLeaseIssue) }
func BenchmarkCheckOut(b *testing.B)       { benchOp(b, setupCheckOut) }
func BenchmarkMoveWorkspaces(b *testing.B) { benchOp(b, setupMoveWorkspaces) }

func benchOp(b *testing.B, setup func(testing.TB, *clientv3.Client) op) {
	client := etcdtest.Client(b)
	b.Run("impl=keel", func(b *testing.B) {
		o := setup(b, client)
		loop(b, o.keel, o.keelAfter)
	})
	b.Run("impl=clientv3", func(b *testing.B) {
		o := setup(b, client)
		loop(b, o.raw, o.rawAfter)
	})
	b.Run("impl=alternating", func(b *testing.B) {
		o := setup(b, client)
		alternate(b, o)
	})
}

// loop runs fn once per iteration, and after, when not nil, after each.
// It times each call of fn and reports their mean as ns/op, after excluded:
// b.StopTimer around after would not do, as its stop-the-world reads of
// memory statistics added 100 to 200 µs to the next operation on etcd.
func loop(b *testing.B, fn, after func(context.Context) error) {
	ctx := context.Background()
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		if err := fn(ctx); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		n++
		if after != nil {
			if err := after(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(total)/float64(n), "ns/op")
}

// alternate runs the keel op and the raw one once each per iteration, in
// turn first, and reports the time of each (keel-ns/op, clientv3-ns/op),
// their ratio, and their sum as ns/op. The time of the after functions
// counts in none.
func alternate(b *testing.B, o op) {
	ctx := context.Background()
	type side struct {
		fn, after func(context.Context) error
		total     time.Duration
	}
	sides := [2]*side{{fn: o.keel, after: o.keelAfter}, {fn: o.raw, after: o.rawAfter}}
	n := 0
	for b.Loop() {
		for j := range 2 {
			s := sides[(n+j)%2]
			start := time.Now()
			if err := s.fn(ctx); err != nil {
				b.Fatal(err)
			}
			s.total += time.Since(start)
			if s.after != nil {
				if err := s.after(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		n++
	}
	keel, raw := float64(sides[0].total)/float64(n), float64(sides[1].total)/float64(n)
	b.ReportMetric(keel, "keel-ns/op")
	b.ReportMetric(raw, "clientv3-ns/op")
	b.ReportMetric(keel/raw, "ratio")
	b.ReportMetric(keel+raw, "ns/op")
}
