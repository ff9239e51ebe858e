package keeltest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
)

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	r := &keeltest.Recorder{}
	if err := r.Authorize(ctx, keel.Principal{}, keel.CapRead, "a/b"); err != nil {
		t.Fatal(err)
	}
	if got := r.Take(); !slices.Equal(got, []keeltest.Ask{{Cap: keel.CapRead, Resource: "a/b"}}) {
		t.Fatalf("Take = %v", got)
	}
	if got := r.Take(); len(got) != 0 {
		t.Fatalf("second Take = %v, want nothing", got)
	}
	r.SetDeny(true)
	if err := r.Authorize(ctx, keel.Principal{}, keel.CapUpdate, "x"); keel.KindOf(err) != keel.KindForbidden {
		t.Fatalf("denied: %v", err)
	}
	r.SetDeny(false)
	if err := r.Authorize(ctx, keel.Principal{}, keel.CapUpdate, "x"); err != nil {
		t.Fatalf("allowed again: %v", err)
	}
	if got := len(r.Take()); got != 2 {
		t.Fatalf("recorded %d asks, want 2", got)
	}
}
