// Package jsonobj decodes and encodes the JSON objects of secrets as
// encoding/json does (numbers kept as written, keys sorted, strings escaped
// alike), without the copies encoding/json makes of a whole large value: a
// json.Decoder buffers all of its input, growing its buffer by doubling,
// and json.Marshal grows its buffer the same way, then copies it out. A
// secret may be as large as a request body (32 MiB), so each copy counts.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// large is the size from which Decode decodes in place: below it the
// json.Decoder's copy is cheap and its fewer allocations are faster.
const large = 64 << 10

// Decode decodes raw, one JSON object and white space, numbers as
// json.Number. It gives what a json.Decoder with UseNumber gives, and
// fails where it fails; "null", another value and data after the object
// are errors.
func Decode(raw []byte) (map[string]any, error) {
	if len(raw) < large {
		if m, ok := DecodeFlat(raw); ok {
			return m, nil
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, errors.New("data after the JSON object")
		}
		if m == nil {
			return nil, errors.New("null, not a JSON object")
		}
		return m, nil
	}
	var entries map[string]value
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, err
	}
	if entries == nil {
		return nil, errors.New("null, not a JSON object")
	}
	m := make(map[string]any, len(entries))
	for k, v := range entries {
		m[k] = v.v
	}
	return m, nil
}

// DecodeFlat decodes the common secret without encoding/json: one flat
// object (ScanFlat) whose values are strings without escapes, numbers,
// true, false or null. It reports false for anything else (a nested value,
// an escape, a control character or invalid UTF-8 in a string, a
// malformed document, null), which Decode then hands to encoding/json:
// what it accepts, it decodes as json.Decoder with UseNumber does, and
// json.Decoder finds nothing after it (FuzzDecodeFlat). The strings are
// copies: raw may be reused. They are substrings of one copy of raw, made
// in one allocation.
func DecodeFlat(raw []byte) (map[string]any, bool) {
	i := SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	all := string(raw)
	m := make(map[string]any, 8)
	ok := ScanFlat(raw, func(mb Member) bool {
		var v any
		switch raw[mb.Val0] {
		case '"':
			v = all[mb.Val0+1 : mb.Val1-1]
		case 't':
			v = true
		case 'f':
			v = false
		case 'n':
			v = nil
		default:
			v = json.Number(all[mb.Val0:mb.Val1])
		}
		m[all[mb.Key0+1:mb.Key1-1]] = v
		return true
	})
	if !ok {
		return nil, false
	}
	return m, true
}

// Member locates one member of an object in its text: raw[Key0:Key1] is
// its key and raw[Val0:Val1] its value, a string's with its quotes.
type Member struct{ Key0, Key1, Val0, Val1 int }

// ScanFlat calls fn with each member of raw, in order, when raw is one
// flat object with white space around its tokens: keys are strings and
// values strings, numbers, true, false or null; no string holds an
// escape, a control character or invalid UTF-8. It reports whether raw is
// such an object, having stopped at the first byte that says it is not,
// or when fn returns false (then false). fn sees the members read so far
// before the rest is checked; a repeated key is passed again.
func ScanFlat(raw []byte, fn func(Member) bool) bool {
	i := SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return SkipSpace(raw, i+1) == len(raw)
	}
	for {
		var mb Member
		var ok bool
		mb.Key0 = i
		if mb.Key1, ok = flatString(raw, i); !ok {
			return false
		}
		i = SkipSpace(raw, mb.Key1)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = SkipSpace(raw, i+1)
		if i >= len(raw) {
			return false
		}
		mb.Val0, ok = i, false
		switch c := raw[i]; {
		case c == '"':
			mb.Val1, ok = flatString(raw, i)
		case c == 't' && bytes.HasPrefix(raw[i:], []byte("true")):
			mb.Val1, ok = i+4, true
		case c == 'f' && bytes.HasPrefix(raw[i:], []byte("false")):
			mb.Val1, ok = i+5, true
		case c == 'n' && bytes.HasPrefix(raw[i:], []byte("null")):
			mb.Val1, ok = i+4, true
		case c == '-' || c >= '0' && c <= '9':
			mb.Val1, ok = numberEnd(raw, i)
		}
		if !ok || !fn(mb) {
			return false
		}
		i = SkipSpace(raw, mb.Val1)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = SkipSpace(raw, i+1)
		case '}':
			return SkipSpace(raw, i+1) == len(raw)
		default:
			return false
		}
	}
}

// SkipSpace returns the index of the first byte from i that is not JSON
// white space.
func SkipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\t' || raw[i] == '\r') {
		i++
	}
	return i
}

// flatString returns the index after the string starting at raw[i]
// ('"'); false when it has an escape, a control character or invalid
// UTF-8, or no end.
func flatString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	start := i + 1
	for j := start; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return j + 1, utf8.Valid(raw[start:j])
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// numberEnd returns the index after the JSON number starting at raw[i]:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; false when it is not one.
func numberEnd(raw []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && raw[i] >= '1' && raw[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// DecodeOwned is Decode for a raw its caller gives up: raw is never
// written again (a request body read for this decoding alone). The large
// strings of the object (64 KiB or more, without escapes) are then the
// bytes of raw where they lie, not copies of them: a string that lies
// whole in a body costs no memory beyond the body's, which each such
// string keeps in memory as long as it lives.
func DecodeOwned(raw []byte) (map[string]any, error) {
	if len(raw) < large {
		return Decode(raw)
	}
	var entries map[string]ownedValue
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, err
	}
	if entries == nil {
		return nil, errors.New("null, not a JSON object")
	}
	m := make(map[string]any, len(entries))
	for k, v := range entries {
		switch {
		case v.span == nil:
			m[k] = v.v
		case within(raw, v.span):
			m[k] = unsafe.String(unsafe.SliceData(v.span), len(v.span))
		default: // not a slice of raw (encoding/json gives slices of it)
			m[k] = string(v.span)
		}
	}
	return m, nil
}

// within reports whether s lies in raw.
func within(raw, s []byte) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return len(s) > 0 && len(s) <= len(raw) && p >= base && p-base <= uintptr(len(raw)-len(s))
}

// ownedValue is a value of DecodeOwned: a large string without escapes is
// left where it lies in the input (span), for DecodeOwned to take as it is.
type ownedValue struct {
	value
	span []byte
}

func (s *ownedValue) UnmarshalJSON(b []byte) error {
	if b[0] == '"' && len(b) >= large+2 {
		if in := b[1 : len(b)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			s.span = in
			return nil
		}
	}
	return s.value.UnmarshalJSON(b)
}

// value decodes one value of an object in place, numbers as json.Number:
// json.Unmarshal hands it a slice of its input.
type value struct{ v any }

func (s *value) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case '{', '[': // small, as a rule: the decoder's copy is cheap
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		return dec.Decode(&s.v)
	case '"':
		// json.Unmarshal has checked the whole object: a string with
		// no escape and valid UTF-8 is its bytes, without scanning it
		// twice more.
		if in := b[1 : len(b)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			s.v = string(in)
			return nil
		}
		return json.Unmarshal(b, &s.v)
	case 't', 'f', 'n':
		return json.Unmarshal(b, &s.v)
	default:
		s.v = json.Number(b)
		return nil
	}
}

// AppendObject appends m encoded as json.Marshal encodes it (keys sorted,
// strings escaped by AppendString), into buf grown once for its strings.
// An error is json.Marshal's for one of the values.
func AppendObject(buf []byte, m map[string]any) ([]byte, error) {
	n := 2
	for k, v := range m {
		n += len(k) + 4
		if s, ok := v.(string); ok {
			n += len(s) + 2
		} else {
			n += 16
		}
	}
	buf = slices.Grow(buf, n)
	buf = append(buf, '{')
	// The keys sorted in an array of the stack when they are few, as a
	// secret's are: no allocation of their own.
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendString(buf, k)
		buf = append(buf, ':')
		if s, ok := m[k].(string); ok {
			buf = AppendString(buf, s)
			continue
		}
		b, err := json.Marshal(m[k])
		if err != nil {
			return buf, err
		}
		buf = append(buf, b...)
	}
	return append(buf, '}'), nil
}

// AppendString appends s as a JSON string exactly as encoding/json writes
// it: '<', '>' and '&' escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func AppendString(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	// The ASCII bytes to escape, as bits of two words: the control
	// characters, '"', '&', '<', '>' (below 64) and '\\' (92).
	const (
		escapeLow  = 1<<0x20 - 1 | 1<<'"' | 1<<'&' | 1<<'<' | 1<<'>'
		escapeHigh = 1 << ('\\' - 64)
	)
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if (b < 64 && escapeLow>>b&1 == 0) || (b >= 64 && escapeHigh>>(b-64)&1 == 0) {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
