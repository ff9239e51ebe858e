package kv

import "testing"

func TestPathRule(t *testing.T) {
	tests := map[string]bool{ // path: valid
		"a":          true,
		"a/b/c":      true,
		"a.b":        true,
		".hidden":    true,
		"a/.b":       true,
		"a./b":       true,
		"with space": true,
		"ünïcödé/ß":  true,
		"a-b_c:d@e":  true,
		"":           false,
		"/":          false,
		"/a":         false,
		"a/":         false,
		"a//b":       false,
		".":          false,
		"./a":        false,
		"a/.":        false,
		"a/./b":      false,
		"..":         false,
		"../a":       false,
		"a/..":       false,
		"a/../b":     false,
		"a..b":       false,
		"...":        false,
		"\xff":       false,
		"a/\xc3(":    false,
	}
	for p, valid := range tests {
		t.Run(p, func(t *testing.T) {
			if rule := pathRule(p); (rule == "") != valid {
				t.Fatalf("pathRule(%q) = %q, want valid %v", p, rule, valid)
			}
		})
	}
}

func TestFolderOf(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"empty is top":     {in: "", want: ""},
		"slash is top":     {in: "/", want: ""},
		"name":             {in: "a", want: "a/"},
		"name with slash":  {in: "a/", want: "a/"},
		"nested":           {in: "a/b", want: "a/b/"},
		"two slashes":      {in: "a//", wantErr: true},
		"double slash top": {in: "//", wantErr: true},
		"dot-dot":          {in: "a/../", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := folderOf(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("folderOf(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
