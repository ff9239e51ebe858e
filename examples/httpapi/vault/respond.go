package vault

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/kindstatus"
	"github.com/keelhq/keel/internal/jsonobj"
)

// response is Vault's envelope of secrets endpoints. writeJSON encodes it
// by hand (appendResponse); the tags say what encoding/json would write,
// and a test checks that both agree.
type response struct {
	RequestID     string   `json:"request_id"`
	LeaseID       string   `json:"lease_id"`
	Renewable     bool     `json:"renewable"`
	LeaseDuration int64    `json:"lease_duration"`
	Data          any      `json:"data"`
	WrapInfo      any      `json:"wrap_info"`
	Warnings      []string `json:"warnings"`
	Auth          any      `json:"auth"`
	MountType     string   `json:"mount_type,omitempty"`
}

// The mount types of Vault's answers (the envelope's mount_type): the
// engine's type for a mount's paths ("kv", "ldap", "openldap"), and these
// for the built-in ones.
const (
	mountSystem   = "system"   // sys/…
	mountIdentity = "identity" // identity/…
	mountToken    = "token"    // auth/token/…
)

// newResponse is Vault's envelope of data answered by a path of the
// mount type mt (mount_type).
func newResponse(mt string, data any) *response {
	return &response{RequestID: newRequestID(), Data: data, MountType: mt}
}

// leasedResponse is Vault's envelope of data with a lease: its id,
// renewable flag and duration in seconds, answered by a path of the mount
// type mt.
func leasedResponse(mt, id string, renewable bool, ttl time.Duration, data any) *response {
	r := newResponse(mt, data)
	r.LeaseID, r.Renewable, r.LeaseDuration = id, renewable, seconds(ttl)
	return r
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// newRequestID returns a random version 4 UUID. A request id only has to
// be unique, not secret: it comes from math/rand/v2's per-thread generator
// (randomly seeded ChaCha8), which needs no system call and no lock, unlike
// uuid.NewString's crypto/rand.
func newRequestID() string {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return uuid.UUID(u).String()
}

// keysData is the data of a listing: {"keys": [...]}. Encoding it by hand
// costs a fraction of what encoding/json pays for a map holding a slice,
// which matters for folders of thousands of keys.
type keysData []string

// rawData is data already encoded as a JSON object (a kv secret as
// stored), written as it is.
type rawData []byte

// writeJSON writes v with status, as encoding/json's Encoder would (HTML
// characters escaped, a final newline), with a Content-Length. A *response
// is encoded by appendResponse, in one buffer sized for it; anything else
// by encoding/json.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf []byte
	var err error
	if r, ok := v.(*response); ok {
		if d, ok := r.Data.(rawData); ok && len(d) >= largeData {
			writeLarge(w, status, r, d)
			return
		}
		buf, err = appendResponse(make([]byte, 0, sizeHint(r)), r)
	} else {
		buf, err = json.Marshal(v)
	}
	if err != nil {
		buf = []byte(`{"errors":["internal error"]}`)
		status = http.StatusInternalServerError
	}
	buf = append(buf, '\n')
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(buf))}
	w.WriteHeader(status)
	w.Write(buf)
}

// contentTypeJSON and noStore are the values of the headers of every JSON
// answer, shared by all answers instead of made for each: a header's
// values are only read (net/http copies them when it writes the header),
// and an append to one of them (Header.Add) copies it, its capacity being
// its length.
var (
	contentTypeJSON = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// largeData is the size from which the stored JSON of a response's data
// is written as it is, not copied into the response's buffer.
const largeData = 64 << 10

// writeLarge writes r as writeJSON does, its data d written from where it
// lies: a large secret is in memory once more, not twice.
func writeLarge(w http.ResponseWriter, status int, r *response, d rawData) {
	envelope := *r
	envelope.Data = nil
	buf, _ := appendResponse(nil, &envelope) // only strings and numbers: no error
	const null = `"data":null`
	at := bytes.Index(buf, []byte(null)) + len(null) - len("null") // a quoted string cannot hold it unescaped
	head, tail := buf[:at], append(buf[at+len("null"):], '\n')
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(head) + len(d) + len(tail))}
	w.WriteHeader(status)
	w.Write(head)
	w.Write(d)
	w.Write(tail)
}

// sizeHint is about the size of r encoded: the envelope, and the data
// when its size is known without encoding it.
func sizeHint(r *response) int {
	n := 256
	switch d := r.Data.(type) {
	case rawData:
		n += len(d)
	case keysData:
		for _, k := range d {
			n += len(k) + 3
		}
	default:
		n += 256
	}
	return n
}

// appendMarshal appends the encoding/json encoding of v, without a
// newline; nil (an envelope's absent wrap_info and auth) is "null" without
// a call of json.Marshal, which allocates even for it.
func appendMarshal(buf []byte, v any) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	b, err := json.Marshal(v)
	return append(buf, b...), err
}

// appendResponse appends r encoded as encoding/json encodes the response
// struct, without a newline.
func appendResponse(buf []byte, r *response) ([]byte, error) {
	buf = append(buf, `{"request_id":`...)
	buf = jsonobj.AppendString(buf, r.RequestID)
	buf = append(buf, `,"lease_id":`...)
	buf = jsonobj.AppendString(buf, r.LeaseID)
	buf = append(buf, `,"renewable":`...)
	buf = strconv.AppendBool(buf, r.Renewable)
	buf = append(buf, `,"lease_duration":`...)
	buf = strconv.AppendInt(buf, r.LeaseDuration, 10)
	buf = append(buf, `,"data":`...)
	var err error
	switch d := r.Data.(type) {
	case nil:
		buf = append(buf, "null"...)
	case rawData:
		buf = append(buf, d...)
	case keysData:
		buf = appendKeys(buf, d)
	case map[string]any:
		if keys, ok := d["keys"].([]string); ok && len(d) == 1 {
			buf = appendKeys(buf, keys)
			break
		}
		if d == nil {
			buf = append(buf, "null"...)
			break
		}
		if buf, err = jsonobj.AppendObject(buf, d); err != nil {
			return buf, err
		}
	default:
		if buf, err = appendMarshal(buf, d); err != nil {
			return buf, err
		}
	}
	buf = append(buf, `,"wrap_info":`...)
	if buf, err = appendMarshal(buf, r.WrapInfo); err != nil {
		return buf, err
	}
	buf = append(buf, `,"warnings":`...)
	buf = appendStrings(buf, r.Warnings)
	buf = append(buf, `,"auth":`...)
	if buf, err = appendMarshal(buf, r.Auth); err != nil {
		return buf, err
	}
	if r.MountType != "" {
		buf = append(buf, `,"mount_type":`...)
		buf = jsonobj.AppendString(buf, r.MountType)
	}
	return append(buf, '}'), nil
}

// appendKeys appends the data of a listing: {"keys":[...]}.
func appendKeys(buf []byte, keys []string) []byte {
	buf = append(buf, `{"keys":`...)
	buf = appendStrings(buf, keys)
	return append(buf, '}')
}

// appendStrings appends ss as a JSON array, or null when it is nil.
func appendStrings(buf []byte, ss []string) []byte {
	if ss == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonobj.AppendString(buf, s)
	}
	return append(buf, ']')
}

// errorBody is Vault's error document.
type errorBody struct {
	Errors []string `json:"errors"`
}

// statusOf is the one table from error kinds to Vault's status codes.
// Vault answers 400 where the state of an object refuses a request (no
// free account to check out, an entry managed by another role): so does
// KindConflict here.
// The kinds every adapter answers alike (too large, unavailable, canceled,
// deadline) are in kindstatus, except a lease-count quota's refusal
// (*lease.QuotaError, of kind too large): 429, as Vault's (quotaExceeded,
// which writeError asks first).
var statusOf = map[keel.Kind]int{
	keel.KindNotFound:        http.StatusNotFound,
	keel.KindAlreadyExists:   http.StatusBadRequest,
	keel.KindInvalid:         http.StatusBadRequest,
	keel.KindConflict:        http.StatusBadRequest,
	keel.KindForbidden:       http.StatusForbidden,
	keel.KindUnauthenticated: http.StatusForbidden,
}

// vaultError is an answer of Vault's own: its status and errors list.
type vaultError struct {
	status int
	msgs   []string
}

func (e *vaultError) Error() string { return strings.Join(e.msgs, "; ") }

// writeError answers err as Vault would: a vaultError as it is; a broken
// rule with one "wire_name: rule" per problem (wireError); else the status
// of err's kind (500 "internal error" for a kind without one) and its
// message in the errors list, or "permission denied" alone for forbidden
// answers, as Vault's, so that they reveal nothing. An error that carries
// a retry hint (keel.RetryAfterOf: a password change being settled) adds
// a Retry-After header, in whole seconds rounded up, whatever the
// endpoint.
func writeError(w http.ResponseWriter, err error) {
	if d, ok := keel.RetryAfterOf(err); ok {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	ve, ok := err.(*vaultError) // never wrapped
	if !ok {
		ve = quotaExceeded(err)
		ok = ve != nil
	}
	if !ok {
		ve, ok = wireError("", err).(*vaultError)
	}
	if !ok {
		kind := keel.KindOf(err)
		ve = &vaultError{kindstatus.Of(statusOf, kind), []string{vaultWording(err.Error())}}
		switch {
		case kind == keel.KindForbidden || kind == keel.KindUnauthenticated:
			ve.msgs[0] = "permission denied"
		case ve.status == http.StatusInternalServerError:
			ve.msgs[0] = "internal error"
		}
	}
	writeJSON(w, ve.status, errorBody{Errors: ve.msgs})
}

// libraryPackages are the keel packages whose errors reach this adapter;
// each starts its messages with its name and ": ".
var libraryPackages = []string{"identity", "kv", "ldapengine", "lease", "mount", "passwordpolicy", "ratelimit", "storage"}

// vaultWording returns msg without the library packages that start it
// ("ldapengine: passwordpolicy: …" when one passes on the other's error):
// Vault's messages name no package.
func vaultWording(msg string) string {
	for cut := true; cut; {
		cut = false
		for _, p := range libraryPackages {
			if rest, ok := strings.CutPrefix(msg, p+": "); ok {
				msg, cut = rest, true
			}
		}
	}
	return msg
}

// writeMessage answers status with msg alone in the errors list.
func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Errors: []string{msg}})
}

// errMissing is the answer to a missing read or an empty list: 404 with an
// empty errors list, which Vault's clients take as "nothing there".
var errMissing = &vaultError{http.StatusNotFound, []string{}}

// missing is err, or errMissing when something is missing.
func missing(err error) error {
	if keel.KindOf(err) == keel.KindNotFound {
		return errMissing
	}
	return err
}

// methodNotAllowed answers 405 "unsupported operation", with an Allow
// header when allow is not empty.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	if allow != "" {
		w.Header().Set("Allow", allow)
	}
	writeMessage(w, http.StatusMethodNotAllowed, "unsupported operation")
}

// writeDone answers a write: 204, or the error.
func writeDone(w http.ResponseWriter, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeWith decodes r's body with from, calls put with key and what it
// read, and answers 204 or the error.
func writeWith[T any](w http.ResponseWriter, r *http.Request, key string, from func(*fields) T, put func(context.Context, string, T) error) {
	v, err := readBody(w, r, from)
	if err == nil {
		err = put(r.Context(), key, v)
	}
	writeDone(w, err)
}

// writeData answers 200 with resp, or the error.
func writeData(w http.ResponseWriter, err error, resp *response) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// writeRead answers a read of a path of the mount type mt: the error
// (errMissing when missing), or 200 with data.
func writeRead(w http.ResponseWriter, mt string, err error, data any) {
	if err != nil {
		writeError(w, missing(err))
		return
	}
	writeJSON(w, http.StatusOK, newResponse(mt, data))
}

// writeList answers a listing of a path of the mount type mt: the error,
// errMissing when empty, or 200 with {"keys": keys}.
func writeList(w http.ResponseWriter, mt string, keys []string, err error) {
	if err == nil && len(keys) == 0 {
		err = errMissing
	}
	writeData(w, err, newResponse(mt, keysData(keys)))
}

// listing is the handler of a listing of a path of the mount type mt:
// LIST, or GET with list=true; any other request answers 405 with allow
// (see methodNotAllowed).
func listing(mt, allow string, list func(context.Context) ([]string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isList(r) {
			methodNotAllowed(w, allow)
			return
		}
		keys, err := list(r.Context())
		writeList(w, mt, keys, err)
	}
}
