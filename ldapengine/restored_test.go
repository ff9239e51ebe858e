package ldapengine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// countingDir is a Directory that counts its binds and password changes.
type countingDir struct {
	Directory
	binds, sets atomic.Int64
}

func (d *countingDir) SetPassword(ctx context.Context, c Conn, dn, pw string) error {
	d.sets.Add(1)
	return d.Directory.SetPassword(ctx, c, dn, pw)
}

func (d *countingDir) Bind(ctx context.Context, c Conn, dn, pw string) error {
	d.binds.Add(1)
	return d.Directory.Bind(ctx, c, dn, pw)
}

// restoreEnv is a store with an engine on a real slapd, and the copies of
// it that tests restore.
type restoreEnv struct {
	t     *testing.T
	srv   *slapdtest.Server
	clock *keel.FakeClock
	conn  Conn // slapd itself
}

func newRestoreEnv(t *testing.T) *restoreEnv {
	t.Helper()
	srv := slapdtest.Start(t)
	return &restoreEnv{t: t, srv: srv, clock: keel.NewFakeClock(t0),
		conn: Conn{URLs: []string{srv.URL}, ConnectionTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second}}
}

// open returns an engine of mount "ldap" over s (with a lease manager of
// s when leases), on slapd through a countingDir.
func (r *restoreEnv) open(s storage.Store, leases bool) (*Engine, *countingDir, *lease.Manager) {
	r.t.Helper()
	dir := &countingDir{Directory: LDAP{}}
	o := &Options{Clock: r.clock, Directory: dir}
	var m *lease.Manager
	if leases {
		m = newLeases(r.t, s, &lease.Options{Clock: r.clock})
		o.Leases = ldapLeases(r.t, m, s)
	}
	e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorLDAP, "ldap", o)
	if err != nil {
		r.t.Fatal(err)
	}
	return e, dir, m
}

// configure writes the configuration of e: slapd, users under
// ou=users by uid.
func (r *restoreEnv) configure(e *Engine) {
	r.t.Helper()
	if err := e.PutConfig(context.Background(), Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: r.srv.URL,
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second}); err != nil {
		r.t.Fatal(err)
	}
}

// copyOf saves s with snapshot.Save and returns the stream.
func (r *restoreEnv) copyOf(s storage.Store) *bytes.Buffer {
	r.t.Helper()
	var buf bytes.Buffer
	if _, err := snapshot.Save(context.Background(), s, &buf, nil); err != nil {
		r.t.Fatal(err)
	}
	return &buf
}

// restore restores the stream into a fresh memstore.
func (r *restoreEnv) restore(buf *bytes.Buffer) storage.Store {
	r.t.Helper()
	s := memstore.New(nil)
	if _, err := snapshot.Restore(context.Background(), buf, s, nil); err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *restoreEnv) bind(dn, pw string) error {
	if pw == "" {
		return errors.New("empty password")
	}
	return LDAP{}.Bind(context.Background(), r.conn, dn, pw)
}

// marked reports whether e's store holds the mark of MarkRestored.
func marked(t testing.TB, e *Engine) bool {
	t.Helper()
	var ok bool
	err := e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var err error
		_, ok, err = loadMark(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func (r *restoreEnv) step(e *Engine) {
	r.t.Helper()
	if _, err := e.Step(context.Background(), r.clock.Now()); err != nil {
		r.t.Fatal(err)
	}
}

// TestRestoredStaticRoleRotatedAfterSnapshot is the must-show: a
// static role whose password was rotated after the snapshot gets a
// binding password before its first read after the restore, while a role
// not rotated since keeps its password (nothing live is revoked); the
// worker verifies the roles no one reads, then the mark is gone and reads
// bind no more.
func TestRestoredStaticRoleRotatedAfterSnapshot(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, false)
	r.configure(e)
	for _, n := range []string{"alice", "bob"} {
		if err := e.PutStaticRole(ctx, n, StaticRoleRequest{Username: n, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	bobBefore, err := e.GetStaticCred(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	buf := r.copyOf(s)
	if err := e.RotateRole(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	live, _ := e.GetStaticCred(ctx, "alice")

	copied := r.restore(buf)
	e2, _, _ := r.open(copied, false)
	stale, _, err := e2.loadRole(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantKind(t, r.bind(slapdtest.AliceDN, stale.Password), keel.KindUnauthenticated) // the copy's password is dead
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	// The mark is in the store: an engine opened on it after (a restart,
	// another process) verifies too.
	e2, dir, _ := r.open(copied, false)
	c, err := e2.GetStaticCred(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bind(c.DN, c.Password); err != nil {
		t.Fatalf("the first read after the restore gives a password that does not bind: %v", err)
	}
	if c.Password == stale.Password || c.Password == live.Password {
		t.Fatal("not a new password")
	}
	if !marked(t, e2) {
		t.Fatal("the mark went while bob is not verified")
	}
	// The worker verifies bob, which no one read: its password binds and
	// stays.
	r.step(e2)
	if marked(t, e2) {
		t.Fatal("the mark stays after every role was verified")
	}
	b, err := e2.GetStaticCred(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if b.Password != bobBefore.Password {
		t.Fatal("bob, whose password still bound, was rotated")
	}
	if err := r.bind(b.DN, b.Password); err != nil {
		t.Fatal(err)
	}
	// Without the mark, reads bind no more.
	before := dir.binds.Load()
	for range 3 {
		if _, err := e2.GetStaticCred(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if n := dir.binds.Load() - before; n != 0 {
		t.Fatalf("%d binds on reads after the mark went", n)
	}
	var left int
	_ = e2.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan(prefixVerified, storage.ScanOptions{KeysOnly: true}, func(string, []byte) error { left++; return nil })
	})
	if left != 0 {
		t.Fatalf("%d verified keys left after the mark went", left)
	}
}

// TestRestoredNoMarkNoBind: without MarkRestored, reading a static role
// binds nothing.
func TestRestoredNoMarkNoBind(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	e, dir, _ := r.open(memstore.New(nil), false)
	r.configure(e)
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := dir.binds.Load()
	for range 5 {
		c, err := e.GetStaticCred(ctx, "alice")
		if err != nil || c.Password == "" {
			t.Fatal(c, err)
		}
	}
	r.step(e)
	if n := dir.binds.Load() - before; n != 0 {
		t.Fatalf("%d binds on reads without a mark", n)
	}
}

// TestRestoredBindAccountNoLongerBinds: when the bind password was
// rotated after the snapshot, the operations that need the bind account
// say so (keel.KindConflict naming what to do) and change nothing; once
// the configuration is written with the account's password, the role is
// rotated and served.
func TestRestoredBindAccountNoLongerBinds(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, false)
	r.configure(e)
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	buf := r.copyOf(s)
	if err := e.RotateRole(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := e.RotateRoot(ctx); err != nil {
		t.Fatal(err)
	}

	e2, _, _ := r.open(r.restore(buf), false)
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, _ := e2.loadRole(ctx, "alice")
	wantRefused := func(what string, err error) {
		t.Helper()
		if keel.KindOf(err) != keel.KindConflict || !strings.Contains(err.Error(), "bind account") || !strings.Contains(err.Error(), "write the configuration again") {
			t.Fatalf("%s: %v (kind %v), want a conflict saying to write the configuration again", what, err, keel.KindOf(err))
		}
	}
	_, err := e2.GetStaticCred(ctx, "alice")
	wantRefused("static-cred", err)
	wantRefused("rotate-role", e2.RotateRole(ctx, "alice"))
	r.step(e2)
	if !marked(t, e2) {
		t.Fatal("the mark went with the bind account refused")
	}
	after, _, _ := e2.loadRole(ctx, "alice")
	if after.Password != stale.Password {
		t.Fatal("a refused operation changed the role")
	}
	// The operator sets the bind account's password and writes it.
	if err := (LDAP{}).SetPassword(ctx, Conn{URLs: r.conn.URLs, BindDN: slapdtest.AdminDN, BindPass: slapdtest.AdminPW}, slapdtest.BindDN, "operator-pw"); err != nil {
		t.Fatal(err)
	}
	if err := e2.UpdateConfig(ctx, ConfigRequest{BindPass: libPtr("operator-pw")}); err != nil {
		t.Fatal(err)
	}
	c, err := e2.GetStaticCred(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bind(c.DN, c.Password); err != nil {
		t.Fatalf("after the configuration is written again: %v", err)
	}
	r.step(e2)
	if marked(t, e2) {
		t.Fatal("the mark stays after everything was verified")
	}
}

// TestRestoredSlapdUnreachable: a read whose verification cannot reach the
// directory fails with keel.KindUnavailable and a retry hint, never with
// the unverified password; once slapd is back, the read binds.
func TestRestoredSlapdUnreachable(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, false)
	r.configure(e)
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	buf := r.copyOf(s)
	if err := e.RotateRole(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	e2, _, _ := r.open(r.restore(buf), false)
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	r.srv.Stop()
	c, err := e2.GetStaticCred(ctx, "alice")
	if keel.KindOf(err) != keel.KindUnavailable || c.Password != "" {
		t.Fatalf("static-cred with slapd stopped: %q, %v (kind %v), want no password and %v", c.Password, err, keel.KindOf(err), keel.KindUnavailable)
	}
	if d, ok := keel.RetryAfterOf(err); !ok || d <= 0 {
		t.Fatalf("%v: no retry hint", err)
	}
	r.step(e2)
	if !marked(t, e2) {
		t.Fatal("the mark went while slapd was stopped")
	}
	r.srv.Restart()
	c, err = e2.GetStaticCred(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bind(c.DN, c.Password); err != nil {
		t.Fatalf("static-cred once slapd is back: %v", err)
	}
	r.step(e2)
	if marked(t, e2) {
		t.Fatal("the mark stays once slapd is back")
	}
}

// TestRestoredLibraryCheckedOutInCopy: an account checked out in the copy
// whose password was changed after the snapshot (checked in there) is
// reconciled by the worker: it gets a new password and is checked in (its
// borrower's password was dead); a check-out then lends it with a
// password that binds.
func TestRestoredLibraryCheckedOutInCopy(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, true)
	r.configure(e)
	if err := e.PutLibrarySet(ctx, "team", LibrarySetRequest{ServiceAccountNames: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	caller := libCaller("tok", "ent")
	co, err := e.CheckOut(caller, "team", CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	buf := r.copyOf(s)
	if _, err := e.CheckIn(caller, "team", CheckInRequest{}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, r.bind(slapdtest.AliceDN, co.Password), keel.KindUnauthenticated)

	e2, _, _ := r.open(r.restore(buf), true)
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	r.step(e2)
	st, err := e2.GetLibraryStatus(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if !st["alice"].Available {
		t.Fatalf("alice after the worker's reconciliation: %+v, want available", st["alice"])
	}
	if marked(t, e2) {
		t.Fatal("the mark stays")
	}
	co2, err := e2.CheckOut(libCaller("tok2", "ent2"), "team", CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bind(slapdtest.AliceDN, co2.Password); err != nil {
		t.Fatalf("check-out after the restore: %v", err)
	}
}

// TestRestoredLibraryCheckOutVerifies: a check-out after the restore lends
// an account only once verified: an available account whose password was
// changed after the snapshot gets a new one first; an account checked out
// in the copy whose password still binds stays checked out to its
// borrower (nothing live is revoked).
func TestRestoredLibraryCheckOutVerifies(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, true)
	r.configure(e)
	if err := e.PutLibrarySet(ctx, "team", LibrarySetRequest{ServiceAccountNames: []string{"alice", "bob"}}); err != nil {
		t.Fatal(err)
	}
	borrower := libCaller("tok", "ent")
	held, err := e.CheckOut(borrower, "team", CheckOutRequest{})
	if err != nil || held.ServiceAccountName != "alice" {
		t.Fatal(held.ServiceAccountName, err)
	}
	buf := r.copyOf(s)
	// After the snapshot bob is lent and returned: its password changes.
	other := libCaller("tok3", "ent3")
	if _, err := e.CheckOut(other, "team", CheckOutRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CheckIn(other, "team", CheckInRequest{ServiceAccountNames: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}

	e2, _, _ := r.open(r.restore(buf), true)
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	co, err := e2.CheckOut(libCaller("tok2", "ent2"), "team", CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if co.ServiceAccountName != "bob" {
		t.Fatalf("checked out %q", co.ServiceAccountName)
	}
	if err := r.bind(slapdtest.BobDN, co.Password); err != nil {
		t.Fatalf("the first check-out after the restore lends a password that does not bind: %v", err)
	}
	r.step(e2)
	st, err := e2.GetLibraryStatus(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if a := st["alice"]; a.Available || a.BorrowerEntityID != "ent" {
		t.Fatalf("alice, whose borrower's password still binds: %+v, want still checked out to ent", a)
	}
	if err := r.bind(slapdtest.AliceDN, held.Password); err != nil {
		t.Fatalf("the borrower's live password was changed: %v", err)
	}
	if marked(t, e2) {
		t.Fatal("the mark stays")
	}
	in, err := e2.CheckIn(borrower, "team", CheckInRequest{})
	if err != nil || len(in) != 1 || in[0] != "alice" {
		t.Fatal(in, err)
	}
}

// TestRestoredConcurrentReadsOneReplacement: reads of a role whose
// password no longer binds, made at once after the restore, replace it
// once and all serve the one new password, which binds: no read serves a
// password that another read's replacement killed.
func TestRestoredConcurrentReadsOneReplacement(t *testing.T) {
	r := newRestoreEnv(t)
	ctx := context.Background()
	s := memstore.New(nil)
	e, _, _ := r.open(s, false)
	r.configure(e)
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	buf := r.copyOf(s)
	if err := e.RotateRole(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	e2, dir, _ := r.open(r.restore(buf), false)
	if err := e2.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	const readers = 8
	got := make([]string, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			c, err := e2.GetStaticCred(ctx, "alice")
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = c.Password
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, pw := range got {
		if err := r.bind(slapdtest.AliceDN, pw); err != nil {
			t.Fatalf("read %d of %d served a password that does not bind: %v", i+1, readers, err)
		}
	}
	// One bind of the bind account, one of the dead password, one change.
	if b, n := dir.binds.Load(), dir.sets.Load(); b != 2 || n != 1 {
		t.Fatalf("%d binds and %d password changes for %d reads, want 2 and 1", b, n, readers)
	}
}

// TestRestoredMarkWakesWorkerOfAnotherProcess: a mark made through one
// engine of a store wakes the worker of another (storage.Watch), which
// verifies and removes it, although nothing is due for hours.
func TestRestoredMarkWakesWorkerOfAnotherProcess(t *testing.T) {
	ctx := context.Background()
	v := newEnv(t, everystore.Mem, FlavorLDAP, nil)
	v.configure(t)
	if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	v.e.Start()
	other, err := New(storage.Sub(v.store, storePrefix("ldap")), FlavorLDAP, "ldap", &Options{Directory: v.dir, Clock: v.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	keeltest.Until(t, "the leader's worker verifies and removes the mark", func() bool { return !marked(t, v.e) })
}
