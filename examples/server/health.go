package main

import (
	"encoding/json"
	"net/http"
	"runtime/debug"
)

// healthResponse is the body of GET /v1/sys/health, shaped like Vault's so
// that existing health checks and load balancers understand it.
type healthResponse struct {
	Initialized   bool   `json:"initialized"`
	Sealed        bool   `json:"sealed"`
	Standby       bool   `json:"standby"`
	ServerTimeUTC int64  `json:"server_time_utc"`
	Version       string `json:"version"`
}

// mountHealth serves GET (and HEAD) /v1/sys/health. It needs no token. A
// running server is always initialized, unsealed (a sealed store gets its
// keys at start-up) and active.
func mountHealth(mux *http.ServeMux, d *deps) error {
	version := keelVersion()
	mux.HandleFunc("GET /v1/sys/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(healthResponse{
			Initialized:   true,
			ServerTimeUTC: d.clock.Now().Unix(),
			Version:       version,
		})
	})
	return nil
}

const keelModule = "github.com/keelhq/keel"

// keelVersion returns the version of the keel module built into the
// program, or "dev" when it has none (a build inside keel's own source
// tree, go run, go test).
func keelVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := ""
	if bi.Main.Path == keelModule {
		v = bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == keelModule {
			v = m.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "dev"
	}
	return v
}
