package keel_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/keelhq/keel"
)

func TestPrincipalRoundTrip(t *testing.T) {
	alice := keel.Principal{
		ID:            "alice",
		DisplayName:   "Alice A.",
		EntityID:      "ent-1",
		ClientTokenID: "tok-1",
		Policies:      []string{"default", "admins"},
		Meta:          map[string]string{"team": "ops"},
	}
	bob := keel.Principal{ID: "bob", Policies: []string{"readers"}}

	tests := []struct {
		name   string
		ctx    context.Context
		want   keel.Principal
		wantOK bool
	}{
		{"missing", context.Background(), keel.Principal{}, false},
		{"under another key of the same shape", context.WithValue(context.Background(), principalKey{}, alice), keel.Principal{}, false},
		{"set", keel.WithPrincipal(context.Background(), alice), alice, true},
		{"anonymous set explicitly", keel.WithPrincipal(context.Background(), keel.Principal{}), keel.Principal{}, true},
		{"innermost wins", keel.WithPrincipal(keel.WithPrincipal(context.Background(), alice), bob), bob, true},
		{"survives derived contexts", context.WithValue(keel.WithPrincipal(context.Background(), alice), otherKey{}, "v"), alice, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := keel.PrincipalFrom(tc.ctx)
			if ok != tc.wantOK {
				t.Errorf("PrincipalFrom ok = %v, want %v", ok, tc.wantOK)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PrincipalFrom = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWithPrincipalLeavesParentAlone(t *testing.T) {
	parent := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice"})
	_ = keel.WithPrincipal(parent, keel.Principal{ID: "bob"})
	if got, _ := keel.PrincipalFrom(parent); got.ID != "alice" {
		t.Errorf("parent principal = %q after deriving a child, want alice", got.ID)
	}
}

// principalKey has the name and shape of keel's private key but is another
// type: a value stored under it must not be taken for the principal.
type principalKey struct{}

type otherKey struct{}
