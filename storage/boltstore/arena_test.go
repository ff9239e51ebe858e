package boltstore

import (
	"bytes"
	"strings"
	"testing"
)

func TestKeyArena(t *testing.T) {
	var a keyArena
	src := []byte{}
	var got, want []string
	for i := range 3000 {
		// Keys of many sizes, some larger than a chunk; src is reused,
		// as bbolt's memory would be, so copies must not alias it.
		k := strings.Repeat(string(rune('a'+i%26)), 1+i*7%(keyChunkMax/2))
		src = append(src[:0], k...)
		got = append(got, a.string(src))
		want = append(want, k)
		clear(src)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("key %d: got %d bytes %.10q, want %d bytes", i, len(got[i]), got[i], len(want[i]))
		}
	}
	if a.string(nil) != "" || a.string([]byte{}) != "" {
		t.Error("an empty key is not empty")
	}
	if s := a.string(bytes.Repeat([]byte("z"), keyChunkMax+1)); len(s) != keyChunkMax+1 {
		t.Errorf("a key larger than a chunk: %d bytes", len(s))
	}
}
