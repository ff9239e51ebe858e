package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
)

func TestConfigRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		base := Config{BindDN: bindDN, BindPass: "pw"}
		cases := map[string]struct {
			flavor Flavor
			edit   func(*Config)
			field  string // "" means accepted
		}{
			"defaults accepted":                {FlavorOpenLDAP, func(*Config) {}, ""},
			"binddn required":                  {FlavorLDAP, func(c *Config) { c.BindDN = "" }, "BindDN"},
			"length with password_policy":      {FlavorLDAP, func(c *Config) { c.Length = 20; c.PasswordPolicy = "p" }, "Length"},
			"bad schema":                       {FlavorLDAP, func(c *Config) { c.Schema = "novell" }, "Schema"},
			"bad url":                          {FlavorLDAP, func(c *Config) { c.URL = "http://x" }, "URL"},
			"url list":                         {FlavorLDAP, func(c *Config) { c.URL = "ldap://a:389, ldaps://b" }, ""},
			"openldap refuses userdn":          {FlavorOpenLDAP, func(c *Config) { c.UserDN = "ou=users" }, "UserDN"},
			"openldap refuses userattr":        {FlavorOpenLDAP, func(c *Config) { c.UserAttr = "uid" }, "UserAttr"},
			"openldap refuses upndomain":       {FlavorOpenLDAP, func(c *Config) { c.UPNDomain = "x.org" }, "UPNDomain"},
			"openldap refuses connection time": {FlavorOpenLDAP, func(c *Config) { c.ConnectionTimeout = time.Second }, "ConnectionTimeout"},
			"ldap accepts search settings":     {FlavorLDAP, func(c *Config) { c.UserDN = "ou=users"; c.UPNDomain = "x.org" }, ""},
			"tls min above max":                {FlavorLDAP, func(c *Config) { c.TLSMinVersion = "tls13"; c.TLSMaxVersion = "tls12" }, "TLSMaxVersion"},
			"bad tls version":                  {FlavorLDAP, func(c *Config) { c.TLSMinVersion = "ssl3" }, "TLSMinVersion"},
			"certificate not PEM":              {FlavorLDAP, func(c *Config) { c.Certificate = "nope" }, "Certificate"},
			"negative request timeout":         {FlavorLDAP, func(c *Config) { c.RequestTimeout = -1 }, "RequestTimeout"},
			"length beyond the bound":          {FlavorLDAP, func(c *Config) { c.Length = 1 << 62 }, "Length"},
			"bindpass required on first write": {FlavorLDAP, func(c *Config) { c.BindPass = "" }, "BindPass"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				v := newEnv(t, open, tc.flavor, nil)
				c := base
				tc.edit(&c)
				err := v.e.PutConfig(ctx, c)
				if tc.field == "" {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				wantKind(t, err, keel.KindInvalid)
				if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
					t.Fatalf("field errors %v, want %s", fe, tc.field)
				}
			})
		}
	})
}

func TestConfigDefaultsAndNoBindpass(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		for name, tc := range map[string]struct {
			flavor   Flavor
			schema   string
			userattr string
		}{
			"ldap openldap schema": {FlavorLDAP, SchemaOpenLDAP, "cn"},
			"ldap ad schema":       {FlavorLDAP, SchemaAD, "userPrincipalName"},
			"ldap racf schema":     {FlavorLDAP, SchemaRACF, "racfid"},
			"openldap":             {FlavorOpenLDAP, "", ""},
		} {
			t.Run(name, func(t *testing.T) {
				v := newEnv(t, open, tc.flavor, nil)
				if err := v.e.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "pw", Schema: tc.schema}); err != nil {
					t.Fatal(err)
				}
				c, err := v.e.GetConfig(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if c.BindPass != "" {
					t.Fatal("bindpass read back")
				}
				if c.UserAttr != tc.userattr || c.URL != defaultURL || c.RequestTimeout != 90*time.Second || c.Length != 64 || c.TLSMinVersion != "tls12" {
					t.Fatalf("defaults %+v", c)
				}
				// A rewrite without bindpass keeps the stored one.
				if err := v.e.PutConfig(ctx, Config{BindDN: bindDN, Schema: tc.schema}); err != nil {
					t.Fatal(err)
				}
				if err := v.e.DeleteConfig(ctx); err != nil {
					t.Fatal(err)
				}
				_, err = v.e.GetConfig(ctx)
				wantKind(t, err, keel.KindNotFound)
			})
		}
	})
}

func TestRotateRoot(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.RotateRoot(ctx); err != nil {
			t.Fatal(err)
		}
		pw, _ := v.dir.Password(bindDN)
		if pw == "bind-pw" || len(pw) != 64 {
			t.Fatalf("directory password %q", pw)
		}
		c, _ := v.e.GetConfig(ctx)
		if c.BindPass != "" {
			t.Fatal("new root password readable")
		}
		// The engine still works: it binds with the new password.
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRotateRootStoreFailurePutsOldBack(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		var fs *faultstore.Store
		v := newEnv(t, open, FlavorOpenLDAP, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		v.configure(t)
		fs.Fail(faultstore.OpPut, "ldapengine/mounts/ldap/config", 1, errors.New("injected"))
		if err := v.e.RotateRoot(ctx); err == nil {
			t.Fatal("rotation succeeded")
		}
		if pw, _ := v.dir.Password(bindDN); pw != "bind-pw" {
			t.Fatalf("directory holds %q, want the old password back", pw)
		}
		if err := v.e.RotateRoot(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRotateRootCrashRecovered(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		var fs *faultstore.Store
		v := newEnv(t, open, FlavorOpenLDAP, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		v.configure(t)
		// The store and the way back both fail: the directory keeps the new
		// password, the write-ahead record too.
		fs.Fail(faultstore.OpPut, "ldapengine/mounts/ldap/config", 1, errors.New("injected"))
		v.dir.FailSetPassword(bindDN, nil)
		orig := v.e.dir
		v.e.dir = &failSecond{Directory: orig}
		if err := v.e.RotateRoot(ctx); err == nil {
			t.Fatal("rotation succeeded")
		}
		v.e.dir = orig
		pw, _ := v.dir.Password(bindDN)
		if pw == "bind-pw" {
			t.Fatal("directory unchanged")
		}
		if _, err := v.e.Step(ctx, t0); err != nil {
			t.Fatal(err)
		}
		// The stored password is now the directory's: a role can be made.
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
	})
}

// failSecond fails every SetPassword after the first.
type failSecond struct {
	Directory
	n int
}

func (f *failSecond) SetPassword(ctx context.Context, c Conn, dn, pw string) error {
	f.n++
	if f.n > 1 {
		return keel.KindUnavailable
	}
	return f.Directory.SetPassword(ctx, c, dn, pw)
}

func TestStaticRoleRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		cases := map[string]struct {
			flavor Flavor
			req    StaticRoleRequest
			kind   keel.Kind
			field  string
		}{
			"username required":    {FlavorLDAP, StaticRoleRequest{DN: aliceDN, RotationPeriod: time.Hour}, keel.KindInvalid, "Username"},
			"period required":      {FlavorLDAP, StaticRoleRequest{Username: "alice", DN: aliceDN}, keel.KindInvalid, "RotationPeriod"},
			"period at least 5s":   {FlavorLDAP, StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: 4 * time.Second}, keel.KindInvalid, "RotationPeriod"},
			"openldap dn required": {FlavorOpenLDAP, StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}, keel.KindInvalid, "DN"},
			"ldap dn optional":     {FlavorLDAP, StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}, keel.KindNone, ""},
			"ldap unknown user":    {FlavorLDAP, StaticRoleRequest{Username: "zed", RotationPeriod: time.Hour}, keel.KindInvalid, "Username"},
			"dn not in directory":  {FlavorOpenLDAP, StaticRoleRequest{Username: "zed", DN: "uid=zed,ou=users,dc=example,dc=org", RotationPeriod: time.Hour}, keel.KindInvalid, "DN"},
			"skipped import too":   {FlavorLDAP, StaticRoleRequest{Username: "zed", DN: "uid=zed,dc=x", RotationPeriod: time.Hour, SkipImportRotation: libPtr(true)}, keel.KindInvalid, "DN"},
			"period exactly 5s":    {FlavorOpenLDAP, StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: 5 * time.Second}, keel.KindNone, ""},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				v := newEnv(t, open, tc.flavor, nil)
				v.configure(t)
				err := v.e.PutStaticRole(ctx, "r", tc.req)
				wantKind(t, err, tc.kind)
				if tc.field != "" {
					if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
						t.Fatalf("field errors %v, want %s", fe, tc.field)
					}
				}
				if _, err := v.e.GetStaticRole(ctx, "r"); tc.kind != keel.KindNone && !errors.Is(err, keel.KindNotFound) {
					t.Fatalf("a refused role was stored: %v", err)
				}
			})
		}
	})
}

func TestStaticRoleLifecycle(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		cred, err := v.e.GetStaticCred(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if pw, _ := v.dir.Password(aliceDN); pw != cred.Password || len(pw) != 64 {
			t.Fatalf("created role: directory %q, cred %q", pw, cred.Password)
		}
		if cred.TTL != time.Hour || cred.RotationPeriod != time.Hour || !cred.LastRotation.Equal(t0) || cred.DN != aliceDN {
			t.Fatalf("cred %+v", cred)
		}
		t.Run("one account per role", func(t *testing.T) {
			err := v.e.PutStaticRole(ctx, "alice2", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour})
			wantKind(t, err, keel.KindConflict)
		})
		t.Run("username immutable", func(t *testing.T) {
			err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "bob"})
			wantKind(t, err, keel.KindInvalid)
		})
		t.Run("dn immutable", func(t *testing.T) {
			err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{DN: bobDN})
			wantKind(t, err, keel.KindInvalid)
		})
		t.Run("rotate-role keeps last password in ldap", func(t *testing.T) {
			if err := v.e.RotateRole(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			c2, _ := v.e.GetStaticCred(ctx, "alice")
			if c2.LastPassword != cred.Password || c2.Password == cred.Password {
				t.Fatalf("after rotate: %+v", c2)
			}
		})
		t.Run("list and delete frees the account", func(t *testing.T) {
			names, _ := listAll(ctx, v.e.ListStaticRoles, "")
			if strings.Join(names, ",") != "alice" {
				t.Fatalf("list %v", names)
			}
			if err := v.e.DeleteStaticRole(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			_, err := v.e.GetStaticRole(ctx, "alice")
			wantKind(t, err, keel.KindNotFound)
			if err := v.e.PutStaticRole(ctx, "alice2", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour, SkipImportRotation: libPtr(true)}); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestOpenLDAPHasNoLastPassword(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		_ = v.e.RotateRole(ctx, "alice")
		c, _ := v.e.GetStaticCred(ctx, "alice")
		if c.LastPassword != "" {
			t.Fatal("openldap returned last_password")
		}
	})
}

func TestSkipImportRotation(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Minute, SkipImportRotation: libPtr(true)}); err != nil {
			t.Fatal(err)
		}
		if pw, _ := v.dir.Password(aliceDN); pw != "alice-pw" {
			t.Fatal("password rotated despite skip_import_rotation")
		}
		next, err := v.e.Step(ctx, t0)
		if err != nil || !next.Equal(t0.Add(time.Minute)) {
			t.Fatalf("step: next %v, err %v", next, err)
		}
		// Unset on the role, the configuration's skip_static_role_import_rotation
		// decides, as in Vault; set on the role, the role's.
		if err := v.e.UpdateConfig(ctx, ConfigRequest{SkipStaticRoleImportRotation: libPtr(true)}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutStaticRole(ctx, "bob", StaticRoleRequest{Username: "bob", DN: bobDN, RotationPeriod: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if pw, _ := v.dir.Password(bobDN); pw != "bob-pw" {
			t.Fatal("password rotated despite the configuration's skip_static_role_import_rotation")
		}
		v.dir.Add("uid=carol,ou=users,dc=example,dc=org", "carol-pw", "uid", "carol")
		if err := v.e.PutStaticRole(ctx, "carol", StaticRoleRequest{Username: "carol", DN: "uid=carol,ou=users,dc=example,dc=org", RotationPeriod: time.Minute, SkipImportRotation: libPtr(false)}); err != nil {
			t.Fatal(err)
		}
		if pw, _ := v.dir.Password("uid=carol,ou=users,dc=example,dc=org"); pw == "carol-pw" {
			t.Fatal("a role's own skip_import_rotation false did not rotate")
		}
	})
}

func TestRotationNeverLosesPassword(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		cases := map[string]func(v *env, fs *faultstore.Store){
			"directory down": func(v *env, _ *faultstore.Store) { v.dir.FailSetPassword(aliceDN, errors.New("down")) },
			"store fails after the directory changed": func(v *env, fs *faultstore.Store) {
				fs.Fail(faultstore.OpDelete, "ldapengine/mounts/ldap/wal/", 1, errors.New("injected"))
			},
		}
		for name, fault := range cases {
			t.Run(name, func(t *testing.T) {
				var fs *faultstore.Store
				v := newEnv(t, open, FlavorOpenLDAP, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
				fs.Rerun(true)
				v.configure(t)
				if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
					t.Fatal(err)
				}
				v.clock.Advance(time.Hour)
				fault(v, fs)
				next, err := v.e.Step(ctx, v.clock.Now())
				if err != nil {
					t.Fatal(err)
				}
				// The first retry comes after about a second (jittered),
				// at most one retry interval later; the role says when.
				if now := v.clock.Now(); !next.After(now.Add(700*time.Millisecond)) || next.After(now.Add(time.Second)) {
					t.Fatalf("retry at %v, want within a second after %v", next, now)
				}
				if r, _ := v.e.GetStaticRole(ctx, "alice"); !r.NextRotation.Equal(next) {
					t.Fatalf("role's next rotation %v, step's %v", r.NextRotation, next)
				}
				v.dir.FailSetPassword(aliceDN, nil)
				v.clock.Advance(defaultRetryInterval)
				if _, err := v.e.Step(ctx, v.clock.Now()); err != nil {
					t.Fatal(err)
				}
				c, _ := v.e.GetStaticCred(ctx, "alice")
				if pw, _ := v.dir.Password(aliceDN); pw != c.Password {
					t.Fatalf("directory %q, stored %q", pw, c.Password)
				}
				if err := v.dir.Bind(ctx, Conn{}, aliceDN, c.Password); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

func TestStepCostFollowsDueRoles(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		for i, dn := range []string{aliceDN, bobDN} {
			p := time.Duration(i+1) * time.Minute
			if err := v.e.PutStaticRole(ctx, []string{"alice", "bob"}[i], StaticRoleRequest{Username: "u", DN: dn, RotationPeriod: p}); err != nil {
				t.Fatal(err)
			}
		}
		before := v.dir.Changes()
		next, err := v.e.Step(ctx, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if v.dir.Changes() != before+1 || !next.Equal(t0.Add(2*time.Minute)) {
			t.Fatalf("changes %d, next %v", v.dir.Changes()-before, next)
		}
	})
}

func TestWorkerRotatesOnSchedule(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Minute}); err != nil {
			t.Fatal(err)
		}
		before := v.dir.Changes()
		v.e.Start()
		v.e.Start()
		if err := v.clock.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		v.clock.Advance(time.Minute)
		keeltest.Until(t, "the worker rotates", func() bool { return v.dir.Changes() != before })
		v.e.Stop()
		v.e.Stop()
	})
}

func TestPasswordPolicyInConfig(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		if err := v.e.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", PasswordPolicy: "digits"}); err != nil {
			t.Fatal("a missing policy must be accepted when saved:", err)
		}
		err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour})
		wantKind(t, err, keel.KindNotFound)
		if !strings.Contains(err.Error(), "digits") {
			t.Fatalf("error does not name the policy: %v", err)
		}
		if err := v.pol.Put(ctx, "digits", "length = 8\nrule \"charset\" {\n charset = \"0123456789\"\n min-chars = 8\n}\n"); err != nil {
			t.Fatal(err)
		}
		if err := v.e.RotateRole(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		c, _ := v.e.GetStaticCred(ctx, "alice")
		if len(c.Password) != 8 || strings.Trim(c.Password, "0123456789") != "" {
			t.Fatalf("password %q not from the policy", c.Password)
		}
	})
}

func TestLengthInConfig(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		if err := v.e.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", Length: 12}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		c, _ := v.e.GetStaticCred(ctx, "alice")
		if len(c.Password) != 12 || c.DN != aliceDN {
			t.Fatalf("cred %+v", c)
		}
	})
}

// A role that the worker listed as due but that another caller rotated
// before the worker got to it keeps the password the caller rotated to.
func TestWorkerSkipsRoleRotatedMeanwhile(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Minute, SkipImportRotation: libPtr(true)}); err != nil {
			t.Fatal(err)
		}
		v.clock.Advance(time.Minute) // due now
		if err := v.e.RotateRole(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		cred, _ := v.e.GetStaticCred(ctx, "alice")
		changes := v.dir.Changes()
		// What the worker does with a role it listed before RotateRole.
		if err := v.e.rotate(ctx, "alice", v.clock.Now(), true); err != nil {
			t.Fatal(err)
		}
		if v.dir.Changes() != changes {
			t.Fatal("the worker rotated a role that was no longer due")
		}
		if pw, _ := v.dir.Password(aliceDN); pw != cred.Password {
			t.Fatalf("directory %q, static-cred %q", pw, cred.Password)
		}
	})
}

// Creating roles while the worker runs: static-cred, read right after the
// create returns, always holds the directory's password.
func TestCreateWithWorkerRunning(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorLDAP, nil)
		v.configure(t)
		v.e.Start()
		for i := range 30 {
			name := fmt.Sprintf("user%d", i)
			dn := "uid=" + name + ",ou=users,dc=example,dc=org"
			v.dir.Add(dn, "initial", "uid", name)
			if err := v.e.PutStaticRole(ctx, name, StaticRoleRequest{Username: name, DN: dn, RotationPeriod: time.Hour}); err != nil {
				t.Fatal(err)
			}
			cred, err := v.e.GetStaticCred(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if pw, _ := v.dir.Password(dn); pw != cred.Password {
				t.Fatalf("%s: directory %q, static-cred %q", name, pw, cred.Password)
			}
		}
	})
}

// TestNewRefusesLeasesOfAnotherView: an engine given the lease handle of a
// mount registered with another view (another store, the whole store, a
// view inside the lease manager's), or of another mount, is refused at
// New, so that no check-out can return a lease the manager cannot find.
// Given the right one, New names the engine the mount's Revoker.
func TestNewRefusesLeasesOfAnotherView(t *testing.T) {
	root, other := everystore.Mem(t), everystore.Mem(t)
	view := storage.Sub(root, storePrefix("ldap"))
	for name, tc := range map[string]struct {
		registered storage.Store
		mount      string
		field      string
	}{
		"another store":         {storage.Sub(other, storePrefix("ldap")), "ldap/", "Store"},
		"another view":          {storage.Sub(root, storePrefix("x")), "ldap/", "Store"},
		"registered with none":  {nil, "ldap/", "Store"},
		"the handle of another": {view, "other/", "Options.Leases"},
	} {
		t.Run(name, func(t *testing.T) {
			m := newLeases(t, root, nil)
			iss, err := m.Register(lease.Mount{Path: tc.mount, Store: tc.registered})
			if name == "another store" {
				// The manager refuses the view itself: no handle to misuse.
				if keel.KindOf(err) != keel.KindInvalid {
					t.Fatalf("Register of a view of another store = %v, want Invalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(view, FlavorLDAP, "ldap", &Options{Leases: iss})
			if fe := keel.FieldErrors(err); keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != tc.field {
				t.Fatalf("New = %v, want Invalid naming %s", err, tc.field)
			}
		})
	}
	if _, err := New(nil, FlavorLDAP, "ldap", nil); keel.KindOf(err) != keel.KindInvalid {
		t.Fatalf("New(nil store) = %v, want an error of kind Invalid", err)
	}
	m := newLeases(t, root, nil)
	e, err := New(view, FlavorLDAP, "ldap", &Options{Leases: ldapLeases(t, m, root)})
	if err != nil {
		t.Fatalf("the view the mount was registered with: %v", err)
	}
	if e.leases.Mount() != "ldap/" {
		t.Fatalf("lease mount %q, want ldap/", e.leases.Mount())
	}
}

// TestStepPlansTheRoleItRotated: a Step that rotates the only role returns
// that role's next rotation, so the worker keeps rotating it (it used to
// return zero, and the role was never rotated again).
func TestStepPlansTheRoleItRotated(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newEnv(t, open, FlavorOpenLDAP, nil)
		v.configure(t)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		at := t0
		for i := range 3 {
			at = at.Add(5 * time.Second)
			before := v.dir.Changes()
			next, err := v.e.Step(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			if v.dir.Changes() == before {
				t.Fatalf("step %d at %v rotated nothing", i, at)
			}
			if want := at.Add(5 * time.Second); !next.Equal(want) {
				t.Fatalf("step %d planned %v, want the role's next rotation %v", i, next, want)
			}
		}
	})
}
