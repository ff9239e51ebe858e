package txbase

import (
	"sync"
	"testing"

	"github.com/keelhq/keel/internal/keeltest"
)

func TestGateCloseWaitsForAdmitted(t *testing.T) {
	var g Gate
	if !g.Enter() {
		t.Fatal("a new gate refused a transaction")
	}
	closed := make(chan bool)
	go func() { closed <- g.Close() }()
	// Close is waiting for the admitted transaction: new ones are refused.
	keeltest.Until(t, "the gate refuses after Close began", func() bool {
		if g.Enter() {
			g.Leave()
			return false
		}
		return true
	})
	select {
	case <-closed:
		t.Fatal("Close returned while a transaction was in flight")
	default:
	}
	g.Leave()
	if first := <-closed; !first {
		t.Fatal("first Close reported false")
	}
	if g.Close() {
		t.Fatal("second Close reported true")
	}
}

func TestGateConcurrentEnterLeaveClose(t *testing.T) {
	var g Gate
	var wg sync.WaitGroup
	var mu sync.Mutex
	inFlightAfterClose := false
	closedDone := false
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if !g.Enter() {
					return
				}
				mu.Lock()
				if closedDone {
					inFlightAfterClose = true
				}
				mu.Unlock()
				g.Leave()
			}
		}()
	}
	g.Close()
	mu.Lock()
	closedDone = true
	mu.Unlock()
	wg.Wait()
	if inFlightAfterClose {
		t.Fatal("a transaction was admitted after Close returned")
	}
}
