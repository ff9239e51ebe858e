package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestCreateRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.mk(t, "taken")
		set, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("base"), PolicyIDs: nil})
		if err != nil {
			t.Fatal(err)
		}
		one := func(path, mode string) *[]Enforce { return &[]Enforce{{Path: path, Mode: mode}} }
		tests := []struct {
			name     string
			org      string
			in       CreateRequest
			wantErr  error
			fields   []string
			wantMode string
		}{
			{"default mode", "acme", CreateRequest{Name: ptr("a"), Enforce: one("a.policy", "")}, nil, nil, HardMandatory},
			{"soft-mandatory", "acme", CreateRequest{Name: ptr("b"), Enforce: one("b.policy", SoftMandatory)}, nil, nil, SoftMandatory},
			{"advisory", "acme", CreateRequest{Name: ptr("c"), Enforce: one("c.policy", Advisory)}, nil, nil, Advisory},
			{"path mismatch uses hard-mandatory", "acme", CreateRequest{Name: ptr("d"), Enforce: one("other.policy", Advisory)}, nil, nil, HardMandatory},
			{"sentinel file names its own", "acme", CreateRequest{Name: ptr("s1"), Enforce: one("s1.sentinel", SoftMandatory)}, nil, nil, SoftMandatory},
			{"opa file names its own", "acme", CreateRequest{Name: ptr("o1"), Kind: ptr(OPA), Query: ptr("data.x"), Enforce: one("o1.rego", Mandatory)}, nil, nil, Mandatory},
			{"rego file of a sentinel policy is another file", "acme", CreateRequest{Name: ptr("s2"), Enforce: one("s2.rego", Advisory)}, nil, nil, HardMandatory},
			{"sentinel file of an opa policy is another file", "acme", CreateRequest{Name: ptr("o2"), Kind: ptr(OPA), Query: ptr("data.x"), Enforce: one("o2.sentinel", Mandatory)}, nil, nil, Advisory},
			{"other extension uses hard-mandatory", "acme", CreateRequest{Name: ptr("s3"), Enforce: one("s3.hcl", Advisory)}, nil, nil, HardMandatory},
			{"enforcement-level alone", "acme", CreateRequest{Name: ptr("e"), EnforcementLevel: ptr(SoftMandatory)}, nil, nil, SoftMandatory},
			{"opa with query", "acme", CreateRequest{Name: ptr("f"), Kind: ptr(OPA), Query: ptr("data.x"), EnforcementLevel: ptr(Mandatory)}, nil, nil, Mandatory},
			{"name required", "acme", CreateRequest{Enforce: one(".policy", "")}, keel.KindInvalid, []string{"Name"}, ""},
			{"name with space", "acme", CreateRequest{Name: ptr("a b"), Enforce: one("a b.policy", "")}, keel.KindInvalid, []string{"Name"}, ""},
			{"two enforce elements", "acme", CreateRequest{Name: ptr("g"), Enforce: &[]Enforce{{Path: "g.policy"}, {Path: "g.policy"}}}, keel.KindInvalid, []string{"Enforce"}, ""},
			{"no enforce element", "acme", CreateRequest{Name: ptr("g"), Enforce: &[]Enforce{}}, keel.KindInvalid, []string{"Enforce"}, ""},
			{"enforce missing", "acme", CreateRequest{Name: ptr("g")}, keel.KindInvalid, []string{"Enforce"}, ""},
			{"bad mode", "acme", CreateRequest{Name: ptr("g"), Enforce: one("g.policy", "strict")}, keel.KindInvalid, []string{"Enforce[0].Mode"}, ""},
			{"bad kind", "acme", CreateRequest{Name: ptr("g"), Kind: ptr("rego"), Enforce: one("g.policy", "")}, keel.KindInvalid, []string{"Kind"}, ""},
			{"opa without query", "acme", CreateRequest{Name: ptr("g"), Kind: ptr(OPA), EnforcementLevel: ptr(Advisory)}, keel.KindInvalid, []string{"Query"}, ""},
			{"enforce path required", "acme", CreateRequest{Name: ptr("g"), Enforce: one("", Advisory)}, keel.KindInvalid, []string{"Enforce[0].Path"}, ""},
			{"bad enforcement level", "acme", CreateRequest{Name: ptr("g"), EnforcementLevel: ptr("strict")}, keel.KindInvalid, []string{"EnforcementLevel"}, ""},
			{"every problem at once", "acme", CreateRequest{Name: ptr("a b"), Kind: ptr(OPA), Enforce: one("x.policy", "hard-mandatory")}, keel.KindInvalid, []string{"Name", "Query", "Enforce[0].Mode"}, ""},
			{"unknown policy set", "acme", CreateRequest{Name: ptr("g"), Enforce: one("g.policy", ""), PolicySetIDs: []string{"polset-x"}}, keel.KindInvalid, []string{"PolicySetIDs[0]"}, ""},
			{"second policy set unknown", "acme", CreateRequest{Name: ptr("g"), Enforce: one("g.policy", ""), PolicySetIDs: []string{set.ID, "polset-x"}}, keel.KindInvalid, []string{"PolicySetIDs[1]"}, ""},
			{"name taken ignoring case", "acme", CreateRequest{Name: ptr("TAKEN"), Enforce: one("TAKEN.policy", "")}, keel.KindAlreadyExists, nil, ""},
			{"unknown organization", "nope", CreateRequest{Name: ptr("g"), Enforce: one("g.policy", "")}, keel.KindNotFound, nil, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := e.s.Create(root(), tt.org, tt.in)
				if tt.wantErr == nil {
					if err != nil {
						t.Fatal(err)
					}
					if p.EnforcementLevel != tt.wantMode || len(p.Enforce) != 1 || p.UpdatedAt != nil || !strings.HasPrefix(p.ID, "pol-") {
						t.Fatalf("policy = %+v", p)
					}
					return
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got := fields(err); !slices.Equal(got, tt.fields) {
					t.Fatalf("fields = %v, want %v", got, tt.fields)
				}
			})
		}
	})
}

func TestUpdateReplacesEnforceAndKeepsName(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mk(t, "pol")
		e.clock.Advance(1500 * time.Microsecond)
		tests := []struct {
			name     string
			in       UpdateRequest
			wantMode string
			wantDesc string
			wantErr  error
		}{
			{"description only keeps enforce", UpdateRequest{Description: ptr("d")}, HardMandatory, "d", nil},
			{"enforce replaced", UpdateRequest{Enforce: &[]Enforce{{Path: "pol.policy", Mode: Advisory}}}, Advisory, "d", nil},
			{"path checked against original name", UpdateRequest{Enforce: &[]Enforce{{Path: "new.policy", Mode: Advisory}}}, HardMandatory, "d", nil},
			{"enforcement-level", UpdateRequest{EnforcementLevel: ptr(SoftMandatory)}, SoftMandatory, "d", nil},
			{"two elements refused", UpdateRequest{Enforce: &[]Enforce{{}, {}}}, "", "", keel.KindInvalid},
			{"query on sentinel refused", UpdateRequest{Query: ptr("q")}, "", "", keel.KindInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := e.s.Update(root(), p.ID, tt.in)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err = %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got.Name != "pol" || got.EnforcementLevel != tt.wantMode || *got.Description != tt.wantDesc {
					t.Fatalf("policy = %+v", got)
				}
				want := t0.Add(time.Millisecond)
				if got.UpdatedAt == nil || !got.UpdatedAt.Equal(want) || got.UpdatedAt.Location() != time.UTC {
					t.Fatalf("updated at %v, want %v", got.UpdatedAt, want)
				}
			})
		}
	})
}

// fields returns the fields of err's problems, in order.
func fields(err error) []string {
	var out []string
	for _, fe := range keel.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	return out
}

func TestUpdateRulesNameGoFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mk(t, "pol")
		opa, err := e.s.Create(root(), "acme", CreateRequest{Name: ptr("rego"), Kind: ptr(OPA), Query: ptr("data.x"), EnforcementLevel: ptr(Advisory)})
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			id     string
			in     UpdateRequest
			fields []string
		}{
			{"two enforce elements", p.ID, UpdateRequest{Enforce: &[]Enforce{{Path: "pol.policy"}, {Path: "pol.policy"}}}, []string{"Enforce"}},
			{"enforce path missing", p.ID, UpdateRequest{Enforce: &[]Enforce{{Mode: Advisory}}}, []string{"Enforce[0].Path"}},
			{"query on sentinel", p.ID, UpdateRequest{Query: ptr("q")}, []string{"Query"}},
			{"empty query on opa", opa.ID, UpdateRequest{Query: ptr("")}, []string{"Query"}},
			{"opa level", opa.ID, UpdateRequest{EnforcementLevel: ptr(HardMandatory)}, []string{"EnforcementLevel"}},
			{"bad mode and level at once", p.ID, UpdateRequest{EnforcementLevel: ptr("x"), Enforce: &[]Enforce{{Path: "pol.policy", Mode: "y"}}}, []string{"EnforcementLevel", "Enforce[0].Mode"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.s.Update(root(), tt.id, tt.in)
				if !errors.Is(err, keel.KindInvalid) || !slices.Equal(fields(err), tt.fields) {
					t.Fatalf("err = %v, fields %v, want %v", err, fields(err), tt.fields)
				}
			})
		}
	})
}

func TestCreateSetRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		a := e.mk(t, "a")
		tests := []struct {
			name      string
			set       string
			policyIDs []string
			fields    []string
		}{
			{"name required", "", nil, []string{"Name"}},
			{"name with space", "a b", nil, []string{"Name"}},
			{"unknown policies", "s", []string{a.ID, "pol-x", "a/b"}, []string{"PolicyIDs[1]", "PolicyIDs[2]"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr(tt.set), PolicyIDs: tt.policyIDs})
				if !errors.Is(err, keel.KindInvalid) || !slices.Equal(fields(err), tt.fields) {
					t.Fatalf("err = %v, fields %v, want %v", err, fields(err), tt.fields)
				}
			})
		}
		if p, _ := e.s.Get(root(), a.ID); len(p.PolicySetIDs) != 0 {
			t.Fatalf("a refused set was kept: %v", p.PolicySetIDs)
		}
	})
}

func TestUploadDownload(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mk(t, "pol")
		if _, err := e.s.Download(root(), p.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("download before upload: %v", err)
		}
		// 10 MiB, or what one value of the store holds (etcd: 1,396 KiB).
		most := e.s.Limits().MaxCodeBytes
		if want := min(MaxCodeSize, e.raw.Limits().MaxValueSize); most != want {
			t.Fatalf("MaxCodeBytes = %d, want %d", most, want)
		}
		tests := []struct {
			name    string
			code    []byte
			wantErr error
		}{
			{"small", []byte("main = rule { true }"), nil},
			{"exactly MaxCodeBytes", bytes.Repeat([]byte("x"), most), nil},
			{"one byte more", bytes.Repeat([]byte("y"), most+1), keel.KindTooLarge},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before, _ := e.s.Download(root(), p.ID)
				err := e.s.Upload(root(), p.ID, tt.code)
				if !errors.Is(err, tt.wantErr) && (err != nil || tt.wantErr != nil) {
					t.Fatalf("err = %v", err)
				}
				if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("at most %d", most)) {
					t.Fatalf("the refusal %q does not name the limit %d", err, most)
				}
				got, _ := e.s.Download(root(), p.ID)
				want := tt.code
				if tt.wantErr != nil {
					want = before
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("downloaded %d bytes, want %d", len(got), len(want))
				}
			})
		}
		got, _ := e.s.Get(root(), p.ID)
		if got.UpdatedAt == nil || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("updated at %v", got.UpdatedAt)
		}
	})
}

func TestNotFoundInsteadOfForbidden(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"other": {{Path: "organizations/acme/projects", Capabilities: []keel.Capability{keel.CapManageProjects}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, open, authz, nil)
		p := e.mk(t, "pol")
		ctx := as("u", "other")
		tests := []struct {
			name string
			op   func() error
		}{
			{"create", func() error { _, err := e.s.Create(ctx, "acme", CreateRequest{Name: ptr("x")}); return err }},
			{"show", func() error { _, err := e.s.Get(ctx, p.ID); return err }},
			{"update", func() error { _, err := e.s.Update(ctx, p.ID, UpdateRequest{}); return err }},
			{"upload", func() error { return e.s.Upload(ctx, p.ID, []byte("x")) }},
			{"download", func() error { _, err := e.s.Download(ctx, p.ID); return err }},
			{"list", func() error { _, err := e.s.List(ctx, "acme", ListRequest{}); return err }},
			{"delete", func() error { return e.s.Delete(ctx, p.ID) }},
			{"unknown policy", func() error { _, err := e.s.Get(root(), "pol-nope"); return err }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.op(); !errors.Is(err, keel.KindNotFound) {
					t.Fatalf("err = %v, want not found", err)
				}
			})
		}
	})
}

func TestPolicySets(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		a := e.mk(t, "a")
		set, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("base"), PolicyIDs: []string{a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.s.Create(root(), "acme", CreateRequest{Name: ptr("b"), EnforcementLevel: ptr(Advisory), PolicySetIDs: []string{set.ID}})
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			id   string
			want []string
		}{
			{"joined by the set", a.ID, []string{set.ID}},
			{"joined on create", b.ID, []string{set.ID}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := e.s.Get(root(), tt.id)
				if err != nil || !slices.Equal(p.PolicySetIDs, tt.want) {
					t.Fatalf("sets = %v, %v", p.PolicySetIDs, err)
				}
			})
		}
		if err := e.s.Delete(root(), a.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.s.GetSet(root(), set.ID)
		if !slices.Equal(got.PolicyIDs, []string{b.ID}) {
			t.Fatalf("members after delete = %v", got.PolicyIDs)
		}
	})
}

func TestList(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		for _, n := range []string{"c-net", "a-net", "b-db", "d-db", "e-net"} {
			e.mk(t, n)
		}
		tests := []struct {
			name  string
			opts  ListRequest
			want  []string
			total int
			next  bool
		}{
			{"all in name order", ListRequest{}, []string{"a-net", "b-db", "c-net", "d-db", "e-net"}, 5, false},
			{"page 2 of size 2", ListRequest{ListRequest: keel.ListRequest{Limit: 2}, Offset: 2}, []string{"c-net", "d-db"}, 5, true},
			{"page past the end", ListRequest{ListRequest: keel.ListRequest{Limit: 2}, Offset: 6}, nil, 5, false},
			{"search ignores case", ListRequest{Search: "NET"}, []string{"a-net", "c-net", "e-net"}, 3, false},
			{"search page 2", ListRequest{Search: "net", ListRequest: keel.ListRequest{Limit: 2}, Offset: 2}, []string{"e-net"}, 3, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				page, err := e.s.List(root(), "acme", tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, p := range page.Items {
					got = append(got, p.Name)
				}
				if !slices.Equal(got, tt.want) || page.Matching != tt.total || page.Total != 5 || (page.Next != "") != tt.next {
					t.Fatalf("got %v %+v", got, page)
				}
			})
		}
	})
}

func TestFailedWritesLeaveStoreUnchanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		e := newEnv(t, open, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		p := e.mk(t, "pol")
		boom := errors.New("disk full")
		tests := []struct {
			name string
			op   func() error
		}{
			{"create", func() error {
				_, err := e.s.Create(root(), "acme", CreateRequest{Name: ptr("x"), EnforcementLevel: ptr(Advisory)})
				return err
			}},
			{"update", func() error { _, err := e.s.Update(root(), p.ID, UpdateRequest{Description: ptr("d")}); return err }},
			{"upload", func() error { return e.s.Upload(root(), p.ID, []byte("code")) }},
			{"delete", func() error { return e.s.Delete(root(), p.ID) }},
			{"create set", func() error {
				_, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{p.ID}})
				return err
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := storagetest.Dump(t, e.raw)
				fs.Fail(faultstore.OpCommit, "", 1, boom)
				if err := tt.op(); !errors.Is(err, boom) {
					t.Fatalf("err = %v", err)
				}
				if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
					t.Fatal("the failed write changed the store")
				}
			})
		}
		fs.Rerun(true)
		q := e.mk(t, "rerun")
		if err := e.s.Upload(root(), q.ID, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if page, _ := e.s.List(root(), "acme", ListRequest{}); page.Matching != 2 {
			t.Fatalf("after reruns: %+v", page)
		}
	})
}

// TestDownloadReservesLargeCode: with a keel.Reserver in the context, the
// download of code of keel.LargeValue bytes or more reserves its size
// before it loads it; a refused reservation fails the download with the
// Reserver's kind; small code reserves nothing.
func TestDownloadReservesLargeCode(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		small, large := e.mk(t, "small"), e.mk(t, "large")
		code := bytes.Repeat([]byte("#"), keel.LargeValue)
		if err := e.s.Upload(root(), large.ID, code); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Upload(root(), small.ID, []byte("main = rule { true }")); err != nil {
			t.Fatal(err)
		}
		var asked []int64
		refuse := false
		ctx := keel.WithReserver(root(), func(ctx context.Context, n int64) error {
			asked = append(asked, n)
			if refuse {
				return fmt.Errorf("no room: %w", keel.KindUnavailable)
			}
			return nil
		})
		if _, err := e.s.Download(ctx, small.ID); err != nil || len(asked) != 0 {
			t.Fatalf("small download: %v; reserved %v, want nothing", err, asked)
		}
		if got, err := e.s.Download(ctx, large.ID); err != nil || !bytes.Equal(got, code) || !slices.Equal(asked, []int64{int64(len(code))}) {
			t.Fatalf("large download: %v; reserved %v, want [%d]", err, asked, len(code))
		}
		refuse = true
		_, err := e.s.Download(ctx, large.ID)
		if keel.KindOf(err) != keel.KindUnavailable {
			t.Fatalf("download refused its reservation: %v, want Unavailable", err)
		}
	})
}
