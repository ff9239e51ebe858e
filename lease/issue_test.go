package lease

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestNewDefaults(t *testing.T) {
	for name, tc := range map[string]struct {
		in   *Options
		want Options
	}{
		"nil": {nil, Options{DefaultTTL: 768 * time.Hour, MaxTTL: 768 * time.Hour, RetryBase: 20 * time.Second,
			RetryMax: 5 * time.Minute, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour}},
		"default above max": {&Options{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour},
			Options{DefaultTTL: time.Hour, MaxTTL: time.Hour, RetryBase: 20 * time.Second,
				RetryMax: 5 * time.Minute, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour}},
		"retry max below base": {&Options{RetryBase: time.Hour, RetryMax: time.Minute, MaxAttempts: -1},
			Options{DefaultTTL: 768 * time.Hour, MaxTTL: 768 * time.Hour, RetryBase: time.Hour,
				RetryMax: time.Hour, MaxAttempts: 6, IrrevocableRetry: 24 * time.Hour}},
	} {
		t.Run(name, func(t *testing.T) {
			m := New(storage.Sub(newEnv(t, nil, nil).mem, "x/"), tc.in)
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
		cfg   *MountConfig
		field string // of the expected FieldError; "" for success
	}{
		"ok":                     {"db/", rev, nil, ""},
		"nested ok":              {"a/b/", rev, &MountConfig{DefaultTTL: time.Hour, MaxTTL: 2 * time.Hour}, ""},
		"same mount replaced":    {"ldap/", rev, &MountConfig{MaxTTL: time.Hour}, ""},
		"empty":                  {"", rev, nil, "mount"},
		"no trailing slash":      {"db", rev, nil, "mount"},
		"slash only":             {"/", rev, nil, "mount"},
		"leading slash":          {"/db/", rev, nil, "mount"},
		"empty segment":          {"a//", rev, nil, "mount"},
		"dot segment":            {"a/../", rev, nil, "mount"},
		"control char":           {"a\n/", rev, nil, "mount"},
		"overlap parent":         {"ldap/creds/", rev, nil, "mount"},
		"no overlap, same start": {"l/", rev, nil, ""},
		"nil revoker":            {"db/", nil, nil, "revoker"},
		"negative default":       {"db/", rev, &MountConfig{DefaultTTL: -1}, "default_lease_ttl"},
		"negative max":           {"db/", rev, &MountConfig{MaxTTL: -1}, "max_lease_ttl"},
		"max above system":       {"db/", rev, &MountConfig{MaxTTL: 769 * time.Hour}, "max_lease_ttl"},
		"default above max":      {"db/", rev, &MountConfig{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, "default_lease_ttl"},
		"default above sys max":  {"db/", rev, &MountConfig{DefaultTTL: 769 * time.Hour}, "default_lease_ttl"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, nil)
			if err := e.m.Register("lda/", rev, nil); err != nil { // a sibling that shares characters
				t.Fatal(err)
			}
			err := e.m.Register(tc.mount, tc.r, tc.cfg)
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
	e := newEnv(t, nil, nil)
	if err := e.m.Register("ldap/creds/", e.rev, nil); err == nil {
		t.Fatal("a mount under a registered mount was accepted")
	}
	e.m.Unregister("ldap/")
	if err := e.m.Register("ldap/creds/", e.rev, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Register("ldap/", e.rev, nil); err == nil {
		t.Fatal("a mount above a registered mount was accepted")
	}
}

var idPattern = regexp.MustCompile(`^ldap/creds/app/[0-9A-Za-z]{24}$`)

func TestIssueID(t *testing.T) {
	e := newEnv(t, nil, nil)
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
}

func TestRandomIDUsesWholeAlphabet(t *testing.T) {
	counts := map[rune]int{}
	for range 400 {
		id, err := randomID()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range id {
			counts[r]++
		}
	}
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters in 9,600, want 62", len(counts))
	}
}

// TestRandomIDHasNoModuloBias checks that the first 8 characters of the
// alphabet, which a plain byte%62 would favour by 25% (5 of 256 byte
// values each instead of 4), come no more often than the others.
func TestRandomIDHasNoModuloBias(t *testing.T) {
	var low, high int
	for range 5000 {
		id, err := randomID()
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(id) {
			if strings.IndexByte(base62, id[i]) < 8 {
				low++
			} else {
				high++
			}
		}
	}
	// Per character: low/8 against high/54; unbiased the ratio is 1 with
	// a standard deviation near 1%; biased it is 1.25.
	if ratio := (float64(low) / 8) / (float64(high) / 54); ratio > 1.1 {
		t.Fatalf("first characters %.2f times as frequent as the others", ratio)
	}
}

func TestIssueInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		req   IssueRequest
		field string
	}{
		"unknown mount":     {IssueRequest{Path: "db/creds/x"}, "path"},
		"sibling of mount":  {IssueRequest{Path: "ldapx/creds"}, "path"},
		"the mount itself":  {IssueRequest{Path: "ldap"}, "path"},
		"empty":             {IssueRequest{Path: ""}, "path"},
		"trailing slash":    {IssueRequest{Path: "ldap/creds/"}, "path"},
		"double slash":      {IssueRequest{Path: "ldap//creds"}, "path"},
		"dot dot":           {IssueRequest{Path: "ldap/../x"}, "path"},
		"control character": {IssueRequest{Path: "ldap/a\x00b"}, "path"},
		"negative ttl":      {IssueRequest{Path: "ldap/creds/app", TTL: -1}, "ttl"},
		"negative max ttl":  {IssueRequest{Path: "ldap/creds/app", MaxTTL: -1}, "max_ttl"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, nil)
			_, err := e.m.Issue(context.Background(), tc.req)
			wantKind(t, err, keel.KindInvalid)
			if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
				t.Fatalf("%v: want a problem with %q", err, tc.field)
			}
			if keys := keysUnder(t, e.mem, ""); len(keys) != 0 {
				t.Fatalf("failed Issue stored %q", keys)
			}
		})
	}
}

func TestIssueTTL(t *testing.T) {
	const h = time.Hour
	for name, tc := range map[string]struct {
		sys             *Options
		mount           *MountConfig
		ttl, maxTTL     time.Duration
		wantTTL, wantMx time.Duration
	}{
		"system defaults":         {nil, nil, 0, 0, 768 * h, 768 * h},
		"request ttl":             {nil, nil, 2 * h, 0, 2 * h, 768 * h},
		"mount default":           {nil, &MountConfig{DefaultTTL: 3 * h}, 0, 0, 3 * h, 768 * h},
		"request beats mount":     {nil, &MountConfig{DefaultTTL: 3 * h}, h, 0, h, 768 * h},
		"system default":          {&Options{DefaultTTL: 5 * h}, nil, 0, 0, 5 * h, 768 * h},
		"mount max caps ttl":      {nil, &MountConfig{MaxTTL: 4 * h}, 10 * h, 0, 4 * h, 4 * h},
		"mount max caps default":  {nil, &MountConfig{MaxTTL: 4 * h}, 0, 0, 4 * h, 4 * h},
		"request max lowers":      {nil, &MountConfig{MaxTTL: 4 * h}, 10 * h, 2 * h, 2 * h, 2 * h},
		"request max cannot rise": {nil, &MountConfig{MaxTTL: 4 * h}, 10 * h, 8 * h, 4 * h, 4 * h},
		"system max caps request": {&Options{MaxTTL: 6 * h}, nil, 10 * h, 9 * h, 6 * h, 6 * h},
		"system max caps default": {&Options{MaxTTL: 6 * h}, nil, 0, 0, 6 * h, 6 * h},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.sys, nil)
			if err := e.m.Register("ldap/", e.rev, tc.mount); err != nil {
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
}

func TestIssueStoresLeaseAndIndex(t *testing.T) {
	e := newEnv(t, nil, nil)
	l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true, Data: []byte("cn=app")})
	want := []string{
		"lease/due/" + dueKey(t0.Add(time.Hour), l.ID)[len(duePrefix):],
		"lease/id/" + l.ID,
	}
	if got := keysUnder(t, e.mem, ""); !equalStrings(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	got, err := e.m.Lookup(context.Background(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !leaseEqual(got, l) || string(got.Data) != "cn=app" {
		t.Fatalf("Lookup = %+v, Issue = %+v", got, l)
	}
}

func TestIssueCopiesData(t *testing.T) {
	e := newEnv(t, nil, nil)
	data := []byte("abc")
	l := e.issue(t, IssueRequest{Data: data})
	data[0] = 'X'
	if string(l.Data) != "abc" {
		t.Fatalf("lease data changed with the caller's slice: %q", l.Data)
	}
}

func TestIssueTx(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	var l Lease
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("ldap/accounts/app", []byte("dn")); err != nil {
			return err
		}
		var err error
		l, err = e.m.IssueTx(ctx, tx, IssueRequest{Path: "ldap/creds/app", TTL: time.Minute})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.get(t, l.ID); !ok {
		t.Fatal("lease of IssueTx not stored")
	}
	if _, ok := storagetest.Dump(t, e.mem)["ldap/accounts/app"]; !ok {
		t.Fatal("engine's own write lost")
	}

	t.Run("rolled back with the caller", func(t *testing.T) {
		before := storagetest.Dump(t, e.mem)
		boom := errors.New("engine failed")
		err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, err := e.m.IssueTx(ctx, tx, IssueRequest{Path: "ldap/creds/app"}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if after := storagetest.Dump(t, e.mem); !mapsEqual(before, after) {
			t.Fatal("a rolled-back IssueTx left keys behind")
		}
	})

	t.Run("invalid", func(t *testing.T) {
		err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := e.m.IssueTx(ctx, tx, IssueRequest{Path: "nope/x"})
			return err
		})
		wantKind(t, err, keel.KindInvalid)
	})

	t.Run("does not wake the worker; Wake does", func(t *testing.T) {
		select {
		case <-e.m.wake:
		default:
		}
		err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := e.m.IssueTx(ctx, tx, IssueRequest{Path: "ldap/creds/app"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.m.wake:
			t.Fatal("IssueTx woke the worker before the caller committed")
		default:
		}
		e.m.Wake()
		select {
		case <-e.m.wake:
		default:
			t.Fatal("Wake did not wake the worker")
		}
	})
}

func TestIssueWakesWorker(t *testing.T) {
	e := newEnv(t, nil, nil)
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
	e := newEnv(t, nil, nil)
	err := e.m.Register("db", nil, &MountConfig{DefaultTTL: -1, MaxTTL: -1})
	var fields []string
	for _, fe := range keel.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	want := []string{"mount", "revoker", "default_lease_ttl", "max_lease_ttl"}
	if !equalStrings(fields, want) {
		t.Fatalf("problems with %q, want %q", fields, want)
	}
}
