// Package workspace has no code: its test runs the tests of keel's other
// modules, so that go test ./... at the root of the repository runs the
// whole suite.
//
// The go.work at the root joins the library's module with the modules of
// the examples (examples/go.mod) and of the benchmarks (bench/go.mod), which
// keep the clients of the imitated systems (go-tfe, consul/api, vault/api)
// and the etcd server out of the library's go.mod. In workspace mode the
// pattern ./... at the root still matches the root module's packages only:
// the go command skips directories that hold a go.mod (golang/go#50745).
// TestModules runs go test ./... in each other module of the workspace, with
// the flags of its own run (-run, -bench, -count, -race, -v, ...), its
// output going to this package's: shown with -v or when it fails.
//
// Outside keel's workspace (GOWORK=off, or a copy of the module without its
// go.work) it runs nothing: go test the examples' and the benchmarks' modules
// from their directories then.
package workspace
