package audit

import (
	"bytes"
	"slices"

	"github.com/keelhq/keel/internal/jsonobj"
)

// A request's or response's data given as raw JSON (Request.RawData,
// Response.RawData) is written as the map jsonobj.Decode makes of it
// would be, without the map: a flat object whose keys need no escape
// and whose values are strings without escapes, true, false or null (a
// kv secret, as a client sends it) is walked, its members sorted by key
// as encoding/json sorts a map's, and its strings hashed where they lie;
// anything else (a nested value, a number, an escape, a repeated key) is
// decoded to the map, and written from it (FuzzRawData).

// rawData appends the member "data" of the object that starts at o, the
// JSON object raw, as e.object would write jsonobj.Decode(raw); nothing
// when raw is not an object, or an empty one.
func (e *encoder) rawData(b []byte, o int, raw []byte) []byte {
	var small [16]jsonobj.Member
	ms, ok := flatMembers(raw, small[:0])
	if !ok {
		m, err := jsonobj.Decode(raw)
		if err != nil || len(m) == 0 {
			return b
		}
		return e.object(field(b, o, "data"), m)
	}
	if len(ms) == 0 {
		return b
	}
	b = append(field(b, o, "data"), '{')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, raw[m.Key0:m.Key1]...)
		b = append(b, ':')
		if v := raw[m.Val0:m.Val1]; v[0] == '"' {
			b = e.secretBytes(b, v[1:len(v)-1])
		} else {
			b = append(b, v...)
		}
	}
	return append(b, '}')
}

// secretBytes is secret of a string held as bytes.
func (e *encoder) secretBytes(b, v []byte) []byte {
	if e.salt == nil {
		return jsonobj.AppendString(b, string(v))
	}
	b = append(b, '"')
	return append(e.mac.appendHashBytes(b, v), '"')
}

// flatMembers appends to ms the members of raw, sorted by key, when raw
// is a flat object (jsonobj.ScanFlat) that rawData writes without a map:
// at most cap(ms) members, keys of printable ASCII that JSON writes as they
// are, none repeated, values strings, true, false or null. It reports
// false otherwise.
func flatMembers(raw []byte, ms []jsonobj.Member) ([]jsonobj.Member, bool) {
	ok := jsonobj.ScanFlat(raw, func(m jsonobj.Member) bool {
		if len(ms) == cap(ms) {
			return false
		}
		for _, c := range raw[m.Key0+1 : m.Key1-1] {
			if c > 0x7e || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		if c := raw[m.Val0]; c == '-' || c >= '0' && c <= '9' {
			return false // a number: the map holds a json.Number
		}
		// Sorted as it goes (insertion): a secret has few members.
		key := raw[m.Key0+1 : m.Key1-1]
		at := len(ms)
		for at > 0 {
			c := bytes.Compare(raw[ms[at-1].Key0+1:ms[at-1].Key1-1], key)
			if c == 0 {
				return false // a repeated key: the map keeps the last
			}
			if c < 0 {
				break
			}
			at--
		}
		ms = slices.Insert(ms, at, m)
		return true
	})
	return ms, ok
}
