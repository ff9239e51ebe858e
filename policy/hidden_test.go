package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestSetMembersHidden: a workspace or project that a caller with
// manage-policies may not read answers, as a member of CreateSet or
// AddSetMembers, exactly as a missing one (KindInvalid on the member's
// field, the same message), and nothing is written; a workspace it reads
// joins.
func TestSetMembersHidden(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s")})
		if err != nil {
			t.Fatal(err)
		}
		w.s.authz, err = keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"manager": {
				{Path: "organizations/acme/policies", Capabilities: []keel.Capability{keel.CapManagePolicies}},
				{Path: "organizations/acme/workspaces/" + w.ws1, Capabilities: []keel.Capability{keel.CapRead}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := as("m", "manager")
		// answer returns the error of op on id, checking that it
		// changed nothing, with id set aside in its message.
		answer := func(t *testing.T, op func(id string) error, id string) (string, error) {
			t.Helper()
			var err error
			w.unchanged(t, func() error { err = op(id); return err }, keel.KindInvalid)
			return strings.ReplaceAll(err.Error(), id, "<id>"), err
		}
		tests := []struct {
			name            string
			hidden, missing string
			op              func(id string) error
		}{
			{"create with a workspace", w.ws2, "ws-nope", func(id string) error {
				_, err := w.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("n"), WorkspaceIDs: []string{id}})
				return err
			}},
			{"create with a project", w.prj, "prj-nope", func(id string) error {
				_, err := w.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("n"), ProjectIDs: []string{id}})
				return err
			}},
			{"create with an exclusion", w.ws2, "ws-nope", func(id string) error {
				_, err := w.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("n"), WorkspaceExclusionIDs: []string{id}})
				return err
			}},
			{"add a workspace", w.ws2, "ws-nope", func(id string) error { return w.s.AddSetMembers(ctx, set.ID, SetWorkspaces, []string{id}) }},
			{"add a project", w.prj, "prj-nope", func(id string) error { return w.s.AddSetMembers(ctx, set.ID, SetProjects, []string{id}) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				hidden, errHidden := answer(t, tt.op, tt.hidden)
				missing, errMissing := answer(t, tt.op, tt.missing)
				if fh, fm := fieldsOf(errHidden), fieldsOf(errMissing); !slices.Equal(fh, fm) || len(fh) != 1 {
					t.Fatalf("fields %q for a hidden member, %q for a missing one", fh, fm)
				}
				if hidden != missing {
					t.Fatalf("message %q for a hidden member, %q for a missing one", hidden, missing)
				}
			})
		}
		if err := w.s.AddSetMembers(ctx, set.ID, SetWorkspaces, []string{w.ws1}); err != nil {
			t.Fatalf("add a workspace the caller reads: %v", err)
		}
	})
}
