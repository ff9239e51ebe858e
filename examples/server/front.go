package main

import (
	"net/http"

	"github.com/keelhq/keel"
)

// front is the server's outermost handler, authenticate and
// observeRequests in one: with tokens, it puts the principal of the
// request's token in its context; with obs, it reports the request and
// gives it its statusRecorder, whose keel.Reserver (limitBodies) it puts
// in the context too. The request is copied once for all of it, not once
// by each. Without tokens and obs it is next.
func front(tokens *tokenTable, obs keel.Observer, clock keel.Clock, next http.Handler) http.Handler {
	if tokens == nil && obs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if tokens != nil {
			if p, ok := tokens.lookup(requestToken(r)); ok {
				ctx = keel.WithPrincipal(ctx, p)
			}
		}
		if obs == nil {
			if ctx != r.Context() {
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
			return
		}
		ctx, op, err := keel.Begin(ctx, obs, clock, requestOp, r.Method+" "+r.URL.Path, nil)
		if err != nil {
			refuse(w, r, http.StatusServiceUnavailable, "the request was not recorded: "+err.Error())
			return
		}
		rec := &statusRecorder{ResponseWriter: w, reserving: true}
		r = r.WithContext(keel.WithReserver(ctx, rec.reserve))
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		res := &rec.result // with the recorder: one allocation for both
		*res = httpResult{Status: rec.status, Bytes: rec.bytes}
		if res.Status >= 400 {
			op.End(nil, res)
		} else {
			op.End(res, nil)
		}
	})
}
