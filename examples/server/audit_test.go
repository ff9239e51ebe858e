package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
)

// TestAuditFileDevice: a file device enabled through vault/api, as `vault
// audit enable file file_path=…` does, records a kv write and read of a
// password as two request and two response records, with the password's
// HMAC and never its plaintext; sys/audit-hash gives that HMAC; the log
// verifies; the device is listed. Once the device has found that the
// file's path cannot be written (within a second), a kv write is refused
// and changes nothing; once it can, the server records again, without a
// restart. Disabled, the device records nothing
// more, and the server stays up across a restart with the device kept.
func TestAuditFileDevice(t *testing.T) {
	const token = "audit-root-token"
	dir := t.TempDir()
	data := filepath.Join(dir, "keel.db")
	logPath := filepath.Join(dir, "audit.log")
	ts := start(t, hooks{}, "-data", data, "-root-token", token)
	c := vaultClient(t, ts, token)
	sys := c.Sys()

	if err := sys.EnableAuditWithOptions("file", &api.EnableAuditOptions{Type: "file", Options: map[string]string{"file_path": logPath}}); err != nil {
		t.Fatal(err)
	}
	devices, err := sys.ListAudit()
	if err != nil || devices["file/"] == nil || devices["file/"].Options["file_path"] != logPath || devices["file/"].Type != "file" {
		t.Fatalf("ListAudit = %+v, %v; want the file device", devices, err)
	}
	before := recordsIn(t, logPath)
	if _, err := c.Logical().Write("secret/app", map[string]any{"password": "hunter2-audited"}); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Logical().Read("secret/app"); err != nil || s.Data["password"] != "hunter2-audited" {
		t.Fatalf("read = %+v, %v", s, err)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(log, []byte("hunter2-audited")) || bytes.Contains(log, []byte(token)) {
		t.Fatalf("the audit log holds the password or the token in the clear:\n%s", log)
	}
	hash, err := sys.AuditHash("file", "hunter2-audited")
	if err != nil || !strings.HasPrefix(hash, "hmac-sha256:") {
		t.Fatalf("AuditHash = %q, %v", hash, err)
	}
	recs := recordsIn(t, logPath)[len(before):]
	var req, resp int
	for _, r := range recs {
		if r.Request == nil || r.Request.Path != "secret/app" {
			continue
		}
		switch {
		case r.Type == audit.TypeRequest && r.Request.Operation == "update" && r.Request.Data["password"] == hash:
			req++
		case r.Type == audit.TypeRequest && r.Request.Operation == "read":
			req++
		case r.Type == audit.TypeResponse && r.Request.Operation == "update":
			resp++
		case r.Type == audit.TypeResponse && r.Request.Operation == "read" && r.Response.Data["password"] == hash:
			resp++
		}
	}
	if req != 2 || resp != 2 {
		t.Errorf("records of secret/app: %d requests and %d responses, want 2 and 2:\n%s", req, resp, log)
	}
	if _, err := audit.Verify(bytes.NewReader(log)); err != nil {
		t.Errorf("Verify of the log: %v", err)
	}

	// The path made unwritable: a directory stands where the file was.
	// The device looks at its path at most once a second: until then,
	// records still go to the renamed file.
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(logPath, 0o700); err != nil {
		t.Fatal(err)
	}
	refused := func(value string) error {
		_, err := c.Logical().Write("secret/app", map[string]any{"password": value})
		var re *api.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 503 {
			return fmt.Errorf("write while the audit file cannot be written = %v, want 503", err)
		}
		return nil
	}
	keeltest.Eventually(t, "a kv write refused while the audit file cannot be written", func() error { return refused("during") })
	if err := refused("refused"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(logPath); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Logical().Read("secret/app"); err != nil || s.Data["password"] == "refused" {
		t.Fatalf("after the refused write, read = %+v, %v; want the password not changed by it", s, err)
	}
	a, _ := os.ReadFile(logPath + ".1")
	b, _ := os.ReadFile(logPath)
	if _, err := audit.Verify(bytes.NewReader(append(a, b...))); err != nil {
		t.Errorf("Verify across the rotation: %v", err)
	}
	// The refused requests are counted, under Vault's metric.
	status, page := ts.get("/v1/sys/metrics?format=prometheus", "X-Vault-Token", token)
	var failures float64
	for _, line := range strings.Split(string(page), "\n") {
		if v, ok := strings.CutPrefix(line, "vault_audit_log_request_failure_total "); ok {
			fmt.Sscan(v, &failures)
		}
	}
	if status != http.StatusOK || failures < 2 {
		t.Errorf("metrics: %d, vault_audit_log_request_failure_total %v; want at least the 2 refused writes\n%s", status, failures, page)
	}

	// Kept across a restart, then disabled.
	ts.stop()
	ts = start(t, hooks{}, "-data", data, "-root-token", token)
	c = vaultClient(t, ts, token)
	if devices, err := c.Sys().ListAudit(); err != nil || devices["file/"] == nil {
		t.Fatalf("ListAudit after a restart = %+v, %v", devices, err)
	}
	if h, err := c.Sys().AuditHash("file", "hunter2-audited"); err != nil || h != hash {
		t.Errorf("AuditHash after a restart = %q, %v; want %q (the salt is kept)", h, err, hash)
	}
	if err := c.Sys().DisableAudit("file"); err != nil {
		t.Fatal(err)
	}
	n := len(recordsIn(t, logPath))
	if _, err := c.Logical().Read("secret/app"); err != nil {
		t.Fatal(err)
	}
	if got := len(recordsIn(t, logPath)); got != n {
		t.Errorf("a disabled device recorded %d more records", got-n)
	}
}

// recordsIn reads the records of the log at path.
func recordsIn(t *testing.T, path string) []audit.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a line of the log is not a record: %v\n%s", err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestAuditDevicesFollowTheStore: a device kept in the store by another
// server (here written to the store directly, as another server on the
// same etcd writes it) is enabled without a restart, and records the
// requests that follow; removed from the store, it is disabled.
func TestAuditDevicesFollowTheStore(t *testing.T) {
	const token = "audit-follow-token"
	logPath := filepath.Join(t.TempDir(), "other.log")
	var store storage.Store
	ts := start(t, hooks{mount: func(_ *routes, d *deps) { store = d.store }}, "-data", "memory", "-root-token", token)
	c := vaultClient(t, ts, token)
	dev, err := json.Marshal(map[string]any{"type": "file", "options": map[string]string{"file_path": logPath}, "salt": audit.GenerateSalt()})
	if err != nil {
		t.Fatal(err)
	}
	put := func(fn func(tx storage.Tx) error) {
		t.Helper()
		if err := store.Update(context.Background(), func(_ context.Context, tx storage.Tx) error { return fn(tx) }); err != nil {
			t.Fatal(err)
		}
	}
	put(func(tx storage.Tx) error { return tx.Put(auditPrefix+"other/", dev) })
	keeltest.Eventually(t, "the device enabled through the store records a write", func() error {
		if _, err := c.Logical().Write("secret/followed", map[string]any{"v": "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(logPath); err != nil {
			return err
		}
		for _, r := range recordsIn(t, logPath) {
			if r.Request != nil && r.Request.Path == "secret/followed" {
				return nil
			}
		}
		return errors.New("no record of the write")
	})
	devices, err := c.Sys().ListAudit()
	if err != nil || devices["other/"] == nil {
		t.Fatalf("ListAudit = %v, %v; want the device kept by the other server", devices, err)
	}
	put(func(tx storage.Tx) error { return tx.Delete(auditPrefix + "other/") })
	keeltest.Eventually(t, "the device removed from the store is disabled", func() error {
		devices, err := c.Sys().ListAudit()
		if err != nil {
			t.Fatal(err)
		}
		if devices["other/"] != nil {
			return errors.New("still listed")
		}
		return nil
	})
	before := len(recordsIn(t, logPath))
	if _, err := c.Logical().Write("secret/after", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if after := len(recordsIn(t, logPath)); after != before {
		t.Errorf("the disabled device wrote %d more records", after-before)
	}
}
