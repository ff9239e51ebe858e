package keel

import (
	"context"
	"reflect"
	"time"
)

// An Observer is told of the operations of the services it is given to:
// each service calls Begin before an operation acts and End when it
// returns, with the same *Op. Audit devices, metrics, traces and logs are
// Observers; a program adds its own with Observers. Implementations must
// be safe for concurrent use and must not change the Op's fields.
type Observer interface {
	// Begin is called before the operation acts, with the Op's Name,
	// Resource, Principal, Start and Input set. It returns the context
	// the operation runs in (a tracer puts its span there). An error
	// refuses the operation: it fails with that error, acting on
	// nothing, and End is not called.
	Begin(ctx context.Context, op *Op) (context.Context, error)
	// End is called once when the operation returns, with Duration,
	// Err and Output set, and the context Begin returned.
	End(ctx context.Context, op *Op)
}

// Op is one operation of a keel service, as its Observer sees it. Input
// and Output are the operation's request and result; a field whose struct
// tag is `keel:"secret"` holds a secret (every string under it: a
// password, a kv value), which consumers show only through Redact.
type Op struct {
	Name      string    // the package and method, as "kv.Write" or "lease.Renew"
	Resource  string    // what it acts on: a resource path, or the id or name of an object
	Principal Principal // the caller
	Start     time.Time // when the operation began, by the service's clock
	Input     any       // the request; nil when Name and Resource say it all

	Duration time.Duration // how long it took, by the service's clock (at End)
	Err      error         // nil when it succeeded; KindOf(Err) is its outcome (at End)
	Output   any           // the result, when it succeeded and has one (at End)

	obs   Observer
	clock Clock
	ctx   context.Context
}

// Begin starts reporting an operation to o, and returns the context the
// operation runs in and the Op to end (with End) when it returns. A nil o
// costs nothing: Begin returns ctx and a nil *Op, whose End does nothing.
// An error means o refused the operation (see Observer.Begin): the caller
// returns it without acting, and must not call End.
func Begin(ctx context.Context, o Observer, c Clock, name, resource string, input any) (context.Context, *Op, error) {
	if o == nil {
		return ctx, nil, nil
	}
	p, _ := PrincipalFrom(ctx)
	c = ClockOrSystem(c)
	op := &Op{Name: name, Resource: resource, Principal: p, Start: c.Now(), Input: input, obs: o, clock: c}
	octx, err := o.Begin(ctx, op)
	if octx == nil {
		octx = ctx
	}
	if err != nil {
		return ctx, nil, err
	}
	op.ctx = octx
	return octx, op, nil
}

// End reports that the operation returned output (when err is nil) or
// err. It does nothing on a nil *Op, and after the first call.
func (op *Op) End(output any, err error) {
	if op == nil || op.obs == nil {
		return
	}
	o := op.obs
	op.obs = nil
	op.Duration = op.clock.Now().Sub(op.Start)
	op.Err = err
	if err == nil {
		op.Output = output
	}
	o.End(op.ctx, op)
}

// Observe runs fn as the operation name of a service whose Observer is o
// (see Begin) and returns what fn returned; the Op's Output is fn's
// result. A refusal of o is returned without calling fn. A nil o calls fn
// alone.
func Observe[T any](ctx context.Context, o Observer, c Clock, name, resource string, input any, fn func(context.Context) (T, error)) (T, error) {
	if o == nil {
		return fn(ctx)
	}
	ctx, op, err := Begin(ctx, o, c, name, resource, input)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := fn(ctx)
	op.End(out, err)
	return out, err
}

// ObserveErr is Observe for an operation that returns only an error.
func ObserveErr(ctx context.Context, o Observer, c Clock, name, resource string, input any, fn func(context.Context) error) error {
	if o == nil {
		return fn(ctx)
	}
	ctx, op, err := Begin(ctx, o, c, name, resource, input)
	if err != nil {
		return err
	}
	err = fn(ctx)
	op.End(nil, err)
	return err
}

// Observers returns an Observer that tells each of os, in order, of every
// operation (nil entries are skipped; nil when none is left). When one
// refuses an operation in Begin, those before it are told of its End with
// the refusal as Err, and those after it are not told at all.
func Observers(os ...Observer) Observer {
	var list multiObserver
	for _, o := range os {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

// began is what a multiObserver keeps of one operation in its context:
// the context each Observer's Begin returned, so that its End gets it.
// It is made only when one of them returned a context of its own: when
// none did (metrics, logs), each End gets the context End is given, and
// Begin allocates nothing. op tells a multiObserver's End its own began
// from one of an operation around it.
type began struct {
	op   *Op
	ctxs []context.Context
}

type beganKey struct{}

func (m multiObserver) Begin(ctx context.Context, op *Op) (context.Context, error) {
	var b *began // nil while every context is ctx
	cur := ctx
	for i, o := range m {
		next, err := o.Begin(cur, op)
		if err != nil {
			op.Err = err
			for j := i - 1; j >= 0; j-- {
				c := ctx
				if b != nil {
					c = b.ctxs[j]
				}
				m[j].End(c, op)
			}
			op.Err = nil
			return ctx, err
		}
		if next != nil && next != cur {
			cur = next
			if b == nil {
				b = &began{op: op, ctxs: make([]context.Context, i, len(m))}
				for j := range b.ctxs {
					b.ctxs[j] = ctx
				}
			}
		}
		if b != nil {
			b.ctxs = append(b.ctxs, cur)
		}
	}
	if b == nil {
		return ctx, nil
	}
	return context.WithValue(cur, beganKey{}, b), nil
}

func (m multiObserver) End(ctx context.Context, op *Op) {
	b, _ := ctx.Value(beganKey{}).(*began)
	if b != nil && b.op != op { // an operation's around this one
		b = nil
	}
	for i := len(m) - 1; i >= 0; i-- {
		c := ctx
		if b != nil && i < len(b.ctxs) {
			c = b.ctxs[i]
		}
		m[i].End(c, op)
	}
}

// Redact returns v as a tree of plain values (map[string]any for structs
// and maps, []any for slices, and strings, numbers, booleans and nil), in
// which every string under a struct field tagged `keel:"secret"` is
// replaced by secret(s). A struct's fields are named by their Go names;
// unexported fields are left out; an error becomes its message; a
// time.Time and a time.Duration stay as they are. An audit device passes
// an HMAC as secret, a log a constant.
func Redact(v any, secret func(string) string) any {
	return redact(reflect.ValueOf(v), secret, false, 0)
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	errorType    = reflect.TypeFor[error]()
)

// maxRedactDepth bounds Redact's walk, so that a value with a cycle ends.
const maxRedactDepth = 32

func redact(v reflect.Value, secret func(string) string, hidden bool, depth int) any {
	if !v.IsValid() || depth > maxRedactDepth {
		return nil
	}
	t := v.Type()
	if t == timeType || t == durationType {
		return v.Interface()
	}
	if t.Implements(errorType) {
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && v.IsNil() {
			return nil
		}
		return hide(v.Interface().(error).Error(), secret, hidden)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return redact(v.Elem(), secret, hidden, depth+1)
	case reflect.String:
		return hide(v.String(), secret, hidden)
	case reflect.Struct:
		out := make(map[string]any, t.NumField())
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			out[f.Name] = redact(v.Field(i), secret, hidden || f.Tag.Get("keel") == "secret", depth+1)
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			if it.Key().Kind() != reflect.String {
				continue
			}
			out[it.Key().String()] = redact(it.Value(), secret, hidden, depth+1)
		}
		return out
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return hide(string(v.Bytes()), secret, hidden)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = redact(v.Index(i), secret, hidden, depth+1)
		}
		return out
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return v.Interface()
	}
	return nil // funcs, channels, complex numbers: nothing a record shows
}

func hide(s string, secret func(string) string, hidden bool) string {
	if hidden && secret != nil {
		return secret(s)
	}
	return s
}
