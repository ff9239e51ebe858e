package ldaptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
)

const adminDN = "cn=admin,dc=x"

var conn = ldapengine.Conn{BindDN: adminDN, BindPass: "pw"}

func newDir(t testing.TB) *ldaptest.Directory {
	t.Helper()
	d := ldaptest.NewDirectory()
	d.Add(adminDN, "pw")
	return d
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	changes := []ldapengine.Change{
		{Type: ldapengine.ChangeAdd, DN: "uid=a,dc=x", Attributes: []ldapengine.Attribute{{Name: "uid", Values: []string{"a"}}, {Name: "userPassword", Values: []string{"a-pw"}}}},
		{Type: ldapengine.ChangeModify, DN: "uid=a,dc=x", Modifications: []ldapengine.Modification{{Op: ldapengine.ModAdd, Attribute: ldapengine.Attribute{Name: "description", Values: []string{"x"}}}}},
	}
	if err := d.Apply(ctx, conn, changes, false); err != nil {
		t.Fatal(err)
	}
	if v, ok := d.Attr("uid=a,dc=x", "description"); !ok || len(v) != 1 || v[0] != "x" {
		t.Fatalf("description = %v, %v", v, ok)
	}
	if err := d.Bind(ctx, conn, "uid=a,dc=x", "a-pw"); err != nil {
		t.Fatalf("bind with the userPassword added: %v", err)
	}
	if dn, err := d.FindDN(ctx, conn, "dc=x", "uid", "A"); err != nil || dn != "uid=a,dc=x" {
		t.Fatalf("FindDN = %q, %v", dn, err)
	}
	if d.Applied() != 2 {
		t.Fatalf("Applied = %d, want 2", d.Applied())
	}
}

func TestApplyErrors(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	del := func(dn string) ldapengine.Change { return ldapengine.Change{Type: ldapengine.ChangeDelete, DN: dn} }
	for name, tc := range map[string]struct {
		keepGoing bool
		want      []int // indexes of the failed changes
	}{
		"stop at the first": {false, []int{0}},
		"keep going":        {true, []int{0, 2}},
	} {
		t.Run(name, func(t *testing.T) {
			d.Add("uid=b,dc=x", "")
			err := d.Apply(ctx, conn, []ldapengine.Change{del("uid=missing,dc=x"), del("uid=b,dc=x"), del("uid=gone,dc=x")}, tc.keepGoing)
			var got []int
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *ldapengine.ChangeError
				if !errors.As(e, &ce) || !errors.Is(ce, keel.KindNotFound) || ce.Type != ldapengine.ChangeDelete {
					t.Fatalf("error %v is not a ChangeError of kind KindNotFound", e)
				}
				got = append(got, ce.Index)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] || (len(got) > 1 && got[1] != tc.want[1]) {
				t.Fatalf("failed changes %v, want %v", got, tc.want)
			}
		})
	}
	// The managing account refused is the configuration's fault, not the
	// caller's: a conflict, and certainly nothing was changed.
	if err := d.Apply(ctx, ldapengine.Conn{BindDN: adminDN, BindPass: "wrong"}, nil, false); keel.KindOf(err) != keel.KindConflict || !errors.Is(err, ldapengine.ErrNotApplied) {
		t.Fatalf("Apply with a wrong bind: %v, want KindConflict and ErrNotApplied", err)
	}
	d.LoseReplies("uid=x,dc=x", true)
	d.Add("uid=x,dc=x", "old")
	if err := d.SetPassword(ctx, conn, "uid=x,dc=x", "new"); !errors.Is(err, keel.KindUnavailable) || errors.Is(err, ldapengine.ErrNotApplied) {
		t.Fatalf("SetPassword with its reply lost: %v, want KindUnavailable without ErrNotApplied", err)
	}
	if pw, _ := d.Password("uid=x,dc=x"); pw != "new" {
		t.Fatalf("a change whose reply is lost was not made: password %q", pw)
	}
	d.SetDown(true)
	if err := d.SetPassword(ctx, conn, adminDN, "new"); !errors.Is(err, keel.KindUnavailable) || !errors.Is(err, ldapengine.ErrNotApplied) {
		t.Fatalf("SetPassword while down: %v, want KindUnavailable and ErrNotApplied", err)
	}
}
