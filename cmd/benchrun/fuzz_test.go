package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzVet runs the whole of vet (load, schema, graph, `when` and
// assertion compilation) on arbitrary plans: it must never panic.
// schema.FuzzLoad covers the loader without its recover.
//
//	go test ./cmd/benchrun -run '^$' -fuzz FuzzVet -fuzztime 30s
func FuzzVet(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/plans/broken/*.cue")
	examples, _ := filepath.Glob("../../plans/*.cue")
	for _, path := range append(files, examples...) {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src))
		}
	}
	reg := registry()
	path := filepath.Join(f.TempDir(), "plan.cue")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := loadGraphSource(path, []byte(src), nil, reg)
		if err == nil && g == nil {
			t.Fatal("no graph and no error")
		}
		if g != nil {
			_ = g.Order()
			_ = g.WriteMermaid(discard{})
			_ = g.WriteDot(discard{})
			_ = g.WriteDryRun(discard{}, nil)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
