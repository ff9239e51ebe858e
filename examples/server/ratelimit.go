package main

import (
	"context"
	"net/http"
	"strings"

	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/ratelimit"
	"github.com/keelhq/keel/storage"
)

// rateLimitPrefix is the part of the server's store that keeps the
// rate-limit quotas.
const rateLimitPrefix = "ratelimit/"

// openRateLimits opens the rate-limit quotas (package ratelimit) kept in
// the server's store under rateLimitPrefix, with Vault's default exempt
// paths; the server closes them when it stops. The Vault dialect serves
// them (sys/quotas/rate-limit) and limitRate applies them. With -etcd, a
// quota put through one server applies in the others soon after; each
// server counts its own requests, as each Vault node does.
func openRateLimits(d *deps) (*ratelimit.Limiter, error) {
	l, err := ratelimit.Open(context.Background(), storage.Sub(d.store, rateLimitPrefix), &ratelimit.Options{
		Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger,
	})
	if err != nil {
		return nil, err
	}
	d.onClose(l.Close)
	d.rateLimits = l
	return l, nil
}

// limitRate applies the rate-limit quotas of l to every request of the
// Vault dialect before next acts on it (vault.LimitRate: the path under
// /v1/, the client's IP address from the connection): the paths under /v1/
// but the Consul dialect's (consul.Prefixes). Other requests, and every
// request when l is nil, go to next as they are.
func limitRate(l *ratelimit.Limiter, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	limited := vault.LimitRate(l, next)
	consulPaths := consul.Prefixes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
		if ok {
			for _, p := range consulPaths {
				if strings.HasPrefix(rest, p) || rest == strings.TrimSuffix(p, "/") {
					ok = false
					break
				}
			}
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		limited.ServeHTTP(w, r)
	})
}
