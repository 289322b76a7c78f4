package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBrokenPlans vets every plan of the broken-plan corpus
// (testdata/plans/broken) and compares the problems, message and
// file:line:col, with the block at the end of the plan:
//
//	// --- vet ---
//	// tags: key=value ...      (optional: -t values to vet with)
//	// PLAN:7:3: stages.sweep.concurency: field not allowed
//
// PLAN stands for the plan's path. -update rewrites the blocks (review the
// diff: the corpus is the contract).
func TestBrokenPlans(t *testing.T) {
	files, err := filepath.Glob("../../testdata/plans/broken/*.cue")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("the corpus has %d plans, want at least 30", len(files))
	}
	reg := registry()
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".cue"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			body, tags, want := splitWant(string(src))
			// The body alone, so that the block does not move positions
			// (a syntax error at EOF).
			_, err = loadGraphSource(path, []byte(body), tags, reg)
			if err == nil {
				t.Fatalf("vet found no problem in a broken plan")
			}
			got := strings.ReplaceAll(err.Error(), path, "PLAN")
			if abs, aerr := filepath.Abs(path); aerr == nil {
				got = strings.ReplaceAll(got, abs, "PLAN")
			}
			// Other engineers add kinds; the lists are not what is tested.
			got = knownKindsRE.ReplaceAllString(got, "(known $1 kinds: …)")
			if *update {
				var b strings.Builder
				b.WriteString(body)
				b.WriteString("// --- vet ---\n")
				if len(tags) > 0 {
					b.WriteString("// tags: " + strings.Join(tags, " ") + "\n")
				}
				for _, line := range strings.Split(got, "\n") {
					b.WriteString("// " + line + "\n")
				}
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want == "" {
				t.Fatalf("no `// --- vet ---` block; run with -update and review. Got:\n%s", got)
			}
			if got != want {
				t.Errorf("problems differ\ngot:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(got, "schema/") {
				t.Errorf("a problem points into benchrun's schema instead of the plan:\n%s", got)
			}
		})
	}
}

var knownKindsRE = regexp.MustCompile(`\(known (stage|sink) kinds: [^)]*\)`)

// splitWant splits a corpus plan into its CUE body, its tags and its
// expected problems.
func splitWant(src string) (body string, tags []string, want string) {
	i := strings.Index(src, "// --- vet ---\n")
	if i < 0 {
		return src, nil, ""
	}
	body = src[:i]
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(src[i+len("// --- vet ---\n"):], "\n"), "\n") {
		line = strings.TrimPrefix(strings.TrimPrefix(line, "//"), " ")
		if t, ok := strings.CutPrefix(line, "tags: "); ok {
			tags = strings.Fields(t)
			continue
		}
		lines = append(lines, line)
	}
	return body, tags, strings.Join(lines, "\n")
}
