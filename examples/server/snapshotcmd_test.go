package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// TestSnapshotAndMigrateCommands: "snapshot save" of a stopped server's
// bbolt file and "snapshot restore" into a new file give a server that
// serves the same kv secret; a corrupt
// snapshot is refused and leaves the target as it was; "migrate" copies
// the file to etcd with a progress report, and a server on that etcd
// serves the secret too.
func TestSnapshotAndMigrateCommands(t *testing.T) {
	ctx := context.Background()
	const token = "snap-root-token"
	dir := t.TempDir()
	data := filepath.Join(dir, "keel.db")
	ts := start(t, hooks{}, "-data", data, "-root-token", token)
	if _, err := vaultClient(t, ts, token).Logical().Write("secret/app", map[string]any{"password": "s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	ts.stop()

	snap := filepath.Join(dir, "keel.snap")
	var out bytes.Buffer
	if err := run(ctx, []string{"snapshot", "save", "-data", data, snap}, &out); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out.String())
	}
	restored := filepath.Join(dir, "restored.db")
	if err := run(ctx, []string{"snapshot", "restore", "-data", restored, snap}, &out); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out.String())
	}
	readSecret := func(args ...string) {
		t.Helper()
		ts := start(t, hooks{}, append(args, "-root-token", token)...)
		defer ts.stop()
		s, err := vaultClient(t, ts, token).Logical().Read("secret/app")
		if err != nil || s == nil || s.Data["password"] != "s3cr3t" {
			t.Fatalf("read from a server on %v = %+v, %v", args, s, err)
		}
	}
	readSecret("-data", restored)

	// A flipped byte: refused, the target untouched (empty: no file's
	// keys written).
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.snap")
	if err := os.WriteFile(bad, b, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	if err := run(ctx, []string{"snapshot", "restore", "-data", target, bad}, &out); keel.KindOf(err) != keel.KindInvalid {
		t.Fatalf("restore of a corrupt snapshot = %v, want kind invalid", err)
	}
	var again bytes.Buffer
	if err := run(ctx, []string{"snapshot", "save", "-data", target, filepath.Join(dir, "empty.snap")}, &again); err != nil || !strings.Contains(again.String(), "saved 0 keys") {
		t.Errorf("the target after a refused restore: %v, %s; want it empty", err, again.String())
	}

	// bbolt to etcd, with the progress shown.
	endpoints := strings.Join(etcdtest.Endpoints(t), ",")
	prefix := etcdtest.Prefix()
	out.Reset()
	if err := run(ctx, []string{"migrate", "-from", "bolt:" + data, "-to", "etcd:" + endpoints + "#" + prefix}, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "[##############################]") || !strings.Contains(out.String(), "migrated ") {
		t.Errorf("migrate printed no finished progress bar:\n%s", out.String())
	}
	readSecret("-etcd", endpoints, "-etcd-prefix", prefix)

	var usage usageError
	if err := run(ctx, []string{"migrate", "-from", "bolt:" + data}, &out); !errors.As(err, &usage) {
		t.Errorf("migrate without -to = %v, want a usage error", err)
	}
}

// TestHoldLeasesFlag: a server started with -hold-leases has its lease
// manager held (GET sys/leases/hold) until DELETE sys/leases/hold.
func TestHoldLeasesFlag(t *testing.T) {
	const token = "hold-root-token"
	ts := start(t, hooks{}, "-data", "memory", "-root-token", token, "-hold-leases")
	c := vaultClient(t, ts, token)
	held := func() any {
		t.Helper()
		s, err := c.Logical().Read("sys/leases/hold")
		if err != nil || s == nil {
			t.Fatalf("GET sys/leases/hold = %+v, %v", s, err)
		}
		return s.Data["held"]
	}
	if h := held(); h != true {
		t.Fatalf("held = %v with -hold-leases, want true", h)
	}
	if _, err := c.Logical().Delete("sys/leases/hold"); err != nil {
		t.Fatal(err)
	}
	if h := held(); h != false {
		t.Errorf("held = %v after DELETE, want false", h)
	}
}
