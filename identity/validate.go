package identity

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

// The limits of metadata, as Vault's.
const (
	maxMetadataPairs    = 64  // pairs in a group's metadata
	maxMetadataKeyLen   = 128 // characters in a metadata key
	maxMetadataValueLen = 512 // characters in a metadata value
)

// nameRule returns the rule a group name breaks, or "": a name is
// non-empty valid UTF-8 without ASCII control characters. Its length is
// bounded only by the store's key limit.
func nameRule(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case !utf8.ValidString(name):
		return "must be valid UTF-8"
	case strings.ContainsFunc(name, isControl):
		return "must not contain control characters"
	}
	return ""
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkMetadata adds to v every rule m breaks.
func checkMetadata(v *keel.Validation, m map[string]string) {
	if len(m) > maxMetadataPairs {
		v.Add("Metadata", "must hold at most %d pairs, not %d", maxMetadataPairs, len(m))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		switch {
		case k == "":
			v.Add("Metadata", "keys must not be empty")
		case !utf8.ValidString(k):
			v.Add("Metadata", "key %q is not valid UTF-8", k)
		case utf8.RuneCountInString(k) > maxMetadataKeyLen:
			v.Add("Metadata", "key %.32q... is longer than %d characters", k, maxMetadataKeyLen)
		}
		switch {
		case !utf8.ValidString(val):
			v.Add("Metadata", "value of %.32q is not valid UTF-8", k)
		case utf8.RuneCountInString(val) > maxMetadataValueLen:
			v.Add("Metadata", "value of %.32q is longer than %d characters", k, maxMetadataValueLen)
		}
	}
}

// normalizePolicies returns ps trimmed, lower-cased, without empty names
// or duplicates, sorted, and adds to v a refusal of "root".
func normalizePolicies(v *keel.Validation, ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		p = strings.ToLower(strings.TrimSpace(p))
		if p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if slices.Contains(out, keel.RootPolicy) {
		v.Add("Policies", "policies cannot contain root")
	}
	return out
}

// normalizeIDs returns ids without duplicates, sorted, and adds to v an
// empty id, named by its index in ids: field[i].
func normalizeIDs(v *keel.Validation, field string, ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 0 && out[0] == "" {
		v.Add(fmt.Sprintf("%s[%d]", field, slices.Index(ids, "")), "must not be empty")
		out = out[1:]
	}
	return out
}

// normalized is a GroupRequest checked for every rule that does not
// depend on the stored state; its errors are reported after the rights
// are checked.
type normalized struct {
	in       GroupRequest // with the normalized slices behind its pointers
	problems []*keel.FieldError
}

// normalize checks in and returns it with its lists normalized; in is not
// changed.
func normalize(in GroupRequest) normalized {
	var v keel.Validation
	out := GroupRequest{Name: in.Name, Type: in.Type}
	if in.Name != nil && *in.Name != "" {
		if rule := nameRule(*in.Name); rule != "" {
			v.Add("Name", "%s", rule)
		}
	}
	if in.Type != nil && *in.Type != "" && *in.Type != Internal && *in.Type != External {
		v.Add("Type", "invalid group type %q", *in.Type)
	}
	if in.Metadata != nil {
		checkMetadata(&v, *in.Metadata)
		m := maps.Clone(*in.Metadata)
		if m == nil {
			m = map[string]string{}
		}
		out.Metadata = &m
	}
	if in.Policies != nil {
		ps := normalizePolicies(&v, *in.Policies)
		out.Policies = &ps
	}
	if in.MemberGroupIDs != nil {
		ids := normalizeIDs(&v, "MemberGroupIDs", *in.MemberGroupIDs)
		out.MemberGroupIDs = &ids
	}
	if in.MemberEntityIDs != nil {
		ids := normalizeIDs(&v, "MemberEntityIDs", *in.MemberEntityIDs)
		out.MemberEntityIDs = &ids
	}
	return normalized{in: out, problems: keel.FieldErrors(v.Err())}
}
