package vault

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
)

// MaxBody is the largest request body the adapter reads, as Vault's
// default max_request_size: a program that bounds bodies before the
// adapter (the example server) caps a reservation at it.
const MaxBody = 32 << 20

// decodeBody reads a JSON value from r into v. An empty body, or null,
// leaves v as it is. Anything but white space after the value (a second
// document, as in {"a":"b"}{"c":"d"}) is refused: keel does not guess which
// of two documents the client meant (Vault reads the first and ignores the
// rest).
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	err := jsonbody.Decode(w, r, jsonbody.Options{Max: MaxBody, UseNumber: true}, v)
	switch {
	case err == nil, errors.Is(err, jsonbody.ErrEmpty):
		return nil
	case keel.KindOf(err) == keel.KindTooLarge:
		return keel.KindTooLarge
	}
	return keel.Invalid("", "failed to parse JSON input: %v", err)
}

// listParam reads the list query parameter of a GET as Vault does
// (strconv.ParseBool): true asks for a listing; absent or empty is a read;
// any other value is errBadList. Only a GET reads it; LIST is a listing
// whatever its query.
func listParam(r *http.Request) (bool, error) {
	if r.Method == "LIST" {
		return true, nil
	}
	if r.Method != http.MethodGet || r.URL.RawQuery == "" {
		return false, nil // no query to parse (and allocate) on every read
	}
	s := r.URL.Query().Get("list")
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, errBadList
	}
	return b, nil
}

// errBadList is Vault's answer to a GET whose list parameter is not a
// boolean: 400 with an empty errors list.
var errBadList = &vaultError{http.StatusBadRequest, []string{}}

// isList reports whether r asks for a listing: the LIST method, or GET with
// list=true (see listParam; a list that is not a boolean reads as false
// here, and checkList refuses it before).
func isList(r *http.Request) bool {
	b, _ := listParam(r)
	return b
}

// checkList is serve, except for a GET whose list parameter is not a
// boolean: 400 {"errors":[]}, as Vault answers it, instead of a read.
// Register wraps each of its handlers with it.
func checkList(serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := listParam(r); err != nil {
			writeError(w, err)
			return
		}
		serve(w, r)
	}
}

// fields is a request body read as Vault reads its fields: strings,
// booleans and integers may come as JSON values or as strings, lists as
// arrays or one comma-separated string, key-value pairs as an object or a
// list of "key=value", durations as keel.ParseDuration reads them. A
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

// strList reads a list of strings as Vault's TypeCommaStringSlice does: a
// JSON array, or one comma-separated string; a number, alone or in the
// array, is its text ("policies": 5 is ["5"]). Elements are trimmed of
// white space, and empty ones dropped from a comma-separated string. Nil
// when the field is absent. A boolean, an object or null in the array is
// refused (Vault would turn true into "1").
func (f *fields) strList(k string) []string {
	switch x := f.m[k].(type) {
	case nil:
		return nil
	case string:
		return splitComma(x)
	case json.Number:
		return splitComma(x.String())
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			var s string
			switch e := e.(type) {
			case string:
				s = e
			case json.Number:
				s = e.String()
			default:
				f.v.Add(k, "must be a string or a list of strings")
				return nil
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out
	default:
		f.v.Add(k, "must be a string or a list of strings")
		return nil
	}
}

// splitComma splits s at its commas, trims each element and drops the
// empty ones.
func splitComma(s string) []string {
	out := []string{}
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pairs reads key-value pairs as Vault's TypeKVPairs does: an object whose
// values are strings or numbers (a number is its text), or a list of
// "key=value" strings, or one "key=value" string (the vault CLI's form of
// a single pair: metadata=team=a sends "team=a"). A pair splits at its
// first "="; its key must not be empty. Nil when the field is absent.
func (f *fields) pairs(k string) map[string]string {
	const rule = "must be an object of strings or a list of key=value strings"
	var list []any
	switch x := f.m[k].(type) {
	case nil:
		return nil
	case map[string]any:
		out := make(map[string]string, len(x))
		for key, e := range x {
			switch e := e.(type) {
			case nil:
				out[key] = ""
			case string:
				out[key] = e
			case json.Number:
				out[key] = e.String()
			default:
				f.v.Add(k, rule)
				return nil
			}
		}
		return out
	case string:
		list = []any{x}
	case []any:
		list = x
	default:
		f.v.Add(k, rule)
		return nil
	}
	out := make(map[string]string, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			f.v.Add(k, rule)
			return nil
		}
		key, value, found := strings.Cut(s, "=")
		if !found || key == "" {
			f.v.Add(k, "invalid key value pair %q", s)
			return nil
		}
		out[key] = value
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

// integer reads the field k as a whole number from 0 to math.MaxInt: a
// JSON number or a string of one ("64"), an empty string or null being 0.
// A fraction, a negative number, or one beyond an int is a problem named
// k.
func (f *fields) integer(k string) int {
	s, ok := f.text(k)
	s = strings.TrimSpace(s)
	if !ok {
		f.v.Add(k, "must be an integer")
		return 0
	}
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 0)
	switch {
	case err == nil && n < 0, errors.Is(err, strconv.ErrRange) && strings.HasPrefix(s, "-"):
		f.v.Add(k, "must not be negative")
		return 0
	case errors.Is(err, strconv.ErrRange):
		f.v.Add(k, "must be at most %d", math.MaxInt)
		return 0
	case err != nil:
		f.v.Add(k, "must be an integer")
		return 0
	}
	return int(n)
}

// duration reads the field k as keel.ParseDuration does. Its problem
// names k, a wire key like every problem of fields: the translation of
// writeError (wirePath) leaves it as it is.
func (f *fields) duration(k string) time.Duration {
	d, err := keel.ParseDuration(k, f.m[k])
	for _, fe := range keel.FieldErrors(err) {
		f.v.Add(fe.Field, "%s", fe.Rule)
	}
	return d
}
