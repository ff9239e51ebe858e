package credtemplate

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

var tplNow = time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.FixedZone("X", 3600))

func render(t *testing.T, text string, kind Kind, data any) (string, error) {
	t.Helper()
	return Render("f", text, kind, data, tplNow)
}

func TestTemplateFunctions(t *testing.T) {
	tail := "defghijklmnop"
	sum := sha256.Sum256([]byte("hijklmnop"))
	cases := []struct {
		name, text, want string
	}{
		{"field", "{{.RoleName}}", "my-role_x"},
		{"spaces inside delimiters", "{{ .RoleName }}", "my-role_x"},
		{"pipe chain", `{{.DisplayName | uppercase | replace "B" "b"}}`, "AbC-D_E"},
		{"printf builtin", `{{printf "%s:%03d" .RoleName 7}}`, "my-role_x:007"},
		{"dashes and underscores kept", "{{.DisplayName}}", "Abc-d_e"},
		{"truncate", `{{.RoleName | truncate 4}}`, "my-r"},
		{"truncate longer than value", `{{.RoleName | truncate 40}}`, "my-role_x"},
		{"truncate counts characters", `{{"héllo" | truncate 2}}`, "hé"},
		{"truncate_sha256", `{{"abc` + tail + `" | truncate_sha256 15}}`, "abcdefg" + hex.EncodeToString(sum[:])[:8]},
		{"truncate_sha256 short value", `{{"abc" | truncate_sha256 15}}`, "abc"},
		{"uppercase", `{{"aB" | uppercase}}`, "AB"},
		{"lowercase", `{{"aB" | lowercase}}`, "ab"},
		{"replace", `{{.RoleName | replace "-" "."}}`, "my.role_x"},
		{"sha256", `{{"abc" | sha256}}`, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"base64", `{{"abc" | base64}}`, "YWJj"},
		{"unix_time", `{{unix_time}}`, "1795338000"},
		{"unix_time_millis", `{{unix_time_millis}}`, "1795338000123"},
		{"timestamp in UTC", `{{timestamp "2006-01-02T15:04:05Z07:00"}}`, "2026-11-22T09:00:00Z"},
		{"if and else", `{{if eq .RoleName "x"}}a{{else}}b{{end}}`, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.text, Username, UsernameData{DisplayName: "Abc-d_e", RoleName: "my-role_x"})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTemplateRandomAndUUID(t *testing.T) {
	got, err := render(t, `{{random 20}} {{random 20}} {{uuid}}`, Username, UsernameData{})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(got)
	if !regexp.MustCompile(`^[A-Za-z0-9]{20}$`).MatchString(f[0]) || f[0] == f[1] {
		t.Fatalf("random: %q", got)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(f[2]) {
		t.Fatalf("uuid: %q", f[2])
	}
}

func TestTemplateUTF16LEOnlyInLDIF(t *testing.T) {
	got, err := render(t, `{{"\"pw\"" | utf16le | base64}}`, LDIF, LDIFData{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "IgBwAHcAIgA=" {
		t.Fatalf("utf16le: %q", got)
	}
	if got, _ := render(t, `{{"é" | utf16le}}`, LDIF, LDIFData{}); got != "\xe9\x00" {
		t.Fatalf("utf16le of é: %q", got)
	}
	_, err = render(t, `{{"pw" | utf16le}}`, Username, UsernameData{})
	wantField(t, err, "f", "utf16le")
}

func TestTemplateRefusals(t *testing.T) {
	cases := []struct{ name, text, rule string }{
		{"random needs N", `{{random}}`, "random"},
		{"random zero", `{{random 0}}`, "random"},
		{"random too long", `{{random 2000}}`, "1 to 1024"},
		{"truncate zero", `{{"a" | truncate 0}}`, "positive"},
		{"truncate_sha256 too short", `{{"abcdefghijkl" | truncate_sha256 8}}`, "more than 8"},
		{"timestamp needs a layout", `{{timestamp ""}}`, "layout"},
		{"range", `{{range 100000000000}}{{end}}`, "range"},
		{"define", `{{define "a"}}x{{end}}{{template "a"}}`, "not allowed"},
		{"template", `{{template "a"}}`, "template"},
		{"range nested in if", `{{if true}}{{range 3}}{{end}}{{end}}`, "range"},
		{"printf grows past the cap", `{{printf "%0999999d%0999999d" 1 2}}`, "longer"},
		{"replace grows past the cap", `{{$a := printf "%060000d" 1}}{{$a | replace "0" "00"}}`, "longer"},
		{"unknown field", `{{.Username}}`, "Username"},
		{"syntax", `{{`, "template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.text, Username, UsernameData{})
			wantField(t, err, "f", c.rule)
		})
	}
	t.Run("template text too long", func(t *testing.T) {
		_, err := render(t, strings.Repeat("a", maxTemplateLen+1), Username, UsernameData{})
		wantField(t, err, "f", "at most")
	})
	t.Run("output capped", func(t *testing.T) {
		chunk := `{{printf "%060000d" 1}}`
		_, err := render(t, strings.Repeat(chunk, maxRenderLen/60000+1), Username, UsernameData{})
		wantField(t, err, "f", "output longer")
	})
}

func TestCheckFieldValue(t *testing.T) {
	for _, ok := range []string{"", "alice", "Alice Smith", "alice@example.com", "a-b_c.d", "é中", "a:b"} {
		if why := CheckFieldValue(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"a\nb", "a\rb", "a\x00", "a\tb", "a,b", "a=b", "a+b", "a<b", "a>b", "#a", "a;b", `a"b`, `a\b`, " a", "a ", ":a", "\xff", "a\u2028"} {
		if why := CheckFieldValue(bad); why == "" {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{"a\nb", " a", ":a", "<a", "a "} {
		if why := CheckPassword(bad); why == "" {
			t.Errorf("password %q accepted", bad)
		}
	}
	if why := CheckPassword("Ab,+=<>#;0"); why != "" {
		t.Errorf("password with DN specials refused: %s", why)
	}
}

// wantField fails t unless err is of kind keel.KindInvalid with a problem
// of field whose rule holds rule.
func wantField(t testing.TB, err error, field, rule string) {
	t.Helper()
	if got := keel.KindOf(err); got != keel.KindInvalid {
		t.Fatalf("error %v: kind %v, want %v", err, got, keel.KindInvalid)
	}
	for _, fe := range keel.FieldErrors(err) {
		if fe.Field == field && strings.Contains(fe.Rule, rule) {
			return
		}
	}
	t.Fatalf("error %v: no problem of %q with %q", err, field, rule)
}
