package vault

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/keelhq/keel"
)

// response is Vault's envelope of secrets endpoints.
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

func newResponse(data any) *response {
	return &response{RequestID: uuid.NewString(), Data: data}
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// errorBody is Vault's error document.
type errorBody struct {
	Errors []string `json:"errors"`
}

// statusOf is the one table from error kinds to Vault's status codes.
var statusOf = map[keel.Kind]int{
	keel.KindNotFound:         http.StatusNotFound,
	keel.KindAlreadyExists:    http.StatusBadRequest,
	keel.KindInvalid:          http.StatusBadRequest,
	keel.KindConflict:         http.StatusConflict,
	keel.KindForbidden:        http.StatusForbidden,
	keel.KindUnauthenticated:  http.StatusForbidden,
	keel.KindTooLarge:         http.StatusRequestEntityTooLarge,
	keel.KindUnavailable:      http.StatusServiceUnavailable,
	keel.KindCanceled:         499, // the client went away; nobody reads it
	keel.KindDeadlineExceeded: http.StatusGatewayTimeout,
}

// writeError answers err as Vault would: its status from the kind, and the
// message in the errors list. Forbidden answers are "permission denied"
// alone, as Vault's are, so that they reveal nothing.
func writeError(w http.ResponseWriter, err error) {
	kind := keel.KindOf(err)
	status, ok := statusOf[kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	msg := err.Error()
	switch {
	case kind == keel.KindForbidden || kind == keel.KindUnauthenticated:
		msg = "permission denied"
	case status == http.StatusInternalServerError:
		msg = "internal error"
	}
	writeJSON(w, status, errorBody{Errors: []string{msg}})
}

// writeNotFound answers a missing read or an empty list: 404 with an empty
// errors list, which Vault's clients take as "nothing there".
func writeNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{}})
}

// badRequest is a request the adapter itself cannot read.
func badRequest(format string, args ...any) error {
	return keel.Invalid("", format, args...)
}

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
		return badRequest("failed to parse JSON input: %v", err)
	}
	return nil
}
