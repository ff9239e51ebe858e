package passwordpolicy_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	policies, err := passwordpolicy.New(memstore.New(nil), nil)
	if err != nil {
		panic(err)
	}
	const text = `length = 12
rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}
rule "charset" {
  charset = "0123456789"
  min-chars = 2
}`
	if err := policies.Put(ctx, "app", text); err != nil {
		panic(err)
	}
	pw, err := policies.Generate(ctx, "app")
	if err != nil {
		panic(err)
	}
	p, err := passwordpolicy.Parse(text)
	if err != nil {
		panic(err)
	}
	page, _ := policies.List(ctx, keel.ListRequest{})
	fmt.Println(page.Items, len(pw), p.Meets(pw))
	// Output: [app] 12 true
}
