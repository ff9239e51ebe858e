package vault

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
)

func TestWirePath(t *testing.T) {
	for _, tc := range []struct{ scope, path, want string }{
		{"", "", ""},
		{"", "LeaseID", "lease_id"},
		{"", "MemberGroupIDs", "member_group_ids"},
		{"", "MemberGroupIDs[2]", "member_group_ids"},
		{"", "ServiceAccountNames[10]", "service_account_names"},
		{"", "BindDN", "binddn"},
		{"", "PasswordPolicy", "password_policy"},
		{"", "DefaultTTL", "default_ttl"},
		{"", "Store", "store"},                // not in the table: lower-cased
		{"", `Data["ttl"]`, "ttl"},            // kv's data are the body
		{"", `Data["Name"]`, "Name"},          // a key is kept as it is
		{"", `Data["a.b[0]\"c"]`, `a.b[0]"c`}, // quoted, whatever it holds
		{"", "Data", ""},                      // the request as a whole
		{"", `Options["version"]`, "options.version"},
		{"", `Policies["dev"][0].Path`, "policies.dev.path"},
		{"EnableRequest", "DefaultTTL", "config.default_lease_ttl"},
		{"EnableRequest", "MaxTTL", "config.max_lease_ttl"},
		{"EnableRequest", "Path", "path"}, // no scoped entry: the general one
		{"", "Broken[", "broken"},         // malformed: no panic
		{"", `Broken["x`, "broken"},
		// Wire names, as the adapter's own problems name them, are
		// left as they are.
		{"", "lease_id", "lease_id"},
		{"", "service_account_names", "service_account_names"},
		{"EnableRequest", "config.default_lease_ttl", "config.default_lease_ttl"},
	} {
		if got := wirePath(tc.scope, tc.path); got != tc.want {
			t.Errorf("wirePath(%q, %q) = %q, want %q", tc.scope, tc.path, got, tc.want)
		}
	}
}

// TestWireNamesAreWireNames: every wire name of the table is one that
// wirePath leaves as it is, so that nothing is translated twice.
func TestWireNamesAreWireNames(t *testing.T) {
	for goName, wire := range wireNames {
		if wire != strings.ToLower(wire) {
			t.Errorf("wireNames[%q] = %q: not lower case", goName, wire)
		}
		if got := wirePath("", wire); got != wire {
			t.Errorf("wirePath(%q) = %q: a wire name is translated again", wire, got)
		}
		if goName == strings.ToLower(goName) {
			t.Errorf("key %q is lower case: it could be taken for a wire name", goName)
		}
	}
}

func TestWireError(t *testing.T) {
	var v keel.Validation
	v.Add("MemberGroupIDs[1]", "must not be empty")
	v.Add("", "missing data fields")
	v.Add("DefaultTTL", "must not be negative")
	err := wireError("EnableRequest", errors.Join(errors.New("context"), v.Err()))
	var ve *vaultError
	if !errors.As(err, &ve) || ve.status != http.StatusBadRequest ||
		!slices.Equal(ve.msgs, []string{"member_group_ids: must not be empty", "missing data fields", "config.default_lease_ttl: must not be negative"}) {
		t.Fatalf("wireError = %#v", err)
	}
	for _, other := range []error{nil, keel.KindNotFound, keel.KindInvalid} {
		if got := wireError("", other); got != other {
			t.Errorf("wireError(%v) = %v, want it as it is", other, got)
		}
	}
}

// TestWireNamesMatchTheDecoders: for every field of the inputs the adapter
// decodes, the wire name the table gives is the key its decoder reads
// into that field.
func TestWireNamesMatchTheDecoders(t *testing.T) {
	// sample is a value of the wire that decodes to a non-zero value of
	// type typ.
	sample := func(typ reflect.Type) any {
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Bool:
			return true
		case reflect.Int:
			return "7"
		case reflect.Int64: // time.Duration
			return "90s"
		case reflect.Map:
			return map[string]any{"k": "v"}
		default: // strings, lists of strings
			return "x"
		}
	}
	for name, decode := range map[string]func(*fields) any{
		"ldapengine.ConfigRequest":      func(f *fields) any { return configFrom(f) },
		"ldapengine.CheckOutRequest":    func(f *fields) any { return checkOutFrom(f) },
		"ldapengine.StaticRoleRequest":  func(f *fields) any { return staticRoleFrom(f) },
		"ldapengine.DynamicRoleRequest": func(f *fields) any { return dynamicRoleFrom(f) },
		"ldapengine.LibrarySetRequest":  func(f *fields) any { return librarySetFrom(f) },
		"identity.Input":                func(f *fields) any { return groupFrom(f) },
	} {
		typ := reflect.TypeOf(decode(&fields{m: map[string]any{}}))
		for i := range typ.NumField() {
			field := typ.Field(i)
			if _, ok := wireNames[field.Name]; !ok {
				t.Errorf("%s.%s is not in the table", name, field.Name)
				continue
			}
			wire := wirePath("", field.Name)
			f := &fields{m: map[string]any{wire: sample(field.Type)}}
			got := reflect.ValueOf(decode(f)).Field(i)
			if err := f.v.Err(); err != nil || got.IsZero() {
				t.Errorf("%s.%s: its wire name %q does not decode into it (%v)", name, field.Name, wire, err)
			}
		}
	}
}
