package main

import (
	"net/http"
	"strings"
)

// routes is the server's ServeMux with a shortcut for the Vault dialect's
// mount paths. Most requests are for a mount ("/v1/secret/…"), which no
// pattern names but the catch-all "/v1/"; ServeMux finds that out by
// trying every method's tree of patterns first, at a cost of a few
// allocations and microseconds a request. routes keeps the first segment
// below /v1/ of every other pattern registered through it, and sends a
// request whose first segment is none of them straight to the catch-all,
// as ServeMux would (TestRoutesShortcutAgreesWithServeMux,
// FuzzRoutesShortcut). Anything it cannot decide as cheaply (a path that is
// not clean, that has escapes, a pattern with a host or a wildcard first
// segment) goes through ServeMux.
type routes struct {
	*http.ServeMux
	claimed map[string]bool // first segments below /v1/ named by a pattern other than "/v1/"
	mounts  http.Handler    // the handler of "/v1/"; nil: no shortcut
	off     bool            // a pattern the shortcut cannot account for was registered
}

func newRoutes() *routes {
	return &routes{ServeMux: http.NewServeMux(), claimed: map[string]bool{}}
}

// Handle registers handler for pattern, as ServeMux.Handle does.
func (rt *routes) Handle(pattern string, handler http.Handler) {
	rt.ServeMux.Handle(pattern, handler)
	rt.note(pattern, handler)
}

// HandleFunc registers handler for pattern, as ServeMux.HandleFunc does.
func (rt *routes) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	rt.Handle(pattern, http.HandlerFunc(handler))
}

// note records what pattern claims below /v1/.
func (rt *routes) note(pattern string, handler http.Handler) {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = strings.TrimLeft(p, " \t") // the method does not matter: a segment is claimed for all
	}
	if !strings.HasPrefix(pattern, "/") {
		rt.off = true // a host: the shortcut does not compare hosts
		return
	}
	rest, ok := strings.CutPrefix(pattern, "/v1/")
	switch {
	case !ok:
		if strings.HasPrefix(pattern, "/{") {
			rt.off = true // a wildcard first segment may match /v1/ paths
		}
	case rest == "":
		rt.mounts = handler
	default:
		seg, _, _ := strings.Cut(rest, "/")
		if strings.HasPrefix(seg, "{") {
			rt.off = true
			return
		}
		rt.claimed[seg] = true
	}
}

// ServeHTTP serves r by the shortcut when it applies, else by ServeMux.
func (rt *routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := rt.shortcut(r); h != nil {
		r.Pattern = "/v1/"
		h.ServeHTTP(w, r)
		return
	}
	rt.ServeMux.ServeHTTP(w, r)
}

// shortcut returns the catch-all's handler when ServeMux would choose it
// for r without redirecting, and nil when that is not certain.
func (rt *routes) shortcut(r *http.Request) http.Handler {
	if rt.mounts == nil || rt.off || r.Method == http.MethodConnect || r.URL.RawPath != "" {
		return nil
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		return nil
	}
	seg, _, _ := strings.Cut(rest, "/")
	if seg == "" || rt.claimed[seg] || !clean(rest) {
		return nil
	}
	return rt.mounts
}

// clean reports whether p, a path below "/v1/", is one ServeMux serves as
// it is: no empty segment but the last, no "." or ".." segment.
func clean(p string) bool {
	for p != "" {
		seg, rest, more := strings.Cut(p, "/")
		if seg == "." || seg == ".." || (seg == "" && more) {
			return false
		}
		p = rest
	}
	return true
}
