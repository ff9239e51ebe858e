// Package keeltest holds test helpers shared by keel's packages.
package keeltest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/keelhq/keel"
)

// Ask is one request to an Authorizer: a capability on a resource.
type Ask struct {
	Cap      keel.Capability
	Resource string
}

// Recorder is a keel.Authorizer that records every request, and refuses
// all of them with an error of kind keel.KindForbidden while SetDeny(true)
// holds. The zero value allows everything. It is safe for concurrent use.
type Recorder struct {
	deny atomic.Bool
	mu   sync.Mutex
	asks []Ask
}

// SetDeny makes the Recorder refuse (true) or allow (false) what follows.
func (r *Recorder) SetDeny(deny bool) { r.deny.Store(deny) }

// Authorize records c on resource.
func (r *Recorder) Authorize(_ context.Context, _ keel.Principal, c keel.Capability, resource string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, Ask{c, resource})
	if r.deny.Load() {
		return errors.Join(errors.New("denied by test"), keel.KindForbidden)
	}
	return nil
}

// Take returns the requests recorded since the last Take, and forgets them.
func (r *Recorder) Take() []Ask {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.asks
	r.asks = nil
	return out
}
