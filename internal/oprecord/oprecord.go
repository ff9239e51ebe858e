// Package oprecord is a keel.Observer for tests: it keeps the operations
// it is told of, and refuses them when asked to.
package oprecord

import (
	"context"
	"sync"

	"github.com/keelhq/keel"
)

// Recorder keeps a copy of every Op whose End it is told of. Set Refuse to
// refuse the operations that begin after it. The zero Recorder is ready
// to use; it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	refuse error
	begun  []string
	ended  []keel.Op
}

// Refuse makes Begin refuse every operation with err (nil: accept again).
func (r *Recorder) Refuse(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = err
}

// Begin notes op's name, and refuses it when Refuse was given an error.
func (r *Recorder) Begin(ctx context.Context, op *keel.Op) (context.Context, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun = append(r.begun, op.Name)
	return ctx, r.refuse
}

// End keeps a copy of op.
func (r *Recorder) End(_ context.Context, op *keel.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, *op)
}

// Begun returns the names of the operations begun, in order.
func (r *Recorder) Begun() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.begun...)
}

// Ended returns the operations ended, in order.
func (r *Recorder) Ended() []keel.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]keel.Op(nil), r.ended...)
}

// Named returns the operations ended whose Name is name.
func (r *Recorder) Named(name string) []keel.Op {
	var out []keel.Op
	for _, op := range r.Ended() {
		if op.Name == name {
			out = append(out, op)
		}
	}
	return out
}
