package lease

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestNewDefaults(t *testing.T) {
	for name, tc := range map[string]struct {
		in   *Options
		want Options
	}{
		"nil": {nil, Options{DefaultTTL: 768 * time.Hour, MaxTTL: 768 * time.Hour, RetryBase: 20 * time.Second,
			RetryMax: 5 * time.Minute, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour, RevokeTimeout: 30 * time.Second, RevokeConcurrency: 4}},
		"default above max": {&Options{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour},
			Options{DefaultTTL: time.Hour, MaxTTL: time.Hour, RetryBase: 20 * time.Second,
				RetryMax: 5 * time.Minute, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour, RevokeTimeout: 30 * time.Second, RevokeConcurrency: 4}},
		"retry max below base": {&Options{RetryBase: time.Hour, RetryMax: time.Minute, MaxAttempts: -1},
			Options{DefaultTTL: 768 * time.Hour, MaxTTL: 768 * time.Hour, RetryBase: time.Hour,
				RetryMax: time.Hour, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour, RevokeTimeout: 30 * time.Second, RevokeConcurrency: 4}},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustNew(t, storage.Sub(newEnv(t, everystore.Mem, nil, nil).raw, "x/"), tc.in)
			got := m.opts
			got.Clock, got.Logger, got.Authorizer = nil, nil, nil
			if got != tc.want {
				t.Fatalf("options\n got %+v\nwant %+v", got, tc.want)
			}
			if _, ok := m.clock.(keel.SystemClock); !ok {
				t.Fatalf("clock %T, want keel.SystemClock", m.clock)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	rev := &fakeRevoker{}
	for name, tc := range map[string]struct {
		mount string
		r     Revoker
		cfg   *mountConfig
		field string // of the expected FieldError; "" for success
	}{
		"ok":                     {"db/", rev, nil, ""},
		"nested ok":              {"a/b/", rev, &mountConfig{DefaultTTL: time.Hour, MaxTTL: 2 * time.Hour}, ""},
		"same mount replaced":    {"ldap/", rev, &mountConfig{MaxTTL: time.Hour}, ""},
		"empty":                  {"", rev, nil, "Path"},
		"no trailing slash":      {"db", rev, nil, "Path"},
		"slash only":             {"/", rev, nil, "Path"},
		"leading slash":          {"/db/", rev, nil, "Path"},
		"empty segment":          {"a//", rev, nil, "Path"},
		"dot segment":            {"a/../", rev, nil, "Path"},
		"control char":           {"a\n/", rev, nil, "Path"},
		"overlap parent":         {"ldap/creds/", rev, nil, "Path"},
		"no overlap, same start": {"l/", rev, nil, ""},
		"nil revoker: none yet":  {"db/", nil, nil, ""},
		"negative default":       {"db/", rev, &mountConfig{DefaultTTL: -1}, "DefaultTTL"},
		"negative max":           {"db/", rev, &mountConfig{MaxTTL: -1}, "MaxTTL"},
		"max above system":       {"db/", rev, &mountConfig{MaxTTL: 769 * time.Hour}, "MaxTTL"},
		"default above max":      {"db/", rev, &mountConfig{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, "DefaultTTL"},
		"default above sys max":  {"db/", rev, &mountConfig{DefaultTTL: 769 * time.Hour}, "DefaultTTL"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, everystore.Mem, nil, nil)
			if err := e.m.register("lda/", rev, nil); err != nil { // a sibling that shares characters
				t.Fatal(err)
			}
			err := e.m.register(tc.mount, tc.r, tc.cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Register(%q): %v", tc.mount, err)
				}
				return
			}
			wantKind(t, err, keel.KindInvalid)
			if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
				t.Fatalf("Register(%q): %v; want a problem with %q", tc.mount, err, tc.field)
			}
		})
	}
}

func TestRegisterOverlapBothWays(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	if err := e.m.register("ldap/creds/", e.rev, nil); err == nil {
		t.Fatal("a mount under a registered mount was accepted")
	}
	e.m.Unregister("ldap/")
	if err := e.m.register("ldap/creds/", e.rev, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.m.register("ldap/", e.rev, nil); err == nil {
		t.Fatal("a mount above a registered mount was accepted")
	}
}

var idPattern = regexp.MustCompile(`^ldap/creds/app/[0-9A-Za-z]{24}$`)

func TestIssueID(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		seen := map[string]bool{}
		for range 200 {
			l := e.issue(t, IssueRequest{})
			if !idPattern.MatchString(l.ID) {
				t.Fatalf("id %q does not match %s", l.ID, idPattern)
			}
			if seen[l.ID] {
				t.Fatalf("id %q issued twice", l.ID)
			}
			seen[l.ID] = true
			if l.Path != "ldap/creds/app" || l.Mount != "ldap/" {
				t.Fatalf("path %q mount %q", l.Path, l.Mount)
			}
		}
	})
}

func TestIssueInvalid(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			req   IssueRequest
			field string
		}{
			"unknown mount":     {IssueRequest{Path: "db/creds/x"}, "Path"},
			"sibling of mount":  {IssueRequest{Path: "ldapx/creds"}, "Path"},
			"the mount itself":  {IssueRequest{Path: "ldap"}, "Path"},
			"empty":             {IssueRequest{Path: ""}, "Path"},
			"trailing slash":    {IssueRequest{Path: "ldap/creds/"}, "Path"},
			"double slash":      {IssueRequest{Path: "ldap//creds"}, "Path"},
			"dot dot":           {IssueRequest{Path: "ldap/../x"}, "Path"},
			"control character": {IssueRequest{Path: "ldap/a\x00b"}, "Path"},
			"negative ttl":      {IssueRequest{Path: "ldap/creds/app", TTL: -1}, "TTL"},
			"negative max ttl":  {IssueRequest{Path: "ldap/creds/app", MaxTTL: -1}, "MaxTTL"},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				_, err := e.m.issue(context.Background(), tc.req)
				wantKind(t, err, keel.KindInvalid)
				if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
					t.Fatalf("%v: want a problem with %q", err, tc.field)
				}
				if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
					t.Fatalf("failed Issue stored %q", keys)
				}
			})
		}
	})
}

func TestIssueTTL(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		const h = time.Hour
		for name, tc := range map[string]struct {
			sys             *Options
			mount           *mountConfig
			ttl, maxTTL     time.Duration
			wantTTL, wantMx time.Duration
		}{
			"system defaults":         {nil, nil, 0, 0, 768 * h, 768 * h},
			"request ttl":             {nil, nil, 2 * h, 0, 2 * h, 768 * h},
			"mount default":           {nil, &mountConfig{DefaultTTL: 3 * h}, 0, 0, 3 * h, 768 * h},
			"request beats mount":     {nil, &mountConfig{DefaultTTL: 3 * h}, h, 0, h, 768 * h},
			"system default":          {&Options{DefaultTTL: 5 * h}, nil, 0, 0, 5 * h, 768 * h},
			"mount max caps ttl":      {nil, &mountConfig{MaxTTL: 4 * h}, 10 * h, 0, 4 * h, 4 * h},
			"mount max caps default":  {nil, &mountConfig{MaxTTL: 4 * h}, 0, 0, 4 * h, 4 * h},
			"request max lowers":      {nil, &mountConfig{MaxTTL: 4 * h}, 10 * h, 2 * h, 2 * h, 2 * h},
			"request max cannot rise": {nil, &mountConfig{MaxTTL: 4 * h}, 10 * h, 8 * h, 4 * h, 4 * h},
			"system max caps request": {&Options{MaxTTL: 6 * h}, nil, 10 * h, 9 * h, 6 * h, 6 * h},
			"system max caps default": {&Options{MaxTTL: 6 * h}, nil, 0, 0, 6 * h, 6 * h},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, tc.sys, nil)
				if err := e.m.register("ldap/", e.rev, tc.mount); err != nil {
					t.Fatal(err)
				}
				l := e.issue(t, IssueRequest{TTL: tc.ttl, MaxTTL: tc.maxTTL})
				if got := l.ExpireTime.Sub(l.IssueTime); got != tc.wantTTL || l.MaxTTL != tc.wantMx {
					t.Fatalf("TTL %s max %s, want %s and %s", got, l.MaxTTL, tc.wantTTL, tc.wantMx)
				}
				if !l.IssueTime.Equal(t0) || !l.NextAttempt.Equal(l.ExpireTime) || !l.LastRenewalTime.IsZero() {
					t.Fatalf("times: %+v", l)
				}
			})
		}
	})
}

func TestIssueStoresLeaseAndIndex(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true, Data: []byte("cn=app")})
		want := []string{
			"lease/due/" + dueKey(t0.Add(time.Hour), l.ID)[len(duePrefix):],
			"lease/id/" + l.ID,
		}
		if got := keysUnder(t, e.raw, ""); !equalStrings(got, want) {
			t.Fatalf("keys %q, want %q", got, want)
		}
		got, err := e.m.Get(context.Background(), l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !leaseEqual(got, l) || string(got.Data) != "cn=app" {
			t.Fatalf("Get = %+v, Issue = %+v", got, l)
		}
	})
}

func TestIssueCopiesData(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		data := []byte("abc")
		l := e.issue(t, IssueRequest{Data: data})
		data[0] = 'X'
		if string(l.Data) != "abc" {
			t.Fatalf("lease data changed with the caller's slice: %q", l.Data)
		}
	})
}

// engineIssuer registers "db/" with an engine store beside the manager's
// view of e.raw, as a program does, and returns the Issuer.
func engineIssuer(t *testing.T, e *env) *Issuer {
	t.Helper()
	iss, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev, Store: storage.Sub(e.store, "engine/")})
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func TestIssuerUpdate(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		iss := engineIssuer(t, e)
		ctx := context.Background()
		var l Lease
		err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
			if err := tx.Put("accounts/app", []byte("dn")); err != nil {
				return err
			}
			var err error
			l, err = leases.Issue(IssueRequest{Path: "db/creds/app", TTL: time.Minute})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.m.Get(ctx, l.ID); err != nil || got.ID != l.ID {
			t.Fatalf("Get of the lease issued in the engine's transaction: %+v, %v", got, err)
		}
		if _, ok := storagetest.Dump(t, e.raw)["engine/accounts/app"]; !ok {
			t.Fatal("engine's own write lost")
		}

		t.Run("rolled back with the caller", func(t *testing.T) {
			before := storagetest.Dump(t, e.raw)
			boom := errors.New("engine failed")
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				if _, err := leases.Issue(IssueRequest{Path: "db/creds/app"}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
			if after := storagetest.Dump(t, e.raw); !mapsEqual(before, after) {
				t.Fatal("a rolled-back Update left keys behind")
			}
		})

		t.Run("outside the mount", func(t *testing.T) {
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				_, err := leases.Issue(IssueRequest{Path: "ldap/creds/app"})
				return err
			})
			wantKind(t, err, keel.KindInvalid)
			_, err = iss.Issue(ctx, IssueRequest{Path: "ldap/creds/app"})
			wantKind(t, err, keel.KindInvalid)
		})

		t.Run("wakes the worker after the commit", func(t *testing.T) {
			select {
			case <-e.m.wake:
			default:
			}
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				select {
				case <-e.m.wake:
					t.Error("woken before the commit")
				default:
				}
				_, err := leases.Issue(IssueRequest{Path: "db/creds/app"})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-e.m.wake:
			default:
				t.Fatal("Update did not wake the worker")
			}
		})

		t.Run("without a store", func(t *testing.T) {
			plain, err := e.m.Register(Mount{Path: "kv/"})
			if err != nil {
				t.Fatal(err)
			}
			err = plain.Update(ctx, func(context.Context, storage.Tx, *Tx) error { return nil })
			wantKind(t, err, keel.KindInternal)
		})
	})
}

// TestRegisterRefusesMiswiredStores: an engine whose store is not a view
// of the store under the manager's cannot register, so none of its leases
// can be orphaned where Get would not find them.
func TestRegisterRefusesMiswiredStores(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		other := memstore.New(nil)
		t.Cleanup(func() { other.Close() })
		for name, s := range map[string]storage.Store{
			"another store":             storage.Sub(other, "engine/"),
			"the manager's own view":    storage.Sub(e.store, keyPrefix),
			"a view inside the manager": storage.Sub(e.store, keyPrefix+"x/"),
			"the whole store":           e.store,
		} {
			t.Run(name, func(t *testing.T) {
				_, err := e.m.Register(Mount{Path: "db/", Store: s})
				wantKind(t, err, keel.KindInvalid)
				if _, _, ok := e.m.mountFor("db/x"); ok {
					t.Fatal("a refused Register registered the mount")
				}
			})
		}
	})
}

func TestNewRefusesNilStore(t *testing.T) {
	_, err := New(nil, nil)
	wantKind(t, err, keel.KindInvalid)
}

// TestRegisterAfterStart: a mount with stored leases may be registered
// while the worker runs (another process mounted it): the worker put its
// due leases off meanwhile, and revokes them once it is registered.
func TestRegisterAfterStart(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if err := e.m.register("db/", e.rev, nil); err != nil {
			t.Fatal(err)
		}
		l, err := e.m.issue(context.Background(), IssueRequest{Path: "db/creds/x", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		e.m.Unregister("db/")
		e.m.Start()
		t.Cleanup(e.m.Stop)
		if err := e.m.register("db/", e.rev, nil); err != nil {
			t.Fatalf("a mount with stored leases, while the worker runs: %v", err)
		}
		if err := e.m.register("fresh/", e.rev, nil); err != nil {
			t.Fatalf("a new mount without leases: %v", err)
		}
		_, err = e.m.Register(Mount{Path: "ldap/", Revoker: e.rev})
		wantKind(t, err, keel.KindInvalid)
		if err := e.m.Revoke(context.Background(), l.ID, true); err != nil {
			t.Fatalf("revoking a lease of the mount registered late: %v", err)
		}
	})
}

func TestIssueWakesWorker(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	e.issue(t, IssueRequest{})
	select {
	case <-e.m.wake:
	default:
		t.Fatal("Issue did not wake the worker")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// leaseEqual compares leases field by field, instants with Equal.
func leaseEqual(a, b Lease) bool {
	return a.ID == b.ID && a.Path == b.Path && a.Mount == b.Mount &&
		a.IssueTime.Equal(b.IssueTime) && a.ExpireTime.Equal(b.ExpireTime) &&
		a.LastRenewalTime.Equal(b.LastRenewalTime) && a.MaxTTL == b.MaxTTL &&
		a.Renewable == b.Renewable && a.Token == b.Token && string(a.Data) == string(b.Data) &&
		a.Irrevocable == b.Irrevocable && a.Attempts == b.Attempts && a.LastError == b.LastError &&
		a.NextAttempt.Equal(b.NextAttempt)
}

func TestRegisterReportsEveryProblem(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	err := e.m.register("db", nil, &mountConfig{DefaultTTL: -1, MaxTTL: -1})
	var fields []string
	for _, fe := range keel.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	want := []string{"Path", "DefaultTTL", "MaxTTL"}
	if !equalStrings(fields, want) {
		t.Fatalf("problems with %q, want %q", fields, want)
	}
}

// TestIDsSortByIssueTime: the ids of one path sort by their issue time
// (so that leases written together lie side by side in the store), and
// stay unique within one millisecond.
func TestIDsSortByIssueTime(t *testing.T) {
	at := time.Date(2026, 11, 28, 2, 50, 0, 0, time.UTC)
	prev := ""
	seen := map[string]bool{}
	for i := range 2000 {
		id := newID("ldap/creds/app", at.Add(time.Duration(i/4)*time.Millisecond))
		if len(id) != len("ldap/creds/app/")+idRandLen || !strings.HasPrefix(id, "ldap/creds/app/") {
			t.Fatalf("id %q: want the path, a slash and %d characters", id, idRandLen)
		}
		if seen[id] {
			t.Fatalf("id %q drawn twice", id)
		}
		seen[id] = true
		if i%4 == 0 && id <= prev {
			t.Fatalf("id %q issued a millisecond after %q sorts before it", id, prev)
		}
		prev = id
	}
	if a, b := newID("p", time.Unix(0, 0)), newID("p", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)); a[2:2+idTimeLen] != "0000000" || b[2:2+idTimeLen] != "zzzzzzz" {
		t.Fatalf("the epoch gives %q and 2100 gives %q: want the smallest and the largest time", a, b)
	}
}
