package kv_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	root := memstore.New(nil)
	defer root.Close()

	// The engine mounted at "secret" keeps its keys under "kv/secret/".
	engine, err := kv.New(storage.Sub(root, "kv/secret/"), "secret", nil)
	if err != nil {
		panic(err)
	}

	err = engine.Write(ctx, "app/db", map[string]any{"username": "app", "password": "s3cr3t", "ttl": "1h"})
	if err != nil {
		panic(err)
	}
	err = engine.Write(ctx, "app/api", map[string]any{"token": "t0k3n", "port": 8443})
	if err != nil {
		panic(err)
	}

	db, err := engine.Read(ctx, "app/db")
	if err != nil {
		panic(err)
	}
	fmt.Println(db.Data["password"], db.LeaseDuration)

	api, err := engine.Read(ctx, "app/api")
	if err != nil {
		panic(err)
	}
	fmt.Println(api.Data["port"], api.LeaseDuration) // a json.Number; the mount's default

	top, _ := engine.List(ctx, "", keel.ListRequest{})
	app, _ := engine.List(ctx, "app", keel.ListRequest{})
	fmt.Println(top.Items, app.Items)

	// A write replaces every pair at the path.
	if err := engine.Write(ctx, "app/db", map[string]any{"password": "n3w"}); err != nil {
		panic(err)
	}
	db, _ = engine.Read(ctx, "app/db")
	fmt.Println(db.Data)

	if err := engine.Delete(ctx, "app/db"); err != nil {
		panic(err)
	}
	_, err = engine.Read(ctx, "app/db")
	fmt.Println(errors.Is(err, keel.KindNotFound))

	err = engine.Write(ctx, "app/db", map[string]any{})
	fmt.Println(err)
	// Output:
	// s3cr3t 1h0m0s
	// 8443 768h0m0s
	// [app/] [api db]
	// map[password:n3w]
	// true
	// kv: write "app/db": invalid request: Data: missing data fields
}

// A caller allowed only to create can add secrets but not change them.
func ExampleEngine_Write() {
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"onboarding": {{Path: "secret/users/*", Capabilities: []keel.Capability{keel.CapCreate}}},
	})
	if err != nil {
		panic(err)
	}
	store := memstore.New(nil)
	defer store.Close()
	engine, err := kv.New(store, "secret", &kv.Options{Authorizer: authz})
	if err != nil {
		panic(err)
	}
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "bot", Policies: []string{"onboarding"}})

	fmt.Println(engine.Write(ctx, "users/ada", map[string]any{"password": "first"}))
	err = engine.Write(ctx, "users/ada", map[string]any{"password": "second"})
	fmt.Println(errors.Is(err, keel.KindForbidden))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// kv: write "users/ada": bot lacks "update" on "secret/users/ada": forbidden
}
