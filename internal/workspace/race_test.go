//go:build race

package workspace_test

func init() { race = true }
