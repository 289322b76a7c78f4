package schema

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cuelang.org/go/cue"
)

// stageKinds reads the stage kinds' CUE fragments from the stages folder
// (this package cannot import stages: they import it).
func stageKinds(t testing.TB) []KindSchema {
	t.Helper()
	files, err := filepath.Glob("../stages/*/schema.cue")
	if err != nil || len(files) == 0 {
		t.Fatalf("no stage schemas found: %v", err)
	}
	defRE := regexp.MustCompile(`(?m)^(#[A-Za-z]+):\s*\{\s*\n\s*#StageBase`)
	// The fragments the kinds embed (#Client, #Requests), appended to
	// each kind's source as the kinds do (client.WithSchema).
	shared, err := filepath.Glob("../stages/internal/*/*.cue")
	if err != nil {
		t.Fatal(err)
	}
	var fragments string
	for _, f := range shared {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fragments += "\n" + strings.TrimPrefix(string(src), "package schema\n")
	}
	var kinds []KindSchema
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := defRE.FindStringSubmatch(string(src))
		if m == nil {
			continue
		}
		kinds = append(kinds, KindSchema{Kind: filepath.Base(filepath.Dir(f)), Def: m[1], Source: string(src) + fragments})
	}
	return kinds
}

const taggedPlan = `name: "tagged"
model: {name: "m"}
file:  *"model.gguf" | string @tag(file)
reqs:  *8 | int @tag(requests, type=int)
fast:  *false | bool @tag(fast, type=bool)
label: *"x" | string @tag(label)
count: *1 | int @tag(count)
stages: h: {kind: "health", target: "http://127.0.0.1:1"}
`

func TestTags(t *testing.T) {
	kinds := stageKinds(t)
	tests := []struct {
		name  string
		tags  []string
		want  string // "" = loads; else the whole error
		check func(*Plan) string
	}{
		{name: "none", check: func(p *Plan) string { return "" }},
		{name: "typed int", tags: []string{"requests=16"}, check: func(p *Plan) string {
			if n, _ := p.Value.LookupPath(cue.ParsePath("reqs")).Int64(); n != 16 {
				return "reqs not 16"
			}
			return ""
		}},
		{name: "bool", tags: []string{"fast=true"}},
		{name: "string", tags: []string{"file=q8.gguf", "label=a=b"}, check: func(p *Plan) string {
			if s, _ := p.Value.LookupPath(cue.ParsePath("label")).String(); s != "a=b" {
				return "label = " + s
			}
			return ""
		}},
		{name: "same value twice", tags: []string{"file=a", "file=a"}},
		{name: "unknown", tags: []string{"model=x"}, want: `-t model=x: unknown tag "model": no field is marked @tag(model) (the plan's tags: count, fast, file, label, requests)`},
		{name: "conflicting duplicate", tags: []string{"file=a", "file=b"}, want: `-t file=b: tag "file" given twice with different values ("a" and "b")`},
		{name: "malformed", tags: []string{"file"}, want: `-t file: a tag is key=value`},
		{name: "misspelt", tags: []string{"reqests=3"}, want: `-t reqests=3: unknown tag "reqests": no field is marked @tag(reqests) (did you mean requests?) (the plan's tags: count, fast, file, label, requests)`},
		{name: "empty key", tags: []string{"=x"}, want: `-t =x: a tag is key=value`},
		{name: "wrong type int", tags: []string{"requests=lots"}, want: `plan.cue:4:17: -t requests=lots: tag requests takes a value of type int: invalid number for injection tag "requests": illegal number start "lots"`},
		{name: "wrong type bool", tags: []string{"fast=yes"}, want: `plan.cue:5:22: -t fast=yes: tag fast takes a value of type bool:`},
		{name: "untyped int field", tags: []string{"count=3"}, want: `plan.cue:7:17: -t count=3: count: conflicting values "3" and 1 (mismatched types string and int) (-t values are strings unless the field says otherwise: write @tag(count,type=int), type=number or type=bool)`},
		{name: "two wrong types at once", tags: []string{"requests=lots", "fast=yes"}, want: "plan.cue:4:17: -t requests=lots: tag requests takes a value of type int: invalid number for injection tag \"requests\": illegal number start \"lots\"\nplan.cue:5:22: -t fast=yes: tag fast takes a value of type bool: invalid boolean \"yes\" for injection tag \"fast\""},
		{name: "all at once", tags: []string{"nope=1", "file"}, want: "-t nope=1: unknown tag \"nope\": no field is marked @tag(nope) (the plan's tags: count, fast, file, label, requests)\n-t file: a tag is key=value"},
	}
	tests = append(tests, struct {
		name  string
		tags  []string
		want  string
		check func(*Plan) string
	}{
		// A bad tag does not hide the plan's own problems.
		name: "tag and plan problems at once", tags: []string{"nope=1", "file=a", "file=b"},
		want: "-t nope=1: unknown tag \"nope\": no field is marked @tag(nope) (the plan's tags: count, fast, file, label, requests)\n" +
			"-t file=b: tag \"file\" given twice with different values (\"a\" and \"b\")\n" +
			"plan.cue:8:19: stages.x.kind: 3 is not allowed: want string",
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := taggedPlan
			if tt.name == "tag and plan problems at once" {
				src = strings.Replace(src, `stages: h: {kind: "health", target: "http://127.0.0.1:1"}`, "stages: x: {kind: 3}", 1)
			}
			p, err := LoadSource("plan.cue", []byte(src), Options{Tags: tt.tags, Kinds: kinds})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					if msg := tt.check(p); msg != "" {
						t.Fatal(msg)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("error:\n%s\nwant (prefix):\n%s", got, tt.want)
			}
		})
	}
}

func TestDescribeReadsDocsAndDefaults(t *testing.T) {
	d, err := Describe(stageKinds(t), nil, "#Sweep")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]FieldDoc{}
	for _, f := range d.Fields {
		fields[f.Name] = f
	}
	if f := fields["concurrency"]; f.Default != "[1,4,8]" || f.Doc == "" {
		t.Errorf("concurrency: %+v, want default [1,4,8] (the seed's ladder) and a doc", f)
	}
	if f := fields["warmup"]; f.Default != "2" {
		t.Errorf("warmup default %q, want 2", f.Default)
	}
	if f := fields["endpoint"]; f.Type != `"completions" | "chat" | "embeddings" | "transcriptions" | "responses" | "messages" | "rerank"` || f.Default != `"completions"` {
		t.Errorf("endpoint: %+v", f)
	}
	if !fields["needs"].Common || fields["cells"].Common {
		t.Errorf("needs should be marked common, cells not")
	}
}

func TestPartialPlanOnErrors(t *testing.T) {
	p, err := LoadSource("plan.cue", []byte(`name: "p"
stages: {
	a: {kind: "health", target: "http://x:1", within: "soon"}
	b: {kind: "health", target: "http://x:1", needs: ["a", "zz"]}
}`), Options{Kinds: stageKinds(t)})
	if err == nil || p == nil {
		t.Fatalf("want a partial plan and an error, got %v, %v", p, err)
	}
	if a := p.Stage("a"); a == nil || !a.Invalid {
		t.Errorf("stage a should be present and marked invalid")
	}
	if b := p.Stage("b"); b == nil || b.Invalid || strings.Join(b.Needs, ",") != "a,zz" {
		t.Errorf("stage b should be present, valid, with its needs: %+v", b)
	}
}

// TestBaselinePositionIsThePlans: `baseline: {}` takes every field from
// the embedded schema, whose position its unified value carries; checks
// that report the baseline's position must point into the plan file.
func TestBaselinePositionIsThePlans(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nightly.cue")
	src := "name: \"n\"\nmodel: {name: \"m\"}\n\nbaseline: {}\nstages: h: {kind: \"health\", target: \"http://127.0.0.1:1\"}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, Options{Kinds: stageKinds(t)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Baseline == nil || p.Baseline.Pos.File != path || p.Baseline.Pos.Line != 4 {
		t.Errorf("baseline at %+v; want %s line 4", p.Baseline, path)
	}
	if !p.Baseline.Confirm || p.Inconclusive != "tolerate" {
		t.Errorf("defaults: confirm %v, inconclusive %q; want true, tolerate", p.Baseline.Confirm, p.Inconclusive)
	}
}
