package keel_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocSnippetsAreExamples: every Go snippet in a doc comment of the
// library, and every Go block of README.md, is the code of a runnable
// Example, so that a snippet that stops compiling fails the build of the
// Example it comes from. A snippet's lines must appear, in order, in the
// body of one Example of its package (README's: of any package); the
// Example may have more lines between them (error checks, output). A
// snippet of whole declarations (a test to copy) must be a test function
// of the library, the same way. A block is Go when it has ":=" or "(ctx";
// tables and HCL have neither. Internal packages have no user docs.
func TestDocSnippetsAreExamples(t *testing.T) {
	all := map[string][]string{}   // "dir Example name" -> normalized body lines
	funcs := map[string][]string{} // "dir name" of every test file function -> its lines
	type snippet struct{ where, dir, text string }
	var snippets []snippet
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "examples", "bench", "testdata", "internal", ".git", ".ci":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				funcs[dir+" "+fn.Name.Name] = goLines(string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset]))
				if fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
					continue
				}
				body := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
				all[dir+" "+fn.Name.Name] = goLines(string(body))
			}
			return nil
		}
		for _, g := range docComments(f) {
			for _, b := range new(comment.Parser).Parse(g.Text()).Content {
				if c, ok := b.(*comment.Code); ok && isGo(c.Text) {
					snippets = append(snippets, snippet{fset.Position(g.Pos()).String(), dir, c.Text})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		snippets = append(snippets, snippet{"README.md", "", m[1]})
	}
	if len(snippets) < 10 {
		t.Fatalf("found %d Go snippets: the scan is broken", len(snippets))
	}
	for _, s := range snippets {
		in, dir := all, s.dir
		if err := parseStmts(s.text); err != nil {
			if parseDecls(s.text) != nil {
				t.Errorf("%s: snippet parses neither as Go statements nor as declarations: %v\n%s", s.where, err, s.text)
				continue
			}
			in, dir = funcs, ""
		}
		want := goLines(s.text)
		found := false
		for key, lines := range in {
			if (dir == "" || strings.HasPrefix(key, dir+" ")) && subsequence(want, lines) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: snippet is in no Example of its package (each of its lines, in order, in one Example's body):\n%s", s.where, s.text)
		}
	}
}

// docComments returns the doc comments of f: the package's, and those of
// its declarations and their specs.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			out = append(out, g)
		}
	}
	add(f.Doc)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Doc)
		case *ast.GenDecl:
			add(d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Doc)
				case *ast.ValueSpec:
					add(s.Doc)
				}
			}
		}
	}
	return out
}

func isGo(text string) bool {
	return strings.Contains(text, ":=") || strings.Contains(text, "(ctx")
}

func parseStmts(text string) error {
	_, err := parser.ParseFile(token.NewFileSet(), "snippet.go", "package p\nfunc _() {\n"+text+"\n}\n", 0)
	return err
}

func parseDecls(text string) error {
	_, err := parser.ParseFile(token.NewFileSet(), "snippet.go", "package p\n"+text, 0)
	return err
}

// goLines returns the lines of Go source text, trimmed, without comments
// at their ends and without blank or comment-only lines; "panic(err)" is
// read as "return err".
func goLines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if i := strings.Index(l, " //"); i >= 0 && strings.Count(l[:i], `"`)%2 == 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		if l == "panic(err)" { // an Example panics where a program returns
			l = "return err"
		}
		out = append(out, l)
	}
	return out
}

// subsequence reports whether every line of want is in have, in order.
func subsequence(want, have []string) bool {
	i := 0
	for _, l := range have {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	return i == len(want)
}
