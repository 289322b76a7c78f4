package arrow

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/schema"
)

// loadPlan loads a plan with one stage of a minimal kind (a sink's schema
// needs a plan around it, not any real kind) and the arrow sink kind's
// schema.
func loadPlan(t *testing.T, sinks string) (*schema.Plan, error) {
	t.Helper()
	const nop = "package schema\n#Nop: {\n\t#StageBase\n\tkind: \"nop\"\n}\n"
	src := "name: \"arrow\"\nmodel: {name: \"m\"}\nstages: h: {kind: \"nop\"}\nsinks: " + sinks + "\n"
	return schema.LoadSource("plan.cue", []byte(src), schema.Options{
		Kinds: []schema.KindSchema{{Kind: "nop", Def: "#Nop", Source: nop}},
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
