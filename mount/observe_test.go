package mount_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage/memstore"
)

// TestTableOperationsAreObserved: Enable, Tune and Disable are reported
// to the table's Observer with the mount's path, beside the operations
// of the engines it builds.
func TestTableOperationsAreObserved(t *testing.T) {
	ctx := context.Background()
	rec := &oprecord.Recorder{}
	table, err := mount.Open(ctx, memstore.New(nil), &mount.Options{Authorizer: keel.AllowAll{}, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	if _, err := table.Enable(ctx, mount.EnableRequest{Path: "kv/", Type: "kv"}); err != nil {
		t.Fatal(err)
	}
	m, _, ok := table.Route("kv/x")
	if !ok {
		t.Fatal("kv/ is not served")
	}
	if err := m.KV.Write(ctx, "x", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := table.Disable(ctx, "kv/"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range rec.Ended() {
		if strings.HasPrefix(op.Name, "mount.") || strings.HasPrefix(op.Name, "kv.") {
			got = append(got, op.Name+" "+op.Resource)
		}
	}
	if want := "mount.Enable kv/|kv.Write kv/x|mount.Disable kv/"; strings.Join(got, "|") != want {
		t.Errorf("operations %q, want %q", strings.Join(got, "|"), want)
	}
}
