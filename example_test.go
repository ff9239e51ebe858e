package keel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
)

func ExampleKindOf() {
	err := fmt.Errorf("loading user 42: %w", keel.KindNotFound)
	fmt.Println(keel.KindOf(err))
	fmt.Println(errors.Is(err, keel.KindNotFound))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(keel.KindOf(fmt.Errorf("listing: %w", ctx.Err())))

	fmt.Println(keel.KindOf(errors.New("boom")))
	fmt.Println(keel.KindOf(nil))
	// Output:
	// not found
	// true
	// canceled
	// unknown error
	// no error
}

func ExampleValidation() {
	name, size := "", 12

	var v keel.Validation
	if name == "" {
		v.Add("name", "is required")
	}
	if size > 10 {
		v.Add("size", "must be at most %d, got %d", 10, size)
	}
	err := v.Err()

	fmt.Println(err)
	fmt.Println(keel.KindOf(err), errors.Is(err, keel.KindInvalid))
	for _, fe := range keel.FieldErrors(fmt.Errorf("creating volume: %w", err)) {
		fmt.Printf("%s -> %s\n", fe.Field, fe.Rule)
	}
	// Output:
	// invalid request: name: is required; size: must be at most 10, got 12
	// invalid true
	// name -> is required
	// size -> must be at most 10, got 12
}

func ExampleRuleAuthorizer() {
	auth, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"readers": {
			{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}},
			{Path: "identity/group/+/members", Capabilities: []keel.Capability{keel.CapRead}},
		},
		"no-prod": {
			{Path: "secret/prod/*", Capabilities: []keel.Capability{keel.CapDeny}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := keel.WithPrincipal(context.Background(), keel.Principal{
		ID:       "alice",
		Policies: []string{"readers", "no-prod"},
	})
	check := func(c keel.Capability, resource string) {
		if err := keel.Authorize(ctx, auth, c, resource); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("alice may %s %q\n", c, resource)
	}
	check(keel.CapRead, "secret/app/db")
	check(keel.CapRead, "identity/group/ops/members")
	check(keel.CapDelete, "secret/app/db")
	check(keel.CapRead, "secret/prod/db")
	check(keel.CapRead, "secretx")

	_, err = keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"bad": {{Path: "secret/*/db", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	fmt.Println(keel.KindOf(err))
	for _, fe := range keel.FieldErrors(err) {
		fmt.Printf("%s: %s\n", fe.Field, fe.Rule)
	}
	// Output:
	// alice may read "secret/app/db"
	// alice may read "identity/group/ops/members"
	// alice lacks "delete" on "secret/app/db": forbidden
	// alice lacks "read" on "secret/prod/db": forbidden
	// alice lacks "read" on "secretx": forbidden
	// invalid
	// Policies["bad"][0].Path: "secret/*/db": "*" is allowed only at the end
}

func ExampleFakeClock() {
	clock := keel.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	timer := clock.NewTimer(time.Minute)
	fmt.Println("waiting timers:", clock.Timers())

	clock.Advance(59 * time.Second)
	select {
	case <-timer.C():
		fmt.Println("fired early")
	default:
		fmt.Println("not yet at", clock.Now().Format(time.TimeOnly))
	}

	clock.Advance(time.Second)
	select {
	case now := <-timer.C():
		fmt.Println("fired at", now.Format(time.TimeOnly))
	default:
		fmt.Println("did not fire")
	}
	fmt.Println("waiting timers:", clock.Timers())
	// Output:
	// waiting timers: 1
	// not yet at 00:00:59
	// fired at 00:01:00
	// waiting timers: 0
}
