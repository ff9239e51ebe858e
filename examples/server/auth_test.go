package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"

	"github.com/keelhq/keel"
)

func TestAuthenticate(t *testing.T) {
	const root = "kr.root"
	_, tokens, err := buildAuth(&config{
		Policies: map[string][]keel.Rule{"reader": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead}}}},
		Tokens: []tokenConfig{{
			Token:     "t-alice",
			Principal: principalConfig{ID: "alice", DisplayName: "Alice", EntityID: "e-1"},
			Policies:  []string{"reader"},
		}},
	}, root)
	if err != nil {
		t.Fatal(err)
	}
	alice := keel.Principal{ID: "alice", DisplayName: "Alice", EntityID: "e-1", ClientTokenID: tokenID("t-alice"), Policies: []string{"reader"}}
	rootP := keel.Principal{ID: "root", DisplayName: "root", ClientTokenID: tokenID(root), Policies: []string{keel.RootPolicy}}

	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    *keel.Principal // nil: anonymous
	}{
		{"vault header", map[string]string{"X-Secrets-Token": "t-alice"}, &alice},
		{"consul header", map[string]string{"X-Cluster-Token": "t-alice"}, &alice},
		{"bearer", map[string]string{"Authorization": "Bearer t-alice"}, &alice},
		{"bearer in lower case", map[string]string{"Authorization": "bearer t-alice"}, &alice},
		{"root token", map[string]string{"X-Secrets-Token": root}, &rootP},
		{"vault header wins", map[string]string{"X-Secrets-Token": root, "X-Cluster-Token": "t-alice"}, &rootP},
		{"vault client header", map[string]string{"X-Vault-Token": "t-alice"}, &alice},
		{"spec header before vault's", map[string]string{"X-Secrets-Token": root, "X-Vault-Token": "t-alice"}, &rootP},
		{"vault's header before bearer", map[string]string{"X-Vault-Token": root, "Authorization": "Bearer t-alice"}, &rootP},
		{"bearer before consul header", map[string]string{"Authorization": "Bearer " + root, "X-Cluster-Token": "t-alice"}, &rootP},
		{"unknown first token is not replaced", map[string]string{"X-Vault-Token": "t-mallory", "X-Cluster-Token": "t-alice"}, nil},
		{"no token", nil, nil},
		{"unknown token", map[string]string{"X-Secrets-Token": "t-mallory"}, nil},
		{"unknown consul token", map[string]string{"X-Cluster-Token": "t-mallory"}, nil},
		{"unknown bearer", map[string]string{"Authorization": "Bearer t-mallory"}, nil},
		{"prefix of a token", map[string]string{"X-Secrets-Token": "t-alic"}, nil},
		{"basic auth", map[string]string{"Authorization": "Basic dC1hbGljZQ=="}, nil},
		{"basic auth holds no token: the consul header is read", map[string]string{"Authorization": "Basic dC1hbGljZQ==", "X-Cluster-Token": "t-alice"}, &alice},
		{"bare token in Authorization", map[string]string{"Authorization": "t-alice"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				got    keel.Principal
				ok     bool
				called bool
			)
			h := authenticate(tokens, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				got, ok = keel.PrincipalFrom(r.Context())
			}))
			req := httptest.NewRequest(http.MethodGet, "/v1/secret/x", nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			switch {
			case !called:
				t.Fatal("the handler was not called")
			case tc.want == nil && ok:
				t.Errorf("principal %+v, want anonymous", got)
			case tc.want != nil && !ok:
				t.Errorf("anonymous, want %+v", *tc.want)
			case tc.want != nil && !principalsEqual(got, *tc.want):
				t.Errorf("principal %+v, want %+v", got, *tc.want)
			}
		})
	}
}

func TestLookupCopiesPolicies(t *testing.T) {
	tokens := newTokenTable()
	tokens.add("t", keel.Principal{ID: "p", Policies: []string{"reader"}})
	p, _ := tokens.lookup("t")
	p.Policies[0] = keel.RootPolicy
	if p, _ := tokens.lookup("t"); !slices.Equal(p.Policies, []string{"reader"}) {
		t.Errorf("a handler changed the policies of the token: %q", p.Policies)
	}
}

func TestTokenTableAdd(t *testing.T) {
	tokens := newTokenTable()
	if !tokens.add("t", keel.Principal{ID: "a"}) {
		t.Fatal("add refused a new token")
	}
	if tokens.add("t", keel.Principal{ID: "b"}) {
		t.Error("add accepted a token twice")
	}
	if p, _ := tokens.lookup("t"); p.ID != "a" {
		t.Errorf("the second add replaced the first: %+v", p)
	}
	if tokens.add("", keel.Principal{ID: "c"}) {
		t.Error("add accepted the empty token")
	}
	if _, ok := tokens.lookup(""); ok {
		t.Error("the empty token authenticates")
	}
}

func TestTokenID(t *testing.T) {
	// The first 4 bytes of SHA-256("t-alice"), in hex.
	if id := tokenID("t-alice"); id != "6ed662ae" {
		t.Errorf("tokenID(\"t-alice\") = %q, want 6ed662ae", id)
	}
}

func TestNewRootToken(t *testing.T) {
	re := regexp.MustCompile(`^kr\.[0-9A-Za-z]{24}$`)
	seen := make(map[string]bool)
	for range 100 {
		tok := newRootToken()
		if !re.MatchString(tok) {
			t.Fatalf("root token %q is not kr. and 24 base62 characters", tok)
		}
		if seen[tok] {
			t.Fatalf("root token %q generated twice", tok)
		}
		seen[tok] = true
	}
}
