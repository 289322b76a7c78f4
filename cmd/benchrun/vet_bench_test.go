package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkVet times `benchrun vet` (load, schema, graph, expressions) on
// every example plan; it should feel instant, well under a second.
//
//	go test ./cmd/benchrun -run '^$' -bench Vet -benchtime 20x
func BenchmarkVet(b *testing.B) {
	plans, err := filepath.Glob("../../plans/*.cue")
	if err != nil || len(plans) == 0 {
		b.Fatalf("no example plans: %v", err)
	}
	reg := registry()
	for _, path := range plans {
		b.Run(strings.TrimSuffix(filepath.Base(path), ".cue"), func(b *testing.B) {
			for b.Loop() {
				if _, err := loadGraph(path, nil, reg); err != nil {
					b.Fatalf("%s: %v", path, err)
				}
			}
		})
	}
}
