package keel

import "context"

// LargeValue is the size from which an operation that loads a stored value
// into memory reserves it first through the Reserver of its context: a
// smaller value is loaded without asking.
const LargeValue = 64 << 10

// A Reserver grows the memory reservation of the request a context belongs
// to by n bytes, waiting for room as its transport sees fit (a transport
// should not let a request that holds memory wait for more: two such
// requests could wait for each other); it returns an error (of kind
// KindUnavailable when a retry may succeed) when it will not.
// The bytes stay reserved until the transport ends the request: they are the
// value the operation returns, in memory until its answer is written.
//
// A transport that bounds the memory its requests hold (an HTTP server's
// in-flight budget) puts one in each request's context with WithReserver;
// keel packages call it through storage.Reserving before they load a value
// of LargeValue bytes or more, so that the bound holds for what is read as
// well as for what is sent, whether or not the transport saw the value
// written.
type Reserver func(ctx context.Context, n int64) error

type reserverKey struct{}

// WithReserver returns a copy of ctx that carries r.
func WithReserver(ctx context.Context, r Reserver) context.Context {
	return context.WithValue(ctx, reserverKey{}, r)
}

// ReserverFrom returns the Reserver carried by ctx, or nil.
func ReserverFrom(ctx context.Context) Reserver {
	r, _ := ctx.Value(reserverKey{}).(Reserver)
	return r
}
