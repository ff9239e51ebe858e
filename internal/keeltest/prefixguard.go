package keeltest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// CheckDeferredPrefix parses the non-test Go files of the current
// directory (a package's, when its tests run) and fails t for every
// exported function or method that returns an error and does not begin
// with defer prefixErr(&err), the rule of the packages that name
// themselves in every error they return (internal/errprefix). A method of
// an unexported type counts too (it may implement an interface), but not
// Unwrap, nor a function whose every return is nil alone (Close). It
// returns how many functions it checked, so that a test can tell the
// guard still finds them.
func CheckDeferredPrefix(t testing.TB) int {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || fn.Name.Name == "Unwrap" || fn.Body == nil || !returnsError(fn) || onlyNil(fn) {
				continue
			}
			checked++
			if !defersPrefix(fn) {
				t.Errorf("%s: %s returns an error and does not begin with defer prefixErr(&err)", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
	return checked
}

func returnsError(fn *ast.FuncDecl) bool {
	res := fn.Type.Results
	if res == nil || len(res.List) == 0 {
		return false
	}
	id, ok := res.List[len(res.List)-1].Type.(*ast.Ident)
	return ok && id.Name == "error"
}

// onlyNil reports whether every return statement of fn returns nil alone.
func onlyNil(fn *ast.FuncDecl) bool {
	only := true
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if r, ok := n.(*ast.ReturnStmt); ok {
			if len(r.Results) != 1 {
				only = false
			} else if id, ok := r.Results[0].(*ast.Ident); !ok || id.Name != "nil" {
				only = false
			}
		}
		return true
	})
	return only
}

// defersPrefix reports whether fn begins with defer prefixErr(&err).
func defersPrefix(fn *ast.FuncDecl) bool {
	if len(fn.Body.List) == 0 {
		return false
	}
	d, ok := fn.Body.List[0].(*ast.DeferStmt)
	if !ok || len(d.Call.Args) != 1 {
		return false
	}
	if id, ok := d.Call.Fun.(*ast.Ident); !ok || id.Name != "prefixErr" {
		return false
	}
	u, ok := d.Call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return false
	}
	id, ok := u.X.(*ast.Ident)
	return ok && id.Name == "err"
}
