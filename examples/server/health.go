package main

import (
	"runtime/debug"
)

const keelModule = "github.com/keelhq/keel"

// keelVersion returns the version of the keel module built into the
// program, or "dev" when it has none (a build inside keel's own source
// tree, go run, go test). The Vault adapter answers it in sys/health and
// sys/seal-status.
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

// buildDate returns the time of the commit the program was built from
// (the vcs.time of its build information), RFC 3339, or "" when the build
// did not record it (go run, go test).
func buildDate() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			return s.Value
		}
	}
	return ""
}

// storageType names the store of opts as sys/seal-status reports it:
// "etcd", "inmem" for the memory store (Vault's name), or "bolt".
func storageType(opts options) string {
	switch {
	case opts.etcd != "":
		return "etcd"
	case opts.data == memoryData:
		return "inmem"
	}
	return "bolt"
}
