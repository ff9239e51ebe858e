package floor

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	vault "github.com/hashicorp/vault/api"
)

// TestVaultClient drives the floor with vault/api's Logical calls, as the
// harness does.
func TestVaultClient(t *testing.T) {
	srv := httptest.NewServer(New())
	defer srv.Close()
	cfg := vault.DefaultConfig()
	cfg.Address = srv.URL
	cfg.MaxRetries = 0
	c, err := vault.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken("ROOT")
	lg := c.Logical()

	data := map[string]any{"username": "u", "password": "p", "n": 1}
	for _, p := range []string{"secret/a/x", "secret/a/y", "secret/a/sub/z", "secret/b"} {
		if _, err := lg.Write(p, data); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	s, err := lg.Read("secret/a/x")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	if s.Data["username"] != "u" || len(s.Data) != 3 || s.LeaseDuration != 2764800 {
		t.Errorf("read: %+v", s)
	}
	s, err = lg.List("secret/a")
	if err != nil || s == nil {
		t.Fatalf("list: %v, %v", s, err)
	}
	var keys []string
	for _, k := range s.Data["keys"].([]any) {
		keys = append(keys, k.(string))
	}
	if want := []string{"sub/", "x", "y"}; !slices.Equal(keys, want) {
		t.Errorf("list: %v, want %v", keys, want)
	}
	if _, err := lg.Delete("secret/a/x"); err != nil {
		t.Fatal(err)
	}
	if s, err := lg.Read("secret/a/x"); err != nil || s != nil {
		t.Errorf("read after delete: %v, %v", s, err)
	}
	if s, err := lg.List("secret/none"); err != nil || s != nil {
		t.Errorf("list of nothing: %v, %v", s, err)
	}
}

func TestRefusals(t *testing.T) {
	h := New()
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"PUT", "/v1/secret/a", `[1]`, 400},
		{"PUT", "/v1/secret/a", `{"a":`, 400},
		{"PUT", "/v1/secret/a", ``, 400},
		{"PATCH", "/v1/secret/a", `{}`, 405},
		{"GET", "/v1/other/a", ``, 404},
		{"PUT", "/v1/secret/a", ` {"a":1} `, 204},
		{"GET", "/v1/secret/a", ``, 200},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if w.Code != tc.code {
			t.Errorf("%s %s %q: %d, want %d", tc.method, tc.path, tc.body, w.Code, tc.code)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/secret/a", nil))
	if !strings.Contains(w.Body.String(), `"data":{"a":1}`) {
		t.Errorf("read: %s", w.Body)
	}
}
