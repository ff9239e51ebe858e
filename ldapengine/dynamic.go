package ldapengine

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

func (e *Engine) revokeCreds(ctx context.Context, l lease.Lease) error {
	return fmt.Errorf("ldapengine: dynamic credentials: %w", keel.ErrUnavailable)
}
