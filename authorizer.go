package keel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Capability is a right that an operation needs on a resource. The names are
// those of the documents keel implements.
type Capability string

// The capabilities keel's packages ask for.
const (
	CapRead           Capability = "read"
	CapList           Capability = "list"
	CapCreate         Capability = "create"
	CapUpdate         Capability = "update"
	CapDelete         Capability = "delete"
	CapSudo           Capability = "sudo"
	CapPeeringRead    Capability = "peering:read"
	CapPeeringWrite   Capability = "peering:write"
	CapManagePolicies Capability = "manage-policies"
	CapManageProjects Capability = "manage-projects"
	CapForceDelete    Capability = "force-delete"
	CapMoveWorkspaces Capability = "move-workspaces"
	// CapDeny in a rule refuses every capability on the resources it
	// matches, whatever other rules grant.
	CapDeny Capability = "deny"
)

// Authorizer decides whether a principal holds a capability on a resource.
// Resources are slash-separated paths named by each package (for example
// "secret/app/db" or "organizations/acme/projects/prj-1").
//
// Authorize returns nil when the right is held, and otherwise an error of
// kind KindForbidden (or KindUnavailable when the decision cannot be made).
// Implementations must be safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, p Principal, c Capability, resource string) error
}

// A Folder is an Authorizer that can fold the names of a domain: a domain
// whose names are compared in a canonical form (identity's group names
// ignore case) asks for rights on prefix+fold(name), and a rule written
// with another spelling of the name must hold for it too. The domain, which
// alone knows its fold, calls Fold on the Authorizer it is given; the
// Authorizer applies the fold to its own rules.
//
// FoldUnder returns a view of the Authorizer that decides on a resource
// under prefix as if the part of every rule's path that matches the
// resource beyond prefix had been passed through fold (wildcards staying
// wildcards): with strings.ToLower, a rule on prefix+"Admins" or
// prefix+"Adm*" holds for the resource prefix+"admins". Resources not under
// prefix are decided as by the Authorizer itself, which FoldUnder leaves
// as it is. prefix ends with "/" (it is a number of whole segments). fold
// must act on a name piece by piece (fold(a+b) == fold(a)+fold(b)) and
// keep "/" and "+" without making either, as strings.ToLower does.
//
// An Authorizer of one's own that does not implement Folder is called with
// the folded resources only: if its rules name such resources (see each
// domain's documentation), it must fold them itself, or a rule written
// with another spelling (a deny, say) never applies.
type Folder interface {
	Authorizer
	FoldUnder(prefix string, fold func(string) string) Authorizer
}

// Fold returns a.FoldUnder(prefix, fold) when a is a Folder, and a itself
// (nil included) otherwise. Domain packages call it on the Authorizer they
// are given, with the prefix of their folded resources and their fold.
func Fold(a Authorizer, prefix string, fold func(string) string) Authorizer {
	if f, ok := a.(Folder); ok {
		return f.FoldUnder(prefix, fold)
	}
	return a
}

// AllowAll is the Authorizer that grants every capability to every caller.
// It is what keel packages use when no Authorizer is configured, so that a
// program that does its own access control pays nothing for keel's.
type AllowAll struct{}

// Authorize returns nil.
func (AllowAll) Authorize(context.Context, Principal, Capability, string) error { return nil }

// Authorize asks a for capability c on resource for the principal carried by
// ctx (the anonymous principal when there is none). A nil a allows
// everything.
func Authorize(ctx context.Context, a Authorizer, c Capability, resource string) error {
	if a == nil {
		return nil
	}
	p, _ := PrincipalFrom(ctx)
	return a.Authorize(ctx, p, c, resource)
}

// An AnyAuthorizer can tell that a principal holds a capability on no
// resource under a prefix: AuthorizeAny returns an error of kind
// KindForbidden only then, and nil when the principal may hold it on some
// resource there (it need not name one, and may answer nil when it cannot
// rule it out). A list of objects each guarded by its own resource asks it
// to refuse a caller with no right on any of them, as a whole, rather
// than answer an empty list.
type AnyAuthorizer interface {
	AuthorizeAny(ctx context.Context, p Principal, c Capability, prefix string) error
}

// AuthorizeAny asks a, for the principal carried by ctx, whether it may
// hold c on some resource under prefix (AnyAuthorizer). A nil a, and an
// Authorizer that cannot tell, allow.
func AuthorizeAny(ctx context.Context, a Authorizer, c Capability, prefix string) error {
	aa, ok := a.(AnyAuthorizer)
	if !ok {
		return nil
	}
	p, _ := PrincipalFrom(ctx)
	return aa.AuthorizeAny(ctx, p, c, prefix)
}

// AuthorizeAny implements AnyAuthorizer: it returns nil.
func (AllowAll) AuthorizeAny(context.Context, Principal, Capability, string) error { return nil }

// Rule grants capabilities on the resources its Path matches.
//
// A Path is a resource path in which "+" as a whole segment matches exactly
// one segment, and a trailing "*" matches any rest, including none
// ("secret/*" matches "secret/" and "secret/a/b"; "identity/group/+/x"
// matches "identity/group/id/x"). Any other character matches itself.
type Rule struct {
	Path         string       `json:"path"`
	Capabilities []Capability `json:"capabilities"`
}

// RootPolicy is the policy name that grants every capability on every
// resource.
const RootPolicy = "root"

// RuleAuthorizer grants capabilities from named policies, each a list of
// Rules. A principal holds a capability on a resource when one of its
// Principal.Policies is RootPolicy, or when a rule of one of its policies
// matches the resource and lists the capability, and no matching rule lists
// CapDeny.
//
// RuleAuthorizer is a Folder: FoldUnder folds the rules once, and a view
// pays one prefix comparison per folded prefix on each decision.
//
// Create one with NewRuleAuthorizer. It is immutable and safe for
// concurrent use.
type RuleAuthorizer struct {
	policies map[string][]compiledRule
	// folded are the rules of the views of FoldUnder, longest prefix
	// first: a resource under one of the prefixes is decided by the
	// rules of the first.
	folded []foldedRules
}

// foldedRules are the policies of a RuleAuthorizer as they apply to the
// resources under prefix.
type foldedRules struct {
	prefix   string
	policies map[string][]compiledRule
}

type compiledRule struct {
	segments []string // split on "/"; "+" is one-segment wildcard
	prefix   bool     // the path ended in "*": last segment is a prefix
	caps     []Capability
	deny     bool
}

// NewRuleAuthorizer checks and compiles policies. It refuses (KindInvalid)
// an empty path, a "*" anywhere but at the end, a "+" that is not a whole
// segment, an empty capability list, and a policy named RootPolicy,
// reporting every problem at once, policies in the order of their names.
// Fields are Go paths into policies, a map entry named by its quoted key
// (see FieldError): `Policies["dev"][0].Path`,
// `Policies["dev"][0].Capabilities`, `Policies["root"]`.
func NewRuleAuthorizer(policies map[string][]Rule) (*RuleAuthorizer, error) {
	var v Validation
	out := &RuleAuthorizer{policies: make(map[string][]compiledRule, len(policies))}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		field := fmt.Sprintf("Policies[%q]", name)
		if name == RootPolicy {
			v.Add(field, "the root policy is built in and cannot be redefined")
			continue
		}
		for i, r := range policies[name] {
			if cr, ok := compileRule(&v, fmt.Sprintf("%s[%d]", field, i), r); ok {
				out.policies[name] = append(out.policies[name], cr)
			}
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// compileRule compiles r, the rule at the Go path field; it adds every
// problem of r to v and reports whether there was none.
func compileRule(v *Validation, field string, r Rule) (compiledRule, bool) {
	problems := v.Len()
	p := r.Path
	if why := pathProblem(p); why != "" {
		v.Add(field+".Path", "%s", why)
	}
	if len(r.Capabilities) == 0 {
		v.Add(field+".Capabilities", "no capabilities: a rule must list at least one")
	}
	if v.Len() > problems {
		return compiledRule{}, false
	}
	cr := compiledRule{caps: slices.Clone(r.Capabilities)}
	if strings.HasSuffix(p, "*") {
		cr.prefix = true
		p = strings.TrimSuffix(p, "*")
	}
	cr.segments = strings.Split(p, "/")
	cr.deny = slices.Contains(cr.caps, CapDeny)
	return cr, true
}

// pathProblem returns the rule the pattern p of a Rule breaks, or "".
func pathProblem(p string) string {
	if p == "" {
		return "is empty"
	}
	prefix := strings.HasSuffix(p, "*")
	rest := strings.TrimSuffix(p, "*")
	if strings.Contains(rest, "*") {
		return fmt.Sprintf("%q: \"*\" is allowed only at the end", p)
	}
	segments := strings.Split(rest, "/")
	for i, s := range segments {
		if strings.Contains(s, "+") && s != "+" {
			return fmt.Sprintf("%q: \"+\" must be a whole segment", p)
		}
		if prefix && i == len(segments)-1 && s == "+" {
			return fmt.Sprintf("%q: \"+*\" is not a pattern", p)
		}
	}
	return ""
}

func (cr compiledRule) matches(resource string) bool {
	rest := resource
	for i, seg := range cr.segments {
		last := i == len(cr.segments)-1
		var part string
		if j := strings.IndexByte(rest, '/'); j >= 0 && !(last && cr.prefix) {
			part, rest = rest[:j], rest[j+1:]
			if last {
				return false // more segments than the pattern has
			}
		} else {
			part, rest = rest, ""
			if !last {
				return false // fewer segments than the pattern has
			}
		}
		switch {
		case last && cr.prefix:
			return strings.HasPrefix(part, seg)
		case seg == "+":
			// any single segment
		case part != seg:
			return false
		}
	}
	return true
}

// folded returns r with its text beyond the first depth segments (those
// that match the resource beyond a prefix of depth segments) passed
// through fold; "+" stays a wildcard. A rule that ends before is returned
// as it is.
func (r compiledRule) folded(depth int, fold func(string) string) compiledRule {
	if len(r.segments) <= depth {
		return r // it ends within the prefix: no name to fold
	}
	r.segments = slices.Clone(r.segments)
	for i := depth; i < len(r.segments); i++ {
		if r.segments[i] != "+" {
			r.segments[i] = fold(r.segments[i])
		}
	}
	return r
}

// FoldUnder implements Folder: it returns a *RuleAuthorizer that decides on
// the resources under prefix with every rule folded beyond prefix, and on
// others as a does. Rules such as "identity/group/+/Admins" or
// "identity/group/name/Adm*" are folded too. a is unchanged; on a view,
// FoldUnder folds the view's rules again. It panics when prefix does not
// end with "/" or fold is nil: both are the program's constants.
func (a *RuleAuthorizer) FoldUnder(prefix string, fold func(string) string) Authorizer {
	if !strings.HasSuffix(prefix, "/") || fold == nil {
		panic(fmt.Sprintf("keel: RuleAuthorizer.FoldUnder(%q, fold): the prefix must end with \"/\" and fold must not be nil", prefix))
	}
	depth := strings.Count(prefix, "/")
	out := &RuleAuthorizer{policies: a.policies, folded: make([]foldedRules, 0, len(a.folded)+1)}
	seen := false
	for _, f := range a.folded {
		if strings.HasPrefix(f.prefix, prefix) { // within prefix: fold again
			seen = seen || f.prefix == prefix
			f.policies = foldPolicies(f.policies, depth, fold)
		}
		out.folded = append(out.folded, f)
	}
	if !seen {
		out.folded = append(out.folded, foldedRules{prefix: prefix, policies: foldPolicies(a.rulesFor(prefix), depth, fold)})
		slices.SortStableFunc(out.folded, func(x, y foldedRules) int { return len(y.prefix) - len(x.prefix) })
	}
	return out
}

// foldPolicies returns policies with each rule folded beyond depth
// segments (see compiledRule.folded).
func foldPolicies(policies map[string][]compiledRule, depth int, fold func(string) string) map[string][]compiledRule {
	out := make(map[string][]compiledRule, len(policies))
	for name, rules := range policies {
		folded := make([]compiledRule, len(rules))
		for i, r := range rules {
			folded[i] = r.folded(depth, fold)
		}
		out[name] = folded
	}
	return out
}

// rulesFor returns the policies that decide on resource: those of the
// longest folded prefix of resource, else a's own.
func (a *RuleAuthorizer) rulesFor(resource string) map[string][]compiledRule {
	for _, f := range a.folded {
		if strings.HasPrefix(resource, f.prefix) {
			return f.policies
		}
	}
	return a.policies
}

// Authorize implements Authorizer.
func (a *RuleAuthorizer) Authorize(_ context.Context, p Principal, c Capability, resource string) error {
	if slices.Contains(p.Policies, RootPolicy) {
		return nil
	}
	policies := a.rulesFor(resource)
	granted := false
	for _, name := range p.Policies {
		for _, r := range policies[name] {
			if !r.matches(resource) {
				continue
			}
			if r.deny {
				return forbidden(p, c, resource)
			}
			if slices.Contains(r.caps, c) {
				granted = true
			}
		}
	}
	if !granted {
		return forbidden(p, c, resource)
	}
	return nil
}

// AuthorizeAny implements AnyAuthorizer. It refuses when none of p's rules
// that list c can match a resource under prefix, or when a rule listing
// CapDeny matches every resource under it ("peering/*" under "peering/");
// a deny on a part of the prefix leaves it to Authorize, resource by
// resource. The rules are taken as written, unfolded.
func (a *RuleAuthorizer) AuthorizeAny(_ context.Context, p Principal, c Capability, prefix string) error {
	if slices.Contains(p.Policies, RootPolicy) {
		return nil
	}
	granted := false
	for _, name := range p.Policies {
		for _, r := range a.policies[name] {
			switch {
			case r.deny && r.prefix && r.matches(prefix):
				return forbidden(p, c, prefix+"*")
			case !r.deny && slices.Contains(r.caps, c) && r.mayMatchUnder(prefix):
				granted = true
			}
		}
	}
	if !granted {
		return forbidden(p, c, prefix+"*")
	}
	return nil
}

// mayMatchUnder reports whether r matches some resource that starts with
// prefix.
func (r compiledRule) mayMatchUnder(prefix string) bool {
	psegs := strings.Split(prefix, "/") // the last one may be extended
	for i, seg := range r.segments {
		last := i == len(r.segments)-1
		if i == len(psegs)-1 { // the open end of the prefix
			open := psegs[i]
			return seg == "+" || strings.HasPrefix(seg, open) || last && r.prefix && strings.HasPrefix(open, seg)
		}
		part := psegs[i]
		switch {
		case last && r.prefix:
			return strings.HasPrefix(strings.Join(psegs[i:], "/"), seg)
		case last:
			return false // the prefix has more segments than r matches
		case seg != "+" && seg != part:
			return false
		}
	}
	return false
}

func forbidden(p Principal, c Capability, resource string) error {
	who := p.ID
	if who == "" {
		who = "anonymous caller"
	}
	return fmt.Errorf("%s lacks %q on %q: %w", who, c, resource, KindForbidden)
}
