// Package credtemplate renders the templates of the dynamic roles of
// package ldapengine: username templates and LDIF templates, Go's
// text/template with the functions of Vault's ldap engine, bounded so that
// rendering always ends quickly. It also holds the checks on the values
// that templates put into LDIF. Every error of Render is of kind
// keel.KindInvalid for the field it is given. Everything here is safe for
// concurrent use.
package credtemplate

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/keelhq/keel"
)

// The limits of templates.
const (
	maxTemplateLen = 64 << 10 // bytes of a template's text
	maxRenderLen   = 1 << 20  // bytes of a rendered template
	maxValueLen    = 64 << 10 // bytes of the value of one template function
	maxRandomLen   = 1024     // characters of random N
)

// MaxUsernameLen is the longest generated username, in bytes.
const MaxUsernameLen = 256

// Kind says which functions and fields a template has.
type Kind int

// The kinds of templates.
const (
	Username Kind = iota // fields of UsernameData; no utf16le
	LDIF                 // fields of LDIFData; utf16le
)

// UsernameData are the fields of a username template.
type UsernameData struct {
	DisplayName string
	RoleName    string
}

// LDIFData are the fields of an LDIF template. It is stored (encoding/json)
// in the lease of a dynamic credential without Password.
type LDIFData struct {
	Username              string `json:"username"`
	Password              string `json:"-"`
	DisplayName           string `json:"display_name"`
	RoleName              string `json:"role_name"`
	IssueTime             string `json:"issue_time"`
	IssueTimeSeconds      int64  `json:"issue_time_seconds"`
	ExpirationTime        string `json:"expiration_time"`
	ExpirationTimeSeconds int64  `json:"expiration_time_seconds"`
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

var errValueTooLong = fmt.Errorf("value longer than %d bytes", maxValueLen)

func capped(s string) (string, error) {
	if len(s) > maxValueLen {
		return "", errValueTooLong
	}
	return s, nil
}

// templateFuncs returns the functions of a template of kind, reading the
// time from now. The builtins that build strings (printf, print, println,
// html, js, urlquery) are replaced by versions whose result is capped at
// maxValueLen bytes, so that a template cannot grow a value without bound.
func templateFuncs(kind Kind, now time.Time) template.FuncMap {
	fm := template.FuncMap{
		"random": func(n int) (string, error) {
			if n < 1 || n > maxRandomLen {
				return "", fmt.Errorf("random: length must be 1 to %d", maxRandomLen)
			}
			b := make([]byte, n)
			limit := big.NewInt(int64(len(alnum)))
			for i := range b {
				k, err := rand.Int(rand.Reader, limit)
				if err != nil {
					return "", err
				}
				b[i] = alnum[k.Int64()]
			}
			return string(b), nil
		},
		"truncate": func(n int, s string) (string, error) {
			if n < 1 {
				return "", errors.New("truncate: length must be positive")
			}
			if utf8.RuneCountInString(s) <= n {
				return s, nil
			}
			return s[:runeOffset(s, n)], nil
		},
		"truncate_sha256": func(n int, s string) (string, error) {
			if n <= 8 {
				return "", errors.New("truncate_sha256: length must be more than 8")
			}
			if utf8.RuneCountInString(s) <= n {
				return s, nil
			}
			cut := runeOffset(s, n-8)
			sum := sha256.Sum256([]byte(s[cut:]))
			return s[:cut] + hex.EncodeToString(sum[:])[:8], nil
		},
		"uppercase": strings.ToUpper,
		"lowercase": strings.ToLower,
		"replace": func(from, to, s string) (string, error) {
			if n := strings.Count(s, from); n > 0 && len(s)+n*(len(to)-len(from)) > maxValueLen {
				return "", errValueTooLong
			}
			return strings.ReplaceAll(s, from, to), nil
		},
		"sha256": func(s string) string {
			sum := sha256.Sum256([]byte(s))
			return hex.EncodeToString(sum[:])
		},
		"base64": func(s string) (string, error) {
			return capped(base64.StdEncoding.EncodeToString([]byte(s)))
		},
		"unix_time":        func() int64 { return now.Unix() },
		"unix_time_millis": func() int64 { return now.UnixMilli() },
		"timestamp": func(layout string) (string, error) {
			if layout == "" {
				return "", errors.New("timestamp: layout is required")
			}
			if len(layout) > maxValueLen/8 {
				return "", errValueTooLong
			}
			return now.UTC().Format(layout), nil
		},
		"uuid": func() (string, error) {
			u, err := uuid.NewRandom()
			if err != nil {
				return "", err
			}
			return u.String(), nil
		},
		"printf":   func(f string, a ...any) (string, error) { return capped(fmt.Sprintf(f, a...)) },
		"print":    func(a ...any) (string, error) { return capped(fmt.Sprint(a...)) },
		"println":  func(a ...any) (string, error) { return capped(fmt.Sprintln(a...)) },
		"html":     func(a ...any) (string, error) { return capped(template.HTMLEscaper(a...)) },
		"js":       func(a ...any) (string, error) { return capped(template.JSEscaper(a...)) },
		"urlquery": func(a ...any) (string, error) { return capped(template.URLQueryEscaper(a...)) },
	}
	if kind == LDIF {
		fm["utf16le"] = func(s string) (string, error) {
			if 2*len(s) > maxValueLen {
				return "", errValueTooLong
			}
			u := utf16.Encode([]rune(s))
			b := make([]byte, 2*len(u))
			for i, r := range u {
				b[2*i], b[2*i+1] = byte(r), byte(r>>8)
			}
			return string(b), nil
		}
	}
	return fm
}

// runeOffset returns the byte offset of the n-th rune of s (len(s) when s
// has fewer).
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// parseTemplate parses text as a template of kind for field. Besides
// syntax errors, it refuses what could make rendering run without bound:
// range loops, and define, block and template (several templates).
func parseTemplate(field, text string, kind Kind, now time.Time) (*template.Template, error) {
	if len(text) > maxTemplateLen {
		return nil, keel.Invalid(field, "must be at most %d bytes", maxTemplateLen)
	}
	// The template is named "template", not after the field, so that
	// errors ("template: template:1: unclosed action") name no field.
	t, err := template.New("template").Funcs(templateFuncs(kind, now)).Parse(text)
	if err != nil {
		return nil, keel.Invalid(field, "%v", err)
	}
	if len(t.Templates()) > 1 {
		return nil, keel.Invalid(field, "template: define and block are not allowed")
	}
	if t.Tree != nil && t.Root != nil {
		if why := checkNodes(t.Root); why != "" {
			return nil, keel.Invalid(field, "template: %s", why)
		}
	}
	return t, nil
}

// checkNodes returns why the tree under n is refused, or "".
func checkNodes(n parse.Node) string {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return ""
		}
		for _, c := range n.Nodes {
			if why := checkNodes(c); why != "" {
				return why
			}
		}
	case *parse.IfNode:
		return checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return "range is not allowed"
	case *parse.TemplateNode:
		return "template is not allowed"
	}
	return ""
}

func checkBranch(b *parse.BranchNode) string {
	if why := checkNodes(b.List); why != "" {
		return why
	}
	if b.ElseList != nil {
		return checkNodes(b.ElseList)
	}
	return ""
}

// limitedWriter keeps at most max bytes and fails past them.
type limitedWriter struct {
	b   strings.Builder
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, fmt.Errorf("output longer than %d bytes", w.max)
	}
	return w.b.Write(p)
}

// Render renders text, a template of kind for field, with data (a
// UsernameData or an LDIFData) at now. Every error is of kind
// keel.KindInvalid for field.
func Render(field, text string, kind Kind, data any, now time.Time) (string, error) {
	t, err := parseTemplate(field, text, kind, now)
	if err != nil {
		return "", err
	}
	w := &limitedWriter{max: maxRenderLen}
	if err := t.Execute(w, data); err != nil {
		return "", keel.Invalid(field, "%v", err)
	}
	return w.b.String(), nil
}

// CheckFieldValue refuses a value that, put into LDIF text by a template,
// could change the LDIF's structure or a DN's: invalid UTF-8, control
// characters (line breaks among them), the DN specials , = + < > # ; " \,
// and a leading or trailing space or a leading colon. It returns why, or
// "".
func CheckFieldValue(v string) string {
	if !utf8.ValidString(v) {
		return "must be valid UTF-8"
	}
	if v != strings.TrimSpace(v) {
		return "must not start or end with white space"
	}
	if strings.HasPrefix(v, ":") {
		return "must not start with ':'"
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return "must not hold line breaks or other control characters"
		}
		if strings.ContainsRune(`,=+<>#;"\`, r) {
			return "must not hold any of , = + < > # ; \" \\"
		}
	}
	return ""
}

// CheckPassword refuses a generated password that a template could not
// put into LDIF as it is: control characters (line breaks among them),
// or a leading space, colon or '<'.
func CheckPassword(pw string) string {
	if !utf8.ValidString(pw) {
		return "must be valid UTF-8"
	}
	if strings.HasPrefix(pw, " ") || strings.HasPrefix(pw, ":") || strings.HasPrefix(pw, "<") || strings.HasSuffix(pw, " ") {
		return "must not start with a space, ':' or '<', nor end with a space"
	}
	if strings.IndexFunc(pw, unicode.IsControl) >= 0 {
		return "must not hold line breaks or other control characters"
	}
	return ""
}
