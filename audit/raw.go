package audit

import (
	"bytes"
	"unicode/utf8"

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

// member is a member of a flat object: the spans of its key (quotes
// included) and of its value (a string's quotes included).
type member struct {
	k0, k1, v0, v1 int
}

// rawData appends the member "data" of the object that starts at o, the
// JSON object raw, as e.object would write jsonobj.Decode(raw); nothing
// when raw is not an object, or an empty one.
func (e *encoder) rawData(b []byte, o int, raw []byte) []byte {
	var small [16]member
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
		b = append(b, raw[m.k0:m.k1]...)
		b = append(b, ':')
		if v := raw[m.v0:m.v1]; v[0] == '"' {
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
// is one object (white space around) that rawData writes without a map:
// at most 16 members, keys of printable ASCII that JSON writes as they
// are, none repeated, values strings of valid UTF-8 without escapes or
// control characters, true, false or null. It reports false otherwise.
func flatMembers(raw []byte, ms []member) ([]member, bool) {
	i := jsonobj.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = jsonobj.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return ms, jsonobj.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		if len(ms) == cap(ms) || i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		var m member
		m.k0 = i
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if c := raw[i]; c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
				return nil, false
			}
		}
		if i >= len(raw) {
			return nil, false
		}
		m.k1 = i + 1
		i = jsonobj.SkipSpace(raw, i+1)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsonobj.SkipSpace(raw, i+1)
		m.v0 = i
		switch {
		case i >= len(raw):
			return nil, false
		case raw[i] == '"':
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				if c := raw[j]; c < 0x20 || c == '\\' {
					return nil, false
				}
				j++
			}
			if j >= len(raw) || !utf8.Valid(raw[i+1:j]) {
				return nil, false
			}
			i = j + 1
		case bytes.HasPrefix(raw[i:], []byte("true")):
			i += 4
		case bytes.HasPrefix(raw[i:], []byte("false")):
			i += 5
		case bytes.HasPrefix(raw[i:], []byte("null")):
			i += 4
		default:
			return nil, false
		}
		m.v1 = i
		// Sorted as it goes (insertion): a secret has few members.
		at := len(ms)
		for at > 0 {
			c := bytes.Compare(raw[ms[at-1].k0+1:ms[at-1].k1-1], raw[m.k0+1:m.k1-1])
			if c == 0 {
				return nil, false // a repeated key: the map keeps the last
			}
			if c < 0 {
				break
			}
			at--
		}
		ms = append(ms, member{})
		copy(ms[at+1:], ms[at:])
		ms[at] = m
		i = jsonobj.SkipSpace(raw, i)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = jsonobj.SkipSpace(raw, i+1)
		case '}':
			return ms, jsonobj.SkipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}
