package ldapengine

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var tplNow = time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.FixedZone("X", 3600))

func render(t *testing.T, text string, kind templateKind, data any) (string, error) {
	t.Helper()
	return renderTemplate("f", text, kind, data, tplNow)
}

func TestTemplateFunctions(t *testing.T) {
	tail := "defghijklmnop"
	sum := sha256.Sum256([]byte("hijklmnop"))
	cases := []struct {
		name, text, want string
	}{
		{"field", "{{.RoleName}}", "my-role_x"},
		{"spaces inside delimiters", "{{ .RoleName }}", "my-role_x"},
		{"pipe chain", `{{.DisplayName | uppercase | replace "B" "b"}}`, "AbC-D_E"},
		{"printf builtin", `{{printf "%s:%03d" .RoleName 7}}`, "my-role_x:007"},
		{"dashes and underscores kept", "{{.DisplayName}}", "Abc-d_e"},
		{"truncate", `{{.RoleName | truncate 4}}`, "my-r"},
		{"truncate longer than value", `{{.RoleName | truncate 40}}`, "my-role_x"},
		{"truncate counts characters", `{{"héllo" | truncate 2}}`, "hé"},
		{"truncate_sha256", `{{"abc` + tail + `" | truncate_sha256 15}}`, "abcdefg" + hex.EncodeToString(sum[:])[:8]},
		{"truncate_sha256 short value", `{{"abc" | truncate_sha256 15}}`, "abc"},
		{"uppercase", `{{"aB" | uppercase}}`, "AB"},
		{"lowercase", `{{"aB" | lowercase}}`, "ab"},
		{"replace", `{{.RoleName | replace "-" "."}}`, "my.role_x"},
		{"sha256", `{{"abc" | sha256}}`, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"base64", `{{"abc" | base64}}`, "YWJj"},
		{"unix_time", `{{unix_time}}`, "1795338000"},
		{"unix_time_millis", `{{unix_time_millis}}`, "1795338000123"},
		{"timestamp in UTC", `{{timestamp "2006-01-02T15:04:05Z07:00"}}`, "2026-11-22T09:00:00Z"},
		{"if and else", `{{if eq .RoleName "x"}}a{{else}}b{{end}}`, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.text, usernameKind, usernameData{DisplayName: "Abc-d_e", RoleName: "my-role_x"})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTemplateRandomAndUUID(t *testing.T) {
	got, err := render(t, `{{random 20}} {{random 20}} {{uuid}}`, usernameKind, usernameData{})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(got)
	if !regexp.MustCompile(`^[A-Za-z0-9]{20}$`).MatchString(f[0]) || f[0] == f[1] {
		t.Fatalf("random: %q", got)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(f[2]) {
		t.Fatalf("uuid: %q", f[2])
	}
}

func TestTemplateUTF16LEOnlyInLDIF(t *testing.T) {
	got, err := render(t, `{{"\"pw\"" | utf16le | base64}}`, ldifKind, ldifData{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "IgBwAHcAIgA=" {
		t.Fatalf("utf16le: %q", got)
	}
	if got, _ := render(t, `{{"é" | utf16le}}`, ldifKind, ldifData{}); got != "\xe9\x00" {
		t.Fatalf("utf16le of é: %q", got)
	}
	_, err = render(t, `{{"pw" | utf16le}}`, usernameKind, usernameData{})
	wantField(t, err, "f", "utf16le")
}

func TestTemplateRefusals(t *testing.T) {
	cases := []struct{ name, text, rule string }{
		{"random needs N", `{{random}}`, "random"},
		{"random zero", `{{random 0}}`, "random"},
		{"random too long", `{{random 2000}}`, "1 to 1024"},
		{"truncate zero", `{{"a" | truncate 0}}`, "positive"},
		{"truncate_sha256 too short", `{{"abcdefghijkl" | truncate_sha256 8}}`, "more than 8"},
		{"timestamp needs a layout", `{{timestamp ""}}`, "layout"},
		{"range", `{{range 100000000000}}{{end}}`, "range"},
		{"define", `{{define "a"}}x{{end}}{{template "a"}}`, "not allowed"},
		{"template", `{{template "a"}}`, "template"},
		{"range nested in if", `{{if true}}{{range 3}}{{end}}{{end}}`, "range"},
		{"printf grows past the cap", `{{printf "%0999999d%0999999d" 1 2}}`, "longer"},
		{"replace grows past the cap", `{{$a := printf "%060000d" 1}}{{$a | replace "0" "00"}}`, "longer"},
		{"unknown field", `{{.Username}}`, "Username"},
		{"syntax", `{{`, "template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.text, usernameKind, usernameData{})
			wantField(t, err, "f", c.rule)
		})
	}
	t.Run("template text too long", func(t *testing.T) {
		_, err := render(t, strings.Repeat("a", maxTemplateLen+1), usernameKind, usernameData{})
		wantField(t, err, "f", "at most")
	})
	t.Run("output capped", func(t *testing.T) {
		chunk := `{{printf "%060000d" 1}}`
		_, err := render(t, strings.Repeat(chunk, maxRenderLen/60000+1), usernameKind, usernameData{})
		wantField(t, err, "f", "output longer")
	})
}

func TestCheckFieldValue(t *testing.T) {
	for _, ok := range []string{"", "alice", "Alice Smith", "alice@example.com", "a-b_c.d", "é中", "a:b"} {
		if why := checkFieldValue(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"a\nb", "a\rb", "a\x00", "a\tb", "a,b", "a=b", "a+b", "a<b", "a>b", "#a", "a;b", `a"b`, `a\b`, " a", "a ", ":a", "\xff", "a\u2028"} {
		if why := checkFieldValue(bad); why == "" {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{"a\nb", " a", ":a", "<a", "a "} {
		if why := checkPassword(bad); why == "" {
			t.Errorf("password %q accepted", bad)
		}
	}
	if why := checkPassword("Ab,+=<>#;0"); why != "" {
		t.Errorf("password with DN specials refused: %s", why)
	}
}

func TestParseLDIF(t *testing.T) {
	text := `version: 1

# a comment
dn: uid=a,ou=users,dc=example,dc=org
objectClass: inetOrgPerson
sn: a
cn: a
description: folded
  value
userPassword:: cGFzcw==

dn: cn=g,dc=example,dc=org
changetype: modify
add: member
member: uid=a,ou=users,dc=example,dc=org
-
replace: description
description: x
description: y
-
delete: seeAlso
-

dn: uid=old,dc=example,dc=org
changetype: delete

dn: uid=b,dc=example,dc=org
uid: b
`
	got, err := parseLDIF("f", strings.ReplaceAll(text, "\n", "\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Type: ChangeAdd, DN: "uid=a,ou=users,dc=example,dc=org", Attributes: []Attribute{
			{"objectClass", []string{"inetOrgPerson"}}, {"sn", []string{"a"}}, {"cn", []string{"a"}},
			{"description", []string{"folded value"}}, {"userPassword", []string{"pass"}}}},
		{Type: ChangeModify, DN: "cn=g,dc=example,dc=org", Modifications: []Modification{
			{ModAdd, Attribute{"member", []string{"uid=a,ou=users,dc=example,dc=org"}}},
			{ModReplace, Attribute{"description", []string{"x", "y"}}},
			{ModDelete, Attribute{"seeAlso", nil}}}},
		{Type: ChangeDelete, DN: "uid=old,dc=example,dc=org"},
		// A record without changetype after a delete is an add: the
		// changetype of one record does not leak into the next.
		{Type: ChangeAdd, DN: "uid=b,dc=example,dc=org", Attributes: []Attribute{{"uid", []string{"b"}}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes: %+v", len(got), got)
	}
	for i := range want {
		if !changeEqual(got[i], want[i]) {
			t.Errorf("change %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func changeEqual(a, b Change) bool {
	attrEq := func(x, y Attribute) bool { return x.Name == y.Name && slices.Equal(x.Values, y.Values) }
	return a.Type == b.Type && a.DN == b.DN &&
		slices.EqualFunc(a.Attributes, b.Attributes, attrEq) &&
		slices.EqualFunc(a.Modifications, b.Modifications, func(x, y Modification) bool { return x.Op == y.Op && attrEq(x.Attribute, y.Attribute) })
}

func TestParseLDIFErrors(t *testing.T) {
	cases := []struct{ name, text, rule string }{
		{"empty", "", "no entry"},
		{"missing dn", "cn: a\n", "entry 1 (line 1): missing 'dn:'"},
		{"second entry, line", "dn: cn=a,dc=x\ncn: a\n\n\n# c\ndn: cn=b,dc=x\nchangetype: frob\n", "entry 2 (line 5)"},
		{"only a dn", "dn: cn=a,dc=x\n", "only a dn"},
		{"add without attributes", "dn: cn=a,dc=x\nchangetype: add\n", "without attributes"},
		{"delete with attributes", "dn: cn=a,dc=x\nchangetype: delete\ncn: a\n", "no attributes allowed"},
		{"modrdn unsupported", "dn: cn=a,dc=x\nchangetype: modrdn\nnewrdn: cn=b\ndeleteoldrdn: 1\n", "unsupported changetype"},
		{"url value", "dn: cn=a,dc=x\ncn:< file:///etc/hostname\n", "URL"},
		{"folded url value", "dn: cn=a,dc=x\ncn:\n < file:///etc/hostname\n", "URL"},
		{"control", "dn: cn=a,dc=x\ncontrol: 1.2.3 true\nchangetype: delete\n", "controls"},
		{"bad dn", "dn: ===\ncn: a\n", "dn"},
		{"empty dn", "dn: \ncn: a\n", "dn"},
		{"bad base64", "dn: cn=a,dc=x\ncn:: !!!\n", "entry 1"},
		{"late version", "dn: cn=a,dc=x\ncn: a\n\nversion: 1\n", "version"},
		{"continuation first", " cn: a\n", "continuation"},
		{"too many entries", strings.Repeat("dn: cn=a,dc=x\nchangetype: delete\n\n", maxLDIFEntries+1), "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseLDIF("f", c.text)
			wantField(t, err, "f", c.rule)
		})
	}
}

func TestDecodeLDIFField(t *testing.T) {
	plain := "dn: cn=a,dc=x\ncn: a\n"
	if got := decodeLDIFField(plain); got != plain {
		t.Fatalf("plain text changed: %q", got)
	}
	if got := decodeLDIFField("ZG46IGNuPWEsZGM9eAo="); got != "dn: cn=a,dc=x\n" {
		t.Fatalf("base64 not decoded: %q", got)
	}
	if got := decodeLDIFField("//79"); got != "//79" { // base64 of bytes that are not UTF-8
		t.Fatalf("binary decoded: %q", got)
	}
}
