package tfe

import (
	"encoding/json"
	"net/http"
)

// DiscoveryPath is where Terraform's remote service discovery looks for a
// host's services: the tfe provider (and the Terraform CLI) ask
// https://HOSTNAME/.well-known/terraform.json, always over https.
const DiscoveryPath = "/.well-known/terraform.json"

// discoveryDocument names the API versions of this adapter as HCP Terraform
// names them. The tfe provider v0.79 asks for "tfe.v2.2"; "tfe.v2" and
// "tfe.v2.1" are older names of the same API, which older clients ask for.
// The URL is relative: clients resolve it against the discovery document's
// own URL, so the scheme and host are the ones the client used.
var discoveryDocument = []byte(`{"tfe.v2":"/api/v2/","tfe.v2.1":"/api/v2/","tfe.v2.2":"/api/v2/"}` + "\n")

// DiscoveryHandler serves the remote service discovery document of a host
// that serves this adapter's routes (Register) at /api/v2: mount it at
// "GET " + DiscoveryPath. It needs no token, as HCP Terraform's does not.
// With it, the tfe provider needs nothing but its hostname: no "host"
// block in the Terraform CLI configuration.
//
// A host serves one discovery document: a program that serves other
// Terraform services too (a module registry, say) writes its own document
// with these three entries in it.
func DiscoveryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(discoveryDocument)
	})
}

// DiscoveryServices returns the entries of the discovery document that
// DiscoveryHandler serves: service id → base URL of the API.
func DiscoveryServices() map[string]string {
	var m map[string]string
	if err := json.Unmarshal(discoveryDocument, &m); err != nil {
		panic(err) // a constant
	}
	return m
}
