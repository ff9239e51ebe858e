package ldapengine

import (
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
)

func TestDynamicRoleCreateReadListDelete(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		hour, twoHours := time.Hour, 2*time.Hour
		// LDIF sent base64-encoded is stored and read decoded.
		enc := base64.StdEncoding.EncodeToString([]byte(testCreationLDIF))
		err := v.e.PutDynamicRole(ctx, "app", DynamicRoleRequest{CreationLDIF: &enc, DeletionLDIF: strp(testDeletionLDIF),
			RollbackLDIF: strp(testRollbackLDIF), UsernameTemplate: strp("u_{{.RoleName}}_{{random 4}}"), DefaultTTL: &hour, MaxTTL: &twoHours})
		if err != nil {
			t.Fatal(err)
		}
		r, err := v.e.GetDynamicRole(ctx, "app")
		if err != nil {
			t.Fatal(err)
		}
		want := DynamicRole{Name: "app", CreationLDIF: testCreationLDIF, DeletionLDIF: testDeletionLDIF, RollbackLDIF: testRollbackLDIF,
			UsernameTemplate: "u_{{.RoleName}}_{{random 4}}", DefaultTTL: time.Hour, MaxTTL: 2 * time.Hour}
		if r != want {
			t.Fatalf("read %+v, want %+v", r, want)
		}
		v.putTestRole(t, "other", nil)
		names, err := listAll(ctx, v.e.ListDynamicRoles, "")
		if err != nil || !slices.Equal(names, []string{"app", "other"}) {
			t.Fatalf("list %v %v", names, err)
		}
		// Dynamic roles do not show up as static roles and the reverse.
		if s, _ := listAll(ctx, v.e.ListStaticRoles, ""); len(s) != 0 {
			t.Fatalf("static roles %v", s)
		}
		if err := v.e.DeleteDynamicRole(ctx, "app"); err != nil {
			t.Fatal(err)
		}
		_, err = v.e.GetDynamicRole(ctx, "app")
		wantKind(t, err, keel.KindNotFound)
		if err := v.e.DeleteDynamicRole(ctx, "app"); err != nil {
			t.Fatalf("deleting a missing role: %v", err)
		}
		_, err = v.e.CreateDynamicCred(ctx, "app")
		wantKind(t, err, keel.KindNotFound)
	})
}

func TestDynamicRolePartialUpdate(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		hour := time.Hour
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DefaultTTL = &hour; r.UsernameTemplate = strp("x_{{random 5}}") })
		// Only the keys sent change.
		newDel := "dn: uid={{.Username}},ou=users,dc=example,dc=org\nchangetype: delete\n"
		if err := v.e.PutDynamicRole(ctx, "app", DynamicRoleRequest{DeletionLDIF: &newDel}); err != nil {
			t.Fatal(err)
		}
		r, _ := v.e.GetDynamicRole(ctx, "app")
		if r.DeletionLDIF != newDel || r.CreationLDIF != testCreationLDIF || r.RollbackLDIF != testRollbackLDIF || r.DefaultTTL != time.Hour || r.UsernameTemplate != "x_{{random 5}}" {
			t.Fatalf("after partial update: %+v", r)
		}
		// An empty string clears an optional field; zero clears a TTL.
		var zero time.Duration
		if err := v.e.PutDynamicRole(ctx, "app", DynamicRoleRequest{RollbackLDIF: strp(""), UsernameTemplate: strp(""), DefaultTTL: &zero}); err != nil {
			t.Fatal(err)
		}
		r, _ = v.e.GetDynamicRole(ctx, "app")
		if r.RollbackLDIF != "" || r.UsernameTemplate != "" || r.DefaultTTL != 0 || r.CreationLDIF != testCreationLDIF {
			t.Fatalf("after clearing: %+v", r)
		}
		// Clearing a required field is refused and changes nothing.
		err := v.e.PutDynamicRole(ctx, "app", DynamicRoleRequest{CreationLDIF: strp(""), MaxTTL: &hour})
		wantField(t, err, "CreationLDIF", "is required")
		r2, _ := v.e.GetDynamicRole(ctx, "app")
		if r2 != r {
			t.Fatalf("refused update changed the role: %+v", r2)
		}
	})
}

// wantField checks that err is of kind invalid and has a problem of field
// whose rule contains rule.
func wantField(t testing.TB, err error, field, rule string) {
	t.Helper()
	wantKind(t, err, keel.KindInvalid)
	for _, fe := range keel.FieldErrors(err) {
		if fe.Field == field && strings.Contains(fe.Rule, rule) {
			return
		}
	}
	t.Fatalf("error %v: no problem of %q with %q", err, field, rule)
}

func TestDynamicRoleValidation(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		hour, day, neg := time.Hour, 24*time.Hour, -time.Second
		cases := []struct {
			name         string
			req          DynamicRoleRequest
			field, rule  string
			alsoField    string // a second problem reported at once, when set
			alsoRuleText string
		}{
			{"creation required", DynamicRoleRequest{DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "is required", "", ""},
			{"deletion required", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF)}, "DeletionLDIF", "is required", "", ""},
			{"both required, reported together", DynamicRoleRequest{}, "CreationLDIF", "is required", "DeletionLDIF", "is required"},
			{"template syntax", DynamicRoleRequest{CreationLDIF: strp("dn: cn={{.Username"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "template", "", ""},
			{"unknown field", DynamicRoleRequest{CreationLDIF: strp("dn: cn={{.Nope}},dc=x\ncn: a\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "Nope", "", ""},
			{"unknown function", DynamicRoleRequest{CreationLDIF: strp("dn: cn={{nope}},dc=x\ncn: a\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "nope", "", ""},
			{"LDIF error names entry and line", DynamicRoleRequest{CreationLDIF: strp("dn: cn=a,dc=x\ncn: a\n\n\ncn: b\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "entry 2 (line 5)", "", ""},
			{"LDIF modify without dash", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp("dn: cn=a,dc=x\nchangetype: modify\nadd: member\nmember: x\n")}, "DeletionLDIF", "entry 1 (line 1)", "", ""},
			{"LDIF empty", DynamicRoleRequest{CreationLDIF: strp("# only a comment\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "no entry", "", ""},
			{"LDIF URL value", DynamicRoleRequest{CreationLDIF: strp("dn: cn=a,dc=x\ncn:< file:///etc/passwd\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "URL", "", ""},
			{"LDIF bad dn", DynamicRoleRequest{CreationLDIF: strp("dn: not a dn\ncn: a\n"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "dn", "", ""},
			{"rollback checked too", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), RollbackLDIF: strp("garbage")}, "RollbackLDIF", "entry 1", "", ""},
			{"range refused", DynamicRoleRequest{CreationLDIF: strp("{{range 3}}x{{end}}"), DeletionLDIF: strp(testDeletionLDIF)}, "CreationLDIF", "range", "", ""},
			{"username template unsafe", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), UsernameTemplate: strp("a,b")}, "UsernameTemplate", "must not hold", "", ""},
			{"username template has no utf16le", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), UsernameTemplate: strp(`{{utf16le "a"}}`)}, "UsernameTemplate", "utf16le", "", ""},
			{"username template has no LDIF fields", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), UsernameTemplate: strp(`{{.Password}}`)}, "UsernameTemplate", "Password", "", ""},
			{"negative default_ttl", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), DefaultTTL: &neg}, "DefaultTTL", "negative", "", ""},
			{"negative max_ttl", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), MaxTTL: &neg}, "MaxTTL", "negative", "", ""},
			{"default above max", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), DefaultTTL: &day, MaxTTL: &hour}, "DefaultTTL", "maximum TTL", "", ""},
			{"max above mount maximum", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), MaxTTL: ptrDur(3 * time.Hour)}, "MaxTTL", "mount maximum", "", ""},
			{"default above mount maximum", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), DefaultTTL: ptrDur(3 * time.Hour)}, "DefaultTTL", "mount maximum", "", ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				v := newDynEnv(t, open, FlavorLDAP, func(o *Options) { o.MaxTTL = 2 * time.Hour })
				before := storeKeys(t, v.store)
				err := v.e.PutDynamicRole(context.Background(), "app", c.req)
				wantField(t, err, c.field, c.rule)
				if c.alsoField != "" {
					wantField(t, err, c.alsoField, c.alsoRuleText)
				}
				if after := storeKeys(t, v.store); !slices.Equal(before, after) {
					t.Fatalf("refused write changed the store: %v -> %v", before, after)
				}
			})
		}
		t.Run("bad role name", func(t *testing.T) {
			v := newDynEnv(t, open, FlavorLDAP, nil)
			err := v.e.PutDynamicRole(context.Background(), "a\nb", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)})
			wantField(t, err, "Name", "")
		})
	})
}

func ptrDur(d time.Duration) *time.Duration { return &d }

func TestDynamicRoleRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		a := &recAuth{}
		v := newDynEnv(t, open, FlavorLDAP, func(o *Options) { o.Authorizer = a })
		ctx := context.Background()
		a.take()
		v.putTestRole(t, "app", nil)
		if got := a.take(); got != "create ldap/role/app" {
			t.Fatalf("create asked %q", got)
		}
		v.putTestRole(t, "app", nil)
		if got := a.take(); got != "update ldap/role/app" {
			t.Fatalf("update asked %q", got)
		}
		if _, err := v.e.GetDynamicRole(ctx, "app"); err != nil || a.take() != "read ldap/role/app" {
			t.Fatal("read right", err)
		}
		if _, err := listAll(ctx, v.e.ListDynamicRoles, ""); err != nil || a.take() != "list ldap/role/" {
			t.Fatal("list right", err)
		}
		if _, err := v.e.CreateDynamicCred(ctx, "app"); err != nil || !strings.HasPrefix(a.take(), "read ldap/creds/app") {
			t.Fatal("creds right", err)
		}
		if err := v.e.DeleteDynamicRole(ctx, "app"); err != nil || a.take() != "delete ldap/role/app" {
			t.Fatal("delete right", err)
		}
		// Refusals.
		a.deny = map[string]bool{"create ldap/role/x": true, "read ldap/creds/y": true}
		err := v.e.PutDynamicRole(ctx, "x", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)})
		wantKind(t, err, keel.KindForbidden)
		v.putTestRole(t, "y", nil)
		n := v.dir.Applied()
		_, err = v.e.CreateDynamicCred(ctx, "y")
		wantKind(t, err, keel.KindForbidden)
		if v.dir.Applied() != n {
			t.Fatal("refused creds changed the directory")
		}
	})
}

var defaultUsername = regexp.MustCompile(`^v_alice_app_[A-Za-z0-9]{10}_(\d+)$`)

func TestCredsCreatesAccount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DefaultTTL = ptrDur(time.Hour); r.MaxTTL = ptrDur(2 * time.Hour) })
		c, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		m := defaultUsername.FindStringSubmatch(c.Username)
		if m == nil || m[1] != "1795341600" { // t0's unix time
			t.Fatalf("username %q does not follow the default template at t0", c.Username)
		}
		if len(c.Password) != defaultPasswordLength {
			t.Fatalf("password of %d characters", len(c.Password))
		}
		dn := userDN(c.Username)
		if !slices.Equal(c.DistinguishedNames, []string{dn, groupDN}) {
			t.Fatalf("distinguished names %v", c.DistinguishedNames)
		}
		if err := v.dir.Bind(context.Background(), Conn{}, dn, c.Password); err != nil {
			t.Fatalf("the new account does not bind with the returned password: %v", err)
		}
		if members, _ := v.dir.Attr(groupDN, "member"); !slices.Contains(members, dn) {
			t.Fatalf("not a member of the group: %v", members)
		}
		l := c.Lease
		if l.Path != "ldap/creds/app" || !strings.HasPrefix(l.ID, "ldap/creds/app/") || !l.Renewable {
			t.Fatalf("lease %+v", l)
		}
		if !l.ExpireTime.Equal(t0.Add(time.Hour)) || l.MaxTTL != 2*time.Hour {
			t.Fatalf("lease expires %v with max %v", l.ExpireTime, l.MaxTTL)
		}
		// The lease's data holds no password.
		if strings.Contains(string(l.Data), c.Password) {
			t.Fatal("the lease data holds the password")
		}
	})
}

func TestCredsTemplateFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		creation := `dn: cn={{.Username}},ou=users,dc=example,dc=org
objectClass: person
cn: {{.Username}}
description: {{.RoleName}}|{{.DisplayName}}|{{.IssueTime}}|{{.IssueTimeSeconds}}|{{.ExpirationTime}}|{{.ExpirationTimeSeconds}}
userPassword:: {{.Password | base64}}
`
		deletion := "dn: cn={{.Username}},ou=users,dc=example,dc=org\nchangetype: delete\n"
		err := v.e.PutDynamicRole(context.Background(), "app", DynamicRoleRequest{CreationLDIF: &creation, DeletionLDIF: &deletion,
			UsernameTemplate: strp(`{{.DisplayName | uppercase}}-{{.RoleName}}`), DefaultTTL: ptrDur(90 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.e.CreateDynamicCred(asCaller("bob_b-x"), "app")
		if err != nil {
			t.Fatal(err)
		}
		if c.Username != "BOB_B-X-app" {
			t.Fatalf("username %q: dashes and underscores must stay", c.Username)
		}
		dn := "cn=BOB_B-X-app,ou=users,dc=example,dc=org"
		desc, _ := v.dir.Attr(dn, "description")
		exp := t0.Add(90 * time.Minute)
		want := "app|bob_b-x|" + t0.Format(time.RFC3339) + "|1795341600|" + exp.Format(time.RFC3339) + "|1795347000"
		if len(desc) != 1 || desc[0] != want {
			t.Fatalf("description %q, want %q", desc, want)
		}
		if err := v.dir.Bind(context.Background(), Conn{}, dn, c.Password); err != nil {
			t.Fatalf("base64 userPassword: %v", err)
		}
	})
}

func TestCredsRevokeDeletesAccount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		v.putTestRole(t, "app", nil)
		c, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		dn := userDN(c.Username)
		if err := v.leases.Revoke(ctx, c.Lease.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(dn); ok {
			t.Fatal("the account survives revocation")
		}
		if members, ok := v.dir.Attr(groupDN, "member"); !ok || slices.Contains(members, dn) {
			t.Fatalf("group after revocation: %v %v", members, ok)
		}
		// Revoke is idempotent: the engine's revoker, given the same lease again,
		// succeeds though everything is already deleted.
		if err := (revoker{v.e}).Revoke(ctx, c.Lease); err != nil {
			t.Fatalf("second revocation: %v", err)
		}
	})
}

func TestCredsLeaseExpiryDeletesAccount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DefaultTTL = ptrDur(time.Minute) })
		c, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		dn := userDN(c.Username)
		v.clock.Advance(59 * time.Second)
		if _, err := v.leases.Step(context.Background(), v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(dn); !ok {
			t.Fatal("deleted before expiry")
		}
		v.clock.Advance(time.Second)
		if _, err := v.leases.Step(context.Background(), v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(dn); ok {
			t.Fatal("the account survives the lease's expiry")
		}
	})
}

func TestCredsRevokeAfterRoleDeletedOrChanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		v.putTestRole(t, "app", nil)
		c1, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		// Changing the role's deletion LDIF does not change what the lease
		// deletes.
		other := "dn: cn=nothing,dc=example,dc=org\nchangetype: delete\n"
		if err := v.e.PutDynamicRole(ctx, "app", DynamicRoleRequest{DeletionLDIF: &other}); err != nil {
			t.Fatal(err)
		}
		if err := v.leases.Revoke(ctx, c1.Lease.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(userDN(c1.Username)); ok {
			t.Fatal("revocation used the changed role")
		}
		v.putTestRole(t, "app", nil)
		c2, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		if err := v.e.DeleteDynamicRole(ctx, "app"); err != nil {
			t.Fatal(err)
		}
		if err := v.leases.Revoke(ctx, c2.Lease.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(userDN(c2.Username)); ok {
			t.Fatal("the account survives revocation after its role was deleted")
		}
	})
}

func TestCredsFailedDeletionIsRetriedThenIrrevocable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DefaultTTL = ptrDur(time.Minute) })
		c, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		dn := userDN(c.Username)
		v.dir.FailApply(dn, errors.New("busy"))
		// Deletion LDIF entries run on past an error: the group membership
		// (the first entry) is removed though the account's deletion fails.
		err = revoker{v.e}.Revoke(ctx, c.Lease)
		wantKind(t, err, keel.KindUnavailable)
		if members, _ := v.dir.Attr(groupDN, "member"); slices.Contains(members, dn) {
			t.Fatal("deletion stopped at the failing entry")
		}
		for range 10 {
			v.clock.Advance(time.Hour)
			if _, err := v.leases.Step(ctx, v.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		irr, err := v.leases.ListIrrevocable(ctx, keel.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(irr.Items) != 1 || irr.Items[0].LeaseID != c.Lease.ID {
			t.Fatalf("irrevocable %+v", irr)
		}
		// Once the directory accepts, the next retry deletes the account.
		v.dir.FailApply(dn, nil)
		v.clock.Advance(24 * time.Hour)
		if _, err := v.leases.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.dir.Password(dn); ok {
			t.Fatal("the account survives the retry")
		}
	})
}

func TestCredsCreationFailureRollsBack(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		// The group is missing: the second creation entry fails after the
		// account was added.
		v := newDynEnv(t, open, FlavorLDAP, nil)
		ctx := context.Background()
		creation := testCreationLDIF + "\ndn: cn=third,dc=example,dc=org\nobjectClass: device\ncn: third\n"
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.CreationLDIF = &creation })
		if err := v.dir.Apply(ctx, Conn{BindDN: bindDN, BindPass: "bind-pw"}, []Change{{Type: ChangeDelete, DN: groupDN}}, false); err != nil {
			t.Fatal(err)
		}
		before := storeKeys(t, v.store)
		_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		wantKind(t, err, keel.KindNotFound)
		if !strings.Contains(err.Error(), "entry 2") {
			t.Fatalf("error %v does not name the failing entry", err)
		}
		if dns := v.dir.DNs(); !slices.Equal(dns, []string{bindDN}) {
			t.Fatalf("directory after rollback: %v (the account must be rolled back, the third entry never run)", dns)
		}
		if after := storeKeys(t, v.store); !slices.Equal(before, after) {
			t.Fatalf("failed creds changed the store: %v", after)
		}
		t.Run("rollback errors are returned with the creation error", func(t *testing.T) {
			v.putTestRole(t, "app2", func(r *DynamicRoleRequest) {
				r.UsernameTemplate = strp("fixed")
				r.RollbackLDIF = strp(testRollbackLDIF + "\ndn: cn=x,dc=example,dc=org\nchangetype: modify\nadd: cn\ncn: y\n-\n")
			})
			v.dir.FailApply("cn=x,dc=example,dc=org", errors.New("down"))
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app2")
			var merr *multierror.Error
			if !errors.As(err, &merr) || len(merr.Errors) != 2 {
				t.Fatalf("error %v: want the creation and the rollback errors", err)
			}
			if !strings.Contains(merr.Errors[1].Error(), "rolling back") || !strings.Contains(merr.Errors[1].Error(), "down") {
				t.Fatalf("rollback error %v", merr.Errors[1])
			}
			if _, ok := v.dir.Password(userDN("fixed")); ok {
				t.Fatal("the rollback's first entry did not run")
			}
		})
		t.Run("without rollback_ldif the entries stay", func(t *testing.T) {
			v.putTestRole(t, "app3", func(r *DynamicRoleRequest) { r.UsernameTemplate = strp("kept"); r.RollbackLDIF = strp("") })
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app3")
			wantKind(t, err, keel.KindNotFound)
			if _, ok := v.dir.Password(userDN("kept")); !ok {
				t.Fatal("an entry was removed without rollback_ldif")
			}
		})
	})
}

func TestCredsLDIFInjection(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		v.putTestRole(t, "app", nil)
		// The role name is the only other field; it cannot hold a line break.
		err := v.e.PutDynamicRole(context.Background(), "x\ndn: cn=admin", DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)})
		wantField(t, err, "Name", "")
		for _, display := range []string{
			"eve\nuserPassword: known",       // adds an attribute line
			"eve\n\ndn: cn=admin,dc=example", // adds an entry
			"eve\r\nchangetype: delete",      // CR LF
			"eve,ou=admins",                  // moves the entry in the tree
			"eve+uid=root",                   // multi-valued RDN
			": ZXZl",                         // turns a value into base64
			" eve",                           // leading space
			"eve\x00",                        // NUL
			"eve\u2028x",                     // Unicode line separator
			"\xff\xfe",                       // not UTF-8
		} {
			n := v.dir.Applied()
			_, err := v.e.CreateDynamicCred(asCaller(display), "app")
			wantField(t, err, "", "display name must")
			if v.dir.Applied() != n {
				t.Fatalf("display name %q reached the directory", display)
			}
		}
		// A username template that turns a harmless display name into LDIF
		// syntax is caught on the generated username too.
		v.putTestRole(t, "app2", func(r *DynamicRoleRequest) { r.UsernameTemplate = strp(`{{.DisplayName | replace "_" "\n"}}`) })
		_, err = v.e.CreateDynamicCred(asCaller("eve_userPassword: x"), "app2")
		wantField(t, err, "", "username template gives")
		if dns := v.dir.DNs(); len(dns) != 2 {
			t.Fatalf("directory %v", dns)
		}
	})
}

func TestCredsRefusals(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		t.Run("openldap has no creds", func(t *testing.T) {
			v := newDynEnv(t, open, FlavorOpenLDAP, nil)
			v.putTestRole(t, "app", nil) // roles exist in both flavors
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
			wantField(t, err, "", "ldap engine only")
		})
		t.Run("no lease manager", func(t *testing.T) {
			v := newDynEnv(t, open, FlavorLDAP, func(o *Options) { o.Leases = nil })
			v.putTestRole(t, "app", nil)
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
			wantKind(t, err, keel.KindUnavailable)
			if v.dir.Applied() != 0 {
				t.Fatal("the directory changed")
			}
		})
		t.Run("no configuration", func(t *testing.T) {
			v := newDynEnv(t, open, FlavorLDAP, nil)
			v.putTestRole(t, "app", nil)
			if err := v.e.DeleteConfig(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
			wantKind(t, err, keel.KindNotFound)
		})
		t.Run("directory down", func(t *testing.T) {
			v := newDynEnv(t, open, FlavorLDAP, nil)
			v.putTestRole(t, "app", nil)
			v.dir.SetDown(true)
			_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
			wantKind(t, err, keel.KindUnavailable)
			if keys := storeKeys(t, v.store); slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "lease/") }) {
				t.Fatalf("a lease was stored: %v", keys)
			}
		})
	})
}

func TestCredsLeaseIssueFailureDeletesAccount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		v.putTestRole(t, "app", nil)
		v.leases.Unregister("ldap/") // issuing now fails: the mount is gone
		_, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		wantKind(t, err, keel.KindUnavailable)
		if !strings.Contains(err.Error(), "issuing the lease") {
			t.Fatalf("error %v", err)
		}
		if dns := v.dir.DNs(); len(dns) != 2 {
			t.Fatalf("the account was not deleted again: %v", dns)
		}
		if members, _ := v.dir.Attr(groupDN, "member"); len(members) != 1 {
			t.Fatalf("group membership not removed: %v", members)
		}
	})
}

func TestCredsTTLs(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		cases := []struct {
			name             string
			mountMax         time.Duration
			def, max         time.Duration
			wantTTL, wantMax time.Duration
		}{
			{"role TTLs", 0, time.Hour, 2 * time.Hour, time.Hour, 2 * time.Hour},
			{"defaults: the lease manager's", 0, 0, 0, lease.DefaultTTL, lease.DefaultTTL},
			{"mount maximum caps the lease", 3 * time.Hour, 0, 0, 3 * time.Hour, 3 * time.Hour},
			{"role max below the mount's", 3 * time.Hour, 0, time.Hour, time.Hour, time.Hour},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				v := newDynEnv(t, open, FlavorLDAP, func(o *Options) { o.MaxTTL = c.mountMax })
				v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DefaultTTL = &c.def; r.MaxTTL = &c.max })
				cr, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
				if err != nil {
					t.Fatal(err)
				}
				if got := cr.Lease.ExpireTime.Sub(cr.Lease.IssueTime); got != c.wantTTL || cr.Lease.MaxTTL != c.wantMax {
					t.Fatalf("ttl %v max %v, want %v %v", got, cr.Lease.MaxTTL, c.wantTTL, c.wantMax)
				}
			})
		}
	})
}

func TestRevokeCredsBadLeaseData(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newDynEnv(t, open, FlavorLDAP, nil)
		err := revoker{v.e}.Revoke(context.Background(), lease.Lease{ID: "ldap/creds/app/x", Path: "ldap/creds/app", Data: []byte("{")})
		wantKind(t, err, keel.KindInternal)
	})
}
