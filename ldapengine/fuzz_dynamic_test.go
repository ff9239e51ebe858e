package ldapengine

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

// FuzzRenderTemplate renders arbitrary templates with arbitrary field
// values: rendering never panics, always ends, stays within its limits,
// and every error is of kind invalid for the template's field.
func FuzzRenderTemplate(f *testing.F) {
	for _, s := range []string{DefaultUsernameTemplate, testCreationLDIF, `{{.DisplayName | truncate_sha256 12 | uppercase}}`,
		`{{printf "%s-%d" .RoleName unix_time_millis | sha256 | base64}}`, `{{"x" | utf16le}}{{uuid}}{{timestamp "2006"}}`,
		`{{if .Password}}{{.Password | replace "a" "b"}}{{end}}`, `{{range 3}}{{end}}`, `{{with $x := random 5}}{{$x}}{{end}}`} {
		f.Add(s, "alice-b_c", true)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text, value string, ldif bool) {
		var out string
		var err error
		if ldif {
			out, err = renderTemplate("creation_ldif", text, ldifKind, ldifData{Username: value, Password: value, DisplayName: value, RoleName: value, IssueTime: value}, now)
		} else {
			out, err = renderTemplate("username_template", text, usernameKind, usernameData{DisplayName: value, RoleName: value}, now)
		}
		if err != nil {
			if keel.KindOf(err) != keel.KindInvalid || len(keel.FieldErrors(err)) != 1 {
				t.Fatalf("error %v of kind %v", err, keel.KindOf(err))
			}
			return
		}
		if len(out) > maxRenderLen {
			t.Fatalf("output of %d bytes", len(out))
		}
		if !ldif && !strings.Contains(text, "{{") && out != text {
			t.Fatalf("plain text %q rendered as %q", text, out)
		}
	})
}

// FuzzParseLDIF parses arbitrary LDIF: parsing never panics, every error
// is of kind invalid, and what parses is a list of well-formed changes.
func FuzzParseLDIF(f *testing.F) {
	for _, s := range []string{testCreationLDIF, testDeletionLDIF, testRollbackLDIF,
		"version: 1\n\ndn: cn=a,dc=x\ncn:: YQ==\n", "dn: cn=a,dc=x\nchangetype: modify\nreplace: cn\ncn: b\n-\n",
		"dn: cn=a,dc=x\ncontrol: 1.2.3\nchangetype: delete\n", "dn: cn=a,dc=x\ncn:< file:///etc/passwd\n", "# c\n c\n\ndn: cn=a\n x,dc=y\ncn: a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		changes, err := parseLDIF("f", text)
		if err != nil {
			if keel.KindOf(err) != keel.KindInvalid {
				t.Fatalf("error %v of kind %v", err, keel.KindOf(err))
			}
			return
		}
		if len(changes) == 0 || len(changes) > maxLDIFEntries {
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
		// A field value that passes checkFieldValue, put on an attribute
		// line, stays one value of that attribute.
		if utf8.ValidString(text) && checkFieldValue(text) == "" && text != "" {
			got, err := parseLDIF("f", "dn: cn=a,dc=x\ndescription: "+text+"\n")
			if err != nil || len(got) != 1 || len(got[0].Attributes) != 1 || got[0].Attributes[0].Values[0] != text {
				t.Fatalf("value %q changed the LDIF: %+v %v", text, got, err)
			}
		}
	})
}
