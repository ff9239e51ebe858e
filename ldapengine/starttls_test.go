package ldapengine

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage/memstore"
)

// TestSlapdStartTLS rotates the root password over StartTLS against a slapd
// with a certificate of a throwaway CA: trusted through `certificate`,
// refused without it, accepted with insecure_tls. It skips when slapd is
// not installed.
func TestSlapdStartTLS(t *testing.T) {
	srv := slapdtest.Start(t, slapdtest.WithTLS())
	ctx := context.Background()
	if !strings.HasPrefix(srv.URL, "ldap://127.0.0.1:") {
		t.Fatalf("url %q", srv.URL)
	}
	newEngine := func(t *testing.T, c Config) *Engine {
		t.Helper()
		e, err := New(memstore.New(nil), FlavorOpenLDAP, "openldap", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.URL, c.BindDN, c.StartTLS = srv.URL, slapdtest.BindDN, true
		if err := e.PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		return e
	}
	bindPW := slapdtest.BindPW

	t.Run("without the CA the certificate is refused", func(t *testing.T) {
		e := newEngine(t, Config{BindPass: bindPW})
		err := e.RotateRoot(ctx)
		if err == nil {
			t.Fatal("root rotated over StartTLS with an untrusted certificate")
		}
		t.Log(err)
		wantKind(t, err, keel.KindUnavailable)
		if msg := err.Error(); !strings.Contains(msg, "starttls") || !strings.Contains(msg, "certificate signed by unknown authority") {
			t.Fatalf("unclear error: %v", err)
		}
		// The directory still has the old password.
		if err := (LDAP{}).Bind(ctx, Conn{URLs: []string{srv.URL}}, slapdtest.BindDN, bindPW); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("with the CA as certificate", func(t *testing.T) {
		e := newEngine(t, Config{BindPass: bindPW, Certificate: srv.CAPEM})
		if err := e.RotateRoot(ctx); err != nil {
			t.Fatal(err)
		}
		cfg, err := e.loadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn := cfg.conn()
		if err := (LDAP{}).Bind(ctx, conn, slapdtest.BindDN, cfg.BindPass); err != nil {
			t.Fatalf("new root password does not bind over StartTLS: %v", err)
		}
		wantKind(t, LDAP{}.Bind(ctx, conn, slapdtest.BindDN, bindPW), keel.KindUnauthenticated)
		bindPW = cfg.BindPass
	})
	t.Run("insecure_tls skips verification", func(t *testing.T) {
		e := newEngine(t, Config{BindPass: bindPW, InsecureTLS: true})
		if err := e.RotateRoot(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
