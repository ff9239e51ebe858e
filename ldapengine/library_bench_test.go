package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkLibraryCheckOutCheckIn measures check-out and check-in of a
// 100-account set by 32 concurrent callers on the fake directory and the
// memory store; one op is a check-out followed by the check-in of that
// account (a new password each time). With the raw store's transaction
// (one Update that reads and writes one key) as the yardstick.
//
//	go test -run '^$' -bench LibraryCheckOutCheckIn -benchtime 2000x ./ldapengine/
func BenchmarkLibraryCheckOutCheckIn(b *testing.B) {
	par := max(1, 32/runtime.GOMAXPROCS(0)) // SetParallelism multiplies by GOMAXPROCS
	b.Run("memstore-update-yardstick", func(b *testing.B) {
		s := memstore.New(nil)
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
					_, _ = tx.Get("k")
					return tx.Put("k", []byte("v"))
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	for _, latency := range []time.Duration{0, time.Millisecond} {
		b.Run(fmt.Sprintf("check-out+check-in/directory-latency=%s", latency), func(b *testing.B) {
			benchCheckOutCheckIn(b, par, latency)
		})
	}
}

// benchCheckOutCheckIn runs check-out+check-in pairs of par×GOMAXPROCS
// callers on a 100-account set, each password change taking latency more
// in the fake directory.
func benchCheckOutCheckIn(b *testing.B, par int, latency time.Duration) {
	{
		v := newLibEnv(b, everystore.Mem, 100, libOptions{})
		v.putSet(b, "s", libSvcNames(100)...)
		v.dir.SetLatency(latency)
		var callers, unavailable, outNS, inNS atomic.Int64
		b.SetParallelism(par)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := libCaller(fmt.Sprintf("tok-%d", callers.Add(1)), "")
			for pb.Next() {
				start := time.Now()
				co, err := v.e.CheckOut(ctx, "s", CheckOutRequest{})
				t1 := time.Now()
				outNS.Add(int64(t1.Sub(start)))
				if errors.Is(err, ErrNoAccountAvailable) {
					unavailable.Add(1)
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := v.e.CheckIn(ctx, "s", CheckInRequest{ServiceAccountNames: []string{co.ServiceAccountName}}); err != nil {
					b.Error(err)
					return
				}
				inNS.Add(int64(time.Since(t1)))
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		b.ReportMetric(float64(outNS.Load())/float64(b.N), "checkout-ns/op")
		b.ReportMetric(float64(inNS.Load())/float64(b.N), "checkin-ns/op")
		b.ReportMetric(float64(unavailable.Load()), "unavailable")
	}
}
