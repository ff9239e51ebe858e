package jsonbody_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
)

// TestFlat: Flat decodes a small flat object; any other body is
// left whole for the decoder, the bytes it read put back in front.
func TestFlat(t *testing.T) {
	for _, tc := range []struct {
		body string
		want map[string]any
	}{
		{`{"username":"u","password":"p","ttl":"1h"}`, map[string]any{"username": "u", "password": "p", "ttl": "1h"}},
		{` {} `, map[string]any{}},
		{`{"a":"b"}{"c":"d"}`, nil},
		{`{"a":"b"} x`, nil},
		{`{"a":{"b":1}}`, nil},
		{`{"a":"\u003c"}`, nil},
		{`null`, nil},
		{`{"a":` + strings.Repeat(" ", 16<<10) + `1}`, nil},
	} {
		r := httptest.NewRequest("PUT", "/v1/secret/x", strings.NewReader(tc.body))
		got, ok := jsonbody.Flat(r)
		if ok != (tc.want != nil) || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("jsonbody.Flat(%.40q) = %v, %v; want %v", tc.body, got, ok, tc.want)
		}
		if ok {
			continue
		}
		rest, err := io.ReadAll(r.Body)
		if err != nil || string(rest) != tc.body {
			t.Errorf("jsonbody.Flat(%.40q) left %.40q, %v", tc.body, rest, err)
		}
	}
	// A body shorter than announced: the bytes read, then the read's error.
	r := httptest.NewRequest("PUT", "/v1/secret/x", nil)
	r.ContentLength = 20
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"a":`), iotest.ErrReader(io.ErrUnexpectedEOF)))
	if _, ok := jsonbody.Flat(r); ok {
		t.Fatal("Flat of a short body: ok")
	}
	rest, err := io.ReadAll(r.Body)
	if string(rest) != `{"a":` || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: left %q, %v", rest, err)
	}
}
