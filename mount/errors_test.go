package mount_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/mount"
)

// TestErrorMessagesPrefix: the errors of failing operations, the ones of
// other packages mount passes on (the Authorizer's, the lease manager's,
// the store's) included, start with "mount: " exactly once and keep their
// kind and field paths.
func TestErrorMessagesPrefix(t *testing.T) {
	store := everystore.Mem(t)
	table := open(t, store)
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"reader": {{Path: "sys/mounts*", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	guarded, err := mount.Open(ctx, everystore.Mem(t), &mount.Options{Authorizer: authz, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guarded.Close() })
	reader := keel.WithPrincipal(ctx, keel.Principal{ID: "r", Policies: []string{"reader"}})
	closed := open(t, everystore.Mem(t))
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	long := 100000 * time.Hour
	for _, tc := range []struct {
		name  string
		call  func() error
		kind  keel.Kind
		field string // a field the error names, if any
	}{
		{"Open nil store", func() error { _, err := mount.Open(ctx, nil, nil); return err }, keel.KindInvalid, "Store"},
		{"Open canceled", func() error {
			_, err := mount.Open(canceled, everystore.Mem(t), &mount.Options{Authorizer: keel.AllowAll{}})
			return err
		}, keel.KindCanceled, ""},
		{"Enable bad path", func() error { _, err := table.Enable(ctx, mount.EnableRequest{Path: "a..b", Type: "kv"}); return err }, keel.KindInvalid, "Path"},
		{"Enable bad type", func() error {
			_, err := table.Enable(ctx, mount.EnableRequest{Path: "x", Type: "database"})
			return err
		}, keel.KindInvalid, "Type"},
		{"Enable bad options", func() error {
			_, err := table.Enable(ctx, mount.EnableRequest{Path: "x", Type: "kv", Options: map[string]string{"version": "2"}})
			return err
		}, keel.KindInvalid, mount.OptionField("version")},
		{"Enable bad ttl", func() error {
			_, err := table.Enable(ctx, mount.EnableRequest{Path: "x", Type: "kv", MaxTTL: long})
			return err
		}, keel.KindInvalid, ""},
		{"Enable reserved path", func() error { _, err := table.Enable(ctx, mount.EnableRequest{Path: "sys/x", Type: "kv"}); return err }, keel.KindInvalid, "Path"},
		{"Enable existing", func() error { _, err := table.Enable(ctx, mount.EnableRequest{Path: "secret", Type: "kv"}); return err }, keel.KindInvalid, "Path"},
		{"Enable forbidden", func() error { _, err := guarded.Enable(reader, mount.EnableRequest{Path: "x", Type: "kv"}); return err }, keel.KindForbidden, ""},
		{"Enable canceled", func() error { _, err := table.Enable(canceled, mount.EnableRequest{Path: "y", Type: "kv"}); return err }, keel.KindCanceled, ""},
		{"Enable after Close", func() error { _, err := closed.Enable(ctx, mount.EnableRequest{Path: "x", Type: "kv"}); return err }, keel.KindUnavailable, ""},
		{"Disable forbidden", func() error { return guarded.Disable(reader, "secret") }, keel.KindForbidden, ""},
		{"Disable after Close", func() error { return closed.Disable(ctx, "secret") }, keel.KindUnavailable, ""},
		{"Tune missing", func() error { _, err := table.Tune(ctx, "missing", mount.TuneRequest{}); return err }, keel.KindNotFound, ""},
		{"Tune bad ttl", func() error { _, err := table.Tune(ctx, "secret", mount.TuneRequest{MaxTTL: &long}); return err }, keel.KindInvalid, ""},
		{"Tune forbidden", func() error { _, err := guarded.Tune(reader, "secret", mount.TuneRequest{}); return err }, keel.KindForbidden, ""},
		{"Tune after Close", func() error { _, err := closed.Tune(ctx, "secret", mount.TuneRequest{}); return err }, keel.KindUnavailable, ""},
		{"Get missing", func() error { _, err := table.Get(ctx, "missing"); return err }, keel.KindNotFound, ""},
		{"Get forbidden", func() error {
			_, err := guarded.Get(keel.WithPrincipal(ctx, keel.Principal{ID: "n"}), "secret")
			return err
		}, keel.KindForbidden, ""},
		{"List forbidden", func() error { _, err := guarded.List(keel.WithPrincipal(ctx, keel.Principal{ID: "n"})); return err }, keel.KindForbidden, ""},
		{"MountFor unmounted", func() error { _, err := table.MountFor(ctx, "nowhere/a"); return err }, keel.KindForbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "mount: ") || strings.Count(msg, "mount: ") != 1 {
				t.Fatalf("message %q: want %q exactly once, at the start", msg, "mount: ")
			}
			if keel.KindOf(err) != tc.kind {
				t.Fatalf("error %v: kind %v, want %v", err, keel.KindOf(err), tc.kind)
			}
			if tc.field != "" {
				found := false
				for _, fe := range keel.FieldErrors(err) {
					found = found || fe.Field == tc.field
				}
				if !found {
					t.Fatalf("error %v names no field %s", err, tc.field)
				}
			}
		})
	}
	// Disabling a missing mount succeeds, as Vault's does.
	if err := table.Disable(ctx, "missing"); err != nil {
		t.Fatalf("Disable of a missing mount: %v", err)
	}
}
