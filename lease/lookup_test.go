package lease

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

func TestGet(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		live := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
		short := e.issue(t, IssueRequest{TTL: time.Minute})

		got, err := e.m.Get(ctx, live.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != live.ID || !got.IssueTime.Equal(t0) || !got.ExpireTime.Equal(t0.Add(time.Hour)) ||
			!got.LastRenewalTime.IsZero() || !got.Renewable || got.TTL(t0) != time.Hour {
			t.Fatalf("Get = %+v", got)
		}

		for name, tc := range map[string]struct {
			id      string
			at      time.Time
			kind    keel.Kind
			message string
		}{
			"empty id":              {"", t0, keel.KindInvalid, "LeaseID"},
			"unknown":               {"ldap/creds/app/nope", t0, keel.KindNotFound, "not found"},
			"expired exactly now":   {short.ID, t0.Add(time.Minute), keel.KindNotFound, "expired"},
			"expired before worker": {short.ID, t0.Add(time.Hour), keel.KindNotFound, "expired"},
		} {
			t.Run(name, func(t *testing.T) {
				e.clock.Set(tc.at)
				defer e.clock.Set(t0)
				_, err := e.m.Get(ctx, tc.id)
				wantKind(t, err, tc.kind)
				if !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("error %q does not say %q", err, tc.message)
				}
			})
		}

		t.Run("expired lease stays stored until revoked", func(t *testing.T) {
			if _, ok := e.get(t, short.ID); !ok {
				t.Fatal("expired lease removed by a read")
			}
		})
	})
}

func TestLeaseTTL(t *testing.T) {
	l := Lease{ExpireTime: t0.Add(90 * time.Second)}
	for name, tc := range map[string]struct {
		now  time.Time
		want time.Duration
	}{
		"before":  {t0, 90 * time.Second},
		"at":      {t0.Add(90 * time.Second), 0},
		"after":   {t0.Add(time.Hour), 0},
		"partial": {t0.Add(500 * time.Millisecond), 89500 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			if got := l.TTL(tc.now); got != tc.want {
				t.Fatalf("TTL = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestList(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if err := e.m.register("auth/token/", e.rev, nil); err != nil {
			t.Fatal(err)
		}
		a := e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		b := e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		e.issue(t, IssueRequest{Path: "ldap/creds/app2"})
		e.issue(t, IssueRequest{Path: "ldap/static-cred/x"})
		e.issue(t, IssueRequest{Path: "auth/token/create"})
		expired := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Second})
		e.clock.Advance(time.Minute)

		last := func(id string) string { return id[strings.LastIndexByte(id, '/')+1:] }
		leaves := []string{last(a.ID), last(b.ID), last(expired.ID)}
		slices.Sort(leaves)
		for name, tc := range map[string]struct {
			prefix string
			want   []string
		}{
			"top level":          {"", []string{"auth/", "ldap/"}},
			"mount":              {"ldap/", []string{"creds/", "static-cred/"}},
			"without slash":      {"ldap", []string{"creds/", "static-cred/"}},
			"folders":            {"ldap/creds/", []string{"app/", "app2/"}},
			"leaves and expired": {"ldap/creds/app/", leaves},
			"leaves no slash":    {"ldap/creds/app", leaves},
			"nothing":            {"nope/", []string{}},
			"a lease id":         {a.ID, []string{}},
		} {
			t.Run(name, func(t *testing.T) {
				page, err := e.m.List(context.Background(), tc.prefix, keel.ListRequest{})
				if err != nil {
					t.Fatal(err)
				}
				if got := page.Items; got == nil || !equalStrings(got, tc.want) || page.Next != "" {
					t.Fatalf("List(%q) = %#v, next %q; want %q", tc.prefix, got, page.Next, tc.want)
				}
			})
		}
	})
}
