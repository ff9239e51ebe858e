package kv

import (
	"fmt"
	"slices"
	"testing"
)

func TestCollector(t *testing.T) {
	for _, n := range []int{0, 1, collectChunk - 1, collectChunk, collectChunk + 1, 3*collectChunk + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var c collector
			c.add("stale")
			c.reset()
			want := make([]string, n)
			for i := range want {
				want[i] = fmt.Sprintf("k%05d", i)
				c.add(want[i])
			}
			if got := c.all(); c.n != n || !slices.Equal(got, want) {
				t.Errorf("n = %d, got %d names, want %d in order", c.n, len(got), n)
			}
		})
	}
}
