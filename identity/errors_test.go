package identity

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestErrorsArePrefixedOnce: the message of every error the package
// returns starts with "identity: ", and says it once, whatever failed: a
// refused right, a broken rule, a missing group, a limit, the store, the
// entity directory, ctx. The kind is the one the documentation gives.
func TestErrorsArePrefixedOnce(t *testing.T) {
	ctx := context.Background()
	authz := &recordingAuthorizer{}
	// A store that bounds its transactions, as etcd does.
	bounded := func(t testing.TB) storage.Store {
		s := memstore.New(&memstore.Options{Limits: storage.Limits{MaxKeySize: 512, MaxTxOps: 128, MaxTxReads: 128}})
		t.Cleanup(func() { s.Close() })
		return s
	}
	e := newEnv(t, bounded, &Options{Authorizer: authz, Entities: fakeDirectory{"e1": true}}, nil)
	a := e.create(t, "a")
	b := e.create(t, "b", a)
	many := make([]string, e.g.Limits().MaxMemberGroups+1)
	for i := range many {
		many[i] = e.create(t, strings.Repeat("m", i+1))
	}
	// A record, and an entry of the name index, that do not decode.
	if err := e.raw.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		return tx.Put(keyPrefix+groupKey("corrupt"), []byte("{"))
	}); err != nil {
		t.Fatal(err)
	}
	broken := newEnv(t, everystore.Mem, nil, nil)
	if err := broken.raw.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		return tx.Put(keyPrefix+namePrefix+"broken", []byte("{"))
	}); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	closed := newEnv(t, everystore.Mem, nil, nil)
	closed.raw.Close()

	for name, tc := range map[string]struct {
		op   func() error
		kind keel.Kind
		deny bool
	}{
		"New without a store":         {op: func() error { _, err := New(nil, nil); return err }, kind: keel.KindInvalid},
		"Get of a missing id":         {op: func() error { _, err := e.g.Get(ctx, "nope"); return err }, kind: keel.KindNotFound},
		"GetByName of a missing name": {op: func() error { _, err := e.g.GetByName(ctx, "nope"); return err }, kind: keel.KindNotFound},
		"Get of a corrupt record":     {op: func() error { _, err := e.g.Get(ctx, "corrupt"); return err }, kind: keel.KindInternal},
		"Update of a missing id":      {op: func() error { _, err := e.g.Update(ctx, "nope", GroupRequest{}); return err }, kind: keel.KindNotFound},
		"CreateOrUpdate of a missing id": {op: func() error {
			_, err := e.g.CreateOrUpdate(ctx, "nope", GroupRequest{})
			return err
		}, kind: keel.KindNotFound},
		"CreateOrUpdate breaking rules": {op: func() error {
			_, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Type: new("team"), Policies: &[]string{"root"}, MemberGroupIDs: &[]string{""}})
			return err
		}, kind: keel.KindInvalid},
		"CreateOrUpdateByName of an empty name": {op: func() error {
			_, err := e.g.CreateOrUpdateByName(ctx, "", GroupRequest{})
			return err
		}, kind: keel.KindInvalid},
		"Update making a cycle": {op: func() error {
			_, err := e.g.Update(ctx, a, GroupRequest{MemberGroupIDs: &[]string{b}})
			return err
		}, kind: keel.KindInvalid},
		"Update beyond MaxMemberGroups": {op: func() error {
			_, err := e.g.Update(ctx, a, GroupRequest{MemberGroupIDs: &many})
			return err
		}, kind: keel.KindInvalid},
		"CreateOrUpdateByName of a name beyond the key size": {op: func() error {
			_, err := e.g.CreateOrUpdateByName(ctx, strings.Repeat("n", 600), GroupRequest{})
			return err
		}, kind: keel.KindTooLarge},
		"unknown member entity": {op: func() error {
			_, err := e.g.Update(ctx, a, GroupRequest{MemberEntityIDs: &[]string{"e9"}})
			return err
		}, kind: keel.KindInvalid},
		"entity directory down": {op: func() error {
			_, err := e.g.Update(ctx, a, GroupRequest{MemberEntityIDs: &[]string{"broken"}})
			return err
		}, kind: keel.KindUnavailable},
		"Delete of a missing id":         {op: func() error { return e.g.Delete(ctx, "nope") }, kind: keel.KindNotFound},
		"DeleteByName of a missing name": {op: func() error { return e.g.DeleteByName(ctx, "nope") }, kind: keel.KindNotFound},
		"Get refused":                    {op: func() error { _, err := e.g.Get(ctx, a); return err }, kind: keel.KindForbidden, deny: true},
		"CreateOrUpdateByName refused":   {op: func() error { _, err := e.g.CreateOrUpdateByName(ctx, "a", GroupRequest{}); return err }, kind: keel.KindForbidden, deny: true},
		"Delete refused":                 {op: func() error { return e.g.Delete(ctx, a) }, kind: keel.KindForbidden, deny: true},
		"List refused":                   {op: func() error { _, err := e.g.List(ctx, keel.ListRequest{}); return err }, kind: keel.KindForbidden, deny: true},
		"ListNames refused":              {op: func() error { _, err := e.g.ListNames(ctx, keel.ListRequest{}); return err }, kind: keel.KindForbidden, deny: true},
		"ListNames over a corrupt index": {op: func() error {
			_, err := broken.g.ListNames(ctx, keel.ListRequest{})
			return err
		}, kind: keel.KindInternal},
		"Get with a canceled ctx":          {op: func() error { _, err := e.g.Get(canceled, a); return err }, kind: keel.KindCanceled},
		"List on a closed store":           {op: func() error { _, err := closed.g.List(ctx, keel.ListRequest{}); return err }, kind: keel.KindUnavailable},
		"CreateOrUpdate on a closed store": {op: func() error { _, err := closed.g.CreateOrUpdate(ctx, "", GroupRequest{}); return err }, kind: keel.KindUnavailable},
	} {
		t.Run(name, func(t *testing.T) {
			authz.SetDeny(tc.deny)
			defer authz.SetDeny(false)
			err := tc.op()
			if err == nil {
				t.Fatal("no error")
			}
			if keel.KindOf(err) != tc.kind {
				t.Errorf("kind %v, want %v: %v", keel.KindOf(err), tc.kind, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "identity: ") || strings.Count(msg, "identity: ") != 1 {
				t.Errorf("message %q: want it to start with %q, once", msg, "identity: ")
			}
		})
	}
}
