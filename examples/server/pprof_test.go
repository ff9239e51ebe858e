package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
)

func TestPprof(t *testing.T) {
	addr, stop, err := startPprof(context.Background(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline"); err == nil {
		resp.Body.Close()
		t.Error("pprof still answers after stop")
	}
}

func TestPprofFlag(t *testing.T) {
	o, err := parseFlags([]string{"-pprof", "127.0.0.1:6060"}, io.Discard)
	if err != nil || o.pprofAddr != "127.0.0.1:6060" {
		t.Errorf("parseFlags: %+v, %v", o, err)
	}
	if o, _ := parseFlags(nil, io.Discard); o.pprofAddr != "" {
		t.Errorf("pprof on by default: %q", o.pprofAddr)
	}
}
