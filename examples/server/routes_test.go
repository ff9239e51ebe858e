package main

import (
	"net/http"
	"reflect"
	"testing"
)

// serverRoutes returns the routes of a running server, every adapter's
// patterns registered.
func serverRoutes(t testing.TB) *routes {
	var rt *routes
	start(t, hooks{mount: func(mux *routes, _ *deps) { rt = mux }}, "-data", "memory", "-root-token", "t")
	return rt
}

// checkShortcut fails when routes' shortcut takes r where ServeMux would
// serve r by another handler than the catch-all, or redirect it.
func checkShortcut(t *testing.T, rt *routes, r *http.Request) (taken bool) {
	t.Helper()
	h := rt.shortcut(r)
	if h == nil {
		return false
	}
	mh, pattern := rt.ServeMux.Handler(r)
	if pattern != "/v1/" || reflect.ValueOf(mh).Kind() != reflect.Func || reflect.ValueOf(mh).Pointer() != reflect.ValueOf(h).Pointer() {
		t.Errorf("%s %s (raw %q): the shortcut takes it to the mounts, ServeMux to %T of pattern %q", r.Method, r.URL.Path, r.URL.RawPath, mh, pattern)
	}
	return true
}

// The shortcut takes a mount's paths straight to the catch-all, and only
// paths that ServeMux would serve by the catch-all as they are.
func TestRoutesShortcutAgreesWithServeMux(t *testing.T) {
	rt := serverRoutes(t)
	for _, c := range []struct {
		method, target string
		taken          bool
	}{
		{"GET", "/v1/secret/foo", true},
		{"PUT", "/v1/secret/a/b/c", true},
		{"LIST", "/v1/secret/", true},
		{"DELETE", "/v1/ldap/static-role/x", true},
		{"GET", "/v1/secret", true},
		{"GET", "/v1/sys/mounts", false},
		{"GET", "/v1/sys/leases/lookup/x", false},
		{"PUT", "/v1/auth/token/lookup-self", false},
		{"GET", "/v1/identity/group/name/x", false},
		{"GET", "/v1/peering/x", false},
		{"GET", "/v1/peerings", false},
		{"PUT", "/v1/config", false},
		{"GET", "/v1/internal/peering/x", false},
		{"GET", "/v1/", false},
		{"GET", "/v1", false},
		{"GET", "/v1//secret/x", false},
		{"GET", "/v1/secret//x", false},
		{"GET", "/v1/secret/./x", false},
		{"GET", "/v1/secret/../sys/mounts", false},
		{"GET", "/v1/secret/x/..", false},
		{"GET", "/v1/secret%2Fx", false},
		{"GET", "/api/v2/organizations", false},
		{"CONNECT", "/v1/secret/x", false},
	} {
		r, err := http.NewRequest(c.method, "http://localhost"+c.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if taken := checkShortcut(t, rt, r); taken != c.taken {
			t.Errorf("%s %s: shortcut taken %v, want %v", c.method, c.target, taken, c.taken)
		}
	}
}

// A pattern the shortcut cannot account for turns it off.
func TestRoutesShortcutOff(t *testing.T) {
	for _, pattern := range []string{"/v1/{mount}/x", "example.com/v1/x", "GET /v1/{a}/{b...}"} {
		rt := newRoutes()
		rt.HandleFunc("/v1/", func(http.ResponseWriter, *http.Request) {})
		rt.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
		r, _ := http.NewRequest("GET", "http://localhost/v1/secret/x", nil)
		if rt.shortcut(r) != nil {
			t.Errorf("with %q registered the shortcut is still taken", pattern)
		}
	}
}

func FuzzRoutesShortcut(f *testing.F) {
	for _, s := range []string{"/v1/secret/foo", "/v1/sys/x", "/v1//a", "/v1/a/./b", "/v1/a%2Fb", "/v1/peering/", "/v1/secret/.."} {
		f.Add("GET", s)
	}
	f.Add("LIST", "/v1/kv/")
	rt := serverRoutes(f)
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://localhost"+target, nil)
		if err != nil || r.URL.Host != "localhost" {
			return // not a request a client can send
		}
		checkShortcut(t, rt, r)
	})
}
