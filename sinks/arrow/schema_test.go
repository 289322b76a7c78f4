package arrow

import (
	"os"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/schema"
)

// loadPlan loads a plan with a health stage (the one stage kind it needs)
// and the arrow sink kind's schema.
func loadPlan(t *testing.T, sinks string) (*schema.Plan, error) {
	t.Helper()
	health, err := os.ReadFile("../../stages/health/schema.cue")
	if err != nil {
		t.Fatal(err)
	}
	src := "name: \"arrow\"\nmodel: {name: \"m\"}\nstages: h: {kind: \"health\", target: \"http://127.0.0.1:1\"}\nsinks: " + sinks + "\n"
	return schema.LoadSource("plan.cue", []byte(src), schema.Options{
		Kinds: []schema.KindSchema{{Kind: "health", Def: "#Health", Source: string(health)}},
		Sinks: []schema.KindSchema{{Kind: "arrow", Def: "#Arrow", Source: schemaSource}},
	})
}

// TestCUESchema: the embedded #Arrow definition compiles with the plan
// schema and a plan's `sinks: [{kind: "arrow"}]` loads as an arrow sink.
func TestCUESchema(t *testing.T) {
	p, err := loadPlan(t, `[{kind: "arrow"}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sinks) != 1 || p.Sinks[0].Kind != "arrow" {
		t.Fatalf("sinks = %+v; want one arrow sink", p.Sinks)
	}
	if !strings.Contains(schemaSource, "#Arrow: {\n\t#SinkBase\n\tkind: \"arrow\"") {
		t.Error("schema.cue: #Arrow should embed #SinkBase and fix kind")
	}
}
