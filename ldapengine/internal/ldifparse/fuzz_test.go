package ldifparse

import (
	"testing"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/credtemplate"
)

// Seeds: the LDIF of the dynamic role tests of package ldapengine.
const (
	testCreationLDIF = `dn: uid={{.Username}},ou=users,dc=example,dc=org
objectClass: inetOrgPerson
uid: {{.Username}}
cn: {{.Username}}
sn: {{.Username}}
userPassword: {{.Password}}

dn: cn=devs,ou=groups,dc=example,dc=org
changetype: modify
add: member
member: uid={{.Username}},ou=users,dc=example,dc=org
-
`
	testDeletionLDIF = `dn: cn=devs,ou=groups,dc=example,dc=org
changetype: modify
delete: member
member: uid={{.Username}},ou=users,dc=example,dc=org
-

dn: uid={{.Username}},ou=users,dc=example,dc=org
changetype: delete
`
	testRollbackLDIF = `dn: uid={{.Username}},ou=users,dc=example,dc=org
changetype: delete
`
)

// FuzzParseLDIF parses arbitrary LDIF: parsing never panics, every error
// is of kind invalid, and what parses is a list of well-formed changes.
func FuzzParseLDIF(f *testing.F) {
	for _, s := range []string{testCreationLDIF, testDeletionLDIF, testRollbackLDIF,
		"version: 1\n\ndn: cn=a,dc=x\ncn:: YQ==\n", "dn: cn=a,dc=x\nchangetype: modify\nreplace: cn\ncn: b\n-\n",
		"dn: cn=a,dc=x\ncontrol: 1.2.3\nchangetype: delete\n", "dn: cn=a,dc=x\ncn:< file:///etc/passwd\n", "# c\n c\n\ndn: cn=a\n x,dc=y\ncn: a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		changes, err := Parse("f", text)
		if err != nil {
			if keel.KindOf(err) != keel.KindInvalid {
				t.Fatalf("error %v of kind %v", err, keel.KindOf(err))
			}
			return
		}
		if len(changes) == 0 || len(changes) > MaxEntries {
			t.Fatalf("%d changes", len(changes))
		}
		for _, c := range changes {
			if checkDN(c.DN) != "" {
				t.Fatalf("bad dn %q accepted", c.DN)
			}
			switch c.Type {
			case ChangeAdd:
				if len(c.Attributes) == 0 {
					t.Fatalf("add without attributes: %+v", c)
				}
			case ChangeModify:
				for _, m := range c.Modifications {
					if m.Op != ModAdd && m.Op != ModDelete && m.Op != ModReplace {
						t.Fatalf("modify op %q", m.Op)
					}
				}
			case ChangeDelete:
			default:
				t.Fatalf("change type %q", c.Type)
			}
		}
		// A field value that passes credtemplate.CheckFieldValue, put on an attribute
		// line, stays one value of that attribute.
		if utf8.ValidString(text) && credtemplate.CheckFieldValue(text) == "" && text != "" {
			got, err := Parse("f", "dn: cn=a,dc=x\ndescription: "+text+"\n")
			if err != nil || len(got) != 1 || len(got[0].Attributes) != 1 || got[0].Attributes[0].Values[0] != text {
				t.Fatalf("value %q changed the LDIF: %+v %v", text, got, err)
			}
		}
	})
}
