package ldapengine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// DefaultPasswordLength is the length of passwords generated without a
// password policy or a configured length.
const DefaultPasswordLength = 64

// The limits of a password policy's length (Vault's).
const (
	MinPolicyLength = 4
	MaxPolicyLength = 100
)

const alphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// GeneratePassword returns n characters drawn uniformly from letters and
// digits with crypto/rand.
func GeneratePassword(n int) (string, error) {
	return randomFrom([]rune(alphanumeric), n)
}

func randomFrom(set []rune, n int) (string, error) {
	out := make([]rune, n)
	for i := range out {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", fmt.Errorf("password: random source: %v: %w", err, keel.ErrInternal)
		}
		out[i] = set[j.Int64()]
	}
	return string(out), nil
}

// CharsetRule is a rule "charset" of a password policy: at least MinChars
// of the generated characters come from Charset.
type CharsetRule struct {
	Charset  string `json:"charset"`
	MinChars int    `json:"min-chars"`
}

// PasswordPolicy is a parsed password policy. Its zero value is not valid;
// make one with ParsePasswordPolicy.
type PasswordPolicy struct {
	Length int
	Rules  []CharsetRule
}

// ParsePasswordPolicy parses a policy in Vault's HCL format:
//
//	length = 20
//	rule "charset" {
//	  charset = "abcdefghijklmnopqrstuvwxyz"
//	  min-chars = 1
//	}
//
// length must be 4 to 100; at least one charset rule; each charset not
// empty; min-chars not negative; the sum of min-chars at most length. Any
// other rule type or attribute is refused. Errors are of kind
// keel.ErrInvalid with the field "policy".
func ParsePasswordPolicy(text string) (*PasswordPolicy, error) {
	file, err := parseHCL(text)
	if err != nil {
		return nil, keel.Invalid("policy", "is not valid HCL: %v", err)
	}
	list, ok := file.Node.(*ast.ObjectList)
	if !ok {
		return nil, keel.Invalid("policy", "is not an HCL body")
	}
	var v keel.Validation
	p := &PasswordPolicy{}
	sawLength := false
	for _, item := range list.Items {
		if len(item.Keys) == 0 {
			continue
		}
		key := item.Keys[0].Token.Value()
		switch {
		case key == "length" && len(item.Keys) == 1:
			var n int
			if err := hcl.DecodeObject(&n, item.Val); err != nil {
				v.Add("policy", "length must be an integer")
				continue
			}
			p.Length, sawLength = n, true
		case key == "rule" && len(item.Keys) == 2:
			typ, _ := item.Keys[1].Token.Value().(string)
			if typ != "charset" {
				v.Add("policy", "rule %q is not supported (only \"charset\")", typ)
				continue
			}
			obj, ok := item.Val.(*ast.ObjectType)
			if !ok {
				v.Add("policy", "rule \"charset\" must be a block")
				continue
			}
			var r CharsetRule
			for _, f := range obj.List.Items {
				name := ""
				if len(f.Keys) == 1 {
					name, _ = f.Keys[0].Token.Value().(string)
				}
				switch name {
				case "charset":
					if err := hcl.DecodeObject(&r.Charset, f.Val); err != nil {
						v.Add("policy", "charset must be a string")
					}
				case "min-chars", "min_chars":
					if err := hcl.DecodeObject(&r.MinChars, f.Val); err != nil {
						v.Add("policy", "min-chars must be an integer")
					}
				default:
					v.Add("policy", "rule \"charset\" has no attribute %q", name)
				}
			}
			if r.Charset == "" || !utf8.ValidString(r.Charset) {
				v.Add("policy", "rule \"charset\" needs a non-empty charset")
			}
			if r.MinChars < 0 {
				v.Add("policy", "min-chars must not be negative")
			}
			p.Rules = append(p.Rules, r)
		default:
			v.Add("policy", "unknown key %v", key)
		}
	}
	if !sawLength {
		v.Add("policy", "length is required")
	} else if p.Length < MinPolicyLength || p.Length > MaxPolicyLength {
		v.Add("policy", "length must be %d to %d, got %d", MinPolicyLength, MaxPolicyLength, p.Length)
	}
	if len(p.Rules) == 0 {
		v.Add("policy", "needs at least one charset rule")
	}
	sum := 0
	for _, r := range p.Rules {
		sum += r.MinChars
	}
	if sawLength && sum > p.Length {
		v.Add("policy", "is impossible: the rules need %d characters, length is %d", sum, p.Length)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// parseHCL is hcl.ParseString made safe: the HCL library panics on some
// malformed input (its JSON scanner, for a text that starts with "{", found
// by FuzzParsePasswordPolicy); such a panic is a parse error.
func parseHCL(text string) (file *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			file, err = nil, fmt.Errorf("malformed input (parser panic: %v)", r)
		}
	}()
	return hcl.ParseString(text)
}

// Generate returns a password of p.Length characters that meets every
// rule: the minimum characters of each rule, then characters from the union
// of all charsets, shuffled with crypto/rand.
func (p *PasswordPolicy) Generate() (string, error) {
	var out []rune
	seen := map[rune]bool{}
	var union []rune
	for _, r := range p.Rules {
		set := []rune(r.Charset)
		s, err := randomFrom(set, r.MinChars)
		if err != nil {
			return "", err
		}
		out = append(out, []rune(s)...)
		for _, c := range set {
			if !seen[c] {
				seen[c] = true
				union = append(union, c)
			}
		}
	}
	rest, err := randomFrom(union, p.Length-len(out))
	if err != nil {
		return "", err
	}
	out = append(out, []rune(rest)...)
	for i := len(out) - 1; i > 0; i-- {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		if err != nil {
			return "", fmt.Errorf("password: random source: %v: %w", err, keel.ErrInternal)
		}
		out[i], out[j.Int64()] = out[j.Int64()], out[i]
	}
	return string(out), nil
}

// Meets reports whether password meets p.
func (p *PasswordPolicy) Meets(password string) bool {
	if utf8.RuneCountInString(password) != p.Length {
		return false
	}
	for _, r := range p.Rules {
		n := 0
		for _, c := range password {
			if strings.ContainsRune(r.Charset, c) {
				n++
			}
		}
		if n < r.MinChars {
			return false
		}
	}
	return true
}

var policyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// PasswordPolicies stores password policies by name: Vault's
// sys/policies/password/:name. Create one with NewPasswordPolicies; it is
// safe for concurrent use.
type PasswordPolicies struct {
	store storage.Store
	auth  keel.Authorizer
}

// NewPasswordPolicies returns the policies kept in store, which its caller
// has scoped to them (the example server gives it the view
// "ldapengine/password-policies/" of its store). auth decides the rights
// (resource "sys/policies/password/NAME"); nil allows everything.
func NewPasswordPolicies(store storage.Store, auth keel.Authorizer) *PasswordPolicies {
	return &PasswordPolicies{store: store, auth: auth}
}

type storedPolicy struct {
	Policy string `json:"policy"`
}

func checkPolicyName(name string) error {
	if !policyName.MatchString(name) {
		return keel.Invalid("name", "must be 1 to 128 letters, digits, '_', '.', '-', starting with a letter or digit")
	}
	return nil
}

// Put creates or replaces the policy name with text, which must parse
// (ParsePasswordPolicy).
func (p *PasswordPolicies) Put(ctx context.Context, name, text string) error {
	if err := checkPolicyName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapUpdate, "sys/policies/password/"+name); err != nil {
		return err
	}
	if _, err := ParsePasswordPolicy(text); err != nil {
		return err
	}
	raw, _ := json.Marshal(storedPolicy{Policy: text})
	return p.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(name, raw)
	})
}

// Get returns the text of the policy name; a missing policy is an error of
// kind keel.ErrNotFound.
func (p *PasswordPolicies) Get(ctx context.Context, name string) (string, error) {
	if err := checkPolicyName(name); err != nil {
		return "", err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapRead, "sys/policies/password/"+name); err != nil {
		return "", err
	}
	return p.get(ctx, name)
}

func (p *PasswordPolicies) get(ctx context.Context, name string) (string, error) {
	var raw []byte
	err := p.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		raw, err = tx.Get(name)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("password policy %q: %w", name, keel.ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	var sp storedPolicy
	if err := json.Unmarshal(raw, &sp); err != nil {
		return "", fmt.Errorf("password policy %q: stored record: %v: %w", name, err, keel.ErrInternal)
	}
	return sp.Policy, nil
}

// Delete removes the policy name; a missing policy is not an error.
func (p *PasswordPolicies) Delete(ctx context.Context, name string) error {
	if err := checkPolicyName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapDelete, "sys/policies/password/"+name); err != nil {
		return err
	}
	return p.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(name)
	})
}

// List returns the names of the policies, sorted.
func (p *PasswordPolicies) List(ctx context.Context) ([]string, error) {
	if err := keel.Authorize(ctx, p.auth, keel.CapList, "sys/policies/password/"); err != nil {
		return nil, err
	}
	var names []string
	err := p.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		names = names[:0]
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			names = append(names, key)
			return nil
		})
	})
	return names, err
}

// Generate returns a password from the policy name (Vault's
// sys/policies/password/:name/generate).
func (p *PasswordPolicies) Generate(ctx context.Context, name string) (string, error) {
	if err := checkPolicyName(name); err != nil {
		return "", err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapRead, "sys/policies/password/"+name+"/generate"); err != nil {
		return "", err
	}
	return p.generate(ctx, name)
}

func (p *PasswordPolicies) generate(ctx context.Context, name string) (string, error) {
	text, err := p.get(ctx, name)
	if err != nil {
		return "", err
	}
	pol, err := ParsePasswordPolicy(text)
	if err != nil {
		return "", fmt.Errorf("password policy %q: %w", name, err)
	}
	return pol.Generate()
}
