// Package sealstore encrypts the values of a storage.Store at rest with
// AES-256-GCM, so that secrets never reach the disk in clear.
//
// # Basics
//
// New wraps a store with an active key and, in Options.Previous, any number
// of previous keys.
// Every value written is sealed with the active key; every value read is
// opened with whichever configured key sealed it. A sealed value is
//
//	0x01 | key id (4 bytes) | nonce (12 bytes) | ciphertext and tag
//
// where the key id is derived from the key (KeyID) and the nonce is random.
// The value's key (its path in the store) is the additional authenticated
// data: a sealed value copied to another key does not open.
//
// # Key rotation
//
// Make the new key the active one and put the old one in Options.Previous:
// new writes use the new key and old values still open. Reseal rewrites old values with the new
// key, in transactions sized from the underlying store's limits
// (storage.Batch), and leaves the values sealed with the new key as they
// are: interrupted, it is run again. After it, the old key may be dropped.
//
// # Errors
//
// A value sealed with a key that is not configured is keel.KindUnavailable,
// naming the key id. A value that does not authenticate (wrong key with the
// same id, altered bytes, a value moved from another key, or a value that
// was never sealed) is keel.KindInternal. Garbage is never returned.
//
// # Caveats
//
// Keys (paths) are stored in clear: never put a secret in a key. Random
// nonces bound a key to about 2^32 writes; rotate keys well before that.
package sealstore
