package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelhq/keel/audit"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "audit")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.log")

	file, err := audit.OpenFile(path, nil)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	salt, err := audit.NewSalt(audit.GenerateSalt()) // keep it: hashes stay comparable
	if err != nil {
		panic(err)
	}
	b := audit.NewBroker(nil)
	if err := b.Enable("file/", file, salt); err != nil {
		panic(err)
	}

	// Before the operation acts: a refused record refuses the operation.
	req := &audit.Request{Operation: "update", Path: "secret/app", Data: map[string]any{"password": "hunter2"}}
	if err := b.Record(ctx, &audit.Record{Type: audit.TypeRequest, Request: req}); err != nil {
		panic(err)
	}
	if err := b.Record(ctx, &audit.Record{Type: audit.TypeResponse, Request: req}); err != nil {
		panic(err)
	}

	log, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	h, _ := b.Hash("file/", "hunter2")
	fmt.Println(strings.Contains(string(log), "hunter2"), strings.Count(string(log), h))
	res, err := audit.Verify(strings.NewReader(string(log)))
	fmt.Println(res.Records, err)
	// Output:
	// false 2
	// 2 <nil>
}
