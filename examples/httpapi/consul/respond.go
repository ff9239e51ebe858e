package consul

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
	"github.com/keelhq/keel/examples/httpapi/internal/kindstatus"
)

// statusOf is the one table from the error kinds Consul answers in its own
// way to its status codes. The kinds every adapter answers alike (too
// large, unavailable, canceled, deadline) are in kindstatus.
var statusOf = map[keel.Kind]int{
	keel.KindNotFound:        http.StatusNotFound,
	keel.KindAlreadyExists:   http.StatusBadRequest,
	keel.KindInvalid:         http.StatusBadRequest,
	keel.KindConflict:        http.StatusConflict,
	keel.KindForbidden:       http.StatusForbidden,
	keel.KindUnauthenticated: http.StatusForbidden,
}

// kindOf is the reverse of statusOf, for the HTTP transport.
var kindOf = map[int]error{
	http.StatusNotFound:              keel.KindNotFound,
	http.StatusBadRequest:            keel.KindInvalid,
	http.StatusConflict:              keel.KindConflict,
	http.StatusForbidden:             keel.KindForbidden,
	http.StatusRequestEntityTooLarge: keel.KindTooLarge,
	http.StatusServiceUnavailable:    keel.KindUnavailable,
	http.StatusGatewayTimeout:        keel.KindDeadlineExceeded,
}

// answer is an answer the adapter decides itself, worded as Consul words
// it (Consul's HTTPError): a status and a text body. It is for what Consul
// refuses before it reaches its state (a query, a body, a path, a token
// it does not know); package peering's errors go through statusOf.
type answer struct {
	status int
	text   string
}

func (a *answer) Error() string { return a.text }

// The answers of the adapter's own refusals, in Consul's words.
var (
	errWait         = &answer{http.StatusBadRequest, "Invalid wait time"}
	errIndex        = &answer{http.StatusBadRequest, "Invalid index"}
	errNoName       = &answer{http.StatusBadRequest, "Must specify a name to fetch."}
	errACLNotFound  = &answer{http.StatusForbidden, "ACL not found"}
	errTokenRefused = &answer{http.StatusForbidden, "a new peering token must be generated: invalid peering establishment secret"}
)

// The prefixes of Consul's answers to a body that does not decode.
const (
	bodyDecodeFailed    = "Body decoding failed: "    // token, establish (and the peer-to-peer paths)
	requestDecodeFailed = "Request decoding failed: " // config entries
)

// writeJSON writes v with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(v)
}

// writeError answers err, the error of request r, as Consul does: an
// *answer as it is, or else the status of its kind (statusOf) and a text
// body, the message without the package that starts it (consulWording).
// A refusal for want of a right is worded as Consul words it (see
// denied); an internal error says "internal error" and no more.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var status int
	var msg string
	if a := (*answer)(nil); errors.As(err, &a) {
		status, msg = a.status, a.text
	} else {
		kind := keel.KindOf(err)
		status, msg = kindstatus.Of(statusOf, kind), consulWording(err.Error())
		switch {
		case kind == keel.KindForbidden || kind == keel.KindUnauthenticated:
			msg = denied(r)
		case status == http.StatusInternalServerError:
			msg = "internal error"
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, msg)
}

// consulWording returns msg without the "peering: " that starts the
// messages of package peering: Consul's messages name no package, and a
// peer's message, which HTTPTransport puts in the dialer's error, is
// read without it.
func consulWording(msg string) string {
	return strings.TrimPrefix(msg, "peering: ")
}

// denied is the text of a 403 for want of a right, as Consul words it:
// the caller (the anonymous token, or the token of the principal, named
// by its ClientTokenID in place of Consul's AccessorID) and the right
// the route needs: peering:read to read (GET), peering:write otherwise.
// The peer-to-peer paths, which take no token, say "Permission denied".
func denied(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/v1/internal/") {
		return "Permission denied"
	}
	need := keel.CapPeeringWrite
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		need = keel.CapPeeringRead
	}
	p, ok := keel.PrincipalFrom(r.Context())
	if !ok || p.ID == "" { // the zero Principal is the anonymous caller
		return fmt.Sprintf("Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token.", need)
	}
	return fmt.Sprintf("Permission denied: token with AccessorID '%s' lacks permission '%s'", p.ClientTokenID, need)
}

// checkToken refuses (errACLNotFound, 403 "ACL not found" as Consul) a
// request that carries a token the program does not know: it has no
// principal in its context (the program put none there) and yet a token
// in X-Cluster-Token or in Authorization ("Bearer <token>", which Consul
// reads too). A request that carries no token is the anonymous caller,
// whose rights the Authorizer decides.
func checkToken(r *http.Request) error {
	if _, ok := keel.PrincipalFrom(r.Context()); ok {
		return nil
	}
	if r.Header.Get(HeaderClusterToken) != "" {
		return errACLNotFound
	}
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != "" {
		return errACLNotFound
	}
	return nil
}

// serve serves a peer-to-peer request of method whose body is a JSON Req
// (an empty body is the zero Req; fields Req does not have are ignored,
// so that peers of another version understand each other): fn answers it
// with a Resp, written as JSON, or an error. Another method is 405.
func serve[Req, Resp any](w http.ResponseWriter, r *http.Request, method string, fn func(context.Context, *Req) (Resp, error)) {
	if r.Method != method {
		methodNotAllowed(w, method)
		return
	}
	var req Req
	if err := decodeBody(w, r, &req, false); err != nil {
		writeError(w, r, decodeFailed(bodyDecodeFailed, err))
		return
	}
	resp, err := fn(r.Context(), &req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, resp)
}

// serveClient serves a client's request of method whose body is a JSON
// Req, as Consul does: a field Req does not have is refused (400 "Body
// decoding failed: …"), then a token the program does not know
// (checkToken), and fn answers. An empty body is the zero Req; another
// method is 405.
func serveClient[Req, Resp any](w http.ResponseWriter, r *http.Request, method string, fn func(context.Context, *Req) (Resp, error)) {
	if r.Method != method {
		methodNotAllowed(w, method)
		return
	}
	var req Req
	if err := decodeBody(w, r, &req, true); err != nil {
		writeError(w, r, decodeFailed(bodyDecodeFailed, err))
		return
	}
	if err := checkToken(r); err != nil {
		writeError(w, r, err)
		return
	}
	resp, err := fn(r.Context(), &req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, resp)
}

// methodNotAllowed answers 405 naming the allowed methods.
func methodNotAllowed(w http.ResponseWriter, allowed string) {
	w.Header().Set("Allow", allowed)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMethodNotAllowed)
	io.WriteString(w, "method not allowed")
}

// setIndex sets the index headers of a read: X-Cluster-Index, and
// X-Consul-Index with the leader headers that Consul's client reads.
func setIndex(w http.ResponseWriter, idx uint64) {
	v := strconv.FormatUint(max(idx, 1), 10)
	h := w.Header()
	h.Set("X-Cluster-Index", v)
	h.Set("X-Consul-Index", v)
	h.Set("X-Consul-KnownLeader", "true")
	h.Set("X-Consul-LastContact", "0")
}

// MaxBody is the largest request body the adapter reads: a program that
// bounds bodies before the adapter caps a reservation at it.
const MaxBody = 1 << 20

// decodeBody reads a JSON value from r into v; an empty body leaves v as
// it is, data after the JSON value is refused. With strict, a field v
// does not have is refused, as Consul's decoder refuses it. It fails with
// keel.KindTooLarge, or the decoder's error (the client's mistake).
func decodeBody(w http.ResponseWriter, r *http.Request, v any, strict bool) error {
	if !strict {
		return emptyOK(jsonbody.Decode(w, r, jsonbody.Options{Max: MaxBody}, v))
	}
	raw, err := readBody(w, r)
	if err != nil || raw == nil {
		return err
	}
	return unmarshalStrict(raw, v)
}

// readBody reads the JSON value of r's body, at most MaxBody, nothing
// after it; an empty body is nil.
func readBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, error) {
	var raw json.RawMessage
	err := emptyOK(jsonbody.Decode(w, r, jsonbody.Options{Max: MaxBody}, &raw))
	return raw, err
}

// emptyOK returns nil for an empty body, keel.KindTooLarge for one too
// large, and err otherwise.
func emptyOK(err error) error {
	switch {
	case errors.Is(err, jsonbody.ErrEmpty):
		return nil
	case keel.KindOf(err) == keel.KindTooLarge:
		return keel.KindTooLarge
	}
	return err
}

// unmarshalStrict decodes raw into v, refusing fields v does not have
// (names match without regard to case, as encoding/json matches them).
func unmarshalStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeFailed is the answer to a body that does not decode: 413 for one
// too large, else 400 with Consul's prefix and the decoder's error.
func decodeFailed(prefix string, err error) error {
	if err == nil || keel.KindOf(err) == keel.KindTooLarge {
		return err
	}
	return &answer{http.StatusBadRequest, prefix + err.Error()}
}
