package consul

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

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
	http.StatusNotFound:              keel.ErrNotFound,
	http.StatusBadRequest:            keel.ErrInvalid,
	http.StatusConflict:              keel.ErrConflict,
	http.StatusForbidden:             keel.ErrForbidden,
	http.StatusRequestEntityTooLarge: keel.ErrTooLarge,
	http.StatusServiceUnavailable:    keel.ErrUnavailable,
	http.StatusGatewayTimeout:        keel.ErrDeadlineExceeded,
}

// writeJSON writes v with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(v)
}

// writeError answers err as Consul does: the status from the kind and a
// text body. Forbidden answers say "Permission denied" and no more.
func writeError(w http.ResponseWriter, err error) {
	kind := keel.KindOf(err)
	status := kindstatus.Of(statusOf, kind)
	msg := err.Error()
	switch {
	case kind == keel.KindForbidden || kind == keel.KindUnauthenticated:
		msg = "Permission denied"
	case status == http.StatusInternalServerError:
		msg = "internal error"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, msg)
}

// serve serves a request of method whose body is a JSON Req (an empty
// body is the zero Req): fn answers it with a Resp, written as JSON, or
// an error. Another method is 405.
func serve[Req, Resp any](w http.ResponseWriter, r *http.Request, method string, fn func(context.Context, *Req) (Resp, error)) {
	if r.Method != method {
		methodNotAllowed(w, method)
		return
	}
	var req Req
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := fn(r.Context(), &req)
	if err != nil {
		writeError(w, err)
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

// decodeBody reads a JSON object from r into v; an empty body leaves v
// as it is, data after the JSON value is refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	err := jsonbody.Decode(w, r, jsonbody.Options{Max: MaxBody}, v)
	switch {
	case err == nil, errors.Is(err, jsonbody.ErrEmpty):
		return nil
	case keel.KindOf(err) == keel.KindTooLarge:
		return keel.ErrTooLarge
	}
	return keel.Invalid("", "request decode failed: %v", err)
}
