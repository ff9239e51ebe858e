package ldapengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/ldapengine/internal/ldapproxy"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// The timings of the outage tests: short request timeouts and retries, on
// the real clock.
const (
	outRetry       = time.Second // Options.RetryInterval
	outReqTimeout  = time.Second // Config.RequestTimeout
	outConnTimeout = time.Second // Config.ConnectionTimeout
	// outBound is how long after the directory answers again every
	// outcome must be settled: three retry intervals and a request, plus
	// the slack of the run (outage.slack).
	outBound = 3*outRetry + outReqTimeout
	// outMustShowBound is the issue's promise for a dropped reply of
	// rotate-role: static-cred binds within 30 s of the connection
	// passing again.
	outMustShowBound = 30 * time.Second
)

// outCreationLDIF adds a user under ou=users; outDeletionLDIF and
// outRollbackLDIF delete it.
const (
	outCreationLDIF = `dn: uid={{.Username}},` + slapdtest.UsersDN + `
objectClass: inetOrgPerson
uid: {{.Username}}
cn: {{.Username}}
sn: {{.RoleName}}
userPassword: {{.Password}}
`
	outDeletionLDIF = `dn: uid={{.Username}},` + slapdtest.UsersDN + `
changetype: delete
`
)

// outage is an ldap engine whose directory is a real slapd reached
// through a fault-injecting proxy, with its worker and a lease manager
// running on the real clock.
type outage struct {
	srv    *slapdtest.Server
	px     *ldapproxy.Proxy
	e      *Engine
	leases *lease.Manager
	direct Conn // slapd itself, not through the proxy

	mu    sync.Mutex
	creds map[string]DynamicCred // dynamic credentials handed out, by lease id

	// slack is added to every real-time bound: a second and twenty
	// times the baseline, the slowest of a few binds through the proxy
	// and consistency checks on the healthy directory, measured by
	// startOutage on this machine under its present load.
	slack time.Duration
}

// startOutage starts slapd (or skips t when it is not installed), a proxy
// in front of it, and a configured engine (userdn ou=users, userattr uid)
// whose URL is the proxy's, with its worker and lease manager started.
func startOutage(t *testing.T) *outage {
	t.Helper()
	start := time.Now()
	srv := slapdtest.Start(t)
	px, err := ldapproxy.New(strings.TrimPrefix(srv.URL, "ldap://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	s := memstore.New(nil)
	m := newLeases(t, s, &lease.Options{Clock: keel.SystemClock{}, RetryBase: 250 * time.Millisecond, RetryMax: outRetry, MaxAttempts: 100})
	e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorLDAP, "ldap", &Options{
		Clock: keel.SystemClock{}, RetryInterval: outRetry, Leases: ldapLeases(t, m, s),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PutConfig(context.Background(), Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: px.URL(),
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: outConnTimeout, RequestTimeout: outReqTimeout}); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	e.Start()
	t.Cleanup(e.Stop)
	o := &outage{srv: srv, px: px, e: e, leases: m, creds: map[string]DynamicCred{},
		direct: Conn{URLs: []string{srv.URL}, ConnectionTimeout: keeltest.WaitBound, RequestTimeout: keeltest.WaitBound}}
	t.Logf("slapd, proxy and engine ready in %s", time.Since(start).Round(time.Millisecond))
	var baseline time.Duration
	for range 3 {
		start := time.Now()
		if err := (LDAP{}).Bind(context.Background(), Conn{URLs: []string{px.URL()}, ConnectionTimeout: outConnTimeout, RequestTimeout: outReqTimeout},
			slapdtest.BindDN, slapdtest.BindPW); err != nil {
			t.Fatalf("a bind through the proxy: %v", err)
		}
		if err := o.consistent(); err != nil {
			t.Fatalf("the healthy directory: %v", err)
		}
		baseline = max(baseline, time.Since(start))
	}
	o.slack = time.Second + 20*baseline
	t.Logf("a bind and a check take up to %s: a slack of %s", baseline.Round(time.Millisecond), o.slack.Round(time.Millisecond))
	return o
}

// bind binds as dn with pw on slapd directly.
func (o *outage) bind(dn, pw string) error {
	if pw == "" {
		return fmt.Errorf("bind as %q: empty password", dn)
	}
	return LDAP{}.Bind(context.Background(), o.direct, dn, pw)
}

// putRole creates the static role name for username (found under
// ou=users) and fails t unless its first password binds.
func (o *outage) putRole(t *testing.T, name, username string, period time.Duration) StaticCred {
	t.Helper()
	ctx := context.Background()
	if err := o.e.PutStaticRole(ctx, name, StaticRoleRequest{Username: username, RotationPeriod: period}); err != nil {
		t.Fatal(err)
	}
	c, err := o.e.GetStaticCred(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.bind(c.DN, c.Password); err != nil {
		t.Fatalf("the first password of %q does not bind: %v", name, err)
	}
	return c
}

// staticBinds returns nil when static-cred of name gives a password that
// binds.
func (o *outage) staticBinds(name string) error {
	c, err := o.e.GetStaticCred(context.Background(), name)
	if err != nil {
		return fmt.Errorf("static-cred %q: %w", name, err)
	}
	if err := o.bind(c.DN, c.Password); err != nil {
		return fmt.Errorf("static-cred %q gives a password that does not bind: %w", name, err)
	}
	return nil
}

// noDeadPassword fails t when static-cred of name, while the outcome of a
// password change is unknown, gives a password that does not bind, or an
// error that is not keel.KindUnavailable with a Retry-After hint. It
// returns whether static-cred answered with an error.
func (o *outage) noDeadPassword(t *testing.T, name string) bool {
	t.Helper()
	c, err := o.e.GetStaticCred(context.Background(), name)
	if err != nil {
		t.Logf("static-cred during an unknown outcome: %v", err)
		if k := keel.KindOf(err); k != keel.KindUnavailable {
			t.Fatalf("static-cred during an unknown outcome: %v: kind %v, want %v", err, k, keel.KindUnavailable)
		}
		if d, ok := keel.RetryAfterOf(err); !ok || d <= 0 {
			t.Fatalf("static-cred during an unknown outcome: %v: no Retry-After hint", err)
		}
		return true
	}
	if err := o.bind(c.DN, c.Password); err != nil {
		t.Fatalf("static-cred during an unknown outcome gives a password that does not bind (slapd holds another): %v", err)
	}
	t.Log("static-cred during an unknown outcome: a password that binds")
	return false
}

// within waits (keeltest.Eventually) until check returns nil, logs how
// long that took and returns it; it fails t when that is more than bound,
// the run's slack, and four times the latest a timer fired while it
// waited: outBound is three retry intervals and a request, four waits on
// timers that a loaded machine fires late.
func (o *outage) within(t *testing.T, bound time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	late := timerLateness()
	d := keeltest.Eventually(t, what, check)
	worst := late()
	t.Logf("%s after %s (timers up to %s late)", what, d.Round(time.Millisecond), worst.Round(time.Millisecond))
	if limit := bound + o.slack + 4*worst; d > limit {
		t.Errorf("%s after %s, want within %s (%s, the run's slack of %s, and 4 × %s of timer lateness)", what, d.Round(time.Millisecond), limit.Round(time.Millisecond), bound, o.slack.Round(time.Millisecond), worst.Round(time.Millisecond))
	}
	return d
}

// timerLateness starts measuring how late this machine fires timers: a
// probe sleeps 50ms again and again. The function it returns stops the
// probe and returns the latest a timer fired.
func timerLateness() func() time.Duration {
	const tick = 50 * time.Millisecond
	done := make(chan struct{})
	var worst atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			start := time.Now()
			select {
			case <-done:
				return
			case <-time.After(tick):
			}
			if over := time.Since(start) - tick; over > time.Duration(worst.Load()) {
				worst.Store(int64(over))
			}
		}
	})
	return func() time.Duration {
		close(done)
		wg.Wait()
		return time.Duration(worst.Load())
	}
}

// sleepUntil sleeps until at: the real-time schedule of an outage the
// test simulates.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// waitDropped waits until the proxy has dropped more than before replies.
func (o *outage) waitDropped(t *testing.T, before int) {
	t.Helper()
	keeltest.Until(t, "the proxy drops a reply", func() bool { return o.px.Dropped() > before })
}

// waitRetried waits until the proxy has accepted more than before
// connections: the engine has tried the directory again, and met the
// outage, in place of a sleep that would give it time to.
func (o *outage) waitRetried(t *testing.T, before int) {
	t.Helper()
	d := keeltest.Until(t, "the engine tries the directory again", func() bool { return o.px.Accepted() > before })
	t.Logf("the engine tried the directory again after %s", d.Round(time.Millisecond))
}

// accountSettled returns nil when the account n of set has no pending
// password change and its stored password binds.
func (o *outage) accountSettled(set, n string) error {
	var a libAccount
	var ok bool
	err := o.e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var err error
		a, ok, err = loadAccount(tx, set, n)
		return err
	})
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("account %q of %q: no record", n, set)
	case a.New != "":
		return fmt.Errorf("account %q of %q: a password change is still pending", n, set)
	case !a.Ready:
		return fmt.Errorf("account %q of %q: not ready", n, set)
	}
	if err := o.bind(a.DN, a.Password); err != nil {
		return fmt.Errorf("account %q of %q: the stored password does not bind: %w", n, set, err)
	}
	return nil
}

// checkOutAgain checks the account n of set in for caller when it is still
// checked out, then checks out of set until it gets n, and checks that its
// password binds; every account it took is checked in again.
func (o *outage) checkOutAgain(t *testing.T, caller context.Context, set, n string) {
	t.Helper()
	st, err := o.e.GetLibraryStatus(caller, set)
	if err != nil {
		t.Fatal(err)
	}
	if !st[n].Available {
		if _, err := o.e.CheckIn(caller, set, CheckInRequest{ServiceAccountNames: []string{n}}); err != nil {
			t.Fatalf("check-in of %q after recovery: %v", n, err)
		}
	}
	co, err := o.e.CheckOut(caller, set, CheckOutRequest{})
	if err != nil {
		t.Fatalf("check-out of %q after recovery: %v", set, err)
	}
	if co.ServiceAccountName != n {
		t.Fatalf("checked out %q, want %q", co.ServiceAccountName, n)
	}
	if err := o.bind(o.accountDN(t, set, n), co.Password); err != nil {
		t.Fatalf("the checked-out password of %q does not bind: %v", n, err)
	}
	if _, err := o.e.CheckIn(caller, set, CheckInRequest{ServiceAccountNames: []string{n}}); err != nil {
		t.Fatalf("check-in after recovery: %v", err)
	}
}

func (o *outage) accountDN(t *testing.T, set, n string) string {
	t.Helper()
	var a libAccount
	err := o.e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var err error
		a, _, err = loadAccount(tx, set, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.DN
}

// checkOutOnly creates the library set set with the one account n, checks
// it out for caller, and fails t unless its password binds.
func (o *outage) checkOutOnly(t *testing.T, caller context.Context, set, n string) CheckOut {
	t.Helper()
	if err := o.e.PutLibrarySet(caller, set, LibrarySetRequest{ServiceAccountNames: []string{n}}); err != nil {
		t.Fatal(err)
	}
	co, err := o.e.CheckOut(caller, set, CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.bind(o.accountDN(t, set, n), co.Password); err != nil {
		t.Fatalf("the checked-out password of %q does not bind: %v", n, err)
	}
	return co
}

// putDynRole creates the dynamic role "app" (an account under ou=users,
// deleted at revocation and on rollback).
func (o *outage) putDynRole(t *testing.T) {
	t.Helper()
	if err := o.e.PutDynamicRole(context.Background(), "app", DynamicRoleRequest{CreationLDIF: strp(outCreationLDIF),
		DeletionLDIF: strp(outDeletionLDIF), RollbackLDIF: strp(outDeletionLDIF), DefaultTTL: ptrDur(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// issue issues a dynamic credential of role and remembers it.
func (o *outage) issue(ctx context.Context, role string) (DynamicCred, error) {
	c, err := o.e.CreateDynamicCred(ctx, role)
	if err == nil {
		o.mu.Lock()
		o.creds[c.Lease.ID] = c
		o.mu.Unlock()
	}
	return c, err
}

// consistent checks what every outage test must leave after recovery:
// every password keel reports binds (static-cred of every static role,
// the configured bind password, the stored password of every library
// account, every dynamic credential whose lease lives), no managed entry
// holds a password keel does not know, no password change is pending, no
// lease is lost (a checked-out account's lease lives; a live check-out
// lease names an account checked out under it; every dynamic account in
// the directory has a live lease and every live lease an account).
func (o *outage) consistent() error {
	ctx := context.Background()
	var errs []error
	roles, err := listAll(ctx, o.e.ListStaticRoles, "")
	if err != nil {
		return err
	}
	for _, r := range roles {
		errs = append(errs, o.staticBinds(r))
	}
	cfg, err := o.e.loadConfig(ctx)
	if err != nil {
		return err
	}
	if err := o.bind(cfg.BindDN, cfg.BindPass); err != nil {
		errs = append(errs, fmt.Errorf("the stored bind password does not bind: %w", err))
	}
	sets, err := listAll(ctx, o.e.ListLibrarySets, "")
	if err != nil {
		return err
	}
	for _, set := range sets {
		errs = append(errs, o.setConsistent(ctx, set))
	}
	errs = append(errs, o.dynamicConsistent(ctx))
	return errors.Join(errs...)
}

func (o *outage) setConsistent(ctx context.Context, set string) error {
	rec, err := o.e.GetLibrarySet(ctx, set)
	if err != nil {
		return err
	}
	var errs []error
	held := map[string]string{} // lease id → account
	for _, n := range rec.ServiceAccountNames {
		var a libAccount
		if err := o.e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			a, _, err = loadAccount(tx, set, n)
			return err
		}); err != nil {
			return err
		}
		errs = append(errs, o.accountSettled(set, n))
		if a.CheckedOut {
			held[a.LeaseID] = n
			if _, err := o.leases.Get(ctx, a.LeaseID); err != nil {
				errs = append(errs, fmt.Errorf("account %q of %q is checked out under a lost lease: %w", n, set, err))
			}
		}
	}
	prefix := o.e.resource("library", set, "check-out") + "/"
	ids, err := o.leases.List(ctx, prefix, keel.ListRequest{})
	if err != nil {
		return err
	}
	for _, id := range ids.Items {
		l, err := o.leases.Get(ctx, prefix+id)
		if keel.KindOf(err) == keel.KindNotFound {
			continue // expired, its revocation queued
		}
		if err != nil {
			return err
		}
		var d checkOutData
		_ = json.Unmarshal(l.Data, &d)
		if held[l.ID] != d.Account {
			errs = append(errs, fmt.Errorf("lease %q lives but account %q of %q is not checked out under it", l.ID, d.Account, set))
		}
	}
	return errors.Join(errs...)
}

func (o *outage) dynamicConsistent(ctx context.Context) error {
	var errs []error
	roles, err := listAll(ctx, o.e.ListDynamicRoles, "")
	if err != nil {
		return err
	}
	live := map[string]bool{} // lowercased dn of a live lease's account
	for _, role := range roles {
		prefix := o.e.resource("creds", role) + "/"
		ids, err := o.leases.List(ctx, prefix, keel.ListRequest{})
		if err != nil {
			return err
		}
		for _, id := range ids.Items {
			l, err := o.leases.Get(ctx, prefix+id)
			if keel.KindOf(err) == keel.KindNotFound {
				continue // expired or revoked, its revocation queued
			}
			if err != nil {
				return err
			}
			var d credsLease
			if err := json.Unmarshal(l.Data, &d); err != nil || len(d.DNs) == 0 {
				errs = append(errs, fmt.Errorf("lease %q: no account in its data", l.ID))
				continue
			}
			live[strings.ToLower(d.DNs[0])] = true
			o.mu.Lock()
			c, known := o.creds[l.ID]
			o.mu.Unlock()
			if !known {
				errs = append(errs, fmt.Errorf("lease %q of %q: issued by no CreateDynamicCred call that answered", l.ID, d.Username))
				continue
			}
			if err := o.bind(d.DNs[0], c.Password); err != nil {
				errs = append(errs, fmt.Errorf("dynamic credential %q (lease %q) does not bind: %w", d.Username, l.ID, err))
			}
		}
	}
	entries, err := o.dynamicEntries()
	if err != nil {
		return err
	}
	for _, dn := range entries {
		if !live[strings.ToLower(dn)] {
			errs = append(errs, fmt.Errorf("account %q exists without a live lease", dn))
		}
	}
	return errors.Join(errs...)
}

// dynamicEntries returns the dns of the users of ou=users other than
// alice and bob, read as the admin on slapd directly.
func (o *outage) dynamicEntries() ([]string, error) {
	c, err := ldap.DialURL(o.srv.URL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetTimeout(keeltest.WaitBound)
	if err := c.Bind(slapdtest.AdminDN, slapdtest.AdminPW); err != nil {
		return nil, err
	}
	res, err := c.Search(ldap.NewSearchRequest(slapdtest.UsersDN, ldap.ScopeSingleLevel, ldap.NeverDerefAliases, 0, 0, false,
		"(objectClass=*)", []string{"uid"}, nil))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range res.Entries {
		if !strings.EqualFold(e.DN, slapdtest.AliceDN) && !strings.EqualFold(e.DN, slapdtest.BobDN) {
			out = append(out, e.DN)
		}
	}
	return out, nil
}

// entryExists reports whether dn exists, read on slapd directly.
func (o *outage) entryExists(dn string) (bool, error) {
	entries, err := o.dynamicEntries()
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if strings.EqualFold(e, dn) {
			return true, nil
		}
	}
	return false, nil
}

// settled waits up to bound for consistent, and fails t with what is
// still wrong.
func (o *outage) settled(t *testing.T, bound time.Duration) {
	t.Helper()
	o.within(t, bound, "every password keel reports binds, no lease lost", o.consistent)
}
