package vault

import (
	"context"
	"errors"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ratelimit"
)

// rateLimitRoutes are Vault's sys/quotas/rate-limit endpoints, served by
// Options.RateLimits; none without it.
func (h *Handler) rateLimitRoutes() []route {
	l := h.rateLimits
	if l == nil {
		return nil
	}
	const quotas = "/v1/sys/quotas/rate-limit"
	list := listing(mountSystem, "LIST", func(ctx context.Context) ([]string, error) {
		qs, err := l.List(ctx)
		names := make([]string, len(qs))
		for i, q := range qs {
			names[i] = q.Name
		}
		return names, err
	})
	return []route{
		{"GET", quotas + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			q, err := l.Get(r.Context(), r.PathValue("name"))
			writeData(w, missing(err), newResponse(mountSystem, &rateLimitData{
				BlockInterval: seconds(q.BlockInterval), Inheritable: q.Path == "", Interval: seconds(q.Interval),
				Name: q.Name, Path: q.Path, Rate: q.Rate, Type: "rate-limit",
			}))
		}},
		{"POST PUT", quotas + "/{name}", h.writeRateLimit},
		{"DELETE", quotas + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			err := l.Delete(r.Context(), r.PathValue("name"))
			if keel.KindOf(err) == keel.KindNotFound {
				err = nil // Vault deletes a missing quota with 204
			}
			writeDone(w, err)
		}},
		{"LIST GET", quotas, list},
		{"LIST GET", quotas + "/{$}", list},
	}
}

// rateLimitFields are the fields of a rate-limit quota write Vault knows;
// anything else is refused, naming it.
var rateLimitFields = []string{"name", "path", "type", "rate", "interval", "block_interval", "role", "inheritable"}

// rateLimitData is a rate-limit quota as Vault reads it, members in the
// order of their names; intervals in whole seconds.
type rateLimitData struct {
	BlockInterval int64   `json:"block_interval"`
	Inheritable   bool    `json:"inheritable"`
	Interval      int64   `json:"interval"`
	Name          string  `json:"name"`
	Path          string  `json:"path"`
	Rate          float64 `json:"rate"`
	Role          string  `json:"role"`
	Type          string  `json:"type"`
}

// writeRateLimit creates or replaces a rate-limit quota, as Vault's: the
// body is the whole quota (a field it does not give is the field's
// default, the rate included, which must be given).
func (h *Handler) writeRateLimit(w http.ResponseWriter, r *http.Request) {
	q, err := readBody(w, r, func(f *fields) ratelimit.Quota {
		for _, k := range slices.Sorted(maps.Keys(f.m)) {
			if !slices.Contains(rateLimitFields, k) {
				f.v.Add(k, "is not a field of a rate limit quota")
			}
		}
		if f.str("role") != "" {
			f.v.Add("role", "roles restrict the logins of auth mounts, which keel does not serve")
		}
		q := ratelimit.Quota{
			Name: r.PathValue("name"), Path: strings.TrimPrefix(f.str("path"), "/"), Rate: f.float("rate"),
			Interval: f.duration("interval"), BlockInterval: f.duration("block_interval"),
		}
		if f.m["inheritable"] != nil {
			switch inherit := f.boolean("inheritable"); {
			case inherit && q.Path != "":
				f.v.Add("inheritable", "only namespace quotas can be configured as inheritable")
			case !inherit && q.Path == "":
				f.v.Add("inheritable", "all global quotas must be inheritable")
			}
		}
		return q
	})
	if err == nil {
		_, err = h.rateLimits.Put(r.Context(), q)
	}
	writeDone(w, err)
}

// float reads the field k as a number: a JSON number or a string of one,
// an empty string or null being 0.
func (f *fields) float(k string) float64 {
	s, ok := f.text(k)
	s = strings.TrimSpace(s)
	if !ok {
		f.v.Add(k, "must be a number")
		return 0
	}
	if s == "" {
		return 0
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		f.v.Add(k, "must be a number")
		return 0
	}
	return x
}

// LimitRate returns next behind the rate-limit quotas of l, checked before
// next acts, as Vault checks them: the request's path is its URL path
// under /v1/ (a request outside /v1/ goes to next unchecked), its client
// the IP address of its RemoteAddr (http.Server sets it to the peer's
// address; a program behind a proxy sets it from the proxy's header before
// LimitRate, as Vault's x_forwarded_for settings do). A refused request
// answers 429 with Vault's message, "request path \"p\": rate limit quota
// exceeded", a Retry-After header (whole seconds, rounded up) and, when
// the client's window refused it, X-Ratelimit-Limit, X-Ratelimit-Remaining
// (0) and X-Ratelimit-Reset (seconds until the window ends), Vault's
// headers; a limiter that fails answers its error (503 once closed).
func LimitRate(l *ratelimit.Limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, "/v1/")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		client, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			client = r.RemoteAddr
		}
		err = l.Allow(r.Context(), path, client)
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		var qe *ratelimit.QuotaError
		if !errors.As(err, &qe) {
			writeError(w, err)
			return
		}
		after := strconv.FormatInt(int64((qe.RetryAfter+time.Second-1)/time.Second), 10)
		hd := w.Header()
		hd.Set("Retry-After", after)
		if !qe.Blocked {
			hd.Set("X-Ratelimit-Limit", strconv.Itoa(qe.Limit))
			hd.Set("X-Ratelimit-Remaining", "0")
			hd.Set("X-Ratelimit-Reset", after)
		}
		writeMessage(w, http.StatusTooManyRequests, "request path "+strconv.Quote(qe.RequestPath)+": rate limit quota exceeded")
	})
}
