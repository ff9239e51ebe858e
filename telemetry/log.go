package telemetry

import (
	"context"
	"log/slog"

	"github.com/keelhq/keel"
)

// LogTo returns a keel.Observer that writes one line to l when each
// operation ends: its name, resource, caller, outcome and duration, and
// its error. Its inputs and outputs are never logged. A success, and an
// error of the caller's making (invalid, not found, forbidden…), are
// logged at slog.LevelDebug; an error of kind keel.KindUnavailable,
// KindCanceled or KindDeadlineExceeded at slog.LevelWarn; any other
// (internal, unknown) at slog.LevelError. A nil l logs nothing.
func LogTo(l *slog.Logger) keel.Observer {
	if l == nil {
		return nil
	}
	return logObserver{l}
}

type logObserver struct{ l *slog.Logger }

func (logObserver) Begin(ctx context.Context, _ *keel.Op) (context.Context, error) { return ctx, nil }

func (o logObserver) End(ctx context.Context, op *keel.Op) {
	kind := keel.KindOf(op.Err)
	level := slog.LevelDebug
	switch kind {
	case keel.KindNone, keel.KindNotFound, keel.KindAlreadyExists, keel.KindInvalid, keel.KindConflict,
		keel.KindForbidden, keel.KindUnauthenticated, keel.KindTooLarge:
	case keel.KindUnavailable, keel.KindCanceled, keel.KindDeadlineExceeded:
		level = slog.LevelWarn
	default:
		level = slog.LevelError
	}
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("resource", op.Resource),
		slog.String("principal", op.Principal.ID),
		slog.String("outcome", outcomeName(kind)),
		slog.Duration("duration", op.Duration),
	}
	if op.Err != nil {
		attrs = append(attrs, slog.String("error", op.Err.Error()))
	}
	o.l.LogAttrs(ctx, level, op.Name, attrs...)
}
