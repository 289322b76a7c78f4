package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary plan sources to the loader (without the
// recover that LoadSource adds, so that a panic anywhere fails the fuzz
// run). It must never panic or hang; errors are expected.
//
//	go test ./schema -run '^$' -fuzz FuzzLoad -fuzztime 60s -fuzzminimizetime 3s
func FuzzLoad(f *testing.F) {
	kinds := stageKinds(f)
	seeds, _ := filepath.Glob("../plans/*.cue")
	broken, _ := filepath.Glob("../testdata/plans/broken/*.cue")
	for _, path := range append(seeds, broken...) {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src), "")
		}
	}
	f.Add(taggedPlan, "requests=3")
	f.Add(taggedPlan, "file=x")
	f.Add("name: \"x\"\nstages: a: {kind: \"sweep\", target: \"http://h:1\", cells: [{isl: 1, osl: 1}]}", "")
	dir := f.TempDir()
	path := filepath.Join(dir, "plan.cue")
	f.Fuzz(func(t *testing.T, src, tag string) {
		var tags []string
		if tag != "" {
			tags = []string{tag}
		}
		p, err := loadPlan(path, []byte(src), Options{Tags: tags, Kinds: kinds})
		if err == nil && p == nil {
			t.Fatal("no plan and no error")
		}
		if p != nil {
			for _, s := range p.Stages {
				_ = s.PosOf("needs", "0")
				_ = s.valuePos("when")
			}
		}
	})
}
