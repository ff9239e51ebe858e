package lease

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			op   func(ctx context.Context, m *Manager, id string) error
			want ask
		}{
			"get": {func(ctx context.Context, m *Manager, id string) error {
				_, err := m.Get(ctx, id)
				return err
			}, ask{Cap: keel.CapUpdate, Resource: "sys/leases/lookup"}},
			"list": {func(ctx context.Context, m *Manager, _ string) error {
				_, err := m.List(ctx, "ldap/creds", keel.ListRequest{})
				return err
			}, ask{Cap: keel.CapSudo, Resource: "sys/leases/lookup/ldap/creds"}},
			"renew": {func(ctx context.Context, m *Manager, id string) error {
				_, err := m.Renew(ctx, id, 0)
				return err
			}, ask{Cap: keel.CapUpdate, Resource: "sys/leases/renew"}},
			"revoke": {func(ctx context.Context, m *Manager, id string) error {
				return m.Revoke(ctx, id, false)
			}, ask{Cap: keel.CapUpdate, Resource: "sys/leases/revoke"}},
			"revoke sync": {func(ctx context.Context, m *Manager, id string) error {
				return m.Revoke(ctx, id, true)
			}, ask{Cap: keel.CapUpdate, Resource: "sys/leases/revoke"}},
			"revoke-prefix": {func(ctx context.Context, m *Manager, _ string) error {
				return m.RevokePrefix(ctx, "ldap/creds", false)
			}, ask{Cap: keel.CapSudo, Resource: "sys/leases/revoke-prefix/ldap/creds"}},
			"revoke-force": {func(ctx context.Context, m *Manager, _ string) error {
				return m.RevokeForce(ctx, "ldap/")
			}, ask{Cap: keel.CapSudo, Resource: "sys/leases/revoke-force/ldap/"}},
			"tidy": {func(ctx context.Context, m *Manager, _ string) error {
				_, err := m.Tidy(ctx)
				return err
			}, ask{Cap: keel.CapUpdate, Resource: "sys/leases/tidy"}},
			"count": {func(ctx context.Context, m *Manager, _ string) error {
				_, err := m.CountIrrevocable(ctx)
				return err
			}, ask{Cap: keel.CapRead, Resource: "sys/leases/count"}},
			"list irrevocable": {func(ctx context.Context, m *Manager, _ string) error {
				_, err := m.ListIrrevocable(ctx, keel.ListRequest{})
				return err
			}, ask{Cap: keel.CapSudo, Resource: "sys/leases"}},
		} {
			t.Run(name, func(t *testing.T) {
				auth := &recordingAuthorizer{}
				e := newEnv(t, open, &Options{Authorizer: auth}, nil)
				l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
				if asks := auth.Take(); len(asks) != 0 {
					t.Fatalf("Issue asked for %v", asks)
				}
				ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice"})
				if err := tc.op(ctx, e.m, l.ID); err != nil {
					t.Fatal(err)
				}
				if asks := auth.Take(); len(asks) != 1 || asks[0] != tc.want {
					t.Fatalf("asked for %v, want [%v]", asks, tc.want)
				}

				auth.SetDeny(true)
				l = e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
				before, calls := storagetest.Dump(t, e.raw), len(e.rev.ids())
				err := tc.op(ctx, e.m, l.ID)
				wantKind(t, err, keel.KindForbidden)
				if !mapsEqual(before, storagetest.Dump(t, e.raw)) || len(e.rev.ids()) != calls {
					t.Fatal("a forbidden operation had an effect")
				}
			})
		}
	})
}

func TestStepAndIssueNeedNoRight(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		auth := &recordingAuthorizer{}
		auth.SetDeny(true)
		e := newEnv(t, open, &Options{Authorizer: auth}, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		e.step(t, l.ExpireTime)
		if len(e.rev.ids()) != 1 || len(auth.Take()) != 0 {
			t.Fatal("Issue or Step asked for a right")
		}
	})
}
