package audit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

func openTable(t *testing.T, s storage.Store) (*audit.Table, *audit.Broker) {
	t.Helper()
	b := audit.NewBroker(nil)
	tb, err := audit.OpenTable(context.Background(), s, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb, b
}

func fileDevice(path string) audit.DeviceConfig {
	return audit.DeviceConfig{Type: "file", Description: "the log", Options: map[string]string{"file_path": path}}
}

// keys returns the keys kept under the table's default prefix.
func keys(t *testing.T, s storage.Store) []string {
	t.Helper()
	var ks []string
	err := s.View(context.Background(), func(_ context.Context, tx storage.Tx) error {
		return tx.Scan("audit/", storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			ks = append(ks, k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestTableKeepsDevicesAcrossRestart: a device enabled through a Table is
// kept in the store with its salt; a Table opened again on the store
// enables it, and hashes as before.
func TestTableKeepsDevicesAcrossRestart(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	log := filepath.Join(t.TempDir(), "audit.log")
	tb, b := openTable(t, s)
	if tb.Enabled() {
		t.Fatal("an empty table reports a device enabled")
	}
	if err := tb.Enable(ctx, "file/", fileDevice(log)); err != nil {
		t.Fatal(err)
	}
	if !tb.Enabled() {
		t.Fatal("Enabled is false after Enable")
	}
	if got := tb.List(); got["file/"].Options["file_path"] != log || got["file/"].Description != "the log" {
		t.Fatalf("List = %+v", got)
	}
	if err := b.Record(ctx, &audit.Record{Type: audit.TypeRequest, Request: &audit.Request{Operation: "read", Path: "secret/a"}}); err != nil {
		t.Fatal(err)
	}
	hash, err := b.Hash("file/", "hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if tb.Enabled() || len(b.Devices()) != 0 {
		t.Fatalf("after Close: Enabled %v, broker devices %v", tb.Enabled(), b.Devices())
	}

	again, b2 := openTable(t, s)
	if !again.Enabled() {
		t.Fatal("the kept device is not enabled by a Table opened again")
	}
	if h, err := b2.Hash("file/", "hunter2"); err != nil || h != hash {
		t.Fatalf("Hash after reopening = %q, %v; want %q (the kept salt)", h, err, hash)
	}
	if err := b2.Record(ctx, &audit.Record{Type: audit.TypeRequest, Request: &audit.Request{Operation: "read", Path: "secret/b"}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if res, err := audit.Verify(f); err != nil || res.Records != 2 {
		t.Fatalf("Verify = %+v, %v; want the two records, one chain", res, err)
	}
}

// TestTableFollowsTheStore: two Tables on one store, as two processes on
// one etcd: a device enabled through one is enabled in the other with the
// same salt, and disabled there when disabled through the first.
func TestTableFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	a, _ := openTable(t, s)
	b, bb := openTable(t, s)
	dir := t.TempDir()
	if err := a.Enable(ctx, "file/", fileDevice(filepath.Join(dir, "a.log"))); err != nil {
		t.Fatal(err)
	}
	keeltest.Until(t, "the other table enables the device", b.Enabled)
	if _, err := bb.Hash("file/", "x"); err != nil {
		t.Fatalf("the other broker has no device file/: %v", err)
	}
	if err := b.Enable(ctx, "file/", fileDevice(filepath.Join(dir, "b.log"))); !errors.Is(err, keel.KindAlreadyExists) {
		t.Fatalf("Enable of a path the other table keeps = %v, want KindAlreadyExists", err)
	}
	if err := a.Disable(ctx, "file/"); err != nil {
		t.Fatal(err)
	}
	keeltest.Until(t, "the other table disables the device", func() bool { return !b.Enabled() })
	if len(b.List()) != 0 || len(bb.Devices()) != 0 {
		t.Fatalf("after Disable: List %v, broker %v", b.List(), bb.Devices())
	}
	if err := a.Disable(ctx, "file/"); err != nil {
		t.Fatalf("Disable of a path with no device = %v, want nil (as Vault)", err)
	}
}

// TestTableRefusesAndKeepsNothing: a configuration the table cannot
// enable is refused naming the field, and nothing is kept; a device the
// store cannot keep is not enabled.
func TestTableRefusesAndKeepsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs := faultstore.New(memstore.New(nil))
	tb, b := openTable(t, fs)
	for _, tc := range []struct {
		name  string
		path  string
		c     audit.DeviceConfig
		field string
	}{
		{"no path", "", fileDevice(filepath.Join(dir, "x.log")), "path"},
		{"another type", "s/", audit.DeviceConfig{Type: "socket", Options: map[string]string{"file_path": "x"}}, "Type"},
		{"no file_path", "f/", audit.DeviceConfig{Type: "file"}, `Options["file_path"]`},
		{"stdout", "f/", audit.DeviceConfig{Type: "file", Options: map[string]string{"file_path": "stdout"}}, `Options["file_path"]`},
		{"bad mode", "f/", audit.DeviceConfig{Type: "file", Options: map[string]string{"file_path": filepath.Join(dir, "m.log"), "mode": "rw"}}, `Options["mode"]`},
		{"unknown option", "f/", audit.DeviceConfig{Type: "file", Options: map[string]string{"file_path": filepath.Join(dir, "u.log"), "hmac_accessor": "false"}}, `Options["hmac_accessor"]`},
		{"file cannot be opened", "f/", fileDevice(filepath.Join(dir, "no-such-dir", "x.log")), `Options["file_path"]`},
	} {
		err := tb.Enable(ctx, tc.path, tc.c)
		var ve *keel.ValidationError
		if !errors.Is(err, keel.KindInvalid) || !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Enable = %v, want KindInvalid naming %s", tc.name, err, tc.field)
		}
	}
	if ks := keys(t, fs); len(ks) != 0 || tb.Enabled() {
		t.Fatalf("refused configurations left %v kept, Enabled %v", ks, tb.Enabled())
	}

	fs.Fail(faultstore.OpCommit, "", 1, errors.New("disk full"))
	log := filepath.Join(dir, "kept.log")
	if err := tb.Enable(ctx, "file/", fileDevice(log)); err == nil {
		t.Fatal("Enable succeeded though the store did not keep the device")
	}
	if tb.Enabled() || len(b.Devices()) != 0 || len(tb.List()) != 0 || len(keys(t, fs)) != 0 {
		t.Fatalf("a device the store did not keep: Enabled %v, broker %v, List %v", tb.Enabled(), b.Devices(), tb.List())
	}
	if err := tb.Enable(ctx, "file/", fileDevice(log)); err != nil {
		t.Fatalf("Enable once the store keeps again = %v", err)
	}
}

// TestTableKeepsADeviceItCannotOpen: a device kept by another process
// whose file this one cannot open is listed, not enabled, and can be
// disabled.
func TestTableKeepsADeviceItCannotOpen(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	a, _ := openTable(t, s)
	dir := t.TempDir()
	log := filepath.Join(dir, "sub", "audit.log")
	if err := os.Mkdir(filepath.Dir(log), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := a.Enable(ctx, "file/", fileDevice(log)); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(log)); err != nil {
		t.Fatal(err)
	}
	b, _ := openTable(t, s)
	if b.Enabled() {
		t.Fatal("a device whose file cannot be opened is enabled")
	}
	if got := b.List(); got["file/"].Options["file_path"] != log {
		t.Fatalf("List = %+v, want the kept device listed", got)
	}
	if err := b.Disable(ctx, "file/"); err != nil || len(keys(t, s)) != 0 {
		t.Fatalf("Disable = %v, kept %v", err, keys(t, s))
	}
}
