package peering_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestTokensAndSecretsAreSecretToObservers: generating a token and
// establishing a peering are reported to each side's Observer, and
// neither the token nor the establishment and stream secrets show
// through Redact.
func TestTokensAndSecretsAreSecretToObservers(t *testing.T) {
	ctx := context.Background()
	net := &peeringtest.Network{}
	clock := keel.NewFakeClock(t0)
	recs := map[string]*oprecord.Recorder{}
	svcs := map[string]*peering.Service{}
	for dc, addr := range map[string]string{"dc1": "10.0.0.1:8300", "dc2": "10.0.0.2:8300"} {
		recs[dc] = &oprecord.Recorder{}
		svc, err := peering.New(storage.Sub(memstore.New(nil), "peering/"), net, &peering.Options{
			Datacenter: dc, Addresses: []string{addr}, Clock: clock, Logger: quiet(), Observer: recs[dc]})
		if err != nil {
			t.Fatal(err)
		}
		net.Register(addr, svc)
		svcs[dc] = svc
	}
	tok, err := svcs["dc1"].GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svcs["dc2"].Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
		t.Fatal(err)
	}
	for dc, want := range map[string][]string{"dc1": {"peering.GenerateToken", "peering.HandleExchange"}, "dc2": {"peering.Establish"}} {
		ops := recs[dc].Ended()
		var names []string
		for _, op := range ops {
			names = append(names, op.Name)
			for _, v := range []any{op.Input, op.Output} {
				shown := render(keel.Redact(v, func(string) string { return "HIDDEN" }))
				if strings.Contains(shown, tok) {
					t.Errorf("%s: the token shows through Redact: %s", op.Name, shown)
				}
				if strings.Contains(shown, "Secret:") && !strings.Contains(shown, "Secret:HIDDEN") {
					t.Errorf("%s: a secret shows through Redact: %s", op.Name, shown)
				}
			}
		}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("%s: operations %v, want %v", dc, names, want)
		}
	}
	if got := recs["dc1"].Named("peering.GenerateToken")[0].Output; keel.Redact(got, nil).(map[string]any)["Token"] != tok {
		t.Errorf("GenerateToken's Output = %#v, want the token", got)
	}
}

// render prints a redacted tree as name:value pairs, to search it.
func render(v any) string {
	var b strings.Builder
	var walk func(string, any)
	walk = func(name string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		case []any:
			for _, x := range v {
				walk(name, x)
			}
		case string:
			b.WriteString(name + ":" + v + " ")
		}
	}
	walk("", v)
	return b.String()
}
