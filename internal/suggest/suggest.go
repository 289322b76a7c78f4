// Package suggest finds what a mistyped name most likely meant: the one
// rule behind every "did you mean" benchrun prints (plan fields and tags,
// assertion columns and stage names, CSV columns, program fields).
package suggest

import "strings"

// maxSuffix is how much longer a candidate may be than the name it only
// extends (ttft_p95 -> ttft_p95_ms, decode_tok -> decode_tok_s).
const maxSuffix = 6

// Closest is the candidate name most likely meant, or "": the shortest
// candidate that only adds a forgotten suffix ("_" and at most maxSuffix
// more bytes), else the nearest by edit distance, case-insensitively,
// within a third of the name's length (at least 2). The name itself is
// never suggested.
func Closest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	prefix, best, bestD := "", "", max(2, len(name)/3)+1
	for _, c := range candidates {
		if c == name {
			continue
		}
		if strings.HasPrefix(c, name+"_") && len(c)-len(name) <= maxSuffix && (prefix == "" || len(c) < len(prefix)) {
			prefix = c
		}
		if d := Distance(lower, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if prefix != "" {
		return prefix
	}
	return best
}

// Distance is the edit distance between a and b (bytes), a swap of two
// neighbouring letters counting as one edit (optimal string alignment):
// `modle` is one typo of `model`, not two, so it is caught where a plan
// allows helper fields beside the schema's.
func Distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
