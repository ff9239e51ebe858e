package jsonbody_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
)

// TestDecode: one value is read; an empty body, a second value, a body
// over the size and malformed JSON each give their own error, and data
// after the value is refused even when it is only a stray character.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    error // nil: decoded; a sentinel or kind otherwise
		syntax  bool  // the decoder's own error
		decoded string
	}{
		{body: `{"a":"b"}`, decoded: "b"},
		{body: " {\"a\":\"b\"}\n\t ", decoded: "b"},
		{body: ``, want: jsonbody.ErrEmpty},
		{body: `   `, want: jsonbody.ErrEmpty},
		{body: `{"a":"b"}{"c":"d"}`, want: jsonbody.ErrTrailing},
		{body: `{"a":"b"} x`, want: jsonbody.ErrTrailing},
		{body: `{"a":"` + strings.Repeat("x", 100) + `"}`, want: keel.KindTooLarge},
		{body: `{"a":`, syntax: true},
		{body: `{"a":1}`, syntax: true}, // a number into a string
	} {
		var v struct{ A string }
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 64}, &v)
		switch {
		case tc.syntax:
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			if !errors.As(err, &se) && !errors.As(err, &te) && !strings.Contains(err.Error(), "unexpected EOF") {
				t.Errorf("%q: %v, want the decoder's error", tc.body, err)
			}
		case tc.want != nil:
			if !errors.Is(err, tc.want) {
				t.Errorf("%q: %v, want %v", tc.body, err, tc.want)
			}
		case err != nil || v.A != tc.decoded:
			t.Errorf("%q: %+v, %v; want A=%q", tc.body, v, err, tc.decoded)
		}
	}
}

// TestDecodeUseNumber: with UseNumber, numbers keep their text.
func TestDecodeUseNumber(t *testing.T) {
	var v map[string]any
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"n":18446744074}`))
	if err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 64, UseNumber: true}, &v); err != nil {
		t.Fatal(err)
	}
	if n, ok := v["n"].(json.Number); !ok || n != "18446744074" {
		t.Fatalf("n = %#v, want json.Number", v["n"])
	}
}

func ExampleDecode() {
	var v struct{ Name string }
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"Name":"a"}{"Name":"b"}`))
	err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 1 << 20}, &v)
	fmt.Println(err)
	// Output: data after the JSON value
}

// TestDecodeLargeObject: a large body into a map with UseNumber, decoded
// in place, gives what the decoder gives, and the same errors.
func TestDecodeLargeObject(t *testing.T) {
	pad := strings.Repeat("p", keel.LargeValue)
	decode := func(body string) (map[string]any, error) {
		var v map[string]any
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 1 << 20, UseNumber: true}, &v)
		return v, err
	}
	v, err := decode(`{"pad":"` + pad + `","n":12.50}`)
	if err != nil || v["pad"] != pad || v["n"] != json.Number("12.50") {
		t.Fatalf("large object: %d entries, n=%#v, %v", len(v), v["n"], err)
	}
	if _, err := decode(`{"pad":"` + pad + `"}{}`); !errors.Is(err, jsonbody.ErrTrailing) {
		t.Errorf("large object and another: %v, want ErrTrailing", err)
	}
	var se *json.SyntaxError
	if _, err := decode(`{"pad":"` + pad + `",}`); !errors.As(err, &se) {
		t.Errorf("large malformed object: %v, want the decoder's syntax error", err)
	}
	if v, err := decode(`null` + strings.Repeat(" ", keel.LargeValue)); err != nil || v != nil {
		t.Errorf("large null: %v, %v; want a nil map as the decoder gives", v, err)
	}
}

// TestDecodeChunkedObject: a map body of unknown length is read whole and
// decoded as the decoder does, and one over the size is TooLarge.
func TestDecodeChunkedObject(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{body: `{"n":1.0}`},
		{body: `{"n":1.0}{}`, want: jsonbody.ErrTrailing},
		{body: ` `, want: jsonbody.ErrEmpty},
		{body: `{"n":"` + strings.Repeat("x", 100) + `"}`, want: keel.KindTooLarge},
	} {
		var v map[string]any
		r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader(tc.body)))
		r.ContentLength = -1
		err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 64, UseNumber: true}, &v)
		if tc.want == nil && (err != nil || v["n"] != json.Number("1.0")) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%.20q: %v, %v; want %v", tc.body, v, err, tc.want)
		}
	}
}

// TestDecodeChunkedLargeObject: a large body of unknown length, shorter
// or longer than the first buffer read, decodes whole; one longer than
// the size is TooLarge.
func TestDecodeChunkedLargeObject(t *testing.T) {
	const max = 4 << 20
	for _, size := range []int{100 << 10, 3 << 19, 3 << 20, max} {
		pad := strings.Repeat("p", size-len(`{"pad":""}`))
		var v map[string]any
		r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader(`{"pad":"`+pad+`"}`)))
		r.ContentLength = -1
		err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: max, UseNumber: true}, &v)
		if err != nil || v["pad"] != pad {
			t.Errorf("%d bytes: %d entries, %v; want the object", size, len(v), err)
		}
	}
	var v map[string]any
	r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader(`{"pad":"`+strings.Repeat("p", max)+`"}`)))
	r.ContentLength = -1
	if err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: max, UseNumber: true}, &v); !errors.Is(err, keel.KindTooLarge) {
		t.Errorf("%d bytes over %d: %v, want TooLarge", max+10, max, err)
	}
}

// TestDecodeChunkedAllocatesAsItReads: a body of unknown length that
// fails (a bound on the bodies in flight, the connection) before half its
// largest size has arrived allocates in proportion to what did, not the
// buffer of its largest size.
func TestDecodeChunkedAllocatesAsItReads(t *testing.T) {
	const max, sent = 32 << 20, 3 << 20
	body := io.MultiReader(strings.NewReader(`{"pad":"`+strings.Repeat("p", sent)), iotest.ErrReader(errors.New("cut")))
	r := httptest.NewRequest("POST", "/", io.NopCloser(body))
	r.ContentLength = -1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var v map[string]any
	err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: max, UseNumber: true}, &v)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a body cut short decoded")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*sent {
		t.Errorf("%d bytes allocated for a body cut after %d of at most %d, want at most %d", got, sent, max, 3*sent)
	}
}

// TestDecodeSmallObject: a small body of announced length into a map with
// UseNumber, which Decode first reads as a flat object, gives what the
// decoder gives, and the decoder's errors, whether it is flat or not: a
// nested value, an escape, null, a second value, a malformed or truncated
// document.
func TestDecodeSmallObject(t *testing.T) {
	for _, body := range []string{
		`{"lease_id":"kv/a/b/Xyz","increment":3600,"sync":true}`,
		` { "a" : "b" , "n" : -1.5e3 , "t" : false , "z" : null } `,
		`{}`,
		`{"a":{"b":"c"}}`,
		`{"a":["b",1]}`,
		`{"a":"\u00e9\n"}`,
		`{"a":"b","a":"c"}`,
		`null`,
		`{"a":"b"}{"c":"d"}`,
		`{"a":"b"} x`,
		`{"a":`,
		`{"a":01}`,
		`["a"]`,
		`"a"`,
		"{\"a\":\"\xff\"}",
	} {
		want, wantErr := decoderResult(body)
		var got map[string]any
		r := httptest.NewRequest("PUT", "/", strings.NewReader(body))
		err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 1 << 10, UseNumber: true}, &got)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("%q: %#v, %v; want %#v, %v", body, got, err, want, wantErr)
		}
	}
	// A body shorter than announced fails as the decoder fails on it.
	r := httptest.NewRequest("PUT", "/", strings.NewReader(`{"a":"b"}`))
	r.ContentLength = 20
	var got map[string]any
	if err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 1 << 10, UseNumber: true}, &got); err != nil || got["a"] != "b" {
		t.Errorf("a body shorter than announced: %v, %v; want what the decoder reads", got, err)
	}
}

// decoderResult is what Decode gave for body before it read flat objects
// itself: a json.Decoder with UseNumber, then a check for trailing data.
func decoderResult(body string) (map[string]any, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&m)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return m, jsonbody.ErrTrailing
		}
	}
	return m, err
}

// BenchmarkDecodeSmallObject decodes the body of a lease renewal.
func BenchmarkDecodeSmallObject(b *testing.B) {
	const body = `{"lease_id":"leased/bench/k1/00A5bxYk3eVj1q8hFgT2MzR","increment":3600}`
	b.ReportAllocs()
	for b.Loop() {
		var v map[string]any
		r := httptest.NewRequest("PUT", "/", strings.NewReader(body))
		if err := jsonbody.Decode(httptest.NewRecorder(), r, jsonbody.Options{Max: 1 << 10, UseNumber: true}, &v); err != nil {
			b.Fatal(err)
		}
	}
}
