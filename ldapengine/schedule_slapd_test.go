package ldapengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestRotationEveryFiveSecondsAcrossARestart is the promise on
// the real clock against slapd: a static role with the minimum period
// shows three passwords within about two periods (ten seconds, and a
// slack derived from a baseline of the run), every one of which binds,
// before and after the engine is replaced by a new one over the same
// store.
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
	// baseline is the slowest of a few static-cred and bind round trips,
	// measured below on this machine under its present load; the bound
	// of three passwords gets a slack derived from it.
	var baseline time.Duration
	measure := func(e *Engine) {
		for range 3 {
			start := time.Now()
			c, err := e.GetStaticCred(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			_ = (LDAP{}).Bind(ctx, Conn{URLs: []string{srv.URL}}, slapdtest.AliceDN, c.Password)
			baseline = max(baseline, time.Since(start))
		}
	}
	// watch waits until static-cred has shown three passwords, every one
	// of which binds, and fails t unless that took at most two periods
	// and the slack.
	watch := func(e *Engine, phase string) {
		t.Helper()
		seen := map[string]bool{}
		d := keeltest.Eventually(t, phase+": three passwords", func() error {
			c, err := e.GetStaticCred(ctx, "alice")
			if err != nil || seen[c.Password] {
				return fmt.Errorf("%d passwords seen", len(seen)) // a change under way; or no news
			}
			if err := (LDAP{}).Bind(ctx, Conn{URLs: []string{srv.URL}}, slapdtest.AliceDN, c.Password); err != nil {
				// A later rotation may have replaced it meanwhile: only
				// the current one must bind.
				if now, _ := e.GetStaticCred(ctx, "alice"); now.Password == c.Password {
					t.Fatalf("%s: the password static-cred gives does not bind: %v", phase, err)
				}
				return fmt.Errorf("%d passwords seen", len(seen))
			}
			seen[c.Password] = true
			if len(seen) < 3 {
				return fmt.Errorf("%d passwords seen", len(seen))
			}
			return nil
		})
		slack := time.Second + 20*baseline
		t.Logf("%s: three passwords in %s (the slack of this run: %s)", phase, d.Round(time.Millisecond), slack.Round(time.Millisecond))
		if limit := 2*minRotationPeriod + slack; d > limit {
			t.Fatalf("%s: three passwords in %s with a %s period, want within %s", phase, d.Round(time.Millisecond), minRotationPeriod, limit.Round(time.Millisecond))
		}
	}
	e := open()
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL, RequestTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: slapdtest.AliceDN, RotationPeriod: minRotationPeriod}); err != nil {
		t.Fatal(err)
	}
	measure(e)
	watch(e, "before the restart")
	e.Stop()
	e = open()
	defer e.Stop()
	watch(e, "after the restart")
}
