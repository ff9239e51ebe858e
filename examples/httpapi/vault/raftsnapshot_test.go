package vault_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// keptKey is a key of the program's own, which a restore leaves as it is
// (Snapshots.Keep).
const keptKey = "program/identity"

// newSnapshotEnv is newEnv with sys/storage/raft/snapshot served.
func newSnapshotEnv(t testing.TB) *env {
	t.Helper()
	store := memstore.New(nil)
	e := &env{store: store, clock: keel.NewFakeClock(t0), dir: ldaptest.NewDirectory()}
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"reader": {{Path: "sys/*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.authz = authz
	table, err := mount.Open(context.Background(), store, &mount.Options{Authorizer: authz, Clock: e.clock,
		Directory: e.dir, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	e.table, e.leases = table, table.Leases()
	e.leases.Stop() // the tests drive the lease worker's Step
	h := vault.New(table, &vault.Options{Clock: e.clock, Server: testServer, Snapshots: &vault.Snapshots{
		Store: store, Authorizer: authz, TempDir: t.TempDir(),
		Keep: func(key string) bool { return key == keptKey },
	}})
	mux := http.NewServeMux()
	h.Register(mux)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := principals[vault.RequestToken(r)]; ok {
			r = r.WithContext(keel.WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	err = store.Update(context.Background(), func(_ context.Context, tx storage.Tx) error {
		return tx.Put(keptKey, []byte(e.srv.URL))
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRaftSnapshot: vault/api's RaftSnapshot saves a server's store (an
// archive it checks whole) and RaftSnapshotRestore restores it into
// another server: its kv secret, extra mount, group and lease are served
// there, the lease held (past its time, it is revoked only after DELETE
// sys/leases/hold), and the restoring server's own key kept. Both need
// sudo.
func TestRaftSnapshot(t *testing.T) {
	a := newSnapshotEnv(t)
	ca := a.client(t, rootToken)
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

	if err := a.client(t, readerToken).Sys().RaftSnapshot(io.Discard); statusOf(err) != http.StatusForbidden {
		t.Fatalf("save without sudo = %v, want 403", err)
	}
	var archive bytes.Buffer
	if err := a.client(t, rootToken).Sys().RaftSnapshot(&archive); err != nil {
		t.Fatalf("RaftSnapshot: %v", err)
	}

	b := newSnapshotEnv(t)
	if err := b.client(t, readerToken).Sys().RaftSnapshotRestore(bytes.NewReader(archive.Bytes()), false); statusOf(err) != http.StatusForbidden {
		t.Fatalf("restore without sudo = %v, want 403", err)
	}
	cb := b.client(t, rootToken)
	if err := cb.Sys().RaftSnapshotRestore(bytes.NewReader(archive.Bytes()), false); err != nil {
		t.Fatalf("RaftSnapshotRestore: %v", err)
	}
	if s, err := cb.Logical().Read("secret/app"); err != nil || s == nil || s.Data["password"] != "s3cr3t" {
		t.Fatalf("secret/app after the restore = %+v, %v", s, err)
	}
	if mounts, err := cb.Sys().ListMounts(); err != nil || mounts["leased/"] == nil {
		t.Fatalf("mounts after the restore = %v, %v; want leased/", mounts, err)
	}
	if s, err := cb.Logical().Read("identity/group/name/admins"); err != nil || s == nil {
		t.Fatalf("group after the restore = %+v, %v", s, err)
	}
	if s, err := cb.Logical().Read("sys/leases/hold"); err != nil || s == nil || s.Data["held"] != true {
		t.Fatalf("GET sys/leases/hold after the restore = %+v, %v; want held", s, err)
	}
	var kept []byte
	_ = b.store.View(context.Background(), func(_ context.Context, tx storage.Tx) error {
		kept, _ = tx.Get(keptKey)
		return nil
	})
	if string(kept) != b.srv.URL {
		t.Errorf("the kept key after the restore = %q, want the restoring server's %q", kept, b.srv.URL)
	}

	// The copy's lease, past its time, is kept until the hold is released.
	b.clock.Advance(time.Hour)
	lookup := func() error {
		_, err := cb.Logical().Write("sys/leases/lookup", map[string]any{"lease_id": leaseID})
		return err
	}
	if _, err := b.leases.Step(context.Background(), b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := lookup(); err != nil {
		t.Fatalf("the copy's lease past its time, held: lookup = %v; want it kept", err)
	}
	if _, err := cb.Logical().Delete("sys/leases/hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.leases.Step(context.Background(), b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := lookup(); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("lookup after the release = %v, want 400 invalid lease", err)
	}

	// snapshot-force (vault/api's force) restores alike.
	if err := cb.Sys().RaftSnapshotRestore(bytes.NewReader(archive.Bytes()), true); err != nil {
		t.Fatalf("RaftSnapshotRestore with force: %v", err)
	}
	if err := lookup(); err != nil {
		t.Fatalf("the lease after a second restore: %v", err)
	}
}

// TestRaftSnapshotRefused: an archive cut short, altered, or not keel's
// (a Vault raft snapshot's entries) is refused with 400 naming what is
// wrong, and the store is as it was.
func TestRaftSnapshotRefused(t *testing.T) {
	e := newSnapshotEnv(t)
	c := e.client(t, rootToken)
	if _, err := c.Logical().Write("secret/app", map[string]any{"password": "s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := c.Sys().RaftSnapshot(&archive); err != nil {
		t.Fatal(err)
	}
	entries := untar(t, archive.Bytes())
	if names := strings.Join(entryNames(entries), " "); names != "meta.json state.bin SHA256SUMS SHA256SUMS.sealed" {
		t.Fatalf("archive entries %s", names)
	}
	saved := func() []byte {
		var b bytes.Buffer
		if _, err := snapshot.Save(context.Background(), e.store, &b, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	before := saved()

	altered := withEntries(entries, func(name string, b []byte) []byte {
		if name == "state.bin" {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0xff
		}
		return b
	})
	foreign := targz(t, []entry{
		{"meta.json", []byte(`{"ID":"2-42-1700000000000","Size":1234,"Index":42,"Term":2,"Version":1}`)},
		{"state.bin", []byte("raft state")},
		{"SHA256SUMS", []byte("00  meta.json\n00  state.bin\n")},
		{"SHA256SUMS.sealed", []byte("sealed")},
	})
	flipped := bytes.Clone(archive.Bytes())
	flipped[len(flipped)/2] ^= 0xff
	for name, tc := range map[string]struct {
		body []byte
		want string
	}{
		"cut short":        {archive.Bytes()[:archive.Len()*2/3], "cut short"},
		"a flipped byte":   {flipped, "invalid snapshot"},
		"altered state":    {altered, "the SHA-256 of state.bin"},
		"not gzip":         {[]byte("KEELSNAP"), "not a gzip'd archive"},
		"a Vault snapshot": {foreign, "a Vault raft snapshot cannot be restored into keel"},
		"no sums":          {targz(t, entries[:2]), "no SHA256SUMS"},
	} {
		err := c.Sys().RaftSnapshotRestore(bytes.NewReader(tc.body), false)
		var re *api.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || !strings.Contains(strings.Join(re.Errors, " "), tc.want) {
			t.Errorf("%s: restore = %v, want 400 saying %q", name, err, tc.want)
		}
	}
	if !bytes.Equal(saved(), before) {
		t.Fatal("a refused restore changed the store")
	}
	if s, err := c.Logical().Read("sys/leases/hold"); err != nil || s.Data["held"] != false {
		t.Errorf("a refused restore held the leases: %+v, %v", s, err)
	}
}

type entry struct {
	name string
	body []byte
}

func untar(t *testing.T, b []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h.Name, body})
	}
}

func entryNames(es []entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.name)
	}
	return out
}

func withEntries(es []entry, change func(name string, b []byte) []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range es {
		b := change(e.name, e.body)
		tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func targz(t *testing.T, es []entry) []byte {
	t.Helper()
	return withEntries(es, func(_ string, b []byte) []byte { return b })
}

// BenchmarkRaftSnapshot: a save and a restore of 10,000 kv secrets
// through vault/api's RaftSnapshot and RaftSnapshotRestore, beside the
// yardstick of the same copy by snapshot.Save and snapshot.Restore with
// Replace, store to store.
func BenchmarkRaftSnapshot(b *testing.B) {
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	fill := func(e *env) {
		m, _, ok := e.table.Route("secret/x")
		if !ok {
			b.Fatal("no secret/")
		}
		for i := range 10000 {
			if err := m.KV.Write(ctx, "app/"+strings.Repeat("k", 20)+strconv.Itoa(i), map[string]any{"password": strings.Repeat("p", 64)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("library", func(b *testing.B) {
		src, dst := memstore.New(nil), memstore.New(nil)
		e := &env{}
		table, err := mount.Open(ctx, src, &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults()})
		if err != nil {
			b.Fatal(err)
		}
		defer table.Close()
		e.table = table
		fill(e)
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if _, err := snapshot.Save(ctx, src, &buf, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := snapshot.Restore(ctx, bytes.NewReader(buf.Bytes()), dst, &snapshot.RestoreOptions{Replace: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "stream-bytes")
	})
	b.Run("vault-api", func(b *testing.B) {
		a, z := newSnapshotEnv(b), newSnapshotEnv(b)
		fill(a)
		ca, cz := a.client(b, rootToken), z.client(b, rootToken)
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := ca.Sys().RaftSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
			if err := cz.Sys().RaftSnapshotRestore(bytes.NewReader(buf.Bytes()), false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "archive-bytes")
	})
}
