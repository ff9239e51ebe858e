package kv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestNew(t *testing.T) {
	mem := newMem(t, storage.Limits{})
	tests := map[string]struct {
		store     storage.Store
		mount     string
		opts      *kv.Options
		wantField string // "" for success
	}{
		"plain mount":          {store: mem, mount: "secret"},
		"nested mount":         {store: mem, mount: "team/secret"},
		"nil options":          {store: mem, mount: "kv", opts: nil},
		"default ttl set":      {store: mem, mount: "kv", opts: &kv.Options{DefaultTTL: time.Hour}},
		"nil store":            {mount: "secret", wantField: "Store"},
		"empty mount":          {store: mem, mount: "", wantField: "Mount"},
		"leading slash":        {store: mem, mount: "/secret", wantField: "Mount"},
		"trailing slash":       {store: mem, mount: "secret/", wantField: "Mount"},
		"empty segment":        {store: mem, mount: "team//secret", wantField: "Mount"},
		"dot-dot segment":      {store: mem, mount: "team/../secret", wantField: "Mount"},
		"dot segment":          {store: mem, mount: "./secret", wantField: "Mount"},
		"invalid UTF-8":        {store: mem, mount: "se\xffcret", wantField: "Mount"},
		"negative default ttl": {store: mem, mount: "secret", opts: &kv.Options{DefaultTTL: -time.Second}, wantField: "Opts.DefaultTTL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, err := kv.New(tc.store, tc.mount, tc.opts)
			if tc.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				if e.Mount() != tc.mount {
					t.Fatalf("Mount() = %q, want %q", e.Mount(), tc.mount)
				}
				return
			}
			wantKind(t, err, keel.KindInvalid)
			fields := keel.FieldErrors(err)
			if len(fields) != 1 || fields[0].Field != tc.wantField {
				t.Fatalf("field errors %v, want one for %q", fields, tc.wantField)
			}
		})
	}
}

// TestPairsRoundTrip: every JSON value is kept as written, numbers exactly.
func TestPairsRoundTrip(t *testing.T) {
	tests := map[string]struct {
		write map[string]any
		want  map[string]any
	}{
		"strings": {
			write: map[string]any{"username": "ada", "password": "p@ss<word>&", "": "empty key"},
			want:  map[string]any{"username": "ada", "password": "p@ss<word>&", "": "empty key"},
		},
		"numbers exactly": {
			write: map[string]any{
				"big":      json.Number("12345678901234567890"),
				"precise":  json.Number("0.10000000000000000000001"),
				"huge":     json.Number("1e400"),
				"int":      42,
				"float":    3.5,
				"negative": -7,
			},
			want: map[string]any{
				"big":      json.Number("12345678901234567890"),
				"precise":  json.Number("0.10000000000000000000001"),
				"huge":     json.Number("1e400"),
				"int":      json.Number("42"),
				"float":    json.Number("3.5"),
				"negative": json.Number("-7"),
			},
		},
		"bools and null": {
			write: map[string]any{"on": true, "off": false, "none": nil},
			want:  map[string]any{"on": true, "off": false, "none": nil},
		},
		"objects and arrays": {
			write: map[string]any{
				"db":    map[string]any{"host": "h", "port": 5432, "tags": []any{"a", 1, false}},
				"users": []string{"ada", "alan"},
			},
			want: map[string]any{
				"db":    map[string]any{"host": "h", "port": json.Number("5432"), "tags": []any{"a", json.Number("1"), false}},
				"users": []any{"ada", "alan"},
			},
		},
	}
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				e := newEngine(t, open(t), nil)
				mustWrite(t, ctx, e, "app/config", tc.write)
				got, err := e.Read(ctx, "app/config")
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Data, tc.want) {
					t.Fatalf("Data = %#v\nwant   %#v", got.Data, tc.want)
				}
				if got.LeaseID != "" || got.Renewable {
					t.Fatalf("unleased mount gave lease %q renewable %v", got.LeaseID, got.Renewable)
				}
			})
		}
	})
}

// TestStoredAtPath: the path "a/b" is the key "a/b" of the engine's store,
// and the stored value is the JSON encoding of the data.
func TestStoredAtPath(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		e := newEngine(t, store, nil)
		mustWrite(t, context.Background(), e, "a/b", map[string]any{"k": "v", "n": 1})
		want := map[string]string{"a/b": `{"k":"v","n":1}`}
		if got := storagetest.Dump(t, store); !reflect.DeepEqual(got, want) {
			t.Fatalf("store holds %q, want %q", got, want)
		}
	})
}

// TestWriteReplaces: a write replaces every pair at the path; no merge.
func TestWriteReplaces(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEngine(t, open(t), nil)
		mustWrite(t, ctx, e, "app", map[string]any{"a": "1", "b": "2"})
		mustWrite(t, ctx, e, "app", map[string]any{"c": "3"})
		got, err := e.Read(ctx, "app")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"c": "3"}; !reflect.DeepEqual(got.Data, want) {
			t.Fatalf("Data = %v, want %v", got.Data, want)
		}
	})
}

func TestLeaseDuration(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		tests := map[string]struct {
			data       map[string]any
			defaultTTL time.Duration
			want       time.Duration
		}{
			"no ttl: 768h":              {data: map[string]any{"k": "v"}, want: 768 * time.Hour},
			"no ttl: mount default":     {data: map[string]any{"k": "v"}, defaultTTL: time.Hour, want: time.Hour},
			"seconds as number":         {data: map[string]any{"ttl": 3600}, want: time.Hour},
			"seconds as json.Number":    {data: map[string]any{"ttl": json.Number("90")}, want: 90 * time.Second},
			"seconds as string":         {data: map[string]any{"ttl": "3600"}, want: time.Hour},
			"hours":                     {data: map[string]any{"ttl": "1h"}, want: time.Hour},
			"minutes":                   {data: map[string]any{"ttl": "90m"}, want: 90 * time.Minute},
			"seconds with unit":         {data: map[string]any{"ttl": "30s"}, want: 30 * time.Second},
			"days":                      {data: map[string]any{"ttl": "7d"}, want: 7 * 24 * time.Hour},
			"compound":                  {data: map[string]any{"ttl": "1h30m"}, want: 90 * time.Minute},
			"fractional hours":          {data: map[string]any{"ttl": "1.5h"}, want: 90 * time.Minute},
			"zero":                      {data: map[string]any{"ttl": 0}, want: 0},
			"empty string is zero":      {data: map[string]any{"ttl": ""}, want: 0},
			"null is zero":              {data: map[string]any{"ttl": nil}, want: 0},
			"lease key when no ttl":     {data: map[string]any{"lease": "2h"}, want: 2 * time.Hour},
			"ttl wins over lease":       {data: map[string]any{"ttl": "1h", "lease": "2h"}, want: time.Hour},
			"unparsable lease: default": {data: map[string]any{"lease": "apartment 4"}, want: 768 * time.Hour},
			"negative lease: default":   {data: map[string]any{"lease": "-5"}, want: 768 * time.Hour},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				e := newEngine(t, open(t), &kv.Options{DefaultTTL: tc.defaultTTL})
				mustWrite(t, ctx, e, "p", tc.data)
				got, err := e.Read(ctx, "p")
				if err != nil {
					t.Fatal(err)
				}
				if got.LeaseDuration != tc.want {
					t.Fatalf("LeaseDuration = %v, want %v", got.LeaseDuration, tc.want)
				}
			})
		}
	})
}

// TestLeaseDurationOfStoredGarbage: a ttl that could not have been written
// through the engine (stored directly) reads as the default, as in Vault.
func TestLeaseDurationOfStoredGarbage(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		e := newEngine(t, store, nil)
		put(t, store, "p", `{"ttl":"soon"}`)
		got, err := e.Read(context.Background(), "p")
		if err != nil {
			t.Fatal(err)
		}
		if got.LeaseDuration != 768*time.Hour {
			t.Fatalf("LeaseDuration = %v, want %v", got.LeaseDuration, 768*time.Hour)
		}
	})
}

// TestReadCorrupt: a stored value that is not a JSON object, written past
// the engine, reads as an internal error.
func TestReadCorrupt(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		tests := map[string]string{
			"not JSON":      "password=x",
			"null":          "null",
			"array":         `["a"]`,
			"string":        `"a"`,
			"trailing data": `{"a":"b"} {"c":"d"}`,
			"truncated":     `{"a":`,
		}
		for name, value := range tests {
			t.Run(name, func(t *testing.T) {
				store := open(t)
				e := newEngine(t, store, nil)
				put(t, store, "p", value)
				_, err := e.Read(context.Background(), "p")
				wantKind(t, err, keel.KindInternal)
			})
		}
	})
}

// TestBadTTL: a ttl that is not a duration, or is negative, is stored as
// data, as Vault stores it; a read reports the mount's default lease
// duration.
func TestBadTTL(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		tests := map[string]any{
			"word":                "soon",
			"negative seconds":    "-1",
			"negative number":     -1,
			"negative duration":   "-5m",
			"fraction no unit":    json.Number("1.5"),
			"float no unit":       2.5,
			"exponent":            json.Number("1e3"),
			"fractional days":     "1.5d",
			"days and hours":      "1d2h",
			"bool":                true,
			"object":              map[string]any{"h": 1},
			"array":               []any{1},
			"seconds overflow":    "9223372036854775807",
			"days overflow":       "106752d",
			"duration overflow":   "9999999999h",
			"int64 out of range":  json.Number("99999999999999999999"),
			"unit only":           "h",
			"space inside number": "1 h",
		}
		// As Vault: a ttl that is not a duration is data like any other; a
		// read reports the mount default.
		for name, ttl := range tests {
			t.Run(name, func(t *testing.T) {
				store := open(t)
				e := newEngine(t, store, nil)
				ctx := context.Background()
				mustWrite(t, ctx, e, "existing", map[string]any{"k": "v"})
				for _, path := range []string{"new", "existing"} {
					if err := e.Write(ctx, path, map[string]any{"k": "v2", "ttl": ttl}); err != nil {
						t.Fatalf("write with ttl %v: %v", ttl, err)
					}
					s, err := e.Read(ctx, path)
					if err != nil || s.LeaseDuration != 768*time.Hour || s.Data["k"] != "v2" || s.Data["ttl"] == nil {
						t.Fatalf("read after a ttl of %v: %+v, %v", ttl, s, err)
					}
				}
			})
		}
	})
}

// TestBadInput: malformed requests are Invalid (or TooLarge) and write
// nothing.
func TestBadInput(t *testing.T) {
	big := strings.Repeat("x", 200)
	tests := map[string]struct {
		path      string
		data      map[string]any
		wantKind  keel.Kind
		wantField string
		wantRule  string
	}{
		"nil data":           {path: "p", data: nil, wantKind: keel.KindInvalid, wantField: "Data", wantRule: "missing data fields"},
		"empty data":         {path: "p", data: map[string]any{}, wantKind: keel.KindInvalid, wantField: "Data", wantRule: "missing data fields"},
		"empty path":         {path: "", wantKind: keel.KindInvalid, wantField: "Path"},
		"trailing slash":     {path: "app/", wantKind: keel.KindInvalid, wantField: "Path"},
		"leading slash":      {path: "/app", wantKind: keel.KindInvalid, wantField: "Path"},
		"double slash":       {path: "app//db", wantKind: keel.KindInvalid, wantField: "Path"},
		"dot segment":        {path: "app/./db", wantKind: keel.KindInvalid, wantField: "Path"},
		"dot alone":          {path: ".", wantKind: keel.KindInvalid, wantField: "Path"},
		"last dot":           {path: "app/.", wantKind: keel.KindInvalid, wantField: "Path"},
		"dot-dot segment":    {path: "app/../db", wantKind: keel.KindInvalid, wantField: "Path"},
		"dot-dot alone":      {path: "..", wantKind: keel.KindInvalid, wantField: "Path"},
		"dot-dot in segment": {path: "a..b", wantKind: keel.KindInvalid, wantField: "Path"},
		"invalid UTF-8 path": {path: "app/\xc3\x28", wantKind: keel.KindInvalid, wantField: "Path"},
		"control character":  {path: "app/d\nb", wantKind: keel.KindInvalid, wantField: "Path"},
		"invalid UTF-8 key":  {path: "p", data: map[string]any{"\xff": "v"}, wantKind: keel.KindInvalid, wantField: "Data"},
		"func value":         {path: "p", data: map[string]any{"ok": "v", "f": func() {}}, wantKind: keel.KindInvalid, wantField: `Data["f"]`},
		"NaN value":          {path: "p", data: map[string]any{"n": math.NaN()}, wantKind: keel.KindInvalid, wantField: `Data["n"]`},
		"bad json.Number":    {path: "p", data: map[string]any{"n": json.Number("12abc")}, wantKind: keel.KindInvalid, wantField: `Data["n"]`},
		"value too large":    {path: "p", data: map[string]any{"k": big}, wantKind: keel.KindTooLarge},
		"path too large":     {path: strings.Repeat("p", 100), wantKind: keel.KindTooLarge},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := newMem(t, storage.Limits{MaxKeySize: 64, MaxValueSize: 128})
			e := newEngine(t, store, nil)
			mustWrite(t, context.Background(), e, "other", map[string]any{"k": "v"})
			before := storagetest.Dump(t, store)
			data := tc.data
			if data == nil && tc.wantRule == "" {
				data = map[string]any{"k": "v"}
			}
			err := e.Write(context.Background(), tc.path, data)
			wantKind(t, err, tc.wantKind)
			if tc.wantKind == keel.KindInvalid {
				fields := keel.FieldErrors(err)
				if len(fields) != 1 || fields[0].Field != tc.wantField {
					t.Fatalf("field errors %v, want one for %q", fields, tc.wantField)
				}
				if tc.wantRule != "" && fields[0].Rule != tc.wantRule {
					t.Fatalf("rule %q, want %q", fields[0].Rule, tc.wantRule)
				}
			}
			wantUnchanged(t, store, before)
			if tc.wantField != "Path" {
				return
			}
			// The other operations refuse the path alike; a read of a
			// folder ("" or "app/") finds no value.
			_, err = e.Read(context.Background(), tc.path)
			if tc.path == "" || tc.path == "app/" {
				wantKind(t, err, keel.KindNotFound)
			} else {
				wantKind(t, err, keel.KindInvalid)
			}
			wantKind(t, e.Delete(context.Background(), tc.path), keel.KindInvalid)
			if tc.path != "" && tc.path != "app/" { // List takes those
				_, err = listAll(e, context.Background(), tc.path)
				wantKind(t, err, keel.KindInvalid)
			}
			wantUnchanged(t, store, before)
		})
	}
}

func TestReadMissing(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEngine(t, open(t), nil)
		mustWrite(t, ctx, e, "app/db", map[string]any{"k": "v"})
		for _, path := range []string{"nothing", "app", "app/db/deeper"} {
			t.Run(path, func(t *testing.T) {
				_, err := e.Read(ctx, path)
				wantKind(t, err, keel.KindNotFound)
			})
		}
	})
}

func TestDelete(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		tests := map[string]struct {
			path string
			want []string // keys left
		}{
			"a secret":                     {path: "app/db", want: []string{"app", "app/web"}},
			"a secret that is also folder": {path: "app", want: []string{"app/db", "app/web"}},
			"missing: no error":            {path: "nothing", want: []string{"app", "app/db", "app/web"}},
			"a folder holding no value":    {path: "app/db/x", want: []string{"app", "app/db", "app/web"}},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				store := open(t)
				e := newEngine(t, store, nil)
				for _, p := range []string{"app", "app/db", "app/web"} {
					mustWrite(t, ctx, e, p, map[string]any{"k": p})
				}
				for range 2 { // idempotent
					if err := e.Delete(ctx, tc.path); err != nil {
						t.Fatal(err)
					}
				}
				got := slices.Sorted(maps.Keys(storagetest.Dump(t, store)))
				if !slices.Equal(got, tc.want) {
					t.Fatalf("keys left %q, want %q", got, tc.want)
				}
			})
		}
	})
}

func TestList(t *testing.T) {
	keys := []string{"a", "a-x", "a/b", "a/c/d", "a/c/e", "b/x/y", "c", "d.e"}
	tests := map[string]struct {
		path string
		want []string // nil: NotFound
	}{
		"top":                      {path: "", want: []string{"a", "a-x", "a/", "b/", "c", "d.e"}},
		"top as slash":             {path: "/", want: []string{"a", "a-x", "a/", "b/", "c", "d.e"}},
		"folder":                   {path: "a", want: []string{"b", "c/"}},
		"folder with slash":        {path: "a/", want: []string{"b", "c/"}},
		"nested folder":            {path: "a/c", want: []string{"d", "e"}},
		"folder of folders only":   {path: "b", want: []string{"x/"}},
		"leaf: not found":          {path: "c", want: nil},
		"leaf with slash":          {path: "c/", want: nil},
		"nested leaf":              {path: "a/b", want: nil},
		"missing folder":           {path: "zzz", want: nil},
		"prefix of a name only":    {path: "a-", want: nil},
		"name sharing a prefix":    {path: "d", want: nil},
		"folder of the last child": {path: "a/c/", want: []string{"d", "e"}},
	}
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		e := newEngine(t, store, nil)
		for _, k := range keys {
			mustWrite(t, context.Background(), e, k, map[string]any{"k": k})
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				got, err := listAll(e, context.Background(), tc.path)
				if tc.want == nil {
					wantKind(t, err, keel.KindNotFound)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("List(%q) = %q, want %q", tc.path, got, tc.want)
				}
				if !slices.IsSorted(got) {
					t.Fatalf("List(%q) = %q is not sorted", tc.path, got)
				}
			})
		}
	})
}

func TestListEmptyMount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEngine(t, open(t), nil)
		_, err := listAll(e, context.Background(), "")
		wantKind(t, err, keel.KindNotFound)
	})
}

// TestListSeeksPastFolders: listing 20 folders of 1,000 secrets each visits
// about 20 keys, not 20,000.
func TestListSeeksPastFolders(t *testing.T) {
	mem := newMem(t, storage.Limits{})
	err := mem.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for f := range 20 {
			for k := range 1000 {
				if err := tx.Put(fmt.Sprintf("f%02d/k%04d", f, k), []byte(`{"k":"v"}`)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: mem}
	e := newEngine(t, store, nil)
	tests := map[string]struct {
		path       string
		wantNames  int
		maxVisited int64
	}{
		"top: 20 folders":        {path: "", wantNames: 20, maxVisited: 20},
		"one folder: 1,000 keys": {path: "f07", wantNames: 1000, maxVisited: 1000},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store.visited.Store(0)
			names, err := listAll(e, context.Background(), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tc.wantNames {
				t.Fatalf("%d names, want %d", len(names), tc.wantNames)
			}
			if v := store.visited.Load(); v > tc.maxVisited {
				t.Fatalf("visited %d keys, want at most %d", v, tc.maxVisited)
			}
		})
	}
}

// TestRights: each operation asks for its capability on mount/path.
func TestRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := &fakeAuthz{grants: map[string][]keel.Capability{
			"reader":  {keel.CapRead},
			"lister":  {keel.CapList},
			"deleter": {keel.CapDelete},
			"writer":  {keel.CapCreate, keel.CapUpdate},
		}}
		store := open(t)
		e, err := kv.New(store, "team/secret", &kv.Options{Authorizer: authz})
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, as("writer"), e, "app/db", map[string]any{"k": "v"})
		authz.questions()

		type op func(ctx context.Context) error
		read := func(p string) op {
			return func(ctx context.Context) error { _, err := e.Read(ctx, p); return err }
		}
		list := func(p string) op {
			return func(ctx context.Context) error { _, err := listAll(e, ctx, p); return err }
		}
		del := func(p string) op {
			return func(ctx context.Context) error { return e.Delete(ctx, p) }
		}
		tests := map[string]struct {
			op      op
			allowed string // the principal granted the right
			asked   string // "cap resource"
		}{
			"read":               {op: read("app/db"), allowed: "reader", asked: "read team/secret/app/db"},
			"list top":           {op: list(""), allowed: "lister", asked: "list team/secret/"},
			"list folder":        {op: list("app"), allowed: "lister", asked: "list team/secret/app/"},
			"list folder slash":  {op: list("app/"), allowed: "lister", asked: "list team/secret/app/"},
			"delete (missing)":   {op: del("app/none"), allowed: "deleter", asked: "delete team/secret/app/none"},
			"read (missing)":     {op: read("app/none"), allowed: "reader", asked: "read team/secret/app/none"},
			"list (empty)":       {op: list("none"), allowed: "lister", asked: "list team/secret/none/"},
			"write over a value": {op: func(ctx context.Context) error { return e.Write(ctx, "app/db", map[string]any{"k": "v"}) }, allowed: "writer", asked: "update team/secret/app/db"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				for _, who := range []string{"reader", "lister", "deleter", "writer"} {
					before := storagetest.Dump(t, store)
					err := tc.op(as(who))
					q := authz.questions()
					if want := []string{who + " " + tc.asked}; !slices.Equal(q, want) {
						t.Fatalf("%s: asked %q, want %q", who, q, want)
					}
					if who == tc.allowed {
						if keel.KindOf(err) == keel.KindForbidden {
							t.Fatalf("%s: refused: %v", who, err)
						}
						continue
					}
					wantKind(t, err, keel.KindForbidden)
					if !errors.Is(err, keel.KindForbidden) {
						t.Fatalf("%s: %v does not wrap keel.KindForbidden", who, err)
					}
					wantUnchanged(t, store, before)
				}
			})
		}
	})
}

// TestReadNeedsRightBeforeExistence: without read, a missing path is
// Forbidden, not NotFound (nothing is disclosed).
func TestReadNeedsRightBeforeExistence(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEngine(t, open(t), &kv.Options{Authorizer: &fakeAuthz{}})
		_, err := e.Read(as("nobody"), "missing")
		wantKind(t, err, keel.KindForbidden)
	})
}

// TestCreateVersusUpdate: create is needed where nothing is stored, update
// where a value is.
func TestCreateVersusUpdate(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		tests := map[string]struct {
			who       string
			existing  bool
			data      map[string]any
			wantKind  keel.Kind
			wantAsked string
		}{
			"create-only creates":              {who: "creator", existing: false, wantKind: keel.KindNone, wantAsked: "create"},
			"create-only cannot overwrite":     {who: "creator", existing: true, wantKind: keel.KindForbidden, wantAsked: "update"},
			"update-only overwrites":           {who: "updater", existing: true, wantKind: keel.KindNone, wantAsked: "update"},
			"update-only cannot create":        {who: "updater", existing: false, wantKind: keel.KindForbidden, wantAsked: "create"},
			"no right, bad data: forbidden":    {who: "nobody", existing: false, data: map[string]any{}, wantKind: keel.KindForbidden, wantAsked: "create"},
			"no right, bad ttl: forbidden":     {who: "nobody", existing: true, data: map[string]any{"ttl": "soon"}, wantKind: keel.KindForbidden, wantAsked: "update"},
			"right, bad data: invalid":         {who: "creator", existing: false, data: map[string]any{}, wantKind: keel.KindInvalid, wantAsked: "create"},
			"unclassified refusal: forbidden":  {who: "plain", existing: false, wantKind: keel.KindForbidden, wantAsked: "create"},
			"unclassified refusal, overwrites": {who: "plain", existing: true, wantKind: keel.KindForbidden, wantAsked: "update"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				authz := &fakeAuthz{grants: map[string][]keel.Capability{
					"creator": {keel.CapCreate},
					"updater": {keel.CapUpdate},
				}, plain: tc.who == "plain"}
				store := open(t)
				e := newEngine(t, store, &kv.Options{Authorizer: authz})
				if tc.existing {
					put(t, store, "p", `{"old":"value"}`)
				}
				before := storagetest.Dump(t, store)
				data := tc.data
				if data == nil {
					data = map[string]any{"new": "value"}
				}
				err := e.Write(as(tc.who), "p", data)
				wantKind(t, err, tc.wantKind)
				if q, want := authz.questions(), []string{tc.who + " " + tc.wantAsked + " secret/p"}; !slices.Equal(q, want) {
					t.Fatalf("asked %q, want %q", q, want)
				}
				if err != nil {
					if tc.wantKind == keel.KindForbidden && !errors.Is(err, keel.KindForbidden) {
						t.Fatalf("%v does not wrap keel.KindForbidden", err)
					}
					wantUnchanged(t, store, before)
					return
				}
				if got := storagetest.Dump(t, store)["p"]; got != `{"new":"value"}` {
					t.Fatalf("stored %s", got)
				}
			})
		}
	})
}

// TestCreateDecidedInTransaction: a secret created by a rival after the
// caller's request began is never overwritten by a create-only caller,
// whether the rival commits just before the write's transaction or between
// two runs of its closure.
func TestCreateDecidedInTransaction(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for _, between := range []bool{false, true} {
			name := "rival before the transaction"
			if between {
				name = "rival between runs"
			}
			t.Run(name, func(t *testing.T) {
				raw := open(t)
				store := &racingStore{Store: raw, between: between, rival: func(ctx context.Context, tx storage.Tx) error {
					return tx.Put("p", []byte(`{"rival":"1"}`))
				}}
				authz := &fakeAuthz{grants: map[string][]keel.Capability{"creator": {keel.CapCreate}}}
				e := newEngine(t, store, &kv.Options{Authorizer: authz})
				err := e.Write(as("creator"), "p", map[string]any{"mine": "1"})
				wantKind(t, err, keel.KindForbidden)
				if got := storagetest.Dump(t, raw)["p"]; got != `{"rival":"1"}` {
					t.Fatalf("stored %s, want the rival's value", got)
				}
			})
		}
	})
}

// TestFaultsLeaveStoreUnchanged: a failing Get, Put or commit fails the
// write and leaves the store as it was.
func TestFaultsLeaveStoreUnchanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		boom := fmt.Errorf("disk on fire: %w", keel.KindUnavailable)
		tests := map[string]struct {
			op   faultstore.Op
			path string
			del  bool // Delete instead of Write
		}{
			"put, create":       {op: faultstore.OpPut, path: "new"},
			"put, overwrite":    {op: faultstore.OpPut, path: "old"},
			"commit, create":    {op: faultstore.OpCommit, path: "new"},
			"commit, overwrite": {op: faultstore.OpCommit, path: "old"},
			"get, overwrite":    {op: faultstore.OpGet, path: "old"},
			"delete":            {op: faultstore.OpDelete, path: "old", del: true},
			"commit of delete":  {op: faultstore.OpCommit, path: "old", del: true},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				raw := open(t)
				fs := faultstore.New(raw)
				e := newEngine(t, fs, nil)
				mustWrite(t, context.Background(), e, "old", map[string]any{"k": "old"})
				before := storagetest.Dump(t, raw)
				fs.Fail(tc.op, "", 1, boom)
				var err error
				if tc.del {
					err = e.Delete(context.Background(), tc.path)
				} else {
					err = e.Write(context.Background(), tc.path, map[string]any{"k": "new"})
				}
				if !errors.Is(err, boom) {
					t.Fatalf("error %v, want the fault", err)
				}
				wantKind(t, err, keel.KindUnavailable)
				wantUnchanged(t, raw, before)
			})
		}
	})
}

// TestRerun: every operation gives the same result when the store runs its
// closures twice, and the create/update choice is made afresh each run.
func TestRerun(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		type result struct {
			data  map[string]any
			names []string
			kind  keel.Kind
			store map[string]string
		}
		authz := &fakeAuthz{grants: map[string][]keel.Capability{
			"all":     {keel.CapRead, keel.CapList, keel.CapCreate, keel.CapUpdate, keel.CapDelete},
			"creator": {keel.CapCreate},
		}}
		tests := map[string]func(ctx context.Context, e *kv.Engine) (result, error){
			"create": func(ctx context.Context, e *kv.Engine) (result, error) {
				return result{}, e.Write(keel.WithPrincipal(ctx, keel.Principal{ID: "creator"}), "new", map[string]any{"k": "1"})
			},
			"create-only overwrite": func(ctx context.Context, e *kv.Engine) (result, error) {
				return result{}, e.Write(keel.WithPrincipal(ctx, keel.Principal{ID: "creator"}), "a/b", map[string]any{"k": "1"})
			},
			"overwrite": func(ctx context.Context, e *kv.Engine) (result, error) {
				return result{}, e.Write(ctx, "a/b", map[string]any{"k": "2"})
			},
			"delete": func(ctx context.Context, e *kv.Engine) (result, error) {
				return result{}, e.Delete(ctx, "a/b")
			},
			"read": func(ctx context.Context, e *kv.Engine) (result, error) {
				s, err := e.Read(ctx, "a/b")
				return result{data: s.Data}, err
			},
			"list": func(ctx context.Context, e *kv.Engine) (result, error) {
				names, err := listAll(e, ctx, "")
				return result{names: names}, err
			},
		}
		for name, run := range tests {
			t.Run(name, func(t *testing.T) {
				var results [2]result
				for i, rerun := range []bool{false, true} {
					raw := open(t)
					fs := faultstore.New(raw)
					e := newEngine(t, fs, &kv.Options{Authorizer: authz})
					ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "all"})
					mustWrite(t, ctx, e, "a/b", map[string]any{"k": "0"})
					mustWrite(t, ctx, e, "c", map[string]any{"k": "0"})
					fs.Rerun(rerun)
					r, err := run(ctx, e)
					r.kind = keel.KindOf(err)
					r.store = storagetest.Dump(t, raw)
					results[i] = r
				}
				if !reflect.DeepEqual(results[0], results[1]) {
					t.Fatalf("without rerun %+v\nwith rerun    %+v", results[0], results[1])
				}
			})
		}
	})
}

func TestLeased(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		// As Vault, a lease is renewable when the secret has a ttl or lease
		// key.
		tests := map[string]struct {
			data       map[string]any
			defaultTTL time.Duration
			wantTTL    time.Duration
			renewable  bool
		}{
			"ttl key":           {data: map[string]any{"ttl": "1h"}, wantTTL: time.Hour, renewable: true},
			"no ttl: default":   {data: map[string]any{"k": "v"}, wantTTL: 768 * time.Hour},
			"no ttl: mount's":   {data: map[string]any{"k": "v"}, defaultTTL: 2 * time.Hour, wantTTL: 2 * time.Hour},
			"zero ttl: default": {data: map[string]any{"ttl": "0"}, defaultTTL: 2 * time.Hour, wantTTL: 2 * time.Hour, renewable: true},
			"lease key":         {data: map[string]any{"lease": 60}, wantTTL: time.Minute, renewable: true},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				store := open(t)
				m, iss := leases(t, store, "team/secret/", 0)
				e, err := kv.New(storage.Sub(store, "kv/"), "team/secret", &kv.Options{Leases: iss, DefaultTTL: tc.defaultTTL})
				if err != nil {
					t.Fatal(err)
				}
				mustWrite(t, ctx, e, "app/db", tc.data)
				seen := map[string]bool{}
				for i := 1; i <= 2; i++ { // every read issues its own lease
					s, err := e.Read(ctx, "app/db")
					if err != nil {
						t.Fatal(err)
					}
					if s.LeaseID == "" || seen[s.LeaseID] || s.Renewable != tc.renewable || s.LeaseDuration != tc.wantTTL {
						t.Fatalf("read %d: lease %q renewable %v duration %v, want a new lease, %v %v", i, s.LeaseID, s.Renewable, s.LeaseDuration, tc.renewable, tc.wantTTL)
					}
					seen[s.LeaseID] = true
					l, err := m.Get(ctx, s.LeaseID)
					if err != nil || l.Path != "team/secret/app/db" || l.Renewable != tc.renewable || l.ExpireTime.Sub(l.IssueTime) != tc.wantTTL {
						t.Fatalf("lease of read %d: %+v, %v", i, l, err)
					}
				}
			})
		}
	})
}

// leases returns a lease manager over the view "lease/" of store and the
// Issuer of mount (with maxTTL, zero: the system's), as package mount
// registers a leased kv mount.
func leases(t testing.TB, store storage.Store, mount string, maxTTL time.Duration) (*lease.Manager, *lease.Issuer) {
	t.Helper()
	m, err := lease.New(storage.Sub(store, "lease/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := m.Register(lease.Mount{Path: mount, MaxTTL: maxTTL})
	if err != nil {
		t.Fatal(err)
	}
	return m, iss
}

// TestRenewReadsAnew: the renewal of a leased read's lease answers the
// secret read anew (its current data) and issues no lease; a secret that
// is gone refuses it. New named the engine the mount's Revoker, so the
// lease manager finds it with nothing else wired.
func TestRenewReadsAnew(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		store := open(t)
		m, iss := leases(t, store, "secret/", 0)
		e := newEngine(t, storage.Sub(store, "kv/"), &kv.Options{Leases: iss})
		mustWrite(t, ctx, e, "app/db", map[string]any{"password": "old", "ttl": "1h"})
		s, err := e.Read(ctx, "app/db")
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, ctx, e, "app/db", map[string]any{"password": "new", "ttl": "2h"})
		r, err := m.Renew(ctx, s.LeaseID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := r.Data.(map[string]any); data["password"] != "new" {
			t.Fatalf("renewal answered %+v, want the current data", r.Data)
		}
		if ids, err := m.List(ctx, "secret/app/db/", keel.ListRequest{}); err != nil || len(ids.Items) != 1 {
			t.Fatalf("leases after the renewal: %q, %v; want the one read's", ids, err)
		}
		if err := e.Delete(ctx, "app/db"); err != nil {
			t.Fatal(err)
		}
		_, err = m.Renew(ctx, s.LeaseID, time.Hour)
		wantKind(t, err, keel.KindNotFound)
		// Revoking a leased read leaves the secret alone.
		mustWrite(t, ctx, e, "app/db", map[string]any{"password": "kept"})
		s, err = e.Read(ctx, "app/db")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Revoke(ctx, s.LeaseID, true); err != nil {
			t.Fatal(err)
		}
		if s, err := e.Read(ctx, "app/db"); err != nil || s.Data["password"] != "kept" {
			t.Fatalf("the secret after its lease was revoked: %+v, %v", s.Data, err)
		}
	})
}

func TestLeasedErrors(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		for name, tc := range map[string]struct {
			err      error
			wantKind keel.Kind
		}{
			"unclassified error: unavailable": {errors.New("lease store down"), keel.KindUnavailable},
			"classified error keeps its kind": {fmt.Errorf("too many leases: %w", keel.KindTooLarge), keel.KindTooLarge},
		} {
			t.Run(name, func(t *testing.T) {
				fs := faultstore.New(open(t))
				_, iss := leases(t, fs, "secret/", 0)
				e := newEngine(t, storage.Sub(fs, "kv/"), &kv.Options{Leases: iss})
				mustWrite(t, ctx, e, "p", map[string]any{"k": "v"})
				fs.Fail(faultstore.OpPut, "lease/", 1, tc.err)
				_, err := e.Read(ctx, "p")
				wantKind(t, err, tc.wantKind)
				if !errors.Is(err, tc.err) {
					t.Fatalf("%v does not wrap the lease store's error", err)
				}
			})
		}
		t.Run("granted TTL below the asked one is reported", func(t *testing.T) {
			store := open(t)
			_, iss := leases(t, store, "secret/", time.Hour)
			e := newEngine(t, storage.Sub(store, "kv/"), &kv.Options{Leases: iss})
			mustWrite(t, ctx, e, "p", map[string]any{"ttl": "48h"})
			s, err := e.Read(ctx, "p")
			if err != nil || s.LeaseDuration != time.Hour {
				t.Fatalf("Read = %+v, %v; want the granted 1h", s, err)
			}
		})
		t.Run("missing secret: no lease", func(t *testing.T) {
			store := open(t)
			m, iss := leases(t, store, "secret/", 0)
			e := newEngine(t, storage.Sub(store, "kv/"), &kv.Options{Leases: iss})
			_, err := e.Read(ctx, "p")
			wantKind(t, err, keel.KindNotFound)
			if ids, err := m.List(ctx, "secret/", keel.ListRequest{}); err != nil || len(ids.Items) != 0 {
				t.Fatalf("leases issued %q (%v)", ids, err)
			}
		})
		t.Run("an Issuer of another mount is refused", func(t *testing.T) {
			store := open(t)
			_, iss := leases(t, store, "other/", 0)
			_, err := kv.New(storage.Sub(store, "kv/"), "secret", &kv.Options{Leases: iss})
			wantKind(t, err, keel.KindInvalid)
		})
	})
}

// TestCanceled: a canceled ctx fails every operation and writes nothing.
func TestCanceled(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		e := newEngine(t, store, nil)
		mustWrite(t, context.Background(), e, "p", map[string]any{"k": "v"})
		before := storagetest.Dump(t, store)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ops := map[string]func() error{
			"read":   func() error { _, err := e.Read(ctx, "p"); return err },
			"list":   func() error { _, err := listAll(e, ctx, ""); return err },
			"write":  func() error { return e.Write(ctx, "q", map[string]any{"k": "v"}) },
			"delete": func() error { return e.Delete(ctx, "p") },
		}
		for name, op := range ops {
			t.Run(name, func(t *testing.T) {
				wantKind(t, op(), keel.KindCanceled)
			})
		}
		wantUnchanged(t, store, before)
	})
}

// TestConcurrent: an Engine is safe for concurrent use, and concurrent
// writes to a path leave one of them whole (run with -race).
func TestConcurrent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEngine(t, open(t), nil)
		ctx := context.Background()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 50 {
					path := fmt.Sprintf("shared/%d", i%5)
					data := map[string]any{"writer": w, "i": i, "ttl": "1m"}
					if err := e.Write(ctx, path, data); err != nil {
						t.Error(err)
						return
					}
					s, err := e.Read(ctx, path)
					switch {
					case keel.KindOf(err) == keel.KindNotFound: // deleted meanwhile
					case err != nil:
						t.Error(err)
						return
					case len(s.Data) != 3 || s.LeaseDuration != time.Minute:
						t.Errorf("read a mix: %v", s.Data)
						return
					}
					if _, err := listAll(e, ctx, "shared"); err != nil && keel.KindOf(err) != keel.KindNotFound {
						t.Error(err)
						return
					}
					if i%10 == 9 {
						if err := e.Delete(ctx, path); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
	})
}

// TestReadFolder: a folder holds no value; its read asks for read on the
// folder first, so a caller without the right learns nothing (403), and
// one with it finds nothing (404), as Vault answers.
func TestReadFolder(t *testing.T) {
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"app": {{Path: "secret/app/*", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, newMem(t, storage.Limits{}), &kv.Options{Authorizer: authz})
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "app", Policies: []string{"app"}})
	for path, want := range map[string]keel.Kind{
		"":       keel.KindForbidden,
		"other/": keel.KindForbidden,
		"app/":   keel.KindNotFound,
		"app/x/": keel.KindNotFound,
	} {
		_, err := e.Read(ctx, path)
		if keel.KindOf(err) != want {
			t.Errorf("Read(%q) = %v, want kind %v", path, err, want)
		}
	}
}

// TestReadReservesLargeValues: with a keel.Reserver in the context, the
// read of a secret of keel.LargeValue bytes or more reserves twice its
// stored size (the JSON and the decoded data are both returned) before it
// loads it; a refused reservation fails the read with the Reserver's kind
// and issues no lease; a small secret reserves nothing.
func TestReadReservesLargeValues(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		store := open(t)
		m, iss := leases(t, store, "secret/", 0)
		e := newEngine(t, storage.Sub(store, "kv/"), &kv.Options{Leases: iss})
		large := strings.Repeat("x", keel.LargeValue)
		mustWrite(t, ctx, e, "large", map[string]any{"v": large})
		mustWrite(t, ctx, e, "small", map[string]any{"v": "x"})
		stored := len(`{"v":""}`) + len(large)

		var asked []int64
		refuse := false
		ctx = keel.WithReserver(ctx, func(ctx context.Context, n int64) error {
			asked = append(asked, n)
			if refuse {
				return fmt.Errorf("no room: %w", keel.KindUnavailable)
			}
			return nil
		})
		if s, err := e.Read(ctx, "small"); err != nil || s.Data["v"] != "x" || len(asked) != 0 {
			t.Fatalf("small read: %v, %v; reserved %v, want nothing", s.Data, err, asked)
		}
		if s, err := e.Read(ctx, "large"); err != nil || s.Data["v"] != large || !slices.Equal(asked, []int64{2 * int64(stored)}) {
			t.Fatalf("large read: %v; reserved %v, want [%d]", err, asked, 2*stored)
		}
		before, err := m.List(ctx, "secret/large/", keel.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		refuse, asked = true, nil
		_, err = e.Read(ctx, "large")
		wantKind(t, err, keel.KindUnavailable)
		if after, err := m.List(ctx, "secret/large/", keel.ListRequest{}); err != nil || len(after.Items) != len(before.Items) {
			t.Fatalf("leases after a refused read: %q, %v; want the %d before", after, err, len(before.Items))
		}
	})
}

// TestListPages: List gives at most Limit names a page, in order, each
// page after the Cursor it is given (the last name of the one before), so
// that a walk sees every name that stays, whatever is added or deleted
// meanwhile before its cursor; a folder and a secret of the same name are
// two names; a page past the end is empty, not an error.
func TestListPages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEngine(t, open(t), nil)
		for _, p := range []string{"a", "a/x", "b", "c/d/e", "d", "e", "f"} {
			mustWrite(t, ctx, e, p, map[string]any{"v": "1"})
		}
		var got []string
		var pages []keel.Page[string]
		r := keel.ListRequest{Limit: 3}
		for {
			page, err := e.List(ctx, "", r)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, page)
			got = append(got, page.Items...)
			if len(pages) == 1 {
				// Between pages: a name before the cursor goes, one
				// after it comes.
				if err := e.Delete(ctx, "b"); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, ctx, e, "da", map[string]any{"v": "1"})
			}
			if page.Next == "" {
				break
			}
			r.Cursor = page.Next
		}
		want := []string{"a", "a/", "b", "c/", "d", "da", "e", "f"}
		if !slices.Equal(got, want) {
			t.Fatalf("walked %q, want %q", got, want)
		}
		if len(pages) != 3 || len(pages[0].Items) != 3 || pages[0].Next != "b" {
			t.Fatalf("pages %+v, want 3 of at most 3, the first ending at b", pages)
		}
		if page, err := e.List(ctx, "", keel.ListRequest{Cursor: "f"}); err != nil || len(page.Items) != 0 || page.Next != "" {
			t.Fatalf("page past the end: %+v, %v; want empty", page, err)
		}
		if page, err := e.List(ctx, "", keel.ListRequest{}); err != nil || len(page.Items) != 7 || page.Next != "" {
			t.Fatalf("default limit: %+v, %v; want every name in one page", page, err)
		}
	})
}
