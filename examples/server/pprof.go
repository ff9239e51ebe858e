package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
)

// startPprof serves net/http/pprof's handlers on addr, on a listener and a
// mux of their own, so that profiling is never reachable through the API
// listener and never on unless asked for (-pprof). The endpoints require no
// token: bind them to a loopback address. It returns the address it
// listens on, and a function that stops the server and waits for it.
func startPprof(ctx context.Context, addr string, logger *slog.Logger) (listening string, stop func() error, err error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("pprof listening", "addr", ln.Addr().String())
	return ln.Addr().String(), func() error {
		err := srv.Close()
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}, nil
}
