package boltstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
)

// BenchmarkGroupCommit runs one-key Updates (fsync on) from 64 goroutines
// at once, with keys in order (kv writes of new names) or at random (lease
// records: random ids), and reports the process CPU per Update (cpu-ns/op,
// getrusage user+sys), the mean number of Updates a commit ran
// (updates/commit) and of the pages it wrote, the meta page included
// (writes/commit, bbolt's statistics: one write a page or run of
// overflow pages).
func BenchmarkGroupCommit(b *testing.B) {
	for _, keys := range []string{"ordered", "random"} {
		b.Run("keys="+keys, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			value := make([]byte, 100)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			cpu, sys := keeltest.CPUTime(), keeltest.SysTime()
			for range 64 {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						key := fmt.Sprintf("k/%012d", i)
						if keys == "random" {
							key = fmt.Sprintf("k/%016x", rand.Uint64())
						}
						err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
							return tx.Put(key, value)
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			cpu, sys = keeltest.CPUTime()-cpu, keeltest.SysTime()-sys
			b.StopTimer()
			s.mu.Lock()
			commits := float64(max(s.commits, 1))
			b.ReportMetric(float64(s.grouped)/commits, "updates/commit")
			s.mu.Unlock()
			st := s.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetWrite())/commits, "writes/commit")
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(sys)/float64(b.N), "sys-ns/op")
		})
	}
}
