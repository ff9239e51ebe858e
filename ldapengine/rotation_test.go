package ldapengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestScheduleOverAThousandPeriods drives Step as the worker does (each
// Step at the time the previous one returned) for a thousand periods of
// the shortest role (40 on boltstore and etcdstore), with roles of several
// periods and an outage of the directory in the middle. Every role
// rotates exactly once per period outside the outage, and at once (within
// one retry interval) after it.
func TestScheduleOverAThousandPeriods(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		const roles = 12
		periods := make([]time.Duration, roles)
		for i := range roles {
			dn := fmt.Sprintf("uid=r%d,ou=users,dc=example,dc=org", i)
			v.dir.Add(dn, "pw", "uid", fmt.Sprintf("r%d", i))
			periods[i] = time.Duration(1+i%4) * time.Minute // 1 to 4 minutes
			if err := v.e.PutStaticRole(ctx, fmt.Sprintf("r%d", i), StaticRoleRequest{Username: "u", DN: dn, RotationPeriod: periods[i]}); err != nil {
				t.Fatal(err)
			}
		}
		// The long run is memstore's. boltstore and etcdstore check the
		// same rules over 40 periods with a shorter outage (still longer than
		// every period, so each role is due in it): a Step costs a
		// few ms on boltstore and over 100 ms on etcd under the race
		// detector, and on etcd each Step costs more than the one before
		// (etcd's index keeps every deleted due key until a compaction, the
		// tests' etcd has none, and a range read visits them all): a
		// thousand periods took 140 s there without the race detector.
		horizon, outage := 1000*time.Minute, 8*time.Minute+46*time.Second
		if _, mem := v.store.(*memstore.Store); !mem {
			horizon, outage = 40*time.Minute, 4*time.Minute+46*time.Second
		}
		end := t0.Add(horizon)
		outFrom := t0.Add(horizon*2/5 + 17*time.Second) // 400m17s of a thousand
		outTo := outFrom.Add(outage)
		// lastRotations reads the last rotation of every role in one View
		// (one request on etcd, where GetStaticRole is two per role).
		lastRotations := func() map[string]time.Time {
			t.Helper()
			last := map[string]time.Time{}
			if err := v.e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				clear(last)
				return tx.Scan(prefixRole, storage.ScanOptions{}, func(key string, raw []byte) error {
					var rec roleRecord
					if err := json.Unmarshal(raw, &rec); err != nil {
						return err
					}
					last[strings.TrimPrefix(key, prefixRole)] = rec.LastRotation
					return nil
				})
			}); err != nil {
				t.Fatal(err)
			}
			return last
		}
		rotations := make([][]time.Time, roles)
		last := lastRotations()
		for i := range roles {
			rotations[i] = []time.Time{last[fmt.Sprintf("r%d", i)]}
		}
		steps := 0
		for now := t0; now.Before(end); steps++ {
			v.dir.SetDown(!now.Before(outFrom) && now.Before(outTo))
			next, err := v.e.Step(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			last := lastRotations()
			for i := range roles {
				if l, at := rotations[i], last[fmt.Sprintf("r%d", i)]; !at.Equal(l[len(l)-1]) {
					rotations[i] = append(l, at)
				}
			}
			if next.IsZero() || !next.After(now) {
				t.Fatalf("step at %v planned %v", now, next)
			}
			// The worker wakes at the planned time, or when the outage ends
			// (nothing tells it: it must be planned within a retry interval).
			now = next
			v.clock.Set(now)
		}
		for i := range roles {
			l := rotations[i]
			if r, err := v.e.GetStaticRole(ctx, fmt.Sprintf("r%d", i)); err != nil || !r.LastRotation.Equal(l[len(l)-1]) {
				t.Fatalf("role r%d: last rotation %v (%v), the records' %v", i, r.LastRotation, err, l[len(l)-1])
			}
			for j := 1; j < len(l); j++ {
				gap := l[j].Sub(l[j-1])
				across := l[j-1].Before(outTo) && l[j].After(outFrom)
				switch {
				case !across && gap != periods[i]:
					t.Fatalf("role r%d: rotations at %v and %v, %v apart; period %v", i, l[j-1], l[j], gap, periods[i])
				case across && (l[j].Before(outTo) || l[j].After(outTo.Add(defaultRetryInterval))):
					t.Fatalf("role r%d: rotation after the outage (ended %v) at %v, want within %v", i, outTo, l[j], defaultRetryInterval)
				}
			}
			if want := int((horizon-outTo.Sub(outFrom))/periods[i]) - 1; len(l) < want {
				t.Fatalf("role r%d: %d rotations over %v, want at least %d", i, len(l), horizon, want)
			}
		}
		// The outage cost steps every second at first, then every retry
		// interval: not one step per second over the outage.
		if steps > int(horizon/time.Minute)*roles {
			t.Fatalf("%d steps", steps)
		}
	})
}

// TestLostReplySettledByTheWorker: the directory made the change but its
// reply was lost. Until the worker settles it, the role says so and
// static-cred refuses rather than hand out a password that may not bind;
// the worker's next attempt binds with the new password and adopts it
// without changing it again.
func TestLostReplySettledByTheWorker(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		v.dir.LoseReplies(aliceDN, true)
		err := v.e.RotateRole(ctx, "alice")
		wantKind(t, err, keel.KindUnavailable)
		_, err = v.e.GetStaticCred(ctx, "alice")
		wantKind(t, err, keel.KindUnavailable)
		if d, ok := keel.RetryAfterOf(err); !ok || d < time.Second || d > defaultRetryInterval {
			t.Fatalf("static-cred during an unknown outcome: retry after %v (%v)", d, ok)
		}
		r, _ := v.e.GetStaticRole(ctx, "alice")
		if !r.Pending || r.Failures != 1 || r.LastError == "" || r.NextRotation.After(v.clock.Now().Add(time.Second)) {
			t.Fatalf("role after a lost reply: %+v", r)
		}
		v.dir.LoseReplies(aliceDN, false)
		changes := v.dir.Changes()
		v.clock.Set(r.NextRotation)
		if _, err := v.e.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if v.dir.Changes() != changes {
			t.Fatal("the worker changed the password again instead of adopting the one the directory holds")
		}
		c, err := v.e.GetStaticCred(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := v.dir.Bind(ctx, Conn{}, aliceDN, c.Password); err != nil {
			t.Fatalf("settled password does not bind: %v", err)
		}
		if r, _ := v.e.GetStaticRole(ctx, "alice"); r.Pending || r.Failures != 0 || r.LastError != "" || !r.NextRotation.Equal(v.clock.Now().Add(time.Hour)) {
			t.Fatalf("role after settling: %+v", r)
		}
	})
}

// TestUnsentChangeKeepsThePassword: a change that certainly did not reach
// the directory leaves nothing to settle, so static-cred keeps answering
// with the password that binds, while the role shows the failure and the
// retry.
func TestUnsentChangeKeepsThePassword(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		before, _ := v.e.GetStaticCred(ctx, "alice")
		v.dir.SetDown(true)
		err := v.e.RotateRole(ctx, "alice")
		if !errors.Is(err, ErrNotApplied) {
			t.Fatalf("rotation with the directory down: %v, want ErrNotApplied", err)
		}
		c, err := v.e.GetStaticCred(ctx, "alice")
		if err != nil || c.Password != before.Password {
			t.Fatalf("static-cred after an unsent change: %v, %v", c.Password, err)
		}
		r, _ := v.e.GetStaticRole(ctx, "alice")
		if r.Pending || r.Failures != 1 || r.LastError == "" {
			t.Fatalf("role after an unsent change: %+v", r)
		}
		// Failures back off, up to the retry interval.
		var delays []time.Duration
		for range 6 {
			v.clock.Set(r.NextRotation)
			if _, err := v.e.Step(ctx, v.clock.Now()); err != nil {
				t.Fatal(err)
			}
			r, _ = v.e.GetStaticRole(ctx, "alice")
			delays = append(delays, r.NextRotation.Sub(v.clock.Now()))
		}
		for i, d := range delays {
			if d <= 0 || d > defaultRetryInterval || (i > 0 && d < delays[i-1]*4/5 && d < defaultRetryInterval*4/5) {
				t.Fatalf("retry delays %v: not a backoff capped at %v", delays, defaultRetryInterval)
			}
		}
		if delays[len(delays)-1] < defaultRetryInterval*4/5 || r.Failures != 7 {
			t.Fatalf("retry delays %v, failures %d", delays, r.Failures)
		}
		v.dir.SetDown(false)
		v.clock.Set(r.NextRotation)
		if _, err := v.e.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		c, _ = v.e.GetStaticCred(ctx, "alice")
		if c.Password == before.Password || v.dir.Bind(ctx, Conn{}, aliceDN, c.Password) != nil {
			t.Fatal("not rotated after the outage")
		}
	})
}

// TestFailedRotateRoleWakesTheWorker: the worker sleeps until the next
// period; a failed rotate-role must bring its plan forward to the retry,
// or the role would wait a whole period (the stall this test names).
func TestFailedRotateRoleWakesTheWorker(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		v.e.Start()
		keeltest.Until(t, "the worker plans the next period", func() bool { return v.e.worker.Planned().Equal(t0.Add(time.Hour)) })
		v.dir.LoseReplies(aliceDN, true)
		if err := v.e.RotateRole(ctx, "alice"); err == nil {
			t.Fatal("rotation with a lost reply succeeded")
		}
		r, _ := v.e.GetStaticRole(ctx, "alice")
		keeltest.Until(t, "the worker plans the retry", func() bool { return v.e.worker.Planned().Equal(r.NextRotation) })
		v.dir.LoseReplies(aliceDN, false)
		v.clock.Set(r.NextRotation)
		keeltest.Until(t, "static-cred answers again", func() bool {
			c, err := v.e.GetStaticCred(ctx, "alice")
			return err == nil && v.dir.Bind(ctx, Conn{}, aliceDN, c.Password) == nil
		})
	})
}

// TestRootLostReplySettled: rotate-root whose reply was lost leaves the
// configuration's password stale; the worker, woken for it, keeps the one
// the directory accepts.
func TestRootLostReplySettled(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		v.dir.LoseReplies(bindDN, true)
		err := v.e.RotateRoot(ctx)
		wantKind(t, err, keel.KindUnavailable)
		v.dir.LoseReplies(bindDN, false)
		next, err := v.e.Step(ctx, v.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := v.e.loadConfig(ctx)
		if err := v.dir.Bind(ctx, Conn{}, bindDN, cfg.BindPass); err != nil || cfg.BindPass == "bind-pw" {
			t.Fatalf("bind password after settling: %v", err)
		}
		if !next.IsZero() {
			t.Fatalf("nothing left to do, yet the next step is planned at %v", next)
		}
		// A wrong stored password is the configuration's fault: a conflict
		// that names the directory's answer, never a caller's denial.
		v.dir.Add(bindDN, "changed-behind-keel's-back", "cn", "keel")
		err = v.e.RotateRoot(ctx)
		wantKind(t, err, keel.KindConflict)
	})
}

// TestLibraryCheckInSettledByTheWorker: a check-in whose password change
// lost its reply leaves the account out of circulation; the worker
// finishes the check-in: the account gets the password the directory
// holds, is available again, and its lease is gone.
func TestLibraryCheckInSettledByTheWorker(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		alice := libCaller("a", "")
		co, err := v.e.CheckOut(alice, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		v.dir.LoseReplies(libSvcDN(0), true)
		if _, err := v.e.CheckIn(alice, "s", CheckInRequest{}); err == nil {
			t.Fatal("check-in with a lost reply succeeded")
		}
		if _, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{}); !errors.Is(err, ErrNoAccountAvailable) {
			t.Fatalf("check-out of an account whose password is unknown: %v", err)
		}
		v.dir.LoseReplies(libSvcDN(0), false)
		next, err := v.e.Step(ctx, v.clock.Now())
		if err != nil || !next.IsZero() {
			t.Fatalf("step: next %v, err %v", next, err)
		}
		a := v.account(t, "s", "svc0")
		if !a.available() || !v.binds(libSvcDN(0), a.Password) {
			t.Fatalf("account after settling: %+v", a)
		}
		if _, err := v.leases.Get(ctx, co.Lease.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("the check-out's lease after the check-in: %v", err)
		}
		// A check-in that certainly changed nothing leaves the account with
		// its borrower, and nothing to settle.
		if _, err := v.e.CheckOut(alice, "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		v.dir.SetDown(true)
		if _, err := v.e.CheckIn(alice, "s", CheckInRequest{}); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("check-in with the directory down: %v", err)
		}
		if a := v.account(t, "s", "svc0"); !a.CheckedOut || a.New != "" {
			t.Fatalf("account after an unsent check-in: %+v", a)
		}
	})
}

// TestFailedCheckInWakesTheWorker: a check-in whose outcome is unknown is
// finished by the worker, woken for it, without waiting for the lease's end.
func TestFailedCheckInWakesTheWorker(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		alice := libCaller("a", "")
		if _, err := v.e.CheckOut(alice, "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		v.e.Start()
		keeltest.Until(t, "the worker sleeps with nothing planned", func() bool { return v.e.worker.Running() && v.e.worker.Planned().IsZero() })
		v.dir.LoseReplies(libSvcDN(0), true)
		if _, err := v.e.CheckIn(alice, "s", CheckInRequest{}); err == nil {
			t.Fatal("check-in with a lost reply succeeded")
		}
		v.dir.LoseReplies(libSvcDN(0), false)
		// The worker, woken by the failure, settles at once or plans a retry
		// within the retry interval: time moves, nothing else wakes it.
		keeltest.Until(t, "the account is checked in", func() bool {
			if p := v.e.worker.Planned(); !p.IsZero() {
				if p.After(v.clock.Now().Add(defaultRetryInterval)) {
					t.Fatalf("retry planned at %v, later than a retry interval", p)
				}
				v.clock.Set(p)
			}
			var a libAccount
			_ = v.e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				a, _, _ = loadAccount(tx, "s", "svc0")
				return nil
			})
			return a.available() && v.binds(libSvcDN(0), a.Password)
		})
	})
}
