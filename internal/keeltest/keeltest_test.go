package keeltest_test

import (
	"context"
	"errors"
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

func TestEventually(t *testing.T) {
	n := 0
	keeltest.Eventually(t, "third call", func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("check called %d times, want 3", n)
	}
	ok := false
	keeltest.Until(t, "flag set", func() bool { r := ok; ok = true; return r })
	if !ok {
		t.Fatal("Until returned before cond held")
	}
}
