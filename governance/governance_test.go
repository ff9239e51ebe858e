package governance_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/governance"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestMain gives the tests on etcdstore one embedded etcd (see everystore).
func TestMain(m *testing.M) { everystore.Main(m) }

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

// logs is a Logger's output, safe for concurrent use.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// open opens the family over store with every right allowed and a fake
// clock at t0, or fails t; it is closed when t ends.
func open(t testing.TB, store storage.Store, logger *slog.Logger) *governance.Service {
	t.Helper()
	gov, err := governance.Open(context.Background(), store, &governance.Options{
		Authorizer: keel.AllowAll{}, Clock: keel.NewFakeClock(t0), Logger: logger,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { gov.Close() })
	return gov
}

func ptr[T any](v T) *T { return &v }

// stored is what populate creates in the organization "acme".
type stored struct {
	project, workspace, policy string
}

// populate creates the organization "acme" with the project "platform", its
// workspace "network" and the policy "require-tags" with its code, or
// fails t.
func populate(t testing.TB, gov *governance.Service) stored {
	t.Helper()
	ctx := context.Background()
	if _, err := gov.Catalog().CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")}); err != nil {
		t.Fatal(err)
	}
	prj, err := gov.Catalog().Create(ctx, "acme", project.ProjectRequest{Name: ptr("platform")})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := gov.Catalog().CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("network"), ProjectID: new(prj.ID)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := gov.Policies().Create(ctx, "acme", policy.CreateRequest{
		Name: ptr("require-tags"), Enforce: &[]policy.Enforce{{Path: "require-tags.policy", Mode: policy.SoftMandatory}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gov.Policies().Upload(ctx, p.ID, []byte("main = rule { true }")); err != nil {
		t.Fatal(err)
	}
	return stored{project: prj.ID, workspace: ws.ID, policy: p.ID}
}

// keysLeft returns the keys of store but the markers package policy keeps
// of its indexes ("policy/v/..."), which belong to no organization.
func keysLeft(t testing.TB, store storage.Store) []string {
	t.Helper()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(storagetest.Dump(t, store))) {
		if !strings.HasPrefix(k, "policy/v/") {
			out = append(out, k)
		}
	}
	return out
}

// TestOpenAgainReadsWhatWasStored: what is written through the accessors
// is stored under "project/" and "policy/" only, and a Service opened
// again over the same store (another process, on etcd) reads it back.
func TestOpenAgainReadsWhatWasStored(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		ctx := context.Background()
		store := openStore(t)
		gov := open(t, store, nil)
		s := populate(t, gov)
		var catalog, policies int
		for k := range storagetest.Dump(t, store) {
			switch {
			case strings.HasPrefix(k, "project/"):
				catalog++
			case strings.HasPrefix(k, "policy/"):
				policies++
			default:
				t.Errorf("key %q is outside project/ and policy/", k)
			}
		}
		if catalog == 0 || policies == 0 {
			t.Fatalf("%d keys under project/, %d under policy/", catalog, policies)
		}
		if err := gov.Close(); err != nil {
			t.Fatal(err)
		}
		if err := gov.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}

		again := open(t, everystore.Another(t, store), nil)
		org, err := again.Catalog().GetOrganization(ctx, "acme")
		if err != nil || org.Email != "ops@acme.test" || !org.CreatedAt.Equal(t0) {
			t.Fatalf("organization = %+v, %v", org, err)
		}
		prj, err := again.Catalog().Get(ctx, s.project)
		if err != nil || prj.Name != "platform" || prj.WorkspaceCount != 1 {
			t.Fatalf("project = %+v, %v", prj, err)
		}
		ws, err := again.Catalog().GetWorkspace(ctx, s.workspace)
		if err != nil || ws.Name != "network" {
			t.Fatalf("workspace = %+v, %v", ws, err)
		}
		p, err := again.Policies().Get(ctx, s.policy)
		if err != nil || p.Name != "require-tags" || p.Org != "acme" || p.UpdatedAt == nil || !p.UpdatedAt.Equal(t0) {
			t.Fatalf("policy = %+v, %v", p, err)
		}
		code, err := again.Policies().Download(ctx, s.policy)
		if err != nil || string(code) != "main = rule { true }" {
			t.Fatalf("code = %q, %v", code, err)
		}
	})
}

// TestDeletingAnOrganizationDeletesItsPolicies: Open joins the policies to
// the catalog.
func TestDeletingAnOrganizationDeletesItsPolicies(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		ctx := context.Background()
		store := openStore(t)
		gov := open(t, store, nil)
		s := populate(t, gov)
		if err := gov.Catalog().DeleteOrganization(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if left := keysLeft(t, store); len(left) != 0 {
			t.Fatalf("keys left: %v", left)
		}
		if _, err := gov.Policies().Get(ctx, s.policy); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("policy of the deleted organization: %v", err)
		}
	})
}

// TestOpenFinishesPendingDeletions: the deletion of an organization
// stopped midway (its policies not deleted) is finished by the next Open;
// one that Open cannot finish is logged and left pending, and Open
// succeeds.
func TestOpenFinishesPendingDeletions(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		ctx := context.Background()
		store := openStore(t)
		fs := faultstore.New(store)
		gov := open(t, fs, nil)
		s := populate(t, gov)
		boom := errors.New("disk full")
		fs.Fail(faultstore.OpDelete, "policy/pol/"+s.policy, 1, boom)
		if err := gov.Catalog().DeleteOrganization(ctx, "acme"); !errors.Is(err, boom) {
			t.Fatalf("delete: err = %v, want %v", err, boom)
		}
		mid := storagetest.Dump(t, store)
		for _, k := range []string{"project/del/acme", "policy/pol/" + s.policy, "project/prj/" + s.project} {
			if _, ok := mid[k]; !ok {
				t.Fatalf("%s is not stored: the deletion did not stop midway", k)
			}
		}

		// An Open that cannot finish it logs it and opens.
		fs.Fail(faultstore.OpDelete, "policy/pol/", 1, boom)
		var out logs
		stuck := open(t, fs, slog.New(slog.NewTextHandler(&out, nil)))
		if got := out.String(); !strings.Contains(got, "left pending") || !strings.Contains(got, boom.Error()) {
			t.Fatalf("log = %q, want the deletion left pending and its error", got)
		}
		if _, ok := storagetest.Dump(t, store)["project/del/acme"]; !ok {
			t.Fatal("the pending deletion is gone")
		}
		if _, err := stuck.Catalog().GetOrganization(ctx, "acme"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("organization being deleted: %v", err)
		}

		// The next Open finishes it.
		open(t, everystore.Another(t, store), nil)
		if left := keysLeft(t, store); len(left) != 0 {
			t.Fatalf("keys left: %v", left)
		}
	})
}

// TestOpenRefusesMissingFields: a nil store or a nil Authorizer is refused
// with keel.KindInvalid naming the field, and nothing is written.
func TestOpenRefusesMissingFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		tests := []struct {
			name  string
			store storage.Store
			opts  *governance.Options
			want  []string
		}{
			{"no store", nil, &governance.Options{Authorizer: keel.AllowAll{}}, []string{"Store"}},
			{"no authorizer", store, &governance.Options{Clock: keel.NewFakeClock(t0)}, []string{"Authorizer"}},
			{"no options", store, nil, []string{"Authorizer"}},
			{"neither", nil, nil, []string{"Store", "Authorizer"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				gov, err := governance.Open(context.Background(), tt.store, tt.opts)
				if gov != nil || keel.KindOf(err) != keel.KindInvalid {
					t.Fatalf("Open = %v, %v; want an error of kind invalid", gov, err)
				}
				var fields []string
				for _, fe := range keel.FieldErrors(err) {
					fields = append(fields, fe.Field)
				}
				if !slices.Equal(fields, tt.want) {
					t.Fatalf("fields %v, want %v (%v)", fields, tt.want, err)
				}
				if dump := storagetest.Dump(t, store); len(dump) != 0 {
					t.Fatalf("a refused Open wrote %v", slices.Sorted(maps.Keys(dump)))
				}
			})
		}
	})
}

// TestOpenAsksTheAuthorizer: the Authorizer of Options decides in the
// catalog and in the policies.
func TestOpenAsksTheAuthorizer(t *testing.T) {
	authz, err := keel.NewRuleAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gov, err := governance.Open(context.Background(), everystore.Mem(t), &governance.Options{Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	defer gov.Close()
	root := keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
	nobody := keel.WithPrincipal(context.Background(), keel.Principal{ID: "nobody"})
	if _, err := gov.Catalog().CreateOrganization(nobody, project.OrganizationRequest{Name: new("acme"), Email: new("")}); keel.KindOf(err) != keel.KindForbidden {
		t.Fatalf("create an organization without the right: %v", err)
	}
	if _, err := gov.Catalog().CreateOrganization(root, project.OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
		t.Fatal(err)
	}
	in := policy.CreateRequest{Name: ptr("p"), EnforcementLevel: ptr(policy.Advisory)}
	if _, err := gov.Policies().Create(nobody, "acme", in); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("create a policy without the right: %v", err)
	}
	if _, err := gov.Policies().Create(root, "acme", in); err != nil {
		t.Fatal(err)
	}
}
