package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestIssuerTxEnd: an engine ends one of its mount's leases inside its own
// transaction: the record and its index entries go with the engine's
// write, no Revoker is called and no right is asked; a missing lease is
// not an error; another mount's lease id is refused, and so is a Tx kept
// past its transaction.
func TestIssuerTxEnd(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		auth := &recordingAuthorizer{}
		e := newEnv(t, open, &Options{Authorizer: auth}, nil)
		iss := engineIssuer(t, e)
		ctx := context.Background()
		issue := func(t *testing.T) Lease {
			t.Helper()
			l, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/app", TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		end := func(id string, then error) error {
			return iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				if err := tx.Put("accounts/app", []byte("in")); err != nil {
					return err
				}
				if err := leases.End(id); err != nil {
					return err
				}
				return then
			})
		}
		dbKeys := func(t *testing.T) []string {
			t.Helper()
			var out []string
			for _, k := range keysUnder(t, e.raw, keyPrefix) {
				if strings.Contains(k, "db/") {
					out = append(out, k)
				}
			}
			return out
		}

		t.Run("ends in the engine's transaction", func(t *testing.T) {
			l := issue(t)
			auth.Take()
			if err := end(l.ID, nil); err != nil {
				t.Fatal(err)
			}
			if asks := auth.Take(); len(asks) != 0 {
				t.Fatalf("End asked for %+v", asks)
			}
			if keys := dbKeys(t); len(keys) != 0 {
				t.Fatalf("keys of the ended lease left: %q", keys)
			}
			if storagetest.Dump(t, e.raw)["engine/accounts/app"] != "in" {
				t.Fatal("the engine's write is lost")
			}
			_, err := e.m.Get(ctx, l.ID)
			wantKind(t, err, keel.KindNotFound)
			if ids := e.rev.ids(); len(ids) != 0 {
				t.Fatalf("revoker called for %q", ids)
			}
		})

		t.Run("missing lease", func(t *testing.T) {
			l := issue(t)
			if err := end(l.ID, nil); err != nil {
				t.Fatal(err)
			}
			if err := end(l.ID, nil); err != nil {
				t.Fatalf("ending an ended lease: %v", err)
			}
			if err := end("db/creds/app/none", nil); err != nil {
				t.Fatalf("ending an unknown lease: %v", err)
			}
		})

		t.Run("another mount's lease", func(t *testing.T) {
			other := e.issue(t, IssueRequest{Path: "ldap/creds/app"})
			mine := issue(t)
			before := storagetest.Dump(t, e.raw)
			for _, id := range []string{other.ID, "", "db/", "dbx/creds/app/x", "ldap/creds/app/" + strings.TrimPrefix(mine.ID, "db/creds/app/")} {
				err := end(id, nil)
				wantKind(t, err, keel.KindInvalid)
				if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "LeaseID" {
					t.Fatalf("End(%q): field errors %v, want LeaseID", id, fe)
				}
			}
			if after := storagetest.Dump(t, e.raw); !mapsEqual(before, after) {
				t.Fatal("a refused End changed the store")
			}
			if _, found := e.get(t, other.ID); !found {
				t.Fatal("another mount's lease was ended")
			}
			if err := end(mine.ID, nil); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("rolled back with the caller", func(t *testing.T) {
			l := issue(t)
			boom := errors.New("engine failed")
			if err := end(l.ID, boom); !errors.Is(err, boom) {
				t.Fatal(err)
			}
			if got, err := e.m.Get(ctx, l.ID); err != nil || got.ID != l.ID {
				t.Fatalf("lease after a rolled-back End: %+v, %v", got, err)
			}
			if keys := dbKeys(t); len(keys) != 2 {
				t.Fatalf("keys after a rolled-back End: %q, want the record and its expiry-index entry", keys)
			}
			if err := end(l.ID, nil); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("irrevocable lease", func(t *testing.T) {
			l := issue(t)
			e.rev.setFail(func(Lease) error { return Permanent(errors.New("gone for good")) })
			defer e.rev.setFail(nil)
			if err := e.m.Revoke(ctx, l.ID, true); err == nil {
				t.Fatal("failing revocation succeeded")
			}
			if got, _ := e.get(t, l.ID); !got.Irrevocable {
				t.Fatalf("lease %+v, want irrevocable", got)
			}
			if err := end(l.ID, nil); err != nil {
				t.Fatal(err)
			}
			if keys := dbKeys(t); len(keys) != 0 {
				t.Fatalf("keys of the ended irrevocable lease left: %q", keys)
			}
		})

		t.Run("issued and ended in one transaction", func(t *testing.T) {
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				l, err := leases.Issue(IssueRequest{Path: "db/creds/app"})
				if err != nil {
					return err
				}
				return leases.End(l.ID)
			})
			if err != nil {
				t.Fatal(err)
			}
			if keys := dbKeys(t); len(keys) != 0 {
				t.Fatalf("keys left: %q", keys)
			}
		})

		t.Run("after the transaction", func(t *testing.T) {
			l := issue(t)
			var kept *Tx
			if err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error { kept = leases; return nil }); err != nil {
				t.Fatal(err)
			}
			wantKind(t, kept.End(l.ID), keel.KindInternal)
			_, err := kept.Issue(IssueRequest{Path: "db/creds/app"})
			wantKind(t, err, keel.KindInternal)
			if _, found := e.get(t, l.ID); !found {
				t.Fatal("End after the transaction removed the lease")
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
