package vault_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/keelhq/keel/storage/memstore"
)

// TestGroupCoercions: a group written as the vault CLI writes one pair of
// metadata (vault write identity/group name=g metadata=team=a sends
// "team=a") and with policies as a number is stored as Vault stores it:
// metadata {"team":"a"}, policies ["5"].
func TestGroupCoercions(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.client(t, rootToken)
	if _, err := c.Logical().Write("identity/group/name/coerced", map[string]any{
		"metadata": "team=a", "policies": json.Number("5"),
	}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Logical().Read("identity/group/name/coerced")
	if err != nil || s == nil {
		t.Fatalf("read: %v %v", s, err)
	}
	md, _ := s.Data["metadata"].(map[string]any)
	pol, _ := s.Data["policies"].([]any)
	if len(md) != 1 || md["team"] != "a" || !slices.Equal(pol, []any{"5"}) {
		t.Errorf("metadata %v, policies %v; want {team: a}, [5]", s.Data["metadata"], s.Data["policies"])
	}
}
