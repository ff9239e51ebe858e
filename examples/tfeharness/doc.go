// Package tfeharness holds tests that run the real tools of HCP Terraform's
// dialect against keel's example server (examples/server): the Terraform
// CLI with the hashicorp/tfe provider, and go-tfe's own integration tests.
// It is a module of its own, outside keel's go.work, so that the examples'
// go.mod stays free of the provider's dependencies; it has no code but its
// tests.
//
// Run it from this directory, without the workspace (.ci/run does):
//
//	GOWORK=off go test -count=1 ./...
//
// What it needs:
//
//   - the Terraform CLI on PATH (the tests fail, naming it, when it is
//     missing: they never skip);
//   - the Go module proxy: the provider is built from this module's tool
//     dependency github.com/hashicorp/terraform-provider-tfe (go build),
//     and go-tfe's integration test files are taken from go-tfe's module
//     (the version keel's examples module requires), copied out of the
//     module cache at test time and compiled there as they are, never
//     committed.
//
// The example server is built from the enclosing examples module (over the
// library of the same tree) and started over a temporary bbolt file with
// -dev-tls and a known -root-token.
//
// # Tests
//
// TestTerraform runs one Terraform working directory per group of
// resources (organization, projects, teams, policies, and all of them in
// one configuration) through apply, plan with no changes, change, plan
// with no changes, import of every resource, plan with no changes, and
// destroy; each step is a subtest, so a failure names its group and step.
// Run one group with -run, for example:
//
//	GOWORK=off go test -count=1 -run 'TestTerraform/teams' ./...
//
// TestGoTFE runs go-tfe's integration tests of organizations, projects,
// workspaces, teams, team project access and policies (ENABLE_TFE=1,
// TFE_ADDRESS, TFE_TOKEN), each top-level test in a process of its own
// (a test that panics ends only its own process). Narrow it with
// TFEHARNESS_GOTFE_RUN, a regular expression of top-level test names.
//
// # Known failures
//
// KNOWN-FAILURES.md lists every Terraform group and go-tfe test that does
// not pass, with what it does (fail or skip) and why. Both tests fail when
// the results differ from the list: a test not listed that fails or skips,
// a listed one that now passes or ends otherwise, and an entry without a
// reason. After a change that makes tests pass, rewrite the list's entries
// from a run (reasons of entries that stay are kept; new ones read TODO
// until someone writes theirs):
//
//	GOWORK=off go test -count=1 ./... -args -update
package tfeharness
