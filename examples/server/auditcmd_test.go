package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelhq/keel/audit"
)

// TestAuditVerifyCommand: "audit verify FILE..." reports an intact log of
// rotated files, returns an error naming the line where a changed log
// breaks (so that the process exits 1), and refuses a command line
// without a file as a usage error (exit 2).
func TestAuditVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	d, err := audit.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func() {
		t.Helper()
		if err := d.Write(&audit.Record{Type: audit.TypeRequest, Request: &audit.Request{Operation: "read", Path: "secret/app"}}); err != nil {
			t.Fatal(err)
		}
	}
	write()
	write()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Reopen(); err != nil { // as the server does on SIGHUP
		t.Fatal(err)
	}
	write()
	d.Close()

	var out bytes.Buffer
	if err := run(context.Background(), []string{"audit", "verify", path + ".1", path}, &out); err != nil {
		t.Fatalf("audit verify of an intact log = %v (%s)", err, out.String())
	}
	if !strings.Contains(out.String(), "intact: 3 records, 1 to 3") {
		t.Errorf("audit verify printed %q", out.String())
	}

	b, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", bytes.Replace(b, []byte(`"read"`), []byte(`"rEad"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"audit", "verify", path + ".1", path}, &out)
	var be *audit.BreakError
	if !errors.As(err, &be) || be.Line != 1 {
		t.Errorf("audit verify of a log with line 1 edited = %v, want a break at line 1", err)
	}

	var usage usageError
	if err := run(context.Background(), []string{"audit", "verify"}, &out); !errors.As(err, &usage) {
		t.Errorf("audit verify without a file = %v, want a usage error", err)
	}
}
