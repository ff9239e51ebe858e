package jsonobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// odd holds every kind of character encoding/json escapes.
const odd = "a\"b\\c\n\r\t\b\f\x01\x1f<>&\u2028\u2029é\xff日本 /"

// TestDecodeMatchesDecoder: Decode gives what json.Decoder with UseNumber
// gives, small or large (in place), and refuses null, other values and
// trailing data.
func TestDecodeMatchesDecoder(t *testing.T) {
	for _, pad := range []string{"", strings.Repeat("p", large)} {
		for _, doc := range []string{
			`{"pad":"` + pad + `","n":12.50,"i":-3,"e":1e400,"t":true,"f":false,"z":null,"s":"a\"b\u00e9\ud800","o":{"x":[1,2.0,{"y":null}]},"a":[]}`,
			`{"pad":"` + pad + `"}`,
			" \n{\"pad\" : \"" + pad + "\" } \t",
			"{\"pad\":\"" + pad + "\",\"bad\":\"a\xffb\",\"esc\":\"\\u00e9\\n\"}",
		} {
			var want map[string]any
			dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			got, err := Decode([]byte(doc))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("Decode(%.60q, %d bytes) = %d entries, %v; want the decoder's %d", doc, len(doc), len(got), err, len(want))
			}
			got, err = DecodeOwned([]byte(doc))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeOwned(%.60q, %d bytes) = %d entries, %v; want the decoder's %d", doc, len(doc), len(got), err, len(want))
			}
		}
		for _, bad := range []string{
			`null` + pad,
			`{"pad":"` + pad + `"} {}`,
			`{"pad":"` + pad + `"} x`,
			`{"pad":"` + pad + `"`,
			`["` + pad + `"]`,
			`"` + pad + `"`,
			``,
		} {
			if got, err := Decode([]byte(bad)); err == nil {
				t.Errorf("Decode(%.40q, %d bytes) = %d entries, want an error", bad, len(bad), len(got))
			}
			if got, err := DecodeOwned([]byte(bad)); err == nil {
				t.Errorf("DecodeOwned(%.40q, %d bytes) = %d entries, want an error", bad, len(bad), len(got))
			}
		}
	}
}

// TestDecodeOwnedInPlace: DecodeOwned's large strings without escapes are
// the bytes of its input; small ones, and those with escapes, are copies.
func TestDecodeOwnedInPlace(t *testing.T) {
	big := strings.Repeat("b", large)
	raw := []byte(`{"big":"` + big + `","esc":"` + big + `\n","small":"s"}`)
	m, err := DecodeOwned(raw)
	if err != nil {
		t.Fatal(err)
	}
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		base := uintptr(unsafe.Pointer(&raw[0]))
		return p >= base && p < base+uintptr(len(raw))
	}
	if s := m["big"].(string); s != big || !in(s) {
		t.Errorf("big: %d bytes, in the input %v; want %d bytes in the input", len(s), in(s), len(big))
	}
	if s := m["esc"].(string); s != big+"\n" || in(s) {
		t.Errorf("esc: %d bytes, in the input %v; want %d bytes copied", len(s), in(s), len(big)+1)
	}
	if s := m["small"].(string); s != "s" || in(s) {
		t.Errorf("small: %q, in the input %v; want \"s\" copied", s, in(s))
	}
}

// TestAppendMatchesMarshal: AppendObject and AppendString write what
// json.Marshal writes.
func TestAppendMatchesMarshal(t *testing.T) {
	for _, m := range []map[string]any{
		{"a": "b"},
		{odd: odd, "z": json.Number("12.50"), "y": []any{"x", true, nil}, "x": map[string]any{"k": odd}, "w": 3.5, "": ""},
		{"big": strings.Repeat(odd, large/len(odd)+1), "b": false},
		manyKeys(40), // more than the stack's array of keys
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendObject([]byte("prefix"), m)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("AppendObject = %.80s, %v;\nwant %.80s", got, err, want)
		}
	}
	if _, err := AppendObject(nil, map[string]any{"f": func() {}}); err == nil {
		t.Error("AppendObject of a func: no error, want json.Marshal's")
	}
	for _, s := range []string{"", odd, "\x00", "\u007f", "\ufffd", string([]byte{0xe2, 0x80}), "</script>"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func manyKeys(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprintf("key-%03d", n-i)] = fmt.Sprint(i)
	}
	return m
}

// The keys of a small object are sorted without an allocation (issue 32:
// every kv write encodes one).
func TestAppendObjectOfAFewKeysAllocatesNothing(t *testing.T) {
	m := map[string]any{"user": "app", "password": "hunter2", "note": "a secret"}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := AppendObject(buf, m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendObject allocates %v times, want 0", allocs)
	}
}

func ExampleDecode() {
	m, err := Decode([]byte(`{"password":"s3cr3t","port":5432.0}`))
	fmt.Println(m["password"], m["port"], err)
	b, _ := AppendObject(nil, m)
	fmt.Println(string(b))
	// Output:
	// s3cr3t 5432.0 <nil>
	// {"password":"s3cr3t","port":5432.0}
}

// BenchmarkDecode decodes an object holding a 4 MiB string, in place and,
// as a yardstick, with json.Decoder and UseNumber.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"n":1,"v":"` + strings.Repeat("x", 4<<20) + `"}`)
	b.Run("impl=jsonobj", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=decoder", benchDecoder(doc))
}

// benchDecoder is the yardstick of the decoding benchmarks: doc decoded
// with json.Decoder and UseNumber.
func benchDecoder(doc []byte) func(*testing.B) {
	return func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzDecodeFlat: what DecodeFlat accepts, json.Decoder with UseNumber
// decodes to the same map, with nothing but white space after it.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range []string{
		`{"username":"svc-app-01","password":"p4ssw0rd","url":"https://db:5432/app"}`,
		` {"a" : -0.5e+3 , "b":true,"c":false,"d":null,"e":"é日本\u2028"}` + "\n",
		`{}`, `{"a":01}`, `{"a":1.}`, `{"a":"x\"y"}`, `{"a":"\x01"}`, `{"a":"\xff"}`,
		`{"a":1,"a":2}`, `{"a":[1]}`, `{"a":1} {}`, `{"a":1}}`, `{"a":tru}`, `{"a":1e}`, `{"a":-}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := DecodeFlat(raw)
		if !ok {
			return
		}
		var want map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("DecodeFlat(%q) = %v; the decoder fails: %v", raw, got, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("DecodeFlat(%q) accepted data after the object (%v)", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeFlat(%q) = %#v, want %#v", raw, got, want)
		}
	})
}

// TestDecodeFlatTakes: the common secret takes the fast path; escapes
// and nested values do not.
func TestDecodeFlatTakes(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"username":"u","password":"p","n":12,"ttl":"1h"}`: true,
		`{}`:             true,
		`{"a":"<"}`:      true,
		`{"a":"\u003c"}`: false,
		`{"a":{}}`:       false,
		`{"a":[]}`:       false,
		`{"a":1} x`:      false,
		`{"a":"\xff"}`:   false,
	} {
		if _, ok := DecodeFlat([]byte(doc)); ok != want {
			t.Errorf("DecodeFlat(%q): %v, want %v", doc, ok, want)
		}
	}
}

// DecodeFlat copies raw once: its keys and strings are substrings of that
// copy (issue 32: every kv write through the Vault adapter and every kv
// read decode one), and they do not change when raw is reused.
func TestDecodeFlatCopiesRawOnce(t *testing.T) {
	raw := []byte(`{"password":"0123456789abcdef","user":"bench-user","note":"a secret"}`)
	// The map (its header and one group), the copy, and each string
	// boxed in an interface.
	allocs := testing.AllocsPerRun(100, func() { DecodeFlat(raw) })
	if allocs > 2+1+3 {
		t.Errorf("DecodeFlat allocates %v times, want at most 6", allocs)
	}
	m, ok := DecodeFlat(raw)
	if !ok {
		t.Fatal("DecodeFlat refused a flat object")
	}
	for i := range raw {
		raw[i] = 'x'
	}
	if m["password"] != "0123456789abcdef" || m["user"] != "bench-user" || m["note"] != "a secret" {
		t.Errorf("after raw was reused: %v", m)
	}
}

// BenchmarkDecodeFlat decodes the common secret (bench/vaultload's), and,
// as a yardstick, the same with json.Decoder and UseNumber.
func BenchmarkDecodeFlat(b *testing.B) {
	doc := []byte(`{"password":"0123456789abcdef","user":"bench-user","note":"a secret written by vaultload"}`)
	b.Run("impl=jsonobj", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := DecodeFlat(doc); !ok {
				b.Fatal("not flat")
			}
		}
	})
	b.Run("impl=decoder", benchDecoder(doc))
}
