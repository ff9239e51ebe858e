package leader_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel/leader"
)

// Example runs background work while the process leads: with Always, at
// once and until ctx ends.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	leader.Run(ctx, leader.Always, time.Second, nil, func(ctx context.Context) {
		fmt.Println("leading")
		cancel() // the work would loop until ctx ends
		<-ctx.Done()
	})
	fmt.Println("stopped")
	// Output:
	// leading
	// stopped
}
