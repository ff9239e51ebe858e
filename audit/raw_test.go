package audit

import (
	"bytes"
	"testing"
	"time"
)

// rawSeeds are bodies whose data rawData must write as the map of their
// decoding: flat secrets it walks, and what it hands to the map.
var rawSeeds = []string{
	`{"password":"hunter2","user":"app","ttl":"1h"}`,
	` { "b" : "x" , "a" : true, "c": null, "d": false } `,
	`{}`, ` {} `, `null`, `[]`, `"s"`, `{"a":"x"} x`, `{"a":"x"`, `{"a":}`, `{"a" "x"}`,
	`{"a ":"1","a":"2","a!":"3","A":"4","":"5"}`,
	`{"a":"1","a":"2"}`,
	`{"k":1,"n":-2.5e3}`,
	`{"k":"\u00e9\n","\u0041":"x"}`,
	`{"<&>":"x","k":"<&>"}`,
	`{"k":"é ☃ \u2028"}`,
	"{\"k\":\"\xff\"}",
	"{\"k\":\"a\tb\"}",
	`{"n":{"a":"x"},"l":["a",1,null]}`,
	`{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9","j":"10","k":"11","l":"12","m":"13","n":"14","o":"15","p":"16","q":"17"}`,
	`{"t":truex}`, `{"t":nul}`,
}

// FuzzRawData: a record whose request and response data are given as
// raw JSON is written, salted or not, and through Salt.Apply, byte for
// byte as the same record holding the decoding of that JSON as Data.
func FuzzRawData(f *testing.F) {
	for _, s := range rawSeeds {
		f.Add([]byte(s))
	}
	salt, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec := func(rawData []byte, data map[string]any) *Record {
			return &Record{
				Time: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Type: TypeResponse,
				Request:  &Request{Operation: "update", Path: "secret/app", Data: data, RawData: rawData},
				Response: &Response{Data: data, RawData: rawData},
			}
		}
		data := dataOf(nil, raw)
		for _, s := range []*Salt{salt, nil} {
			want, werr := appendRecord(nil, rec(nil, data), s)
			got, gerr := appendRecord(nil, rec(raw, nil), s)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("salted %v: raw %q\ngot  %s (%v)\nwant %s (%v)", s != nil, raw, got, gerr, want, werr)
			}
		}
		want, _ := appendRecord(nil, rec(raw, nil), salt)
		got, _ := appendRecord(nil, salt.Apply(rec(raw, nil)), nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("Apply: raw %q\ngot  %s\nwant %s", raw, got, want)
		}
	})
}

// TestRawDataFlatWithoutMap: a flat secret given as raw JSON is salted
// and written without being decoded: no allocation per record once the
// buffer has grown.
func TestRawDataFlatWithoutMap(t *testing.T) {
	salt, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"password":"hunter2","user":"app","ttl":"1h"}`)
	r := &Record{Time: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Type: TypeResponse,
		Request:  &Request{Operation: "update", Path: "secret/app", RawData: raw},
		Response: &Response{RawData: raw}}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := appendRecord(buf[:0], r, salt); err != nil {
			t.Fatal(err)
		}
	}); n != 0 && !raceEnabled {
		t.Errorf("appendRecord of a flat raw secret: %v allocations, want 0", n)
	}
	if got, _ := appendRecord(nil, r, salt); bytes.Contains(got, []byte("hunter2")) {
		t.Errorf("record holds the secret: %s", got)
	}
}
