package keel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
)

// FuzzRulePath: any rule path is either refused or compiled; a compiled
// path without wildcards grants on exactly the resource it names, and
// nothing panics.
func FuzzRulePath(f *testing.F) {
	for _, s := range [][2]string{
		{"secret/*", "secret/a/b"},
		{"identity/group/+/x", "identity/group/id/x"},
		{"a/+", "a/"},
		{"+", ""},
		{"*", "anything"},
		{"a/b", "a/b/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, resource string) {
		a, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"p": {{Path: path, Capabilities: []keel.Capability{keel.CapRead}}},
		})
		if err != nil {
			return
		}
		p := keel.Principal{ID: "fuzz", Policies: []string{"p"}}
		granted := a.Authorize(context.Background(), p, keel.CapRead, resource) == nil
		if !strings.ContainsAny(path, "*+") && granted != (path == resource) {
			t.Fatalf("literal path %q on resource %q: granted = %v", path, resource, granted)
		}
		if strings.HasSuffix(path, "*") && !strings.Contains(path, "+") && granted != strings.HasPrefix(resource, strings.TrimSuffix(path, "*")) {
			t.Fatalf("prefix path %q on resource %q: granted = %v", path, resource, granted)
		}
		if a.Authorize(context.Background(), p, keel.CapUpdate, resource) == nil {
			t.Fatalf("capability not in the rule was granted")
		}
	})
}
