package passwordpolicy

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/keelhq/keel"
)

// The limits of a policy's length (Vault's).
const (
	// minLength is the shortest length a policy may have.
	minLength = 4
	// maxLength is the longest length a policy may have.
	maxLength = 100
)

const alphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// GenerateAlphanumeric returns n characters drawn uniformly from the 62
// ASCII letters and digits with crypto/rand: the password of an engine
// that names no policy. n of zero or less gives "". The only error, of kind
// keel.KindInternal, is a failing random source. It is safe for concurrent
// use.
func GenerateAlphanumeric(n int) (_ string, err error) {
	defer errPrefix.Set(&err)
	if n <= 0 {
		return "", nil
	}
	return randomFrom([]rune(alphanumeric), n)
}

func randomFrom(set []rune, n int) (string, error) {
	out := make([]rune, n)
	for i := range out {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", fmt.Errorf("passwordpolicy: random source: %v: %w", err, keel.KindInternal)
		}
		out[i] = set[j.Int64()]
	}
	return string(out), nil
}

// CharsetRule is a rule "charset" of a policy: at least MinChars of the
// generated characters come from Charset.
type CharsetRule struct {
	Charset  string `json:"charset"`
	MinChars int    `json:"min-chars"`
}

// Policy is a parsed password policy. Its zero value is not valid; make
// one with Parse. A Policy is not changed by its methods, so it is safe for
// concurrent use as long as no one changes its fields.
type Policy struct {
	// Length is the number of characters (runes) of a password,
	// 4 to 100.
	Length int
	// Rules are the charset rules, at least one, in the order written.
	Rules []CharsetRule
}

// Parse parses a policy in Vault's HCL format:
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
// keel.KindInvalid with the field "Policy".
func Parse(policy string) (_ *Policy, err error) {
	defer errPrefix.Set(&err)
	// The HCL library also panics while decoding some values it parsed
	// (a string with an invalid escape, found by FuzzParse): such a value
	// is malformed input too.
	defer func() {
		if r := recover(); r != nil {
			err = keel.Invalid("Policy", "is not valid HCL: malformed input (decoder panic: %v)", r)
		}
	}()
	file, err := parseHCL(policy)
	if err != nil {
		return nil, keel.Invalid("Policy", "is not valid HCL: %v", err)
	}
	list, ok := file.Node.(*ast.ObjectList)
	if !ok {
		return nil, keel.Invalid("Policy", "is not an HCL body")
	}
	var v keel.Validation
	p := &Policy{}
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
				v.Add("Policy", "length must be an integer")
				continue
			}
			p.Length, sawLength = n, true
		case key == "rule" && len(item.Keys) == 2:
			typ, _ := item.Keys[1].Token.Value().(string)
			if typ != "charset" {
				v.Add("Policy", "rule %q is not supported (only \"charset\")", typ)
				continue
			}
			obj, ok := item.Val.(*ast.ObjectType)
			if !ok {
				v.Add("Policy", "rule \"charset\" must be a block")
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
						v.Add("Policy", "charset must be a string")
					}
				case "min-chars", "min_chars":
					if err := hcl.DecodeObject(&r.MinChars, f.Val); err != nil {
						v.Add("Policy", "min-chars must be an integer")
					}
				default:
					v.Add("Policy", "rule \"charset\" has no attribute %q", name)
				}
			}
			if r.Charset == "" || !utf8.ValidString(r.Charset) {
				v.Add("Policy", "rule \"charset\" needs a non-empty charset")
			}
			if r.MinChars < 0 {
				v.Add("Policy", "min-chars must not be negative")
			}
			p.Rules = append(p.Rules, r)
		default:
			v.Add("Policy", "unknown key %v", key)
		}
	}
	if !sawLength {
		v.Add("Policy", "length is required")
	} else if p.Length < minLength || p.Length > maxLength {
		v.Add("Policy", "length must be %d to %d, got %d", minLength, maxLength, p.Length)
	}
	if len(p.Rules) == 0 {
		v.Add("Policy", "needs at least one charset rule")
	}
	sum := 0
	for _, r := range p.Rules {
		sum += r.MinChars
	}
	if sawLength && sum > p.Length {
		v.Add("Policy", "is impossible: the rules need %d characters, length is %d", sum, p.Length)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// parseHCL is hcl.ParseString made safe: the HCL library panics on some
// malformed input (its JSON scanner, for a text that starts with "{", found
// by FuzzParse); such a panic is a parse error.
func parseHCL(text string) (file *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			file, err = nil, fmt.Errorf("malformed input (parser panic: %v)", r)
		}
	}()
	return hcl.ParseString(text)
}

// Generate returns a password of p.Length characters that meets every
// rule (p.Meets holds): the minimum characters of each rule, then
// characters from the union of all charsets, shuffled with crypto/rand.
// p must come from Parse. The only error, of kind keel.KindInternal, is a
// failing random source.
func (p *Policy) Generate() (_ string, err error) {
	defer errPrefix.Set(&err)
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
			return "", fmt.Errorf("passwordpolicy: random source: %v: %w", err, keel.KindInternal)
		}
		out[i], out[j.Int64()] = out[j.Int64()], out[i]
	}
	return string(out), nil
}

// Meets reports whether password meets p: it has p.Length characters
// (runes) and, for each rule, at least MinChars of them are in its Charset.
func (p *Policy) Meets(password string) bool {
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
