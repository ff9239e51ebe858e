package keel_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// recorder is an Observer that notes what it is told, and refuses when
// refuse is set.
type recorder struct {
	name   string
	log    *[]string
	refuse error
	ends   []keel.Op
}

type ctxKey string

func (r *recorder) Begin(ctx context.Context, op *keel.Op) (context.Context, error) {
	*r.log = append(*r.log, r.name+" begin "+op.Name)
	if r.refuse != nil {
		return ctx, r.refuse
	}
	return context.WithValue(ctx, ctxKey(r.name), r.name), nil
}

func (r *recorder) End(ctx context.Context, op *keel.Op) {
	got, _ := ctx.Value(ctxKey(r.name)).(string)
	*r.log = append(*r.log, r.name+" end "+op.Name+" ctx="+got)
	r.ends = append(r.ends, *op)
}

func TestBeginEndReportsTheOperation(t *testing.T) {
	clock := keel.NewFakeClock(time.Unix(1000, 0))
	var log []string
	r := &recorder{name: "a", log: &log}
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice"})
	ctx, op, err := keel.Begin(ctx, r, clock, "kv.Write", "secret/x", "in")
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Value(ctxKey("a")) != "a" {
		t.Error("the operation's context is not the one Begin returned")
	}
	clock.Advance(3 * time.Second)
	op.End("out", nil)
	op.End("again", nil) // a second End does nothing
	if len(r.ends) != 1 {
		t.Fatalf("End told %d times, want 1", len(r.ends))
	}
	got := r.ends[0]
	if got.Name != "kv.Write" || got.Resource != "secret/x" || got.Principal.ID != "alice" ||
		got.Input != "in" || got.Output != "out" || got.Duration != 3*time.Second || !got.Start.Equal(time.Unix(1000, 0)) {
		t.Errorf("op = %+v", got)
	}
}

func TestEndKeepsTheErrorAndDropsTheOutput(t *testing.T) {
	var log []string
	r := &recorder{name: "a", log: &log}
	_, op, _ := keel.Begin(context.Background(), r, nil, "lease.Renew", "lease/x", nil)
	failed := keel.KindNotFound
	op.End("ignored", failed)
	if got := r.ends[0]; keel.KindOf(got.Err) != keel.KindNotFound || got.Output != nil {
		t.Errorf("op = %+v, want Err of kind NotFound and no Output", got)
	}
}

func TestBeginWithoutObserverCostsNothing(t *testing.T) {
	ctx := context.Background()
	got, op, err := keel.Begin(ctx, nil, nil, "kv.Read", "secret/x", nil)
	if err != nil || op != nil || got != ctx {
		t.Fatalf("Begin(nil observer) = %v, %v, %v; want ctx, nil, nil", got, op, err)
	}
	op.End(nil, nil) // a nil *Op's End does nothing
	allocs := testing.AllocsPerRun(100, func() {
		_, op, _ := keel.Begin(ctx, nil, nil, "kv.Read", "secret/x", nil)
		op.End(nil, nil)
	})
	if allocs != 0 {
		t.Errorf("Begin and End without an observer allocate %v times", allocs)
	}
}

func TestObserversTellEachInOrderAndStopAtARefusal(t *testing.T) {
	var log []string
	a := &recorder{name: "a", log: &log}
	b := &recorder{name: "b", log: &log}
	c := &recorder{name: "c", log: &log}
	o := keel.Observers(a, nil, b, c)
	_, op, err := keel.Begin(context.Background(), o, nil, "x.Op", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	op.End(nil, nil)
	want := []string{"a begin x.Op", "b begin x.Op", "c begin x.Op", "c end x.Op ctx=c", "b end x.Op ctx=b", "a end x.Op ctx=a"}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("log = %q\nwant %q", log, want)
	}

	log = nil
	refusal := errors.New("device down")
	b.refuse = refusal
	_, op, err = keel.Begin(context.Background(), o, nil, "x.Op", "r", nil)
	if !errors.Is(err, refusal) || op != nil {
		t.Fatalf("Begin = %v, %v; want the refusal and no Op", op, err)
	}
	want = []string{"a begin x.Op", "b begin x.Op", "a end x.Op ctx=a"}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("log = %q\nwant %q", log, want)
	}
	if !errors.Is(a.ends[len(a.ends)-1].Err, refusal) {
		t.Error("the observer before the refusal is not told of it")
	}
	if keel.Observers(nil, nil) != nil {
		t.Error("Observers of nothing is not nil")
	}
}

// quiet is an Observer that leaves the context as it is, as metrics and
// logs do, and notes the context its End gets.
type quiet struct{ ends []context.Context }

func (q *quiet) Begin(ctx context.Context, _ *keel.Op) (context.Context, error) { return ctx, nil }
func (q *quiet) End(ctx context.Context, _ *keel.Op)                            { q.ends = append(q.ends, ctx) }

// Observers that all leave the context as it is cost the Op alone: no
// context of the multiObserver's own (issue 32: two per request).
func TestObserversLeaveAContextNobodyChangedAlone(t *testing.T) {
	a, b := &quiet{}, &quiet{}
	o := keel.Observers(a, b)
	ctx := context.Background()
	got, op, err := keel.Begin(ctx, o, nil, "x.Op", "r", nil)
	if err != nil || got != ctx {
		t.Fatalf("Begin = %v, %v; want ctx itself", got, err)
	}
	op.End(nil, nil)
	if len(a.ends) != 1 || a.ends[0] != ctx || b.ends[0] != ctx {
		t.Errorf("End got %v and %v, want ctx", a.ends, b.ends)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, op, _ := keel.Begin(ctx, o, nil, "x.Op", "r", nil)
		op.End(nil, nil)
	})
	if allocs > 1 { // the Op
		t.Errorf("Begin and End allocate %v times, want 1 (the Op)", allocs)
	}
}

// An operation inside another, whose observers change no context, is not
// given the contexts the outer operation's observers made.
func TestObserversOfAnInnerOperationGetTheirOwnContexts(t *testing.T) {
	var log []string
	outer := keel.Observers(&recorder{name: "a", log: &log}, &recorder{name: "b", log: &log})
	ctx, op, err := keel.Begin(context.Background(), outer, nil, "outer", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	q1, q2 := &quiet{}, &quiet{}
	ictx, iop, err := keel.Begin(ctx, keel.Observers(q1, q2), nil, "inner", "r", nil)
	if err != nil || ictx != ctx {
		t.Fatalf("inner Begin = %v, %v; want the outer context", ictx, err)
	}
	iop.End(nil, nil)
	if q1.ends[0] != ctx || q2.ends[0] != ctx {
		t.Error("the inner operation's End got the outer observers' contexts")
	}
	op.End(nil, nil)
	if want := "a end outer ctx=a"; log[len(log)-1] != want {
		t.Errorf("last line %q, want %q", log[len(log)-1], want)
	}
}

type credentials struct {
	Username string
	Password string `keel:"secret"`
	TTL      time.Duration
	Tags     []string
	Data     map[string]any `keel:"secret"`
	Err      error
	note     string
}

func TestRedactHidesEveryStringUnderASecretField(t *testing.T) {
	in := &credentials{
		Username: "alice", Password: "hunter2", TTL: time.Minute, Tags: []string{"a"},
		Data: map[string]any{"k": "v", "n": 3, "deep": []any{"w"}},
		Err:  keel.KindNotFound, note: "unexported",
	}
	got := keel.Redact(in, func(s string) string { return "H(" + s + ")" })
	want := map[string]any{
		"Username": "alice", "Password": "H(hunter2)", "TTL": time.Minute, "Tags": []any{"a"},
		"Data": map[string]any{"k": "H(v)", "n": 3, "deep": []any{"H(w)"}},
		"Err":  keel.KindNotFound.Error(),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Redact = %#v\nwant %#v", got, want)
	}
	if keel.Redact(nil, nil) != nil {
		t.Error("Redact(nil) is not nil")
	}
}
