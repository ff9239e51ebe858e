package ldapengine

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestEntryLocks: holders of one key never overlap, holders of different
// keys do, and the map forgets keys nobody holds.
func TestEntryLocks(t *testing.T) {
	var l entryLocks
	var inside [2]atomic.Int32
	both := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			k := g % 2
			for range 200 {
				unlock := l.lock([]string{"role/a", "role/b"}[k])
				if inside[k].Add(1) != 1 {
					t.Error("two holders of one key")
				}
				inside[k].Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	// A key is free while another is held.
	ua := l.lock("role/a")
	done := make(chan struct{})
	go func() { ub := l.lock("role/b"); close(both); ub(); close(done) }()
	<-both
	ua()
	<-done // b's holder has unlocked: no key is held or waited for
	l.mu.Lock()
	n := len(l.m)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys left in the map", n)
	}
}
