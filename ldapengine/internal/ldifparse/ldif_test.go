package ldifparse

import (
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
)

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
	got, err := Parse("f", strings.ReplaceAll(text, "\n", "\r\n"))
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
		{"too many entries", strings.Repeat("dn: cn=a,dc=x\nchangetype: delete\n\n", MaxEntries+1), "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f", c.text)
			wantField(t, err, "f", c.rule)
		})
	}
}

func TestDecodeLDIFField(t *testing.T) {
	plain := "dn: cn=a,dc=x\ncn: a\n"
	if got := DecodeField(plain); got != plain {
		t.Fatalf("plain text changed: %q", got)
	}
	if got := DecodeField("ZG46IGNuPWEsZGM9eAo="); got != "dn: cn=a,dc=x\n" {
		t.Fatalf("base64 not decoded: %q", got)
	}
	if got := DecodeField("//79"); got != "//79" { // base64 of bytes that are not UTF-8
		t.Fatalf("binary decoded: %q", got)
	}
}

// wantField fails t unless err is of kind keel.KindInvalid with a problem
// of field whose rule holds rule.
func wantField(t testing.TB, err error, field, rule string) {
	t.Helper()
	if got := keel.KindOf(err); got != keel.KindInvalid {
		t.Fatalf("error %v: kind %v, want %v", err, got, keel.KindInvalid)
	}
	for _, fe := range keel.FieldErrors(err) {
		if fe.Field == field && strings.Contains(fe.Rule, rule) {
			return
		}
	}
	t.Fatalf("error %v: no problem of %q with %q", err, field, rule)
}
