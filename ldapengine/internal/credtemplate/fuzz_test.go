package credtemplate

import (
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// defaultUsernameTemplate is ldapengine's default username template, a seed.
const defaultUsernameTemplate = "v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}"

// testCreationLDIF is the creation LDIF of the dynamic role tests of
// package ldapengine, a seed.
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
)

// FuzzRenderTemplate renders arbitrary templates with arbitrary field
// values: rendering never panics, always ends, stays within its limits,
// and every error is of kind invalid for the template's field.
func FuzzRenderTemplate(f *testing.F) {
	for _, s := range []string{defaultUsernameTemplate, testCreationLDIF, `{{.DisplayName | truncate_sha256 12 | uppercase}}`,
		`{{printf "%s-%d" .RoleName unix_time_millis | sha256 | base64}}`, `{{"x" | utf16le}}{{uuid}}{{timestamp "2006"}}`,
		`{{if .Password}}{{.Password | replace "a" "b"}}{{end}}`, `{{range 3}}{{end}}`, `{{with $x := random 5}}{{$x}}{{end}}`} {
		f.Add(s, "alice-b_c", true)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text, value string, ldif bool) {
		var out string
		var err error
		if ldif {
			out, err = Render("creation_ldif", text, LDIF, LDIFData{Username: value, Password: value, DisplayName: value, RoleName: value, IssueTime: value}, now)
		} else {
			out, err = Render("username_template", text, Username, UsernameData{DisplayName: value, RoleName: value}, now)
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
