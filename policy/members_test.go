package policy

import (
	"fmt"
	"testing"
)

// TestMemberKinds: every kind of member has its entry in memberKinds and
// its place in the structs that hold one field per kind, and no two kinds
// share a key prefix.
func TestMemberKinds(t *testing.T) {
	prefixes := map[string]SetMembers{}
	var p PolicySet
	var c setCounts
	for _, m := range setMembers {
		k := m.kind()
		if !m.valid() || k.name == "" || k.one == "" || k.field == "" || k.lookup == nil {
			t.Errorf("kind %d: incomplete entry %+v", m, k)
		}
		if p.lists()[m] == nil || c.slots()[m] == nil {
			t.Errorf("kind %v: no place in PolicySet.lists or setCounts.slots", m)
		}
		for _, prefix := range []string{k.setSide, k.memberSide} {
			if other, ok := prefixes[prefix]; ok || prefix == "" {
				t.Errorf("kind %v: prefix %q taken by %v", m, prefix, other)
			}
			prefixes[prefix] = m
		}
	}
	for _, m := range []SetMembers{0, SetWorkspaceExclusions + 1} {
		if m.valid() || p.Members(m) != nil || m.String() != fmt.Sprintf("SetMembers(%d)", m) {
			t.Errorf("kind %d: taken as valid (%q)", m, m.String())
		}
	}
}
