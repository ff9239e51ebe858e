package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/ldapengine/internal/credtemplate"
)

func BenchmarkTemplateUsername(b *testing.B) {
	now := time.Now()
	d := credtemplate.UsernameData{DisplayName: "alice", RoleName: "app"}
	for b.Loop() {
		if _, err := credtemplate.Render("username_template", defaultUsernameTemplate, credtemplate.Username, d, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTemplateCreationLDIF(b *testing.B) {
	now := time.Now()
	d := credtemplate.LDIFData{Username: "v_alice_app_AbCdEfGhIj_1700000000", Password: "pw", DisplayName: "alice", RoleName: "app"}
	for b.Loop() {
		if _, _, err := renderLDIF("creation_ldif", testCreationLDIF, d, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCredsFake is creds and revocation end to end on the fake
// directory: the engine's own cost.
func BenchmarkCredsFake(b *testing.B) {
	v := newDynEnv(b, everystore.Mem, FlavorLDAP, nil)
	v.putTestRole(b, "app", nil)
	ctx := asCaller("alice")
	for b.Loop() {
		c, err := v.e.CreateDynamicCred(ctx, "app")
		if err != nil {
			b.Fatal(err)
		}
		if err := v.leases.Revoke(context.Background(), c.Lease.ID, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCredsSlapd is creds and revocation end to end against a real
// slapd; it skips when slapd is not installed.
func BenchmarkCredsSlapd(b *testing.B) {
	s := startDynSlapd(b)
	ctx := asCaller("alice")
	for b.Loop() {
		c, err := s.e.CreateDynamicCred(ctx, "app")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.leases.Revoke(context.Background(), c.Lease.ID, true); err != nil {
			b.Fatal(err)
		}
	}
}
