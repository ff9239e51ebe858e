package vault

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage/memstore"
)

// fieldsOf decodes body as a request body is decoded.
func fieldsOf(t *testing.T, body string) *fields {
	t.Helper()
	f := &fields{}
	r := httptest.NewRequest("PUT", "/", strings.NewReader(body))
	if err := decodeBody(httptest.NewRecorder(), r, &f.m); err != nil {
		t.Fatalf("decodeBody(%s): %v", body, err)
	}
	return f
}

// TestFieldsCoercions: the coercions of Vault's field types that its
// clients rely on: the CLI's one-pair metadata=team=a sends "team=a", and
// a number where a list of strings is expected is its text.
func TestFieldsCoercions(t *testing.T) {
	for name, tc := range map[string]struct {
		body  string
		pairs map[string]string
		list  []string
		bad   bool
	}{
		"one pair as a string":   {body: `{"v":"team=a"}`, pairs: map[string]string{"team": "a"}},
		"value holding =":        {body: `{"v":"k=a=b"}`, pairs: map[string]string{"k": "a=b"}},
		"pairs as a list":        {body: `{"v":["a=1","b="]}`, pairs: map[string]string{"a": "1", "b": ""}},
		"pairs as an object":     {body: `{"v":{"a":"1","n":5}}`, pairs: map[string]string{"a": "1", "n": "5"}},
		"pair without =":         {body: `{"v":"team"}`, bad: true},
		"pair with an empty key": {body: `{"v":["=a"]}`, bad: true},
		"pair of a number":       {body: `{"v":[5]}`, bad: true},
		"pairs as a number":      {body: `{"v":5}`, bad: true},
		"object of a list":       {body: `{"v":{"a":["x"]}}`, bad: true},
	} {
		t.Run("pairs/"+name, func(t *testing.T) {
			f := fieldsOf(t, tc.body)
			got := f.pairs("v")
			if err := f.v.Err(); (err != nil) != tc.bad || !tc.bad && !maps.Equal(got, tc.pairs) {
				t.Fatalf("pairs(%s) = %v, %v; want %v (refused: %v)", tc.body, got, err, tc.pairs, tc.bad)
			}
			if tc.bad && keel.FieldErrors(f.v.Err())[0].Field != "v" {
				t.Fatalf("problem %v does not name v", f.v.Err())
			}
		})
	}
	for name, tc := range map[string]struct {
		body string
		list []string
		bad  bool
	}{
		"a number":              {body: `{"v":5}`, list: []string{"5"}},
		"numbers in a list":     {body: `{"v":[5,"a", 1.5]}`, list: []string{"5", "a", "1.5"}},
		"comma-separated":       {body: `{"v":"a, b,,c"}`, list: []string{"a", "b", "c"}},
		"empty string":          {body: `{"v":""}`, list: []string{}},
		"elements trimmed":      {body: `{"v":[" a "]}`, list: []string{"a"}},
		"a boolean":             {body: `{"v":true}`, bad: true},
		"a boolean in a list":   {body: `{"v":["a",true]}`, bad: true},
		"an object":             {body: `{"v":{}}`, bad: true},
		"an object in a list":   {body: `{"v":[{}]}`, bad: true},
		"absent is nil":         {body: `{}`},
		"null is nil":           {body: `{"v":null}`},
		"empty list is empty":   {body: `{"v":[]}`, list: []string{}},
		"big number as text":    {body: `{"v":18446744074709551616}`, list: []string{"18446744074709551616"}},
		"exponent kept as text": {body: `{"v":1e3}`, list: []string{"1e3"}},
	} {
		t.Run("strList/"+name, func(t *testing.T) {
			f := fieldsOf(t, tc.body)
			got := f.strList("v")
			if err := f.v.Err(); (err != nil) != tc.bad || !tc.bad && (!slices.Equal(got, tc.list) || (got == nil) != (tc.list == nil)) {
				t.Fatalf("strList(%s) = %#v, %v; want %#v (refused: %v)", tc.body, got, err, tc.list, tc.bad)
			}
		})
	}
}

// TestFieldsNumbers: integers and durations refuse what does not fit, and
// what is negative, naming the field.
func TestFieldsNumbers(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		bad  string
	}{
		{`{"v":64}`, 64, ""},
		{`{"v":"64"}`, 64, ""},
		{`{"v":""}`, 0, ""},
		{`{"v":9223372036854775807}`, 9223372036854775807, ""},
		{`{"v":9223372036854775808}`, 0, "must be at most"},
		{`{"v":99999999999999999999}`, 0, "must be at most"},
		{`{"v":-1}`, 0, "must not be negative"},
		{`{"v":"-99999999999999999999"}`, 0, "must not be negative"},
		{`{"v":1.5}`, 0, "must be an integer"},
		{`{"v":1e3}`, 0, "must be an integer"},
		{`{"v":true}`, 0, "must be an integer"},
	} {
		f := fieldsOf(t, tc.body)
		got := f.integer("v")
		fe := keel.FieldErrors(f.v.Err())
		switch {
		case tc.bad == "" && (got != tc.want || len(fe) > 0):
			t.Errorf("integer(%s) = %d, %v; want %d", tc.body, got, f.v.Err(), tc.want)
		case tc.bad != "" && (len(fe) != 1 || fe[0].Field != "v" || !strings.Contains(fe[0].Rule, tc.bad) || got != 0):
			t.Errorf("integer(%s) = %d, %v; want 0 and v: %s", tc.body, got, f.v.Err(), tc.bad)
		}
	}
	for _, body := range []string{`{"v":18446744074}`, `{"v":"18446744074"}`, `{"v":-1}`, `{"v":"-1s"}`,
		`{"v":"9999999999h"}`, `{"v":1e300}`, `{"v":"1e300"}`, `{"v":0.5}`, `{"v":[1]}`} {
		f := fieldsOf(t, body)
		d := f.duration("v")
		if fe := keel.FieldErrors(f.v.Err()); len(fe) != 1 || fe[0].Field != "v" || d != 0 {
			t.Errorf("duration(%s) = %v, %v; want 0 and a problem of v", body, d, f.v.Err())
		}
	}
}

// TestDecodeBodyTrailing: a body is one JSON value; anything after it but
// white space is refused.
func TestDecodeBodyTrailing(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"a":"b"}`:            true,
		"{\"a\":\"b\"}\n \t\r": true,
		`null`:                 true,
		`{"a":"b"}{"c":"d"}`:   false,
		`{"a":"b"} {"c":"d"}`:  false,
		`{"a":"b"}]`:           false,
		`{"a":"b"}x`:           false,
		`{"a":"b"}null`:        false,
		`{"a":"b"}"s"`:         false,
		`{"a":`:                false,
	} {
		var m map[string]any
		r := httptest.NewRequest("PUT", "/", strings.NewReader(body))
		err := decodeBody(httptest.NewRecorder(), r, &m)
		if (err == nil) != ok || err != nil && keel.KindOf(err) != keel.KindInvalid {
			t.Errorf("decodeBody(%q): %v, want accepted %v", body, err, ok)
		}
	}
}

// TestCheckList: a GET whose list is not a boolean is Vault's 400
// {"errors":[]}, not a read; list=true lists, list=false and an empty
// list read.
func TestCheckList(t *testing.T) {
	ctx := context.Background()
	table, err := mount.Open(ctx, memstore.New(nil), &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	if err := mustRoute(t, table, "secret/app").KV.Write(ctx, "app", map[string]any{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	New(table, nil).Register(mux)
	h := mux.ServeHTTP // Register wraps every route: nothing more here
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{"/v1/secret/?list=garbage", 400, `{"errors":[]}`},
		{"/v1/secret/app?list=garbage", 400, `{"errors":[]}`},
		{"/v1/secret/app?list=2", 400, `{"errors":[]}`},
		{"/v1/sys/policies/password?list=maybe", 400, `{"errors":[]}`},
		{"/v1/sys/leases/lookup?list=maybe", 400, `{"errors":[]}`},
		{"/v1/sys/mounts?list=maybe", 400, `{"errors":[]}`},
		{"/v1/secret/?list=true", 200, `"keys":["app"]`},
		{"/v1/secret/?list=1", 200, `"keys":["app"]`},
		{"/v1/secret/app?list=false", 200, `"a":"b"`},
		{"/v1/secret/app?list=", 200, `"a":"b"`},
		{"/v1/secret/app", 200, `"a":"b"`},
	} {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", tc.target, nil))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("GET %s: %d %s, want %d with %s", tc.target, rec.Code, rec.Body, tc.status, tc.body)
		}
	}
	// LIST is a listing whatever its query.
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("LIST", "/v1/secret/?list=garbage", nil))
	var resp struct {
		Data struct{ Keys []string } `json:"data"`
	}
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &resp) != nil || !slices.Equal(resp.Data.Keys, []string{"app"}) {
		t.Errorf("LIST with list=garbage: %d %s", rec.Code, rec.Body)
	}
}

func mustRoute(t *testing.T, table *mount.Table, path string) *mount.Mount {
	t.Helper()
	m, _, ok := table.Route(path)
	if !ok || m.KV == nil {
		t.Fatalf("no kv mount serves %s", path)
	}
	return m
}
