package storagetest

import (
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocListsEveryCase: the package documentation names every case of
// the suite, in the order Run runs them, and no other.
func TestDocListsEveryCase(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	m := regexp.MustCompile(`Run runs each case as a subtest named after it \(([^)]*)\)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("the package documentation has no list of the cases Run runs")
	}
	var listed, want []string
	for name := range strings.SplitSeq(m[1], ",") {
		listed = append(listed, strings.TrimSpace(name))
	}
	for _, c := range cases {
		want = append(want, c.name)
	}
	if !slices.Equal(listed, want) {
		t.Errorf("the package documentation lists the cases\n%q\nRun runs\n%q", listed, want)
	}
}
