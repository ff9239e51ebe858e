// Package randid draws the random parts of the ids and tokens keel makes:
// one generator, uniform over its alphabet, from crypto/rand.
package randid

import "crypto/rand"

// The alphabets of the ids keel makes.
const (
	// Base62 is digits and letters: lease ids, tokens.
	Base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// Base58 is Base62 without 0, O, I and l, the alphabet of HCP
	// Terraform's ids.
	Base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
)

// String returns n characters of alphabet (at most 256 characters long)
// drawn uniformly from crypto/rand: a byte at or above the largest
// multiple of len(alphabet) that fits in a byte is drawn again, so that no
// character is likelier than another.
func String(alphabet string, n int) string {
	return string(Append(make([]byte, 0, n), alphabet, n))
}

// Append appends n characters drawn as String draws them to b.
func Append(b []byte, alphabet string, n int) []byte {
	limit := 256 - 256%len(alphabet)
	var buf [32]byte
	for end := len(b) + n; len(b) < end; {
		rand.Read(buf[:]) // never fails: crypto/rand crashes the program instead
		for _, c := range buf {
			if int(c) < limit && len(b) < end {
				b = append(b, alphabet[int(c)%len(alphabet)])
			}
		}
	}
	return b
}
