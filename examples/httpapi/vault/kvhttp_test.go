package vault

import (
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// TestFlatBody: flatBody decodes a small flat object; any other body is
// left whole for decodeBody, the bytes it read put back in front.
func TestFlatBody(t *testing.T) {
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
		{`{"a":` + strings.Repeat(" ", smallBody) + `1}`, nil},
	} {
		r := httptest.NewRequest("PUT", "/v1/secret/x", strings.NewReader(tc.body))
		got, ok := flatBody(r)
		if ok != (tc.want != nil) || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("flatBody(%.40q) = %v, %v; want %v", tc.body, got, ok, tc.want)
		}
		if ok {
			continue
		}
		rest, err := io.ReadAll(r.Body)
		if err != nil || string(rest) != tc.body {
			t.Errorf("flatBody(%.40q) left %.40q, %v", tc.body, rest, err)
		}
	}
	// A body shorter than announced: the bytes read, then the read's error.
	r := httptest.NewRequest("PUT", "/v1/secret/x", nil)
	r.ContentLength = 20
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"a":`), iotest.ErrReader(io.ErrUnexpectedEOF)))
	if _, ok := flatBody(r); ok {
		t.Fatal("flatBody of a short body: ok")
	}
	rest, err := io.ReadAll(r.Body)
	if string(rest) != `{"a":` || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: left %q, %v", rest, err)
	}
}
