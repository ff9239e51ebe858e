package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// encodeCases are records whose every field and kind of data value the
// encoder must write as encoding/json does.
func encodeCases() []*Record {
	at := time.Date(2026, 11, 28, 2, 30, 0, 123456789, time.FixedZone("", 5*3600+1800))
	type odd struct{ S string }
	data := map[string]any{
		"s": "hunter2", "esc": "<a href=\"x\">&\\\n\t\r\b\f\x01\x7f", "utf": "é\u2028\u2029\xff\xfe😀",
		"nested": map[string]any{"pw": "deep", "n": nil, "empty": map[string]any{}},
		"list":   []any{"a", 1.5, true, false, nil, []any{}, map[string]any{"k": "v"}},
		"strs":   []string{"x", ""}, "nilstrs": []string(nil), "nillist": []any(nil), "nilmap": map[string]any(nil),
		"f": 1e21, "g": 1e-7, "h": math.Copysign(0, -1), "i": 123456789.0, "j": float32(1e-7), "k": float32(3.25), "l": 1e20,
		"ints": []any{int(-1), int64(math.MinInt64), int32(7), uint(8), uint64(math.MaxUint64), uint32(9)},
		"num":  json.Number("12.5e3"), "struct": odd{"hidden"}, "strmap": map[string]string{"a": "b"},
		"bytes": []byte("raw"), "int8": int8(3), "": "empty key", "Z": 1.0, "a<b": 2.0,
	}
	return []*Record{
		{Time: at, Type: TypeRequest},
		{Type: TypeResponse, Auth: &Auth{}, Request: &Request{}, Response: &Response{}},
		{
			Time: at.UTC(), Type: TypeRequest,
			Auth: &Auth{ClientToken: "kr.tok", Accessor: "acc", DisplayName: "app<1>", Policies: []string{"root", "p\"q"}, TokenType: "service"},
			Request: &Request{ID: "id-1", Operation: "update", MountType: "kv", MountPoint: "secret/", Path: "secret/app",
				Data: data, RemoteAddress: "10.0.0.1"},
		},
		{
			Time: at, Type: TypeResponse, Auth: &Auth{Policies: []string{}},
			Request:  &Request{Operation: "read", Path: "a\u2028b", Data: map[string]any{}},
			Response: &Response{MountType: "kv", Data: data},
			Error:    "permission denied: \"x\" & <y>",
			Chain:    &Chain{Seq: 42, Prev: "sha256:00ff"},
		},
		{Type: "x", Chain: &Chain{}},
	}
}

// TestEncoderMatchesJSON: the encoder writes a record as encoding/json's
// Marshal does, byte for byte, unsalted and salted (against Marshal of
// Salt.Apply's copy); a value Marshal refuses is refused.
func TestEncoderMatchesJSON(t *testing.T) {
	s, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range encodeCases() {
		checkEncoding(t, i, r, s)
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), float32(math.Inf(-1)), map[string]any{"c": make(chan int)},
		json.Number("01"), json.Number("1."), json.Number(".5"), json.Number("1e"), json.Number("+1"), json.Number("1 ")} {
		r := &Record{Type: TypeRequest, Request: &Request{Data: map[string]any{"v": bad}}}
		_, jerr := json.Marshal(r)
		if _, err := appendRecord(nil, r, nil); err == nil || jerr == nil {
			t.Errorf("encoding a record holding %#v = %v, encoding/json's = %v; want both errors", bad, err, jerr)
		}
	}
	cycle := map[string]any{}
	cycle["self"] = []any{cycle}
	for _, salt := range []*Salt{nil, s} {
		if _, err := appendRecord(nil, &Record{Request: &Request{Data: cycle}}, salt); err == nil {
			t.Errorf("encoding data that holds itself (salt %v) succeeded, want an error as encoding/json's", salt != nil)
		}
	}
	if _, err := appendRecord(nil, &Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, s); err == nil {
		t.Error("encoding a record of the year 10000 succeeded, want an error as encoding/json's")
	}
}

func checkEncoding(t *testing.T, i int, r *Record, s *Salt) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, gerr := appendRecord(nil, r, nil)
	if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(got, want) {
		t.Errorf("case %d unsalted:\n got %s (%v)\nwant %s (%v)", i, got, gerr, want, werr)
	}
	want, werr = json.Marshal(s.Apply(r))
	got, gerr = appendRecord([]byte("prefix"), r, s)
	if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Errorf("case %d salted:\n got %s (%v)\nwant prefix%s (%v)", i, got, gerr, want, werr)
	}
}

// FuzzEncoder: for any strings in every field and in the data, the
// encoder's bytes are encoding/json's.
func FuzzEncoder(f *testing.F) {
	f.Add("kr.tok", "secret/app", "hunter2", "key", 1.5, int64(0))
	f.Add("<&>", "\u2028", "\xff\x00\"\\", "\x7f", math.Copysign(0, -1), int64(-1))
	f.Add("", "", "", "", 1e-7, int64(math.MaxInt64))
	f.Add("-0.5E+07", "1.", "01", "1e", 0.0, int64(1))
	s, err := NewSalt(bytes.Repeat([]byte{9}, SaltSize))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b, c, k string, x float64, n int64) {
		checkEncoding(t, 1, &Record{Request: &Request{Data: map[string]any{"n": json.Number(a)}}}, s)
		r := &Record{
			Time: time.Unix(n%(1<<35), n%1e9).UTC(), Type: a,
			Auth:     &Auth{ClientToken: a, Accessor: b, DisplayName: c, Policies: []string{k, a}},
			Request:  &Request{ID: b, Operation: c, Path: k, Data: map[string]any{k: c, a: []any{b, x, n}, b: map[string]any{c: x}}},
			Response: &Response{MountType: a, Data: map[string]any{c: []string{a, k}}},
			Error:    b, Chain: &Chain{Seq: uint64(n), Prev: c},
		}
		checkEncoding(t, 0, r, s)
	})
}

// TestBrokerWritesFileAsWrite: the records a Broker salts and encodes for
// a File are the lines File.Write writes of Salt.Apply's copies, chained
// alike.
func TestBrokerWritesFileAsWrite(t *testing.T) {
	s, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	viaBroker, err := OpenFile(filepath.Join(dir, "broker.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaBroker.Close()
	direct, err := OpenFile(filepath.Join(dir, "direct.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	b := NewBroker(nil)
	if err := b.Enable("file/", viaBroker, s); err != nil {
		t.Fatal(err)
	}
	for _, r := range encodeCases() {
		if err := b.Record(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if err := direct.Write(s.Apply(r)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(viaBroker.Path())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(direct.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the Broker wrote\n%s\nFile.Write wrote\n%s", got, want)
	}
	if res, err := Verify(bytes.NewReader(got)); err != nil || res.Records != len(encodeCases()) {
		t.Errorf("Verify = %+v, %v", res, err)
	}
}

// TestResponseRecordReusesRequestEncoding: the response record of a
// request (the same Request and Auth) carries the auth and request its
// request record carried, encoded once: the bytes are those of a fresh
// encoding, under each device's salt; a copy of the Request, changed, is
// encoded anew, and so is a record with another Auth.
func TestResponseRecordReusesRequestEncoding(t *testing.T) {
	s1, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewSalt(bytes.Repeat([]byte{8}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	auth := &Auth{ClientToken: "kr.tok", Accessor: "acc", DisplayName: "root", Policies: []string{"root"}}
	req := &Request{ID: "id-1", Operation: "update", Path: "secret/app", Data: map[string]any{"password": "hunter2"}}
	request := &Record{Type: TypeRequest, Auth: auth, Request: req}
	response := &Record{Type: TypeResponse, Auth: auth, Request: req, Response: &Response{Data: map[string]any{"version": json.Number("1")}}}
	fresh := func(r *Record, s *Salt) []byte {
		c := *r
		if r.Request != nil {
			q := *r.Request
			q.enc = nil
			c.Request = &q
		}
		want, err := json.Marshal(s.Apply(&c))
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	for _, s := range []*Salt{s1, s2} {
		if got, err := appendRecord(nil, request, s); err != nil || !bytes.Equal(got, fresh(request, s)) {
			t.Fatalf("request record = %s, %v", got, err)
		}
	}
	if req.enc == nil || req.enc.salt != s2 {
		t.Fatalf("the request record's encoding was not kept: %+v", req.enc)
	}
	if got, err := appendRecord(nil, response, s2); err != nil || !bytes.Equal(got, fresh(response, s2)) {
		t.Errorf("response record = %s, %v; want %s", got, err, fresh(response, s2))
	}
	if got, err := appendRecord(nil, response, s1); err != nil || !bytes.Equal(got, fresh(response, s1)) {
		t.Errorf("response record under the other salt = %s, %v; want %s", got, err, fresh(response, s1))
	}
	changed := *req
	changed.Data = map[string]any{"password": "other"}
	other := &Record{Type: TypeResponse, Auth: auth, Request: &changed}
	if got, err := appendRecord(nil, other, s1); err != nil || !bytes.Equal(got, fresh(other, s1)) {
		t.Errorf("record of a changed copy = %s, %v; want %s", got, err, fresh(other, s1))
	}
	otherAuth := &Record{Type: TypeResponse, Auth: &Auth{ClientToken: "kr.other"}, Request: req}
	if got, err := appendRecord(nil, otherAuth, s1); err != nil || !bytes.Equal(got, fresh(otherAuth, s1)) {
		t.Errorf("record with another Auth = %s, %v; want %s", got, err, fresh(otherAuth, s1))
	}
}

// TestChainPrevMatchesChain: the chain a File's writer appends from a
// line's hash held as bytes is appendChain's of the same Chain (the first
// record's empty Prev included).
func TestChainPrevMatchesChain(t *testing.T) {
	for i, prev := range []string{"", lineHash([]byte(`{"type":"request"}`))} {
		seq := uint64(i + 1)
		want := appendChain([]byte(`{"type":"request"`), &Chain{Seq: seq, Prev: prev})
		if got := appendChainPrev([]byte(`{"type":"request"`), seq, []byte(prev)); !bytes.Equal(got, want) {
			t.Errorf("appendChainPrev = %s, want %s", got, want)
		}
	}
}
