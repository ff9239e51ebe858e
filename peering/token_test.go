package peering_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/peering"
)

func TestGenerateTokenValidation(t *testing.T) {
	bigMeta := map[string]string{}
	for i := range 64 + 1 { // one pair more than the 64 allowed
		bigMeta[strings.Repeat("k", i+1)] = "v"
	}
	tests := []struct {
		name  string
		req   peering.TokenRequest
		field string
	}{
		{"name required", peering.TokenRequest{}, "PeerName"},
		{"name upper case", peering.TokenRequest{PeerName: "Peer"}, "PeerName"},
		{"name starts with dash", peering.TokenRequest{PeerName: "-peer"}, "PeerName"},
		{"name ends with dash", peering.TokenRequest{PeerName: "peer-"}, "PeerName"},
		{"name with dot", peering.TokenRequest{PeerName: "a.b"}, "PeerName"},
		{"name of 64", peering.TokenRequest{PeerName: strings.Repeat("a", 64)}, "PeerName"},
		{"partition not default", peering.TokenRequest{PeerName: "p", Partition: "eng"}, "Partition"},
		{"address without port", peering.TokenRequest{PeerName: "p", ServerExternalAddresses: []string{"10.0.0.9"}}, "ServerExternalAddresses"},
		{"address with bad port", peering.TokenRequest{PeerName: "p", ServerExternalAddresses: []string{"h:99999"}}, "ServerExternalAddresses"},
		{"meta more than 64 keys", peering.TokenRequest{PeerName: "p", Meta: bigMeta}, "Meta"},
		{"meta key longer than 128", peering.TokenRequest{PeerName: "p", Meta: map[string]string{strings.Repeat("k", 129): "v"}}, "Meta"},
		{"meta value longer than 512", peering.TokenRequest{PeerName: "p", Meta: map[string]string{"k": strings.Repeat("v", 513)}}, "Meta"},
		{"meta empty key", peering.TokenRequest{PeerName: "p", Meta: map[string]string{"": "v"}}, "Meta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, everystore.Mem)
			_, err := w.a.svc.GenerateToken(context.Background(), tt.req)
			wantKind(t, err, keel.KindInvalid)
			fes := keel.FieldErrors(err)
			if len(fes) == 0 || fes[0].Field != tt.field {
				t.Fatalf("field errors %v, want field %s", fes, tt.field)
			}
		})
	}
}

func TestGenerateTokenAcceptsLimits(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		meta := map[string]string{strings.Repeat("k", 128): strings.Repeat("v", 512)}
		for _, name := range []string{"a", "0", "a-b", strings.Repeat("z", 63)} {
			if _, err := w.a.svc.GenerateToken(context.Background(), peering.TokenRequest{PeerName: name, Meta: meta, Partition: "default"}); err != nil {
				t.Fatalf("GenerateToken(%q): %v", name, err)
			}
		}
	})
}

func TestGenerateTokenNeedsAnAddress(t *testing.T) {
	w := newWorld(t, everystore.Mem)
	svc, err := peering.New(w.a.store, w.net, &peering.Options{Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.GenerateToken(context.Background(), peering.TokenRequest{PeerName: "p"})
	wantKind(t, err, keel.KindInvalid)
}

func TestTokenContent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		tok, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b", ServerExternalAddresses: []string{"lb.example.com:443"}})
		if err != nil {
			t.Fatal(err)
		}
		m := decodeToken(t, tok)
		p := read(t, w.a, "b")
		remote, _ := m["Remote"].(map[string]any)
		switch {
		case m["PeerID"] != p.ID:
			t.Errorf("PeerID %v, want %s", m["PeerID"], p.ID)
		case m["EstablishmentSecret"] == "":
			t.Errorf("no secret")
		case m["ServerName"] != "server.dc1.peering.keel":
			t.Errorf("ServerName %v", m["ServerName"])
		case !slices.Equal(toStrings(m["ServerAddresses"]), []string{"lb.example.com:443"}):
			t.Errorf("ServerAddresses %v", m["ServerAddresses"])
		case remote["Datacenter"] != "dc1" || remote["Partition"] != "default":
			t.Errorf("Remote %v", remote)
		}
		wantState(t, p, peering.StateInitial)
	})
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestGenerateAgainKeepsIDAndReplacesSecret(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		first, _ := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		second, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		if err != nil {
			t.Fatal(err)
		}
		m1, m2 := decodeToken(t, first), decodeToken(t, second)
		if m1["PeerID"] != m2["PeerID"] || m1["EstablishmentSecret"] == m2["EstablishmentSecret"] {
			t.Fatalf("tokens %v and %v: want same PeerID, new secret", m1, m2)
		}
		err = w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: first})
		wantKind(t, err, keel.KindInvalid)
		if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: second}); err != nil {
			t.Fatalf("Establish with the new token: %v", err)
		}
	})
}

func TestEstablishActivatesBothSides(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		w.peer(t)
		a, b := read(t, w.a, "b"), read(t, w.b, "a")
		wantState(t, a, peering.StateActive)
		wantState(t, b, peering.StateActive)
		if a.PeerID != b.ID || b.PeerID != a.ID {
			t.Errorf("ids: a %s peer %s, b %s peer %s", a.ID, a.PeerID, b.ID, b.PeerID)
		}
		if a.Remote != (peering.Remote{Partition: "default", Datacenter: "dc2"}) || b.Remote != (peering.Remote{Partition: "default", Datacenter: "dc1"}) {
			t.Errorf("remotes %+v %+v", a.Remote, b.Remote)
		}
		if !slices.Equal(b.PeerServerAddresses, []string{w.a.addr}) || b.PeerServerName != "server.dc1.peering.keel" {
			t.Errorf("b knows a as %v %s", b.PeerServerAddresses, b.PeerServerName)
		}
		if !b.StreamStatus.LastHeartbeat.Equal(t0) || !a.StreamStatus.LastReceive.Equal(t0) {
			t.Errorf("stream status %+v %+v", a.StreamStatus, b.StreamStatus)
		}
	})
}

func TestEstablishValidation(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		good, _ := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		m := decodeToken(t, good)
		with := func(k string, v any) string {
			c := map[string]any{}
			for kk, vv := range m {
				c[kk] = vv
			}
			c[k] = v
			return encodeToken(t, c)
		}
		own, _ := w.b.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "x"})
		if _, err := w.b.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "taken"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name  string
			req   peering.EstablishRequest
			field string
		}{
			{"name required", peering.EstablishRequest{PeeringToken: good}, "PeerName"},
			{"name not a label", peering.EstablishRequest{PeerName: "A_1", PeeringToken: good}, "PeerName"},
			{"token required", peering.EstablishRequest{PeerName: "a"}, "PeeringToken"},
			{"token not base64", peering.EstablishRequest{PeerName: "a", PeeringToken: "%%%"}, "PeeringToken"},
			{"token not JSON", peering.EstablishRequest{PeerName: "a", PeeringToken: "bm90IGpzb24="}, "PeeringToken"},
			{"token without address", peering.EstablishRequest{PeerName: "a", PeeringToken: with("ServerAddresses", []string{})}, "PeeringToken"},
			{"token with bad address", peering.EstablishRequest{PeerName: "a", PeeringToken: with("ServerAddresses", []string{"nope"})}, "PeeringToken"},
			{"token without peer id", peering.EstablishRequest{PeerName: "a", PeeringToken: with("PeerID", "")}, "PeeringToken"},
			{"token of own cluster", peering.EstablishRequest{PeerName: "a", PeeringToken: own}, "PeeringToken"},
			{"name used by an acceptor", peering.EstablishRequest{PeerName: "taken", PeeringToken: good}, "PeerName"},
			{"partition not default", peering.EstablishRequest{PeerName: "a", PeeringToken: good, Partition: "x"}, "Partition"},
			{"meta value too long", peering.EstablishRequest{PeerName: "a", PeeringToken: good, Meta: map[string]string{"k": strings.Repeat("v", 513)}}, "Meta"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := w.b.svc.Establish(ctx, tt.req)
				wantKind(t, err, keel.KindInvalid)
				fes := keel.FieldErrors(err)
				if len(fes) == 0 || fes[0].Field != tt.field {
					t.Fatalf("field errors %v, want field %s", fes, tt.field)
				}
			})
		}
		wantState(t, read(t, w.a, "b"), peering.StateInitial)
	})
}

func TestEstablishUsedSecretRefused(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		tok, _ := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
			t.Fatal(err)
		}
		c := w.add(t, "dc3", "10.0.0.3:8300", everystore.Another(t, w.b.store), nil)
		err := c.svc.Establish(ctx, peering.EstablishRequest{PeerName: "again", PeeringToken: tok})
		wantKind(t, err, keel.KindInvalid)
	})
}

func TestEstablishUnreachable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		tok, _ := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		w.net.SetDown(w.a.addr, true)
		err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok})
		wantKind(t, err, keel.KindUnavailable)
		_, _, err = w.b.svc.Get(ctx, "a", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
		w.net.SetDown(w.a.addr, false)
		if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
			t.Fatalf("the unused token works once the peer is back: %v", err)
		}
	})
}

func TestEstablishAgainKeepsID(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		w.peer(t)
		before := read(t, w.b, "a")
		w.peer(t)
		after := read(t, w.b, "a")
		if before.ID != after.ID || after.CreateIndex != before.CreateIndex || after.ModifyIndex <= before.ModifyIndex {
			t.Fatalf("before %+v after %+v", before, after)
		}
	})
}

func TestGenerateTokenForDialedNameRefused(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		w.peer(t)
		_, err := w.b.svc.GenerateToken(context.Background(), peering.TokenRequest{PeerName: "a"})
		wantKind(t, err, keel.KindInvalid)
	})
}
