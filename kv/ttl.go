package kv

const (
	// ttlKey is the key whose value reads report as their lease duration.
	ttlKey = "ttl"
	// legacyTTLKey is read, as in Vault, when there is no ttlKey.
	legacyTTLKey = "lease"
)
