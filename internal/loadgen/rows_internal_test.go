package loadgen

import (
	"slices"
	"testing"
)

// chunkTokens: a stream of one-token events shares one run of ones (no
// bytes a request), any other stream gets its own counts, and an append
// to a shared view copies rather than changing the run.
func TestChunkTokensShareTheOnes(t *testing.T) {
	evs := func(tokens ...int) []TokenEvent {
		out := make([]TokenEvent, len(tokens))
		for k, n := range tokens {
			out[k].Tokens = n
		}
		return out
	}
	a, b := chunkTokens(evs(1, 1, 1)), chunkTokens(evs(1, 1, 1, 1, 1))
	if !slices.Equal(a, []int64{1, 1, 1}) || !slices.Equal(b, []int64{1, 1, 1, 1, 1}) {
		t.Fatalf("all-one streams: %v %v", a, b)
	}
	if &a[0] != &b[0] {
		t.Error("two all-one streams hold their own runs: want one shared")
	}
	grown := append(a, 7)
	if &grown[0] == &a[0] || b[3] != 1 {
		t.Errorf("an append to a shared view wrote into the run (b %v)", b)
	}
	mixed := chunkTokens(evs(1, 3, 1))
	if !slices.Equal(mixed, []int64{1, 3, 1}) || &mixed[0] == &a[0] {
		t.Errorf("a multi-token stream: %v, shared %v", mixed, &mixed[0] == &a[0])
	}
	long := chunkTokens(evs(slices.Repeat([]int{1}, 10000)...))
	if len(long) != 10000 || long[9999] != 1 {
		t.Errorf("a stream longer than the run: %d tokens", len(long))
	}
}
