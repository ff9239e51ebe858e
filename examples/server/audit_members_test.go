package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/uuid"
)

// TestResponseMembersAsJSON: the middleware's scan of a response finds the
// members "data" and "errors" that encoding/json finds in every JSON object
// (FuzzResponseMembers), and refuses what is not an object.
func TestResponseMembersAsJSON(t *testing.T) {
	for _, body := range responseBodies() {
		checkResponseMembers(t, []byte(body))
	}
}

func responseBodies() []string {
	return []string{
		`{}`, ` { } `, `{"data":{"password":"hunter2"}}`,
		`{"request_id":"0b5c","lease_id":"","renewable":false,"lease_duration":2764800,"data":{"a":1,"b":[1,{"c":"}"}]},"wrap_info":null,"warnings":null,"auth":null}`,
		`{"errors":["permission denied"]}`, `{"errors":[]}`, `{"data":null}`, `{"data":"x\"}"}`,
		`{"x\"data":{"a":"b"},"data":{"a":"c"}}`, `{"data":{"a":1},"data":{"b":2}}`,
		"{\n\t\"data\" : { \"a\" : [ 1 , 2 ] } ,\r\n \"errors\" : [ \"e\" ] }",
		``, `null`, `[]`, `{"data"}`, `{"data":}`, `{"data":{"a":1}`, `{"data":1,}`, `{,}`, `"data"`,
	}
}

var objectStart = regexp.MustCompile(`^\s*\{`)

func checkResponseMembers(t *testing.T, body []byte) {
	t.Helper()
	data, errs, ok := responseMembers(body)
	var want struct {
		Data   json.RawMessage `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &want); err != nil || !objectStart.Match(body) {
		if ok && objectStart.Match(body) && json.Valid(body) {
			t.Errorf("responseMembers(%q) = ok, want false", body)
		}
		return
	}
	if caseVariant(body, `"data"`) || caseVariant(body, `"errors"`) {
		return // encoding/json matches names without case; the server writes them lower case
	}
	if !ok || !bytes.Equal(data, want.Data) || !bytes.Equal(errs, want.Errors) {
		t.Errorf("responseMembers(%q) = %q, %q, %v; want %q, %q", body, data, errs, ok, want.Data, want.Errors)
	}
}

func FuzzResponseMembers(f *testing.F) {
	for _, b := range responseBodies() {
		f.Add([]byte(b))
	}
	f.Fuzz(checkResponseMembers)
}

// caseVariant reports whether body holds name in some other letter case
// than the one given.
func caseVariant(body []byte, name string) bool {
	return bytes.Count(bytes.ToLower(body), []byte(name)) != bytes.Count(body, []byte(name))
}

// TestAuditRequestIDs: the request IDs are version 4 UUIDs, as Vault's,
// and two calls' generators do not repeat each other.
func TestAuditRequestIDs(t *testing.T) {
	a, b := newAuditCall(), newAuditCall()
	seen := map[string]bool{}
	for range 100 {
		for _, c := range []*auditCall{a, b} {
			id := c.newID()
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
				t.Fatalf("request ID %q: %v, version %v, variant %v", id, err, u.Version(), u.Variant())
			}
			if seen[id] {
				t.Fatalf("request ID %q given twice", id)
			}
			seen[id] = true
		}
	}
}
