package lease

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

func TestEncodeEntryRoundTrip(t *testing.T) {
	full := entry{
		Lease: Lease{
			ID: "ldap/creds/app/abc", Path: "ldap/creds/app", Mount: "ldap/",
			IssueTime: t0, ExpireTime: t0.Add(time.Hour), LastRenewalTime: t0.Add(time.Minute),
			MaxTTL: 2 * time.Hour, Renewable: true, Token: true, Data: []byte("cn=x"),
			Irrevocable: true, Attempts: 6, LastError: "ldap: down", NextAttempt: t0.Add(24 * time.Hour),
		},
		IssuedTTL: time.Hour,
	}
	for name, e := range map[string]entry{
		"full":     full,
		"minimal":  {Lease: Lease{ID: "a/b", Path: "a", IssueTime: t0, ExpireTime: t0, NextAttempt: t0}},
		"zerotime": {Lease: Lease{ID: "a/b", Path: "a"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeEntry(e.ID, encodeEntry(&e))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, e)
			}
			// decodeIndexed, which removals use, gives the same but
			// Mount, LastError and Data.
			idx, err := decodeIndexed(e.ID, encodeEntry(&e))
			e.Mount, e.LastError, e.Data = "", "", nil
			if err != nil || !reflect.DeepEqual(idx, e) {
				t.Fatalf("decodeIndexed: %v\n got %+v\nwant %+v", err, idx, e)
			}
		})
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good := encodeEntry(&entry{Lease: Lease{Mount: "ldap/", IssueTime: t0, LastError: "x"}})
	for name, b := range map[string][]byte{
		"empty":        nil,
		"version 2":    append([]byte{2}, good[1:]...),
		"unknown flag": append([]byte{1, 0x80}, good[2:]...),
		"truncated":    good[:len(good)-1],
		"trailing":     append(slices.Clone(good), 0),
		"long string":  {1, 0, 0xff, 0xff, 0xff, 0x0f},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeEntry("a/b", b)
			wantKind(t, err, keel.KindInternal)
			_, err = decodeIndexed("a/b", b)
			wantKind(t, err, keel.KindInternal)
		})
	}
}

func TestDueKeyOrderAndParse(t *testing.T) {
	times := []time.Time{
		time.Unix(0, 1).UTC(), t0, t0.Add(time.Nanosecond), t0.Add(time.Second), t0.Add(100 * 365 * 24 * time.Hour),
	}
	var keys []string
	for _, at := range times {
		k := dueKey(at, "ldap/creds/app/x")
		keys = append(keys, k)
		gotAt, gotID, err := parseDueKey(k)
		if err != nil || !gotAt.Equal(at) || gotID != "ldap/creds/app/x" {
			t.Fatalf("parseDueKey(%q) = %v, %q, %v", k, gotAt, gotID, err)
		}
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("keys not in time order: %q", keys)
	}
	if k := dueKey(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), "a/b"); k != "due/0000000000000000/a/b" {
		t.Fatalf("before 1970: %q", k)
	}
}

func TestParseDueKeyRejects(t *testing.T) {
	for name, k := range map[string]string{
		"empty":       "",
		"no id":       "due/0000000000000001/",
		"short":       "due/001/a",
		"upper hex":   "due/000000000000000A/a",
		"no slash":    "due/0000000000000001xa",
		"prefix":      "dux/0000000000000001/a",
		"not hex":     "due/000000000000000g/a",
		"beyond int":  "due/8000000000000000/a",
		"sign":        "due/-000000000000001/a",
		"space":       "due/ 000000000000001/a",
		"just prefix": "due/",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := parseDueKey(k); !errors.Is(err, errBadDueKey) {
				t.Fatalf("parseDueKey(%q): %v, want errBadDueKey", k, err)
			}
		})
	}
}

func TestTruncateError(t *testing.T) {
	for name, tc := range map[string]struct {
		in      string
		wantLen int
	}{
		"short":         {"boom", 4},
		"exactly 240":   {strings.Repeat("a", 240), 240},
		"241 ascii":     {strings.Repeat("a", 241), 240},
		"multibyte cut": {strings.Repeat("a", 239) + "é" + "zz", 239},
		"all multibyte": {strings.Repeat("€", 100), 240},
	} {
		t.Run(name, func(t *testing.T) {
			got := truncateError(tc.in)
			if len(got) != tc.wantLen || !utf8.ValidString(got) || !strings.HasPrefix(tc.in, got) {
				t.Fatalf("truncateError: %d bytes, valid %v; want %d", len(got), utf8.ValidString(got), tc.wantLen)
			}
		})
	}
}

func TestIrrevocableValueRoundTrip(t *testing.T) {
	mount, msg, err := decodeIrr(encodeIrr("ldap/", "out of retries: boom"))
	if err != nil || mount != "ldap/" || msg != "out of retries: boom" {
		t.Fatalf("got %q %q %v", mount, msg, err)
	}
	if _, _, err := decodeIrr([]byte{5, 'a'}); err == nil {
		t.Fatal("truncated value decoded")
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(&entry{Lease: Lease{Mount: "ldap/", IssueTime: t0, ExpireTime: t0.Add(time.Hour), Data: []byte("x"), LastError: "e"}, IssuedTTL: time.Hour}))
	f.Add([]byte{1, 7})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry("m/p/id", b)
		if err != nil {
			return
		}
		again, err := decodeEntry("m/p/id", encodeEntry(&e))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, e) {
			t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", again, e)
		}
	})
}

func FuzzDueKey(f *testing.F) {
	f.Add(dueKey(t0, "ldap/creds/app/x"))
	f.Add("due/0000000000000000/")
	f.Add("due/ffffffffffffffff/a")
	f.Fuzz(func(t *testing.T, k string) {
		at, id, err := parseDueKey(k)
		if err != nil {
			return
		}
		if id == "" {
			t.Fatalf("parsed %q to an empty id", k)
		}
		if again := dueKey(at, id); again != k {
			t.Fatalf("dueKey(parseDueKey(%q)) = %q", k, again)
		}
	})
}

// TestIsDueKey: isDueKey, which deleteEntry uses instead of building the
// key, holds exactly for the key dueKey builds.
func TestIsDueKey(t *testing.T) {
	at := time.Date(2026, 11, 28, 5, 0, 0, 123, time.UTC)
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(-5, 0), at, at.Add(time.Nanosecond), time.Unix(1<<40, 0)}
	ids := []string{"ldap/creds/app/a", "ldap/creds/app/b", "ldap/creds/app/aa", "x"}
	for _, ti := range times {
		for _, id := range ids {
			key := dueKey(ti, id)
			for _, tj := range times {
				for _, jd := range ids {
					if got, want := isDueKey(key, tj, jd), key == dueKey(tj, jd); got != want {
						t.Errorf("isDueKey(%q, %v, %q) = %v, want %v", key, tj, jd, got, want)
					}
				}
			}
			for _, bad := range []string{"", key[:len(key)-1], key + "x", "id/" + key[4:], strings.ToUpper(key[:dueKeyExtra]) + id} {
				if isDueKey(bad, ti, id) {
					t.Errorf("isDueKey(%q, %v, %q) holds", bad, ti, id)
				}
			}
		}
	}
}

// FuzzDecodeIndexed: decodeIndexed, which removals use instead of
// decodeEntry, fails exactly where decodeEntry fails and gives the same
// fields but Mount, LastError and Data.
func FuzzDecodeIndexed(f *testing.F) {
	f.Add(encodeEntry(&entry{Lease: Lease{Mount: "ldap/", IssueTime: t0, LastError: "x", Data: []byte("d"), Irrevocable: true}}))
	f.Add([]byte{1, 0, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		full, ferr := decodeEntry("a/b", b)
		idx, ierr := decodeIndexed("a/b", b)
		if (ferr == nil) != (ierr == nil) {
			t.Fatalf("decodeEntry: %v; decodeIndexed: %v", ferr, ierr)
		}
		full.Mount, full.LastError, full.Data = "", "", nil
		if !reflect.DeepEqual(full, idx) {
			t.Fatalf("decodeIndexed %+v, want %+v", idx, full)
		}
	})
}
