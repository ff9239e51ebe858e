package audit

import (
	"context"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/randid"
)

// Observer returns a keel.Observer that records the operations of the
// services it is given to through b: a request record before each
// operation acts and a response record when it returns, joined by a
// request id. The request's Operation is the keel.Op's Name ("kv.Write"),
// its Path the Op's Resource, its Data the Op's Input as {"input": …} (a
// struct by its Go field names, see keel.Redact); the response's Data is
// {"output": …}, and Error the operation's error. Every string of the data
// is hashed by each device's salt, as every string of Vault's data is; the
// caller's display name and policies are left clear, its ClientTokenID is
// the hashed accessor.
//
// An operation whose request record no device could write is refused
// before it acts, with the Broker's keel.KindUnavailable error. A response
// record that cannot be written is lost: the operation has acted, and the
// seam cannot withhold its result (the example server's audit of the
// HTTP requests does).
func (b *Broker) Observer() keel.Observer { return observer{b} }

type observer struct{ b *Broker }

type requestIDKey struct{}

func (o observer) Begin(ctx context.Context, op *keel.Op) (context.Context, error) {
	id := randid.String(randid.Base62, 20)
	r := &Record{
		Time: op.Start, Type: TypeRequest, Auth: auth(op.Principal),
		Request: &Request{ID: id, Operation: op.Name, Path: op.Resource, Data: data("input", op.Input)},
	}
	if err := o.b.Record(ctx, r); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, requestIDKey{}, id), nil
}

func (o observer) End(ctx context.Context, op *keel.Op) {
	id, _ := ctx.Value(requestIDKey{}).(string)
	r := &Record{
		Time: op.Start.Add(op.Duration), Type: TypeResponse, Auth: auth(op.Principal),
		Request:  &Request{ID: id, Operation: op.Name, Path: op.Resource},
		Response: &Response{Data: data("output", op.Output)},
	}
	if op.Err != nil {
		r.Error = op.Err.Error()
	}
	_ = o.b.Record(context.WithoutCancel(ctx), r)
}

func auth(p keel.Principal) *Auth {
	return &Auth{Accessor: p.ClientTokenID, DisplayName: p.DisplayName, Policies: p.Policies}
}

// data is v as the only member name of a record's data, or nil when v is.
func data(name string, v any) map[string]any {
	if v == nil {
		return nil
	}
	return map[string]any{name: keel.Redact(v, nil)}
}
