package txbase

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/keelhq/keel/storage"
)

// Gate admits transactions until it is closed, and lets Close wait for the
// ones admitted. Its zero value is open. Enter and Leave are one atomic add
// each: the cost of a store's lifecycle on every transaction.
type Gate struct {
	state   atomic.Int64 // transactions in flight, plus closedBit once closed
	once    sync.Once
	mu      sync.Mutex
	drained chan struct{} // closed when closed and no transaction is in flight
}

const closedBit = 1 << 62

// Enter admits a transaction and reports true, or reports false when the
// gate is closed. A true Enter must be followed by one Leave.
func (g *Gate) Enter() bool {
	if g.state.Add(1)&closedBit != 0 {
		g.Leave()
		return false
	}
	return true
}

// Leave ends a transaction admitted by Enter.
func (g *Gate) Leave() {
	if g.state.Add(-1) == closedBit {
		g.signal()
	}
}

// Close closes the gate and waits until every admitted transaction has left.
// It reports true to its first caller only.
func (g *Gate) Close() (first bool) {
	ch := g.drainedChan()
	old := g.state.Or(closedBit)
	if old == 0 {
		g.signal()
	}
	<-ch
	return old&closedBit == 0
}

func (g *Gate) drainedChan() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.drained == nil {
		g.drained = make(chan struct{})
	}
	return g.drained
}

func (g *Gate) signal() {
	g.once.Do(func() { close(g.drainedChan()) })
}

// Begin admits a transaction of owner started with ctx, or returns what
// keeps it out: ctx's error, storage.ErrNestedTx, or storage.ErrClosed. A
// nil Begin must be followed by one Leave.
func (g *Gate) Begin(ctx context.Context, owner any) error {
	if err := Begin(ctx, owner); err != nil {
		return err
	}
	if !g.Enter() {
		return storage.ErrClosed
	}
	return nil
}
