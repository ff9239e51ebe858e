package audit

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/jsonobj"
)

// The types of record: a request record is written before an operation
// acts, a response record after it.
const (
	TypeRequest  = "request"
	TypeResponse = "response"
)

// Record is one entry of an audit log, in the shape of Vault's audit
// records. Before a device writes it, Salt.Apply replaces its secret
// strings by their HMACs; the device sets Chain.
type Record struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	Auth     *Auth     `json:"auth,omitempty"`
	Request  *Request  `json:"request,omitempty"`
	Response *Response `json:"response,omitempty"`
	Error    string    `json:"error,omitempty"`
	Chain    *Chain    `json:"chain,omitempty"`
}

// Auth is who made the request. ClientToken and Accessor are secret; the
// rest is written as it is.
type Auth struct {
	ClientToken string   `json:"client_token,omitempty"`
	Accessor    string   `json:"accessor,omitempty"`
	DisplayName string   `json:"display_name,omitempty"`
	Policies    []string `json:"policies,omitempty"`
	TokenType   string   `json:"token_type,omitempty"`
}

// Request is what was asked. Every string in Data, at any depth, is
// secret; the rest is written as it is.
//
// A Broker keeps in a Request the salted encoding of it and of the Auth
// recorded with it, made for its request record, and writes it again in
// the response record that has the same Request and Auth (the same
// pointers): once recorded, a Request and its Auth must not change, and a
// Request is recorded by one Record at a time.
type Request struct {
	ID         string         `json:"id,omitempty"`
	Operation  string         `json:"operation"`
	MountType  string         `json:"mount_type,omitempty"`
	MountPoint string         `json:"mount_point,omitempty"`
	Path       string         `json:"path"`
	Data       map[string]any `json:"data,omitempty"`
	// RawData, used when Data is nil, is the data as a JSON object (a
	// body as the client sent it): recorded as Data holding its decoding
	// would be (numbers as written), without the caller decoding it.
	// Anything but an object is no data. It is read during Record only.
	RawData       []byte `json:"-"`
	RemoteAddress string `json:"remote_address,omitempty"`

	enc *encoding // of the request record, for the response record
}

// encoding is the salted encoding of the members "auth" and "request" of
// a record of the Request of, with the Auth auth.
type encoding struct {
	of   *Request
	salt *Salt
	auth *Auth
	b    []byte
}

// Response is what was answered. Every string in Data, at any depth, is
// secret.
type Response struct {
	MountType string         `json:"mount_type,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
	// RawData is the data as a JSON object, used when Data is nil, as
	// Request.RawData.
	RawData []byte `json:"-"`
}

// Chain links a record to the one written before it to the same log:
// Seq counts the device's records from 1, across files, and Prev is the
// hash of the previous record's line (see Verify); empty for the first.
type Chain struct {
	Seq  uint64 `json:"seq"`
	Prev string `json:"prev"`
}

// Salt hashes the secret strings of records with HMAC-SHA256 under a
// device's salt, written as Vault writes them: "hmac-sha256:" and the hex
// digest. The same value under the same salt always gives the same hash,
// so that an operator who knows a value can find it (Hash) without the log
// holding it. A Salt is safe for concurrent use.
type Salt struct {
	key  []byte
	macs sync.Pool // of *mac under key
}

// SaltSize is the size of the salts GenerateSalt returns.
const SaltSize = 32

// NewSalt returns the Salt of key, which must hold at least 16 bytes.
func NewSalt(key []byte) (*Salt, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("audit: a salt must hold at least 16 bytes, got %d: %w", len(key), keel.KindInvalid)
	}
	s := &Salt{key: append([]byte(nil), key...)}
	s.macs.New = func() any { return &mac{h: hmac.New(sha256.New, s.key)} }
	return s, nil
}

// GenerateSalt returns SaltSize random bytes, for NewSalt.
func GenerateSalt() []byte {
	b := make([]byte, SaltSize)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	return b
}

// Hash returns the HMAC of v under the salt, as records carry it.
func (s *Salt) Hash(v string) string {
	m := s.macs.Get().(*mac)
	b := m.appendHash(make([]byte, 0, len(hashPrefix)+2*sha256.Size), v)
	s.macs.Put(m)
	return string(b)
}

const hashPrefix = "hmac-sha256:"

// mac is an HMAC-SHA256 under a salt, with the room to hash a string
// without allocating.
type mac struct {
	h   hash.Hash
	in  []byte // the string hashed, copied
	sum [sha256.Size]byte
}

// dataOf is data, or when it is nil the decoding of raw (nil when raw is
// not a JSON object).
func dataOf(data map[string]any, raw []byte) map[string]any {
	if data != nil || len(raw) == 0 {
		return data
	}
	m, err := jsonobj.Decode(raw)
	if err != nil {
		return nil
	}
	return m
}

// appendHashBytes is appendHash of a string held as bytes.
func (m *mac) appendHashBytes(b, v []byte) []byte {
	m.h.Reset()
	m.h.Write(v)
	b = append(b, hashPrefix...)
	return hex.AppendEncode(b, m.h.Sum(m.sum[:0]))
}

// appendHash appends v's hash as records carry it.
func (m *mac) appendHash(b []byte, v string) []byte {
	m.h.Reset()
	m.in = append(m.in[:0], v...)
	m.h.Write(m.in)
	if cap(m.in) > 4<<10 {
		m.in = nil // a long value's room is not kept
	}
	b = append(b, hashPrefix...)
	return hex.AppendEncode(b, m.h.Sum(m.sum[:0]))
}

// Apply returns a copy of r whose secret strings are replaced by their
// hashes: the client token and accessor of Auth, and every string of the
// request's and the response's Data at any depth (in maps and slices).
// Numbers, booleans, nulls and the fields outside Data stay as they are; a
// value of any other type is hashed as its fmt.Sprint text. r is not
// changed.
func (s *Salt) Apply(r *Record) *Record {
	c := *r
	if r.Auth != nil {
		a := *r.Auth
		a.ClientToken = s.hashSet(a.ClientToken)
		a.Accessor = s.hashSet(a.Accessor)
		c.Auth = &a
	}
	if r.Request != nil {
		q := *r.Request
		q.Data, q.RawData = s.hashMap(dataOf(q.Data, q.RawData)), nil
		c.Request = &q
	}
	if r.Response != nil {
		p := *r.Response
		p.Data, p.RawData = s.hashMap(dataOf(p.Data, p.RawData)), nil
		c.Response = &p
	}
	return &c
}

// hashSet hashes v unless it is empty, which stays empty.
func (s *Salt) hashSet(v string) string {
	if v == "" {
		return ""
	}
	return s.Hash(v)
}

func (s *Salt) hashMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = s.hashValue(v)
	}
	return out
}

func (s *Salt) hashValue(v any) any {
	switch v := v.(type) {
	case string:
		return s.Hash(v)
	case map[string]any:
		return s.hashMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = s.hashValue(e)
		}
		return out
	case []string:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = s.Hash(e)
		}
		return out
	case nil, bool, float64, float32, int, int64, int32, uint, uint64, uint32, json.Number:
		return v
	default:
		// A value of another type may hold a secret the salt cannot
		// see into: its text is hashed, so that nothing leaks.
		return s.Hash(fmt.Sprint(v))
	}
}
