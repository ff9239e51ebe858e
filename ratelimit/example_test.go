package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ratelimit"
	"github.com/keelhq/keel/storage/memstore"
)

// A quota of two requests a second on the mount "secret/": the third
// request of a client within its second is refused until the second ends.
func Example() {
	ctx := context.Background()
	clock := keel.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := ratelimit.Open(ctx, memstore.New(nil), &ratelimit.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	if _, err := l.Put(ctx, ratelimit.Quota{Name: "kv", Path: "secret/", Rate: 2}); err != nil {
		panic(err)
	}
	for range 3 {
		err = l.Allow(ctx, "secret/app/db", "10.0.0.1")
	}
	var qe *ratelimit.QuotaError
	if errors.As(err, &qe) {
		fmt.Println(qe.Name, qe.Limit, qe.RetryAfter)
	}
	clock.Advance(time.Second)
	fmt.Println(l.Allow(ctx, "secret/app/db", "10.0.0.1"))
	// Output:
	// kv 2 1s
	// <nil>
}
