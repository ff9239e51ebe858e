package peering_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/peering"
)

// FuzzEstablishToken: whatever token a caller sends, Establish answers with
// success or a classified error, never a panic, and a token that is not a
// real one is refused as invalid or unavailable, never taken.
func FuzzEstablishToken(f *testing.F) {
	f.Add("")
	f.Add("not base64!")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"ServerAddresses":["10.0.0.1:8300"],"ServerName":"x","PeerID":"6d3b4f0a-9c1e-4f7a-8a42-0e6f1c2b9d11","EstablishmentSecret":"s","Remote":{"Partition":"default","Datacenter":"dc9"}}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"ServerAddresses":["::1"],"PeerID":"x"}`)))
	f.Fuzz(func(t *testing.T, tok string) {
		w := newWorld(t, everystore.Mem)
		err := w.b.svc.Establish(context.Background(), peering.EstablishRequest{PeerName: "a", PeeringToken: tok})
		if err == nil {
			t.Fatalf("a token no cluster generated was accepted: %q", tok)
		}
		switch keel.KindOf(err) {
		case keel.KindInvalid, keel.KindUnavailable, keel.KindNotFound:
		default:
			t.Fatalf("Establish(%q) = %v: kind %v, want invalid or unavailable", tok, err, keel.KindOf(err))
		}
	})
}
