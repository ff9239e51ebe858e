package ldapengine

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// storedConfig is the configuration record as stored, bindpass included.
func storedConfig(t *testing.T, v *env) (Config, bool) {
	t.Helper()
	var c Config
	var found bool
	if err := v.e.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var err error
		found, err = getJSON(tx, keyConfig, &c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c, found
}

// wantFields fails t unless err is of kind keel.KindInvalid naming
// exactly fields, in any order.
func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	wantKind(t, err, keel.KindInvalid)
	var got []string
	for _, fe := range keel.FieldErrors(err) {
		got = append(got, fe.Field)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(fields))
	if !slices.Equal(slices.Compact(got), want) {
		t.Fatalf("fields of %v = %v, want %v", err, got, want)
	}
}

func TestUpdateConfigMergesIntoStored(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		// The first write creates, with the defaults.
		if err := v.e.UpdateConfig(ctx, ConfigRequest{BindDN: new(bindDN), BindPass: new("bind-pw"),
			URL: new("ldap://ldap.example.org"), UserDN: new("ou=users,dc=example,dc=org"), UserAttr: new("uid")}); err != nil {
			t.Fatal(err)
		}
		// A write of one field changes that field only.
		if err := v.e.UpdateConfig(ctx, ConfigRequest{RequestTimeout: new(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		c, err := v.e.GetConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.BindDN != bindDN || c.URL != "ldap://ldap.example.org" || c.UserDN != "ou=users,dc=example,dc=org" ||
			c.UserAttr != "uid" || c.RequestTimeout != 30*time.Second || c.ConnectionTimeout != defaultConnectionTimeout ||
			c.Schema != SchemaOpenLDAP || c.Length != defaultPasswordLength {
			t.Fatalf("merged config %+v", c)
		}
		if s, _ := storedConfig(t, v); s.BindPass != "bind-pw" {
			t.Fatalf("stored bindpass %q, want the first write's", s.BindPass)
		}
		// An empty bindpass keeps the stored one too; a pointer to a zero
		// value sets the default.
		if err := v.e.UpdateConfig(ctx, ConfigRequest{BindPass: new(""), RequestTimeout: new(time.Duration(0)), URL: new("")}); err != nil {
			t.Fatal(err)
		}
		s, _ := storedConfig(t, v)
		if s.BindPass != "bind-pw" || s.RequestTimeout != defaultRequestTimeout || s.URL != defaultURL || s.UserAttr != "uid" {
			t.Fatalf("stored %+v", s)
		}
	})
}

func TestUpdateConfigRefusedLeavesStoreAsItWas(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		if err := v.e.UpdateConfig(ctx, ConfigRequest{RequestTimeout: new(time.Minute)}); err != nil {
			wantFields(t, err, "BindDN", "BindPass") // every problem at once
		} else {
			t.Fatal("a first write without binddn and bindpass was accepted")
		}
		if _, found := storedConfig(t, v); found {
			t.Fatal("a refused first write was stored")
		}
		v.configure(t)
		before, _ := storedConfig(t, v)
		err := v.e.UpdateConfig(ctx, ConfigRequest{BindDN: new(""), URL: new("http://x"), GroupFilter: new("{{"),
			RequestTimeout: new(time.Hour), GroupDN: new("ou=groups")})
		wantFields(t, err, "BindDN", "URL", "GroupFilter")
		if after, _ := storedConfig(t, v); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused merge changed the store:\n%+v\n%+v", before, after)
		}
	})
}

// Length and PasswordPolicy exclude each other in the merged
// configuration, not only within one write.
func TestUpdateConfigLengthAndPolicyAcrossMerge(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		if err := v.e.UpdateConfig(ctx, ConfigRequest{BindDN: new(bindDN), BindPass: new("bind-pw"), Length: new(20)}); err != nil {
			t.Fatal(err)
		}
		wantFields(t, v.e.UpdateConfig(ctx, ConfigRequest{PasswordPolicy: new("digits")}), "Length")
		wantFields(t, v.e.UpdateConfig(ctx, ConfigRequest{PasswordPolicy: new("digits"), Length: new(12)}), "Length")
		if err := v.e.UpdateConfig(ctx, ConfigRequest{PasswordPolicy: new("digits"), Length: new(0)}); err != nil {
			t.Fatal("switching from length to a policy in one write:", err)
		}
		wantFields(t, v.e.UpdateConfig(ctx, ConfigRequest{Length: new(12)}), "Length")
		c, err := v.e.GetConfig(ctx)
		if err != nil || c.PasswordPolicy != "digits" || c.Length != 0 {
			t.Fatalf("config %+v, %v", c, err)
		}
	})
}

// A new bindpass drops a pending root rotation record; a write without one
// keeps it (it may hold the password the directory has).
func TestUpdateConfigBindPassAndRootRecord(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		v.configure(t)
		putWAL := func() {
			t.Helper()
			if err := v.e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				return putJSON(tx, keyRootWAL, &walRecord{DN: bindDN, Password: "next", Old: "bind-pw", At: t0})
			}); err != nil {
				t.Fatal(err)
			}
		}
		hasWAL := func() bool {
			t.Helper()
			var found bool
			if err := v.e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				var err error
				found, err = getJSON(tx, keyRootWAL, &walRecord{})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return found
		}
		putWAL()
		if err := v.e.UpdateConfig(ctx, ConfigRequest{RequestTimeout: new(time.Minute), BindPass: new("")}); err != nil || !hasWAL() {
			t.Fatalf("a write without bindpass: %v; the root record must stay", err)
		}
		if err := v.e.UpdateConfig(ctx, ConfigRequest{BindPass: new("other-pw")}); err != nil || hasWAL() {
			t.Fatalf("a write with a new bindpass: %v; the root record must go", err)
		}
		putWAL()
		wantFields(t, v.e.UpdateConfig(ctx, ConfigRequest{BindPass: new("third-pw"), Schema: new("x500")}), "Schema")
		if !hasWAL() {
			t.Fatal("a refused write dropped the root record")
		}
	})
}

// The settings of Vault that keel does not use are stored, read back with
// Vault's defaults, and checked as Vault checks them; those keel cannot
// honour are refused.
func TestConfigVaultOnlySettings(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		c, err := v.e.GetConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.GroupFilter != defaultGroupFilter || c.GroupAttr != "cn" || c.UserFilter != defaultUserFilter ||
			c.DenyNullBind == nil || !*c.DenyNullBind || c.DereferenceAliases != "never" || c.CredentialType != "password" ||
			c.UsePre111GroupCNBehavior != nil || c.CaseSensitiveNames || c.RotationPeriod != 0 || !c.LastBindPasswordRotation.IsZero() {
			t.Fatalf("defaults %+v", c)
		}
		if err := v.e.UpdateConfig(ctx, ConfigRequest{GroupDN: new("ou=groups"), GroupFilter: new("(member={{.UserDN}})"),
			DenyNullBind: new(false), UsePre111GroupCNBehavior: new(true), CaseSensitiveNames: new(true),
			DereferenceAliases: new("always"), MaxPageSize: new(500), SkipStaticRoleImportRotation: new(true),
			DisableAutomatedRotation: new(true), RotationPeriod: new(time.Duration(0)), RotationSchedule: new("")}); err != nil {
			t.Fatal(err)
		}
		c, _ = v.e.GetConfig(ctx)
		if c.GroupDN != "ou=groups" || c.GroupFilter != "(member={{.UserDN}})" || *c.DenyNullBind || !*c.UsePre111GroupCNBehavior ||
			!c.CaseSensitiveNames || c.DereferenceAliases != "always" || c.MaxPageSize != 500 || !c.SkipStaticRoleImportRotation ||
			!c.DisableAutomatedRotation || c.URL != "ldap://127.0.0.1:1" {
			t.Fatalf("stored settings %+v", c)
		}
		for name, tc := range map[string]struct {
			u     ConfigRequest
			field string
		}{
			"group filter":        {ConfigRequest{GroupFilter: new("{{.UserDN")}, "GroupFilter"},
			"user filter":         {ConfigRequest{UserFilter: new("{{end}}")}, "UserFilter"},
			"dereference aliases": {ConfigRequest{DereferenceAliases: new("sometimes")}, "DereferenceAliases"},
			"password phrases":    {ConfigRequest{CredentialType: new("phrase")}, "CredentialType"},
			"credential type":     {ConfigRequest{CredentialType: new("key")}, "CredentialType"},
			"root rotation":       {ConfigRequest{RotationPeriod: new(24 * time.Hour)}, "RotationPeriod"},
			"root schedule":       {ConfigRequest{RotationSchedule: new("0 * * * *")}, "RotationSchedule"},
			"root window":         {ConfigRequest{RotationWindow: new(time.Hour)}, "RotationWindow"},
		} {
			t.Run(name, func(t *testing.T) { wantFields(t, v.e.UpdateConfig(ctx, tc.u), tc.field) })
		}

		// PutConfig replaces the whole: what it leaves zero takes the
		// default, but the bind password and the time of the last root
		// rotation stay.
		at := t0.Add(time.Hour)
		s, _ := storedConfig(t, v)
		s.LastBindPasswordRotation = at
		if err := v.e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return putJSON(tx, keyConfig, &s)
		}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutConfig(ctx, Config{BindDN: bindDN}); err != nil {
			t.Fatal(err)
		}
		s, _ = storedConfig(t, v)
		if s.GroupDN != "" || s.URL != defaultURL || !*s.DenyNullBind || s.UsePre111GroupCNBehavior != nil ||
			s.BindPass != "bind-pw" || !s.LastBindPasswordRotation.Equal(at) {
			t.Fatalf("after PutConfig %+v", s)
		}
		if err := v.e.UpdateConfig(ctx, ConfigRequest{BindPass: new("new-pw")}); err != nil {
			t.Fatal(err)
		}
		if s, _ := storedConfig(t, v); !s.LastBindPasswordRotation.Equal(at) {
			t.Fatalf("a write lost last_bind_password_rotation: %v", s.LastBindPasswordRotation)
		}
	})
}
