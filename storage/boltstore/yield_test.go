package boltstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/keelhq/keel/storage"
)

// TestLeaderYieldsToReadyWriters: on one processor, writers that become
// ready together (requests read in one poll of the network) share one
// commit: the first to arrive yields before it commits, where it would
// otherwise commit alone and keep the processor through its fsync. A
// collection or a preemption can reorder the goroutines of one burst, so
// the burst is tried again, a few times at most. Not parallel: it runs
// the program on one processor.
func TestLeaderYieldsToReadyWriters(t *testing.T) {
	s := openTemp(t, &Options{NoSync: true})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const writers, tries = 8, 5
	var commits, grouped int
	for try := range tries {
		before, _ := s.commitCounts()
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Go(func() {
				<-start
				errs <- s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
					return tx.Put(fmt.Sprint("k", try, "-", i), []byte("1"))
				})
			})
		}
		runtime.Gosched() // let them all wait at start
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		after, _ := s.commitCounts()
		if commits = after - before; commits == 1 {
			return
		}
	}
	_, grouped = s.commitCounts()
	t.Fatalf("each of %d bursts of %d writers took more than one commit (the last %d, %d Updates in all), want one", tries, writers, commits, grouped)
}
