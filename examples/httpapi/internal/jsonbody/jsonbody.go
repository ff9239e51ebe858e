// Package jsonbody reads the JSON body of a request as the HTTP adapters
// share it: one JSON value, at most a given size, and nothing but white
// space after it ({"a":"b"}{"c":"d"} is refused: an adapter does not guess
// which document the client meant). Each adapter words the errors in its
// dialect.
package jsonbody

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/keelhq/keel"
)

// The errors of Decode besides the decoder's own.
var (
	// ErrEmpty: the body holds nothing but white space.
	ErrEmpty = errors.New("the body is empty")
	// ErrTrailing: the body holds more than one JSON value.
	ErrTrailing = errors.New("data after the JSON value")
)

// Options refine Decode.
type Options struct {
	// Max is the largest body read, in bytes.
	Max int64
	// UseNumber decodes numbers into an interface{} as json.Number.
	UseNumber bool
}

// Decode reads the JSON value of r's body into v. It fails with ErrEmpty
// for an empty body, with an error of kind keel.KindTooLarge for a body
// larger than o.Max, with ErrTrailing when anything but white space
// follows the value, and otherwise with the decoder's error (a syntax or
// type error, to be answered as the client's mistake).
func Decode(w http.ResponseWriter, r *http.Request, o Options, v any) error {
	if r.Body == nil {
		return ErrEmpty
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, o.Max))
	if o.UseNumber {
		dec.UseNumber()
	}
	err := dec.Decode(v)
	if err == nil {
		// The value must be the whole body: the next token is the end.
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return ErrTrailing
		}
		return nil
	}
	if errors.Is(err, io.EOF) {
		return ErrEmpty
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("body larger than %d bytes: %w", o.Max, keel.ErrTooLarge)
	}
	return err
}
