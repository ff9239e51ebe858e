// Package jsonbody reads the JSON body of a request as the HTTP adapters
// share it: one JSON value, at most a given size, and nothing but white
// space after it ({"a":"b"}{"c":"d"} is refused: an adapter does not guess
// which document the client meant). Each adapter words the errors in its
// dialect.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/jsonobj"
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
	if m, ok := v.(*map[string]any); ok && o.UseNumber && *m == nil && r.ContentLength > 0 && r.ContentLength <= min(smallBody, o.Max) {
		if flat, ok := Flat(r); ok {
			*m = flat
			return nil
		}
	}
	if m, ok := v.(*map[string]any); ok && o.UseNumber && (r.ContentLength >= keel.LargeValue || r.ContentLength < 0) && r.ContentLength <= o.Max {
		// An object that may be large is read whole, into a buffer of
		// its size when it is announced (else readAll's buffers), and
		// decoded in place, its large strings left in the buffer
		// (jsonobj.DecodeOwned), not copied into a json.Decoder's
		// buffer, which doubles as it grows; an error is then the
		// decoder's, below.
		var buf []byte
		var err error
		if r.ContentLength > 0 {
			buf = make([]byte, r.ContentLength)
			var n int
			n, err = io.ReadFull(r.Body, buf)
			buf = buf[:n]
		} else {
			buf, err = readAll(http.MaxBytesReader(w, r.Body, o.Max), o.Max)
		}
		switch {
		case err == nil:
			if *m, err = jsonobj.DecodeOwned(buf); err == nil {
				return nil
			}
		case !errors.Is(err, io.ErrUnexpectedEOF):
			return tooLarge(err, o.Max) // the connection's, as the decoder returns it
		}
		r.Body = io.NopCloser(bytes.NewReader(buf))
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
	return tooLarge(err, o.Max)
}

// smallBody is the largest body that Flat decodes.
const smallBody = 16 << 10

// Flat decodes r's body when it is small (up to 16 KiB), of announced
// length, and one flat JSON object (jsonobj.DecodeFlat): what most small
// bodies are (a lease id, a secret of strings), decoded without a
// json.Decoder. Otherwise it puts back the bytes it read in front of the
// rest of the body and reports false, for the decoder to read the body as
// always: its answers and errors do not change.
func Flat(r *http.Request) (map[string]any, bool) {
	if r.Body == nil || r.ContentLength <= 0 || r.ContentLength > smallBody {
		return nil, false
	}
	buf := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, buf)
	if err == nil {
		if m, ok := jsonobj.DecodeFlat(buf); ok {
			return m, true
		}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(buf[:n]), r.Body), r.Body}
	return nil, false
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// readBlock is the size of the blocks readAll reads a body of unknown
// length into, up to half its largest size.
const readBlock = 1 << 20

// readAll reads body whole, a body of unknown length of at most max bytes
// (body fails beyond). It reads into blocks of readBlock bytes, allocated
// as the bytes arrive; once more than half of max have, into one buffer
// of max bytes (and one more, for body to say when it is longer), which
// the request reserves for such a body (the cap of its route) before it is
// read, and the bytes of the blocks are copied into it; a body that ends
// before is copied from its blocks into one buffer of its size. A body of
// 30 MiB and a max of 32 MiB cost 49 MiB, of which 32 MiB are returned,
// where io.ReadAll would read it into buffers of growing size and then
// copy them into one of its size, 69 MiB; and what is allocated is never
// more than twice the bytes read and the buffer of max bytes, which a
// request whose reservation is smaller than max (a body counted as it
// arrives) never reaches.
func readAll(body io.Reader, max int64) ([]byte, error) {
	var blocks [][]byte // full, readBlock bytes each
	buf := make([]byte, 0, min(readBlock, max+1))
	for {
		if len(buf) == cap(buf) {
			read := int64(len(blocks))*readBlock + int64(len(buf))
			switch {
			case int64(cap(buf)) > max:
				return buf, fmt.Errorf("body longer than %d bytes", max) // body is not a MaxBytesReader
			case read > max/2:
				buf = join(make([]byte, 0, max+1), blocks, buf)
				blocks = nil
			default:
				blocks = append(blocks, buf)
				buf = make([]byte, 0, readBlock)
			}
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if blocks != nil {
				buf = join(make([]byte, 0, len(blocks)*readBlock+len(buf)), blocks, buf)
			}
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// join appends the blocks and last to buf.
func join(buf []byte, blocks [][]byte, last []byte) []byte {
	for _, b := range blocks {
		buf = append(buf, b...)
	}
	return append(buf, last...)
}

// tooLarge returns err, or an error of kind keel.KindTooLarge when err is
// http.MaxBytesReader's.
func tooLarge(err error, max int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("body larger than %d bytes: %w", max, keel.KindTooLarge)
	}
	return err
}
