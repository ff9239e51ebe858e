package tfe

import (
	"maps"
	"testing"
)

func TestSource(t *testing.T) {
	pointer := func(p string) map[string]string { return map[string]string{"pointer": p} }
	parameter := func(p string) map[string]string { return map[string]string{"parameter": p} }
	tests := []struct {
		field string
		want  map[string]string
	}{
		{"", nil},
		// The adapter's own problems are pointers already.
		{"/data", pointer("/data")},
		{"/data/relationships/team/data", pointer("/data/relationships/team/data")},
		// Attributes.
		{"Name", pointer("/data/attributes/name")},
		{"Description", pointer("/data/attributes/description")},
		{"EnforcementLevel", pointer("/data/attributes/enforcement-level")},
		{"Enforce", pointer("/data/attributes/enforce")},
		{"Enforce[0].Mode", pointer("/data/attributes/enforce/0/mode")},
		{"Enforce[0].Path", pointer("/data/attributes/enforce/0/path")},
		{"Access", pointer("/data/attributes/access")},
		// Relationships: to-many elements and to-one ids.
		{"PolicySetIDs", pointer("/data/relationships/policy-sets/data")},
		{"PolicySetIDs[2]", pointer("/data/relationships/policy-sets/data/2/id")},
		{"PolicyIDs[0]", pointer("/data/relationships/policies/data/0/id")},
		{"TeamID", pointer("/data/relationships/team/data/id")},
		{"ProjectID", pointer("/data/relationships/project/data/id")},
		// Query parameters.
		{"Sort", parameter("sort")},
		{"PageNumber", parameter("page[number]")},
		{"PageSize", parameter("page[size]")},
		{"Search", parameter("search[name]")},
		{"Include", parameter("include")},
		// A Go name the table does not know: an attribute in kebab case.
		{"MaxCount", pointer("/data/attributes/max-count")},
		{"Rules[1].TTLSeconds", pointer("/data/attributes/rules/1/ttl-seconds")},
		{"MemberIDs[3]", pointer("/data/attributes/member-ids/3")},
	}
	for _, tt := range tests {
		if got := source(tt.field); !maps.Equal(got, tt.want) {
			t.Errorf("source(%q) = %v, want %v", tt.field, got, tt.want)
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"Name": "name", "EnforcementLevel": "enforcement-level", "TeamID": "team-id",
		"PolicySetIDs": "policy-set-ids", "TTLSeconds": "ttl-seconds", "Page2Size": "page2-size", "0": "0",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}
