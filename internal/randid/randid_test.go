package randid

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestUniform: every character of the alphabet is drawn, none far more
// often than another (a chi-squared bound that a biased draw, such as a
// plain byte modulo 62, fails), and nothing outside the alphabet.
func TestUniform(t *testing.T) {
	for _, alphabet := range []string{Base62, Base58} {
		const n = 620_000
		s := String(alphabet, n)
		if len(s) != n {
			t.Fatalf("%d characters, want %d", len(s), n)
		}
		counts := map[rune]int{}
		for _, c := range s {
			if !strings.ContainsRune(alphabet, c) {
				t.Fatalf("%q is not of the alphabet", c)
			}
			counts[c]++
		}
		if len(counts) != len(alphabet) {
			t.Fatalf("%d characters drawn of %d", len(counts), len(alphabet))
		}
		want := float64(n) / float64(len(alphabet))
		chi := 0.0
		for _, got := range counts {
			chi += math.Pow(float64(got)-want, 2) / want
		}
		// Degrees of freedom 61 (57): the 99.99th percentile is about
		// 120 (114); a modulo bias of 1/256 per character gives several
		// hundred at this n.
		if chi > 130 {
			t.Errorf("chi-squared %.0f over %d characters: not uniform", chi, len(alphabet))
		}
	}
}

func ExampleString() {
	id := "ws-" + String(Base58, 16)
	fmt.Println(len(id))
	// Output: 19
}
