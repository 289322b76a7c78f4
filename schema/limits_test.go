package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// bigPlan is a valid plan of about size bytes; with comment, the bytes
// are a comment (cheap to load), else a helper list of numbers.
func bigPlan(size int, comment bool) []byte {
	var b bytes.Buffer
	b.WriteString("name: \"big\"\nstages: h: {kind: \"health\", target: \"http://127.0.0.1:1\"}\nfiller: [\n")
	line := "\t1234567890, 1234567890, 1234567890, 1234567890, 1234567890,\n"
	if comment {
		line = "// 1234567890, 1234567890, 1234567890, 1234567890, 1234567890,\n"
	}
	for b.Len()+len(line)+2 < size {
		b.WriteString(line)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestOversizePlanIsRefusedAtOnce: a plan over MaxPlanBytes is refused
// with its size and the limit, before CUE sees it (a 50 MB plan took six
// minutes to load; this 5 MiB one would take far longer).
func TestOversizePlanIsRefusedAtOnce(t *testing.T) {
	kinds := stageKinds(t)
	src := bigPlan(5<<20, false)
	path := filepath.Join(t.TempDir(), "big.cue")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ": the plan is 5.0 MiB; benchrun loads plans of at most 1.0 MiB (1048576 bytes)"
	start := time.Now()
	_, err := Load(path, Options{Kinds: kinds})
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Load: %v\nwant %q...", err, want)
	}
	_, err = LoadSource(path, src, Options{Kinds: kinds})
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("LoadSource: %v\nwant %q...", err, want)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refusing took %s", took)
	}
	// At the limit, a plan loads; a byte more is refused.
	at := bigPlan(MaxPlanBytes, true)
	if len(at) > MaxPlanBytes || len(at) < MaxPlanBytes-100 {
		t.Fatalf("test plan of %d bytes", len(at))
	}
	at = append(at, bytes.Repeat([]byte("\n"), MaxPlanBytes-len(at))...)
	if _, err := LoadSource(path, at, Options{Kinds: kinds}); err != nil {
		t.Errorf("a plan of exactly %d bytes: %v", len(at), err)
	}
	if _, err := LoadSource(path, append(at, '\n'), Options{Kinds: kinds}); err == nil || !strings.Contains(err.Error(), "at most 1.0 MiB") {
		t.Errorf("a plan one byte over: %v", err)
	}
}

// TestDecodeErrorWithoutPositionIsTheStages: a decode error that carries
// neither path nor position ("value was rounded down") is placed at the
// stage and says which stage, never an empty line.
func TestDecodeErrorWithoutPositionIsTheStages(t *testing.T) {
	v := cuecontext.New().CompileString("c: [9223372036854775808]")
	s := &Stage{Name: "sweep", Value: v, Pos: Pos{File: "plan.cue", Line: 4, Col: 2}}
	var cfg struct {
		C []int `json:"c"`
	}
	err := s.Decode(&cfg)
	if err == nil {
		t.Fatal("decoded an integer beyond int64")
	}
	if got := err.Error(); !strings.HasPrefix(got, "plan.cue:4:2: stages.sweep: ") || strings.TrimPrefix(got, "plan.cue:4:2: stages.sweep: ") == "" {
		t.Errorf("error %q: want the stage's position and a message", got)
	}
}

// TestManyStagesLoadInLinearTime: every stage's kind definition is
// unified with the plan in one step; one step per stage re-evaluated the
// whole plan each time (400 stages took 27 s, 1,500 ten minutes).
func TestManyStagesLoadInLinearTime(t *testing.T) {
	kinds := stageKinds(t)
	var b strings.Builder
	b.WriteString("name: \"many\"\nstages: {\n")
	for i := 0; i < MaxStages-1; i++ {
		fmt.Fprintf(&b, "\th%d: {kind: \"health\", target: \"http://127.0.0.1:1\"}\n", i)
	}
	b.WriteString("\tbad: {kind: \"health\", target: \"http://127.0.0.1:1\", within: \"soon\"}\n}\n")
	start := time.Now()
	p, err := LoadSource("many.cue", []byte(b.String()), Options{Kinds: kinds})
	took := time.Since(start)
	// The kinds' definitions still apply to every stage.
	wantAt := fmt.Sprintf("many.cue:%d:", MaxStages+2)
	if err == nil || !strings.Contains(err.Error(), wantAt) || !strings.Contains(err.Error(), "stages.bad.within") {
		t.Errorf("err = %v, want stages.bad.within at %s", err, wantAt)
	}
	if err != nil && strings.Contains(err.Error(), "stages: the plan has") {
		t.Errorf("a plan of exactly MaxStages stages was refused: %v", err)
	}
	if p == nil || len(p.Stages) != MaxStages {
		t.Fatalf("plan %v", p)
	}
	if d, _ := p.Stages[0].Value.LookupPath(cue.ParsePath("within")).String(); d == "" {
		t.Errorf("stage h0 has no default within: its definition was not applied")
	}
	if took > 10*time.Second {
		t.Errorf("%d stages took %s to load", MaxStages, took)
	}
}

// TestGeneratedPlansAreCapped: a few lines of CUE can generate stages,
// strings and lists far past what a plan needs; each is refused at the
// field that holds it, with its size and the limit. At the limits a plan
// loads.
func TestGeneratedPlansAreCapped(t *testing.T) {
	kinds := stageKinds(t)
	const health = `{kind: "health", target: "http://127.0.0.1:1"}`
	for _, tc := range []struct{ name, src, want string }{
		{"stages", `import "list"
name: "many"
stages: {for i in list.Range(0, 1001, 1) {"h\(i)": ` + health + `}}
`, "plan.cue:3:9: stages: the plan has 1001 stages; a plan has at most 1000"},
		{"string", `import "strings"
name: "long"
_doc: strings.Repeat("ab", 600000)
description: _doc
stages: h: ` + health + `
`, "plan.cue:4:1: description: the string is 1.1 MiB; a string in a plan is at most 1.0 MiB"},
		{"list", `import "list"
name: "ladder"
stages: h: ` + health + `
stages: h: metadata: {}
extra: list.Repeat([1], 10001)
`, "plan.cue:5:1: extra: the list has 10001 elements; a list has at most 10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSource("plan.cue", []byte(tc.src), Options{Kinds: kinds})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
	for _, ok := range []string{
		`import "strings"
name: "at-limit"
description: strings.Repeat("ab", 524288)
stages: h: ` + health + `
`,
	} {
		if _, err := LoadSource("plan.cue", []byte(ok), Options{Kinds: kinds}); err != nil {
			t.Errorf("%.60s…: %v", ok, err)
		}
	}
}
