package kv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/keelhq/keel"
)

// TestDecodeLargeMatchesDecoder: the in-place decoding of large secrets
// gives what json.Decoder with UseNumber gives, and refuses what it
// refuses.
func TestDecodeLargeMatchesDecoder(t *testing.T) {
	pad := strings.Repeat("p", keel.LargeValue)
	for _, doc := range []string{
		`{"pad":"` + pad + `","n":12.50,"i":-3,"e":1e400,"t":true,"f":false,"z":null,"s":"a\"b\u00e9","o":{"x":[1,2.0,{"y":null}]},"a":[]}`,
		`{"pad":"` + pad + `"}`,
		` {"pad" : "` + pad + `" } `,
	} {
		want := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeLarge([]byte(doc))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeLarge(%.60s…) = %v, %v; want the decoder's", doc, len(got), err)
		}
	}
	for _, bad := range []string{
		`null` + strings.Repeat(" ", keel.LargeValue),
		`{"pad":"` + pad + `"} {}`,
		`{"pad":"` + pad + `"`,
		`["` + pad + `"]`,
	} {
		if got, err := decodeData([]byte(bad)); err == nil {
			t.Errorf("decodeData(%.40s…) = %d entries, want an error", bad, len(got))
		}
	}
}
