package consul

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
)

// HTTPTransport is a peering.Transport over HTTP: it posts each message
// as JSON to a peer server's /v1/internal/peering/ paths, which a Handler
// serves. Addresses are tried in order until one answers. The zero value
// uses http.DefaultClient and plain HTTP; it is safe for concurrent use.
type HTTPTransport struct {
	// Client sends the requests. Nil: http.DefaultClient.
	Client *http.Client
	// Scheme is "http" or "https". Empty: "http".
	Scheme string
}

var _ peering.Transport = (*HTTPTransport)(nil)

// Exchange implements peering.Transport. A secret the acceptor refuses
// (403 from its exchange path) gives an error of kind keel.KindInvalid on
// "PeeringToken", as package peering's own refusal; the Handler's
// establish route answers it 403, as Consul.
func (t *HTTPTransport) Exchange(ctx context.Context, addrs []string, req *peering.ExchangeRequest) (*peering.ExchangeResponse, error) {
	var resp peering.ExchangeResponse
	return &resp, t.post(ctx, addrs, pathExchange, req, &resp)
}

// Heartbeat implements peering.Transport.
func (t *HTTPTransport) Heartbeat(ctx context.Context, addrs []string, req *peering.HeartbeatRequest) (*peering.HeartbeatResponse, error) {
	var resp peering.HeartbeatResponse
	return &resp, t.post(ctx, addrs, pathHeartbeat, req, &resp)
}

// Terminate implements peering.Transport.
func (t *HTTPTransport) Terminate(ctx context.Context, addrs []string, req *peering.TerminateRequest) error {
	return t.post(ctx, addrs, pathTerminate, req, nil)
}

func (t *HTTPTransport) post(ctx context.Context, addrs []string, path string, in, out any) error {
	client, scheme := t.Client, t.Scheme
	if client == nil {
		client = http.DefaultClient
	}
	if scheme == "" {
		scheme = "http"
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("peering message: %v: %w", err, keel.KindInternal)
	}
	last := fmt.Errorf("no peer server address: %w", keel.KindUnavailable)
	for _, addr := range addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+path, bytes.NewReader(body))
		if err != nil {
			last = fmt.Errorf("peer %s: %v: %w", addr, err, keel.KindUnavailable)
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = fmt.Errorf("peer %s: %v: %w", addr, err, keel.KindUnavailable)
			continue
		}
		msg, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
		resp.Body.Close()
		if err != nil {
			last = fmt.Errorf("peer %s: %v: %w", addr, err, keel.KindUnavailable)
			continue
		}
		if resp.StatusCode == http.StatusForbidden && path == pathExchange {
			// Package peering's kind for a refused secret, marked so
			// that the establish route answers 403.
			return fmt.Errorf("%w (%w)", keel.Invalid("PeeringToken", "peer %s: %s", addr, msg), errRefused)
		}
		if resp.StatusCode != http.StatusOK {
			kind, ok := kindOf[resp.StatusCode]
			if !ok {
				kind = keel.KindUnavailable
			}
			if kind == keel.KindInvalid {
				return keel.Invalid("PeeringToken", "peer %s: %s", addr, msg)
			}
			return fmt.Errorf("peer %s: %s: %w", addr, msg, kind)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(msg, out); err != nil {
			return fmt.Errorf("peer %s: %v: %w", addr, err, keel.KindUnavailable)
		}
		return nil
	}
	return last
}

// errRefused marks the error of Exchange when the acceptor refused the
// establishment secret (403 from its exchange path): the secret was used,
// or replaced by a newer token, or its peering is gone. The error is of
// kind keel.KindInvalid, as package peering's own.
var errRefused = errors.New("the peer refused the establishment secret")

// exchange serves the acceptor's side of Establish. Package peering
// refuses a secret it does not accept (used, replaced, or of a peering
// gone) as invalid: it answers 403, as Consul's acceptor answers
// PermissionDenied, so that the dialer's HTTPTransport tells it from a
// request it could not read (400).
func (h *Handler) exchange(w http.ResponseWriter, r *http.Request) {
	serve(w, r, http.MethodPost, func(ctx context.Context, req *peering.ExchangeRequest) (*peering.ExchangeResponse, error) {
		resp, err := h.svc.HandleExchange(ctx, req)
		if keel.KindOf(err) == keel.KindInvalid {
			return nil, &answer{http.StatusForbidden, consulWording(err.Error())}
		}
		return resp, err
	})
}

func (h *Handler) heartbeat(w http.ResponseWriter, r *http.Request) {
	serve(w, r, http.MethodPost, h.svc.HandleHeartbeat)
}

func (h *Handler) terminate(w http.ResponseWriter, r *http.Request) {
	serve(w, r, http.MethodPost, func(ctx context.Context, req *peering.TerminateRequest) (struct{}, error) {
		return struct{}{}, h.svc.HandleTerminate(ctx, req)
	})
}
