package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage/memstore"
)

// TestObserverRecordsOperations: a kv engine given the Broker's Observer
// leaves a request and a response record per operation, joined by their
// request id, with the password written and read only as its HMAC, and
// the caller's display name in the clear.
func TestObserverRecordsOperations(t *testing.T) {
	b := audit.NewBroker(nil)
	mem := &memDevice{}
	if err := b.Enable("mem/", mem, salt(t)); err != nil {
		t.Fatal(err)
	}
	e, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: b.Observer()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice", DisplayName: "alice", ClientTokenID: "acc-1"})
	if err := e.Write(ctx, "app/db", map[string]any{"password": "hunter2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Read(ctx, "app/db"); err != nil {
		t.Fatal(err)
	}
	if len(mem.got) != 4 {
		t.Fatalf("%d records, want 4", len(mem.got))
	}
	line, _ := json.Marshal(mem.got)
	if strings.Contains(string(line), "hunter2") || strings.Contains(string(line), "acc-1") {
		t.Fatalf("a secret is in the clear: %s", line)
	}
	if !strings.Contains(string(line), salt(t).Hash("hunter2")) {
		t.Errorf("the password's HMAC is not in the records: %s", line)
	}
	for i, want := range []string{"request kv.Write", "response kv.Write", "request kv.Read", "response kv.Read"} {
		r := mem.got[i]
		if r.Type+" "+r.Request.Operation != want || r.Request.Path != "secret/app/db" || r.Auth.DisplayName != "alice" {
			t.Errorf("record %d: %s %s %s by %s, want %s on secret/app/db by alice", i, r.Type, r.Request.Operation, r.Request.Path, r.Auth.DisplayName, want)
		}
	}
	if mem.got[0].Request.ID == "" || mem.got[0].Request.ID != mem.got[1].Request.ID || mem.got[0].Request.ID == mem.got[2].Request.ID {
		t.Error("the request ids do not join each request to its response")
	}
}

// TestObserverRefusesWhatItCannotRecord: with a device that fails, an
// operation is refused before it acts (keel.KindUnavailable) and the
// store is as it was.
func TestObserverRefusesWhatItCannotRecord(t *testing.T) {
	b := audit.NewBroker(nil)
	store := memstore.New(nil)
	e, err := kv.New(store, "secret", &kv.Options{Observer: b.Observer()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Write(ctx, "a", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Enable("file/", failingDevice{}, salt(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(ctx, "a", map[string]any{"v": "2"}); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("write with no device able to record: %v, want unavailable", err)
	}
	if _, err := b.Disable("file/"); err != nil {
		t.Fatal(err)
	}
	if s, err := e.Read(ctx, "a"); err != nil || s.Data["v"] != "1" {
		t.Fatalf("after the refused write: %v, %v; want the first value", s.Data, err)
	}
}
