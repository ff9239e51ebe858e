package kv

import (
	"strings"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

// pathRule returns the rule p breaks as a secret path or a mount path, or
// "" when it breaks none. See "Paths" in the package documentation.
func pathRule(p string) string {
	switch {
	case p == "":
		return "is required"
	case !utf8.ValidString(p):
		return "must be valid UTF-8"
	case strings.ContainsFunc(p, isControl):
		return "must not contain control characters"
	case strings.HasPrefix(p, "/"):
		return `must not start with "/"`
	case strings.HasSuffix(p, "/"):
		return `must not end with "/": a path ending in "/" names a folder, which holds no value`
	case strings.Contains(p, "//"):
		return `must not contain an empty segment ("//")`
	case strings.Contains(p, ".."):
		return `must not contain ".." (relative paths are not supported)`
	case p == "." || strings.HasPrefix(p, "./") || strings.HasSuffix(p, "/.") || strings.Contains(p, "/./"):
		return `must not contain a "." segment`
	}
	return ""
}

// checkPath returns an error of kind keel.KindInvalid, for the field
// "Path" (the argument path of Read, Write, List and Delete), when p is not
// a valid secret path.
func checkPath(p string) error {
	if rule := pathRule(p); rule != "" {
		return keel.Invalid("Path", "%s", rule)
	}
	return nil
}

// folderOf returns the storage prefix of the folder p names for List: ""
// for the top of the mount ("" or "/"), else p with exactly one trailing
// slash ("app" and "app/" give "app/").
func folderOf(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	if err := checkPath(p); err != nil {
		return "", err
	}
	return p + "/", nil
}

// isControl reports whether r is an ASCII control character, which the
// lease manager refuses in lease paths too.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
