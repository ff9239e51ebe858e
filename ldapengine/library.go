package ldapengine

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

func (e *Engine) revokeCheckOut(ctx context.Context, l lease.Lease) error {
	return fmt.Errorf("ldapengine: library sets: %w", keel.ErrUnavailable)
}
