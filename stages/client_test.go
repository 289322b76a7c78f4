package stages_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

// TestEveryRequestKindSharesTheClientFields: the kinds that send requests
// embed #Client (#Requests), so the same field means the same thing and
// is checked the same way in each: a key written where its variable's name
// belongs is refused at the field, in every kind.
func TestEveryRequestKindSharesTheClientFields(t *testing.T) {
	const sweep = `sweep: {kind: "sweep", target: "http://127.0.0.1:9", cells: [{isl: 8, osl: 8}], concurrency: [1]%s}`
	for _, c := range []struct{ kind, body string }{
		{"health", `health: {kind: "health", target: "http://127.0.0.1:9"%s}`},
		{"warmup", `warmup: {kind: "warmup", target: "http://127.0.0.1:9", concurrency: 1, requests: 2%s}`},
		{"sweep", sweep},
	} {
		t.Run(c.kind, func(t *testing.T) {
			fields := `, api_key_env: "sk-secret value", headers: {"X-Org": "acme"}`
			want := `stages.` + c.kind + `.api_key_env: "sk-secret value" should name an environment variable`
			if c.kind != "health" {
				fields += `, body: {temperature: 0}, stall_timeout: "soon"`
			}
			_, err := buildPlan(t, strings.Replace(c.body, "%s", fields, 1))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v\nwant %s", err, want)
			}
			if c.kind != "health" && !strings.Contains(err.Error(), `stages.`+c.kind+`.stall_timeout: "soon" is not a positive duration`) {
				t.Errorf("err %v\nwant the stall timeout refused at its field", err)
			}
			if !strings.Contains(err.Error(), "plan.cue:") {
				t.Errorf("err %v: want a position in the plan", err)
			}
		})
	}
}

// TestBothProgramKindsShareTheProgramFields: launch and exec embed
// #Program, so its fields are read and checked the same way in both.
func TestBothProgramKindsShareTheProgramFields(t *testing.T) {
	for _, kind := range []string{"launch", "exec"} {
		t.Run(kind, func(t *testing.T) {
			extra := ""
			if kind == "exec" {
				extra = `, parser: "llama-bench"`
			}
			_, err := buildPlan(t, `p: {kind: "`+kind+`", cmd: [" "], gpus: [0, "RTX 3090"], stop_grace: "1s"`+extra+`}`)
			want := `stages.p.cmd: the command is empty`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v\nwant %s", err, want)
			}
			if err := loadErr(t, `p: {kind: "`+kind+`", cmd: ["x"], on: ""`+extra+`}`); err == nil || !strings.Contains(err.Error(), `plan.cue:4:`) || !strings.Contains(err.Error(), "stages.p.on") {
				t.Errorf("on: \"\": err %v, want it refused at the field", err)
			}
		})
	}
}

// loadErr is the schema's error for a plan of stages (the body of
// `stages: {...}`) with the built-in kinds.
func loadErr(t *testing.T, body string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.cue")
	src := "name: \"p\"\nmodel: {name: \"m\"}\nstages: {\n" + body + "\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	_, err := schema.Load(path, reg.LoadOptions(nil))
	return err
}
