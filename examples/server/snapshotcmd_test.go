package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/sealstore"
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

// TestRaftSnapshotToFreshServer is issue 28's must-show: vault/api in
// default configuration saves a snapshot of server A (RaftSnapshot: kv, a
// leased read's lease, an identity group, an extra mount, a project and a
// policy set) and restores it into a fresh server B
// (RaftSnapshotRestore): everything is there, and B's leases are held: a
// lease past its time is not revoked until DELETE sys/leases/hold.
func TestRaftSnapshotToFreshServer(t *testing.T) {
	const token = "raft-root-token"
	a := start(t, hooks{}, "-data", "memory", "-root-token", token)
	ca := vaultClient(t, a, token)
	if _, err := ca.Logical().Write("secret/app", map[string]any{"password": "s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	if err := ca.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Logical().Write("leased/db", map[string]any{"user": "app", "ttl": "1m"}); err != nil {
		t.Fatal(err)
	}
	s, err := ca.Logical().Read("leased/db")
	if err != nil || s == nil || s.LeaseID == "" {
		t.Fatalf("leased read = %+v, %v", s, err)
	}
	leaseID := s.LeaseID
	if _, err := ca.Logical().Write("identity/group/name/admins", map[string]any{"policies": "admin"}); err != nil {
		t.Fatal(err)
	}
	tfeHeader := []string{"Authorization", "Bearer " + token, "Content-Type", "application/vnd.api+json"}
	for _, req := range [][2]string{
		{"/api/v2/organizations", `{"data":{"type":"organizations","attributes":{"name":"acme","email":"a@example.com"}}}`},
		{"/api/v2/organizations/acme/projects", `{"data":{"type":"projects","attributes":{"name":"payments"}}}`},
		{"/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"guardrails","kind":"opa"}}}`},
	} {
		if status, body := a.send(t, "POST", req[0], req[1], tfeHeader...); status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", req[0], status, body)
		}
	}
	var archive bytes.Buffer
	if err := ca.Sys().RaftSnapshot(&archive); err != nil {
		t.Fatalf("RaftSnapshot: %v", err)
	}

	var bDeps *deps
	b := start(t, hooks{mount: func(_ *routes, d *deps) { bDeps = d }}, "-data", "memory", "-root-token", token)
	cb := vaultClient(t, b, token)
	if err := cb.Sys().RaftSnapshotRestore(bytes.NewReader(archive.Bytes()), false); err != nil {
		t.Fatalf("RaftSnapshotRestore: %v", err)
	}
	if s, err := cb.Logical().Read("secret/app"); err != nil || s == nil || s.Data["password"] != "s3cr3t" {
		t.Errorf("kv on B = %+v, %v", s, err)
	}
	if mounts, err := cb.Sys().ListMounts(); err != nil || mounts["leased/"] == nil {
		t.Errorf("mounts on B = %v, %v; want leased/", mounts, err)
	}
	if s, err := cb.Logical().Read("identity/group/name/admins"); err != nil || s == nil {
		t.Errorf("group on B = %+v, %v", s, err)
	}
	for path, want := range map[string]string{
		"/api/v2/organizations/acme/projects":    `"name":"payments"`,
		"/api/v2/organizations/acme/policy-sets": `"name":"guardrails"`,
	} {
		if status, body := b.send(t, "GET", path, "", tfeHeader...); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s on B: %d %s; want %s", path, status, body, want)
		}
	}
	lookup := func() error {
		_, err := cb.Logical().Write("sys/leases/lookup", map[string]any{"lease_id": leaseID})
		return err
	}
	if err := lookup(); err != nil {
		t.Fatalf("the lease on B: %v", err)
	}
	if s, err := cb.Logical().Read("sys/leases/hold"); err != nil || s == nil || s.Data["held"] != true {
		t.Fatalf("GET sys/leases/hold on B = %+v, %v; want held", s, err)
	}
	// An hour later the lease is long past its time: held, B's worker
	// revokes nothing; released, it revokes it.
	leases := bDeps.mounts.Leases()
	later := time.Now().Add(time.Hour)
	if _, err := leases.Step(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	if err := lookup(); err != nil {
		t.Fatalf("held, the lease past its time: lookup = %v; want it kept", err)
	}
	if _, err := cb.Logical().Delete("sys/leases/hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Step(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	var re *api.ResponseError
	if err := lookup(); !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
		t.Fatalf("released, lookup of the lease past its time = %v; want 400 invalid lease", err)
	}
	// B keeps its own identity and root token in its store (keptOnRestore).
	var st serverState
	err = bDeps.store.View(context.Background(), func(_ context.Context, tx storage.Tx) error {
		st, _, err = readState(tx)
		return err
	})
	if err != nil || st.ClusterID != bDeps.state.ClusterID {
		t.Errorf("B's stored state after the restore = %+v, %v; want its own cluster %s", st, err, bDeps.state.ClusterID)
	}
}

// TestSnapshotRestoreOpensHeld: "snapshot restore" holds the copy's leases
// before it writes the copy (the hold key is in the file before any
// server opens it), and the next server started on it, without
// -hold-leases, serves with its leases held, sealed or not: a lease of the
// copy past its time is kept until DELETE sys/leases/hold; the restore's
// mark is then gone.
func TestSnapshotRestoreOpensHeld(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := "plain"
		if sealed {
			name = "sealed"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const token = "held-root-token"
			dir := t.TempDir()
			data := filepath.Join(dir, "keel.db")
			args := []string{"-root-token", token}
			if sealed {
				keyFile := filepath.Join(dir, "seal.key")
				if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(sealstore.GenerateKey())+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-seal-key-file", keyFile)
			}
			a := start(t, hooks{}, append(args, "-data", data)...)
			ca := vaultClient(t, a, token)
			if err := ca.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := ca.Logical().Write("leased/db", map[string]any{"user": "app", "ttl": "1m"}); err != nil {
				t.Fatal(err)
			}
			s, err := ca.Logical().Read("leased/db")
			if err != nil || s == nil || s.LeaseID == "" {
				t.Fatalf("leased read = %+v, %v", s, err)
			}
			a.stop()

			snap := filepath.Join(dir, "keel.snap")
			restored := filepath.Join(dir, "restored.db")
			var out bytes.Buffer
			if err := run(ctx, []string{"snapshot", "save", "-data", data, snap}, &out); err != nil {
				t.Fatalf("snapshot save: %v\n%s", err, out.String())
			}
			if err := run(ctx, []string{"snapshot", "restore", "-data", restored, snap}, &out); err != nil {
				t.Fatalf("snapshot restore: %v\n%s", err, out.String())
			}
			has := func(key string) bool {
				t.Helper()
				bs, err := boltstore.Open(restored, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer bs.Close()
				found := false
				err = bs.View(ctx, func(_ context.Context, tx storage.Tx) error {
					_, err := tx.Get(key)
					found = err == nil
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return found
			}
			if !has("lease/hold") || !has(restoredKey) {
				t.Fatalf("the restored file before any server: hold %v, restore mark %v; want both", has("lease/hold"), has(restoredKey))
			}

			var bDeps *deps
			b := start(t, hooks{mount: func(_ *routes, d *deps) { bDeps = d }}, append(args, "-data", restored)...)
			cb := vaultClient(t, b, token)
			if s, err := cb.Logical().Read("sys/leases/hold"); err != nil || s == nil || s.Data["held"] != true {
				t.Fatalf("GET sys/leases/hold on the restored copy = %+v, %v; want held", s, err)
			}
			later := time.Now().Add(time.Hour)
			if _, err := bDeps.mounts.Leases().Step(ctx, later); err != nil {
				t.Fatal(err)
			}
			lookup := func() error {
				_, err := cb.Logical().Write("sys/leases/lookup", map[string]any{"lease_id": s.LeaseID})
				return err
			}
			if err := lookup(); err != nil {
				t.Fatalf("held, the copy's lease past its time: %v; want it kept", err)
			}
			if _, err := cb.Logical().Delete("sys/leases/hold"); err != nil {
				t.Fatal(err)
			}
			if _, err := bDeps.mounts.Leases().Step(ctx, later); err != nil {
				t.Fatal(err)
			}
			var re *api.ResponseError
			if err := lookup(); !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
				t.Fatalf("released, lookup = %v; want 400 invalid lease", err)
			}
			b.stop()
			if has(restoredKey) {
				t.Error("the restore's mark is still there after a server finished the restore")
			}
		})
	}
}
