package vault

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
)

// maxBody is the largest request body read, as Vault's default
// max_request_size.
const maxBody = 32 << 20

// decodeBody reads a JSON value from r into v. An empty body, or null,
// leaves v as it is.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return keel.ErrTooLarge
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return keel.Invalid("", "failed to parse JSON input: %v", err)
	}
	return nil
}

// isList reports whether r asks for a listing: the LIST method, or GET with
// list=true.
func isList(r *http.Request) bool {
	if r.Method == "LIST" {
		return true
	}
	if r.Method != http.MethodGet || r.URL.RawQuery == "" {
		return false // no query to parse (and allocate) on every read
	}
	b, _ := strconv.ParseBool(r.URL.Query().Get("list"))
	return b
}

// fields is a request body read as Vault reads its fields: strings,
// booleans and integers may come as JSON values or as strings, lists as
// arrays or one comma-separated string, key-value pairs as an object or a
// list of "key=value", durations as ldapengine.ParseDuration reads them. A
// field of the wrong type is recorded in v. Unknown fields are ignored, as
// Vault does.
type fields struct {
	m map[string]any
	v keel.Validation
}

// readBody decodes the body of r as fields and returns what read takes
// from them, or the problem: an unreadable body, or every field of the
// wrong type.
func readBody[T any](w http.ResponseWriter, r *http.Request, read func(*fields) T) (T, error) {
	var f fields
	if err := decodeBody(w, r, &f.m); err != nil {
		var zero T
		return zero, err
	}
	out := read(&f)
	return out, f.v.Err()
}

// opt returns nil when the body has no field k (for partial updates), else
// get(k).
func opt[T any](f *fields, k string, get func(string) T) *T {
	if _, ok := f.m[k]; !ok {
		return nil
	}
	v := get(k)
	return &v
}

// text returns the field k as text: a string, or a number as it was
// written; ok is false for another type.
func (f *fields) text(k string) (s string, ok bool) {
	switch x := f.m[k].(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

func (f *fields) str(k string) string {
	s, ok := f.text(k)
	if !ok {
		f.v.Add(k, "must be a string")
	}
	return s
}

// strList reads a list of strings sent as a JSON array or as one
// comma-separated string (Vault's TypeCommaStringSlice); nil when the
// field is absent.
func (f *fields) strList(k string) []string {
	switch x := f.m[k].(type) {
	case nil:
		return nil
	case string:
		out := []string{}
		for p := range strings.SplitSeq(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				f.v.Add(k, "must be a string or a list of strings")
				return nil
			}
			out = append(out, s)
		}
		return out
	default:
		f.v.Add(k, "must be a string or a list of strings")
		return nil
	}
}

// pairs reads key-value pairs sent as an object of strings or as a list of
// "key=value" strings (Vault's TypeKVPairs); nil when the field is absent.
func (f *fields) pairs(k string) map[string]string {
	const rule = "must be an object of strings or a list of key=value strings"
	out := map[string]string{}
	switch x := f.m[k].(type) {
	case nil:
		return nil
	case map[string]any:
		for key, e := range x {
			s, ok := e.(string)
			if !ok && e != nil {
				f.v.Add(k, rule)
				return nil
			}
			out[key] = s
		}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			key, value, found := strings.Cut(s, "=")
			switch {
			case !ok:
				f.v.Add(k, rule)
			case !found:
				f.v.Add(k, "invalid key value pair %q", s)
			default:
				out[key] = value
				continue
			}
			return nil
		}
	default:
		f.v.Add(k, rule)
		return nil
	}
	return out
}

func (f *fields) boolean(k string) bool {
	switch x := f.m[k].(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		if b, err := strconv.ParseBool(x); err == nil || x == "" {
			return b
		}
	}
	f.v.Add(k, "must be a boolean")
	return false
}

func (f *fields) integer(k string) int {
	s, ok := f.text(k)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if !ok || err != nil && s != "" {
		f.v.Add(k, "must be an integer")
	}
	return n
}

// duration reads the field k as ldapengine.ParseDuration does. Its problem
// names k, a wire key like every problem of fields: the translation of
// writeError (wirePath) leaves it as it is.
func (f *fields) duration(k string) time.Duration {
	d, err := ldapengine.ParseDuration(k, f.m[k])
	for _, fe := range keel.FieldErrors(err) {
		f.v.Add(fe.Field, "%s", fe.Rule)
	}
	return d
}
