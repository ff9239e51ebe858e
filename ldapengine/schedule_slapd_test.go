package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestRotationEveryFiveSecondsAcrossARestart is the promise on
// the real clock against slapd: a static role with the minimum period
// shows a new password at least three times in about eleven seconds,
// every one of which binds, before and after the engine is replaced by a
// new one over the same store.
func TestRotationEveryFiveSecondsAcrossARestart(t *testing.T) {
	t.Parallel()
	srv := slapdtest.Start(t)
	ctx := context.Background()
	store := memstore.New(nil)
	open := func() *Engine {
		e, err := New(storage.Sub(store, storePrefix("openldap")), FlavorOpenLDAP, "openldap", &Options{RetryInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		return e
	}
	watch := func(e *Engine, phase string) {
		seen := map[string]bool{}
		for end := time.Now().Add(11 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			c, err := e.GetStaticCred(ctx, "alice")
			if err != nil || seen[c.Password] {
				continue // a change under way; or no news
			}
			if err := (LDAP{}).Bind(ctx, Conn{URLs: []string{srv.URL}}, slapdtest.AliceDN, c.Password); err != nil {
				// A later rotation may have replaced it meanwhile: only
				// the current one must bind.
				if now, _ := e.GetStaticCred(ctx, "alice"); now.Password == c.Password {
					t.Fatalf("%s: the password static-cred gives does not bind: %v", phase, err)
				}
				continue
			}
			seen[c.Password] = true
		}
		if len(seen) < 3 {
			t.Fatalf("%s: %d passwords in 11 s with a 5 s period, want at least 3", phase, len(seen))
		}
	}
	e := open()
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL, RequestTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: slapdtest.AliceDN, RotationPeriod: MinRotationPeriod}); err != nil {
		t.Fatal(err)
	}
	watch(e, "before the restart")
	e.Stop()
	e = open()
	defer e.Stop()
	watch(e, "after the restart")
}
