package storage_test

import (
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

// A root's claims make a component built over the wrong part of the store
// loud: a view above a claimed part, or inside a part of another kind, is
// refused; the part's own kind, and parts nobody claimed, are not.
func TestClaims(t *testing.T) {
	root := memstore.New(nil)
	for prefix, kind := range map[string]string{"kv/": "kv", "identity/": "identity", "sys/": "mount"} {
		if err := storage.Claim(storage.Sub(root, prefix), kind); err != nil {
			t.Fatal(err)
		}
	}
	// Claimed again alike (a second root over the store): fine.
	if err := storage.Claim(storage.Sub(root, "kv/"), "kv"); err != nil {
		t.Fatalf("the same claim again: %v", err)
	}
	for name, tc := range map[string]struct {
		view storage.Store
		kind string
		ok   bool
	}{
		"the whole store":               {root, "kv", false},
		"a mount's data":                {storage.Sub(root, "kv/1234/"), "kv", true},
		"identity inside kv":            {storage.Sub(root, "kv/1234/"), "identity", false},
		"identity at its part":          {storage.Sub(root, "identity/"), "identity", true},
		"kv above sys":                  {storage.Sub(root, "s"), "kv", false},
		"a part nobody claimed":         {storage.Sub(root, "app/"), "kv", true},
		"through a wrapper":             {storage.Sub(faultstore.New(root), "kv/1/"), "identity", false},
		"a guarded view inside its own": {storage.Sub(storage.Guard(root, "sys/g", "gone"), "kv/1/"), "kv", true},
	} {
		err := storage.CheckClaim(tc.view, tc.kind)
		if tc.ok != (err == nil) {
			t.Errorf("%s: CheckClaim = %v, want ok %v", name, err, tc.ok)
		}
		if err != nil {
			if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Store" {
				t.Errorf("%s: %v, want Invalid naming Store", name, err)
			}
		}
	}
	if err := storage.Claim(storage.Sub(root, "kv/x/"), "identity"); keel.KindOf(err) != keel.KindInvalid {
		t.Errorf("a claim inside another kind's part: %v", err)
	}
	if err := storage.Claim(root, "kv"); keel.KindOf(err) != keel.KindInvalid {
		t.Errorf("a claim over other kinds' parts: %v", err)
	}
	// Another store has claims of its own.
	if err := storage.CheckClaim(memstore.New(nil), "identity"); err != nil {
		t.Errorf("a store nobody claimed: %v", err)
	}
}

// TestCheckRoot: a root's store and Authorizer are required, its own
// checks come between them, and a refused call claims nothing.
func TestCheckRoot(t *testing.T) {
	root := memstore.New(nil)
	parts := []storage.Part{{Prefix: "kv/", Kind: "kv"}}
	err := storage.CheckRoot(root, nil, parts, func(v *keel.Validation) { v.Add("Transport", "is required") })
	var fields []string
	for _, fe := range keel.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	if keel.KindOf(err) != keel.KindInvalid || !slices.Equal(fields, []string{"Transport", "Authorizer"}) {
		t.Fatalf("CheckRoot without a Transport and an Authorizer: %v (fields %q)", err, fields)
	}
	if err := storage.CheckClaim(storage.Sub(root, "kv/1/"), "identity"); err != nil {
		t.Fatalf("a refused CheckRoot claimed its parts: %v", err)
	}
	if err := storage.CheckRoot(root, keel.AllowAll{}, parts, nil); err != nil {
		t.Fatal(err)
	}
	if err := storage.CheckClaim(storage.Sub(root, "kv/1/"), "identity"); keel.KindOf(err) != keel.KindInvalid {
		t.Fatalf("after CheckRoot, identity inside kv: %v, want Invalid", err)
	}
	if err := storage.CheckRoot(nil, keel.AllowAll{}, nil, nil); keel.KindOf(err) != keel.KindInvalid {
		t.Fatalf("CheckRoot without a store: %v", err)
	}
}
