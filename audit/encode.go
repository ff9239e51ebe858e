package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/keelhq/keel/internal/jsonobj"
)

// encoder appends a record's JSON line without reflection: the same bytes
// as encoding/json's Marshal of the record (TestEncoderMatchesJSON). With
// a salt, it writes each secret string's hash where Salt.Apply would have
// put it, so that a record is salted and encoded in one pass, without a
// copy of its data.
type encoder struct {
	salt  *Salt
	mac   *mac  // the salt's HMAC
	err   error // the first value that could not be encoded
	depth int   // of the maps and slices being written
}

// appendRecord appends r's JSON object (Chain included when it is set)
// to b, its secret strings hashed with s when s is not nil.
func appendRecord(b []byte, r *Record, s *Salt) ([]byte, error) {
	b, err := appendRecordHead(b, r, s)
	if err != nil {
		return b, err
	}
	return appendChain(b, r.Chain), nil
}

// appendRecordHead appends r's JSON object without Chain and without its
// closing brace, for appendChain to end.
func appendRecordHead(b []byte, r *Record, s *Salt) ([]byte, error) {
	e := encoder{salt: s}
	if s != nil {
		e.mac = s.macs.Get().(*mac)
		defer s.macs.Put(e.mac)
	}
	b = append(b, `{"time":"`...)
	b, err := r.Time.AppendText(b)
	if err != nil {
		return b, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	b = append(b, `","type":`...)
	b = jsonobj.AppendString(b, r.Type)
	if q := r.Request; s != nil && q != nil && q.enc != nil && q.enc.of == q && q.enc.salt == s && q.enc.auth == r.Auth {
		b = append(b, q.enc.b...) // encoded for the request's first record
	} else {
		start := len(b)
		b = e.authRequest(b, r)
		if s != nil && q != nil && r.Type == TypeRequest && e.err == nil {
			q.enc = &encoding{of: q, salt: s, auth: r.Auth, b: slices.Clone(b[start:])}
		}
	}
	if p := r.Response; p != nil {
		b = append(b, `,"response":`...)
		o := len(b)
		if p.MountType != "" {
			b = jsonobj.AppendString(field(b, o, "mount_type"), p.MountType)
		}
		if len(p.Data) > 0 {
			b = e.object(field(b, o, "data"), p.Data)
		} else if p.Data == nil && len(p.RawData) > 0 {
			b = e.rawData(b, o, p.RawData)
		}
		b = end(b, o)
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonobj.AppendString(b, r.Error)
	}
	return b, e.err
}

// authRequest appends r's members "auth" and "request".
func (e *encoder) authRequest(b []byte, r *Record) []byte {
	if a := r.Auth; a != nil {
		b = append(b, `,"auth":`...)
		o := len(b)
		if a.ClientToken != "" {
			b = e.secret(field(b, o, "client_token"), a.ClientToken)
		}
		if a.Accessor != "" {
			b = e.secret(field(b, o, "accessor"), a.Accessor)
		}
		if a.DisplayName != "" {
			b = jsonobj.AppendString(field(b, o, "display_name"), a.DisplayName)
		}
		if len(a.Policies) > 0 {
			b = append(field(b, o, "policies"), '[')
			for i, p := range a.Policies {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonobj.AppendString(b, p)
			}
			b = append(b, ']')
		}
		if a.TokenType != "" {
			b = jsonobj.AppendString(field(b, o, "token_type"), a.TokenType)
		}
		b = end(b, o)
	}
	if q := r.Request; q != nil {
		b = append(b, `,"request":`...)
		o := len(b)
		if q.ID != "" {
			b = jsonobj.AppendString(field(b, o, "id"), q.ID)
		}
		b = jsonobj.AppendString(field(b, o, "operation"), q.Operation)
		if q.MountType != "" {
			b = jsonobj.AppendString(field(b, o, "mount_type"), q.MountType)
		}
		if q.MountPoint != "" {
			b = jsonobj.AppendString(field(b, o, "mount_point"), q.MountPoint)
		}
		b = jsonobj.AppendString(field(b, o, "path"), q.Path)
		if len(q.Data) > 0 {
			b = e.object(field(b, o, "data"), q.Data)
		} else if q.Data == nil && len(q.RawData) > 0 {
			b = e.rawData(b, o, q.RawData)
		}
		if q.RemoteAddress != "" {
			b = jsonobj.AppendString(field(b, o, "remote_address"), q.RemoteAddress)
		}
		b = end(b, o)
	}
	return b
}

// appendChain ends a record's object begun by appendRecordHead, with c
// when it is not nil.
func appendChain(b []byte, c *Chain) []byte {
	if c != nil {
		b = append(b, `,"chain":{"seq":`...)
		b = strconv.AppendUint(b, c.Seq, 10)
		b = append(b, `,"prev":`...)
		b = jsonobj.AppendString(b, c.Prev)
		b = append(b, '}')
	}
	return append(b, '}')
}

// field appends the name of a member of the object that starts at o.
func field(b []byte, o int, name string) []byte {
	if len(b) == o {
		b = append(b, '{')
	} else {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// end closes the object that starts at o.
func end(b []byte, o int) []byte {
	if len(b) == o {
		return append(b, '{', '}')
	}
	return append(b, '}')
}

// secret appends v's hash, or v when the encoder has no salt.
func (e *encoder) secret(b []byte, v string) []byte {
	if e.salt == nil {
		return jsonobj.AppendString(b, v)
	}
	b = append(b, '"')
	return append(e.mac.appendHash(b, v), '"')
}

// object appends m, a map of data, its keys sorted as encoding/json sorts
// them.
func (e *encoder) object(b []byte, m map[string]any) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	if !e.enter() {
		return append(b, "null"...)
	}
	defer e.leave()
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonobj.AppendString(b, k)
		b = append(b, ':')
		b = e.value(b, m[k])
	}
	return append(b, '}')
}

// value appends v, a value of a record's data: as Salt.Apply would have
// left it, hashed, or replaced when the encoder has a salt, as
// encoding/json writes it otherwise.
func (e *encoder) value(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return e.secret(b, v)
	case map[string]any:
		return e.object(b, v)
	case []any:
		if v == nil && e.salt == nil {
			return append(b, "null"...) // Apply makes an empty slice of it
		}
		if !e.enter() {
			return append(b, "null"...)
		}
		defer e.leave()
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.value(b, x)
		}
		return append(b, ']')
	case []string:
		if v == nil && e.salt == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.secret(b, x)
		}
		return append(b, ']')
	case bool:
		return strconv.AppendBool(b, v)
	case float64:
		return e.float(b, v, 64)
	case float32:
		return e.float(b, float64(v), 32)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case int32:
		return strconv.AppendInt(b, int64(v), 10)
	case uint:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10)
	case json.Number:
		if v == "" {
			return append(b, '0') // as encoding/json writes it
		}
		if !validNumber(string(v)) {
			e.fail(fmt.Errorf("json: invalid number literal %q", string(v)))
			return append(b, "null"...)
		}
		return append(b, v...)
	}
	if e.salt != nil {
		// As Apply: a value of another type is hashed as its text.
		return e.secret(b, fmt.Sprint(v))
	}
	j, err := json.Marshal(v)
	if err != nil {
		e.fail(err)
		return append(b, "null"...)
	}
	return append(b, j...)
}

// float appends f as encoding/json writes a float of bits bits.
func (e *encoder) float(b []byte, f float64, bits int) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.fail(errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, bits)))
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// An exponent of one digit is written without its 0: e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	digits := func(i int) int {
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(i + 1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// maxDepth is the deepest nesting of maps and slices the encoder
// writes: deeper, the data holds a cycle (which would recurse without
// end) or was not decoded from JSON, whose decoder stops at 10,000.
const maxDepth = 10000

// enter counts one more level of nesting, and reports false, having
// failed the encoding, past maxDepth.
func (e *encoder) enter() bool {
	if e.depth++; e.depth > maxDepth {
		e.fail(errors.New("json: unsupported value: encountered a cycle, or data nested too deep"))
		return false
	}
	return true
}

func (e *encoder) leave() { e.depth-- }

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
