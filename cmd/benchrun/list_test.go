package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/schema"
)

// What `benchrun list` and `benchrun schema KIND` say every stage and
// every sink also takes is the fields of #StageBase and #SinkBase in
// schema/plan.cue (but kind, which each kind sets), in the schema's
// order, as schema.Describe reads them: a field added to a base shows up
// in the lines without an edit of list.go, and a line written by hand
// again fails here when the schema moves.
func TestAlsoTakesListsTheBaseDefinitionsFields(t *testing.T) {
	reg := registry()
	base := func(def string) []string {
		d, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), def)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range d.Fields {
			if f.Name != "kind" {
				out = append(out, f.Name)
			}
		}
		return out
	}
	stageBase, sinkBase := base("#StageBase"), base("#SinkBase")
	if !slices.Contains(stageBase, "needs") || !slices.Contains(stageBase, "assert") || !slices.Contains(sinkBase, "optional") {
		t.Fatalf("#StageBase %v, #SinkBase %v: not the bases of plan.cue", stageBase, sinkBase)
	}

	var list, errb bytes.Buffer
	if code := runList(context.Background(), nil, &list, &errb); code != 0 {
		t.Fatalf("benchrun list: exit %d: %s", code, errb.String())
	}
	var kind bytes.Buffer
	if code := runSchema(context.Background(), []string{"sweep"}, &kind, &errb); code != 0 {
		t.Fatalf("benchrun schema sweep: exit %d: %s", code, errb.String())
	}
	for _, tc := range []struct {
		out, prefix string
		want        []string
	}{
		{list.String(), "every stage also takes: ", stageBase},
		{list.String(), "every sink also takes: ", sinkBase},
		{kind.String(), "plus the fields every stage takes: ", stageBase},
	} {
		var line string
		for _, l := range strings.Split(tc.out, "\n") {
			if strings.HasPrefix(l, tc.prefix) {
				line = l
			}
		}
		if line == "" {
			t.Errorf("no line %q in:\n%s", tc.prefix, tc.out)
			continue
		}
		fields, ok := strings.CutSuffix(strings.TrimPrefix(line, tc.prefix), " (`benchrun schema`)")
		if got := strings.Split(fields, ", "); !ok || !slices.Equal(got, tc.want) {
			t.Errorf("%q\nwant the fields of the schema: %s", line, strings.Join(tc.want, ", "))
		}
	}
}

// TestEveryCommandExplainsItself: --help (and -h) on every subcommand,
// and on a plan, exits 0 and prints the command's usage on stdout, with
// its flags where it has any; --version prints the build's version.
func TestEveryCommandExplainsItself(t *testing.T) {
	withFlags := map[string]string{
		"run": "-resume", "vet": "-q", "graph": "-format", "sim": "-itl", "self-bench": "", "report": "", "post": "-dry-run",
		"compare": "-format", "history": "-hide-failed", "compact": "-dry-run", "k8s": "-shards", "coordinate": "-shards", "merge": "-out",
	}
	for _, c := range commands() {
		for _, flag := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			if code := benchrunMain([]string{c.name, flag}, &out, &errb); code != 0 {
				t.Errorf("benchrun %s %s: exit %d\n%s", c.name, flag, code, errb.String())
				continue
			}
			if !strings.Contains(out.String(), "usage") && c.name != "version" {
				t.Errorf("benchrun %s %s: no usage on stdout:\n%s", c.name, flag, out.String())
			}
			if f := withFlags[c.name]; f != "" && !strings.Contains(out.String(), f) {
				t.Errorf("benchrun %s %s: its flag %s is not listed:\n%s", c.name, flag, f, out.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := benchrunMain([]string{"plans/quickstart.cue", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "-columns") {
		t.Errorf("benchrun PLAN --help: exit %d:\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := benchrunMain([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "compare OLD NEW") || !strings.Contains(out.String(), "-inconclusive") {
		t.Errorf("benchrun --help lists the commands and the run flags: exit %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := benchrunMain([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "benchrun ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("benchrun --version: exit %d: %q", code, out.String())
	}
}

// TestSchemaPrintsNestedTypesWhole: a nested type too long for its column
// is written whole below the table, never cut with "…".
func TestSchemaPrintsNestedTypesWhole(t *testing.T) {
	var out, errb bytes.Buffer
	if code := benchrunMain([]string{"schema", "sweep"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		`type:    {interval: #Duration | *"100ms" gpu: *"auto" | "off" metrics: *"auto" | "off" | =~"^https?://" host: *"auto" | "off" machine: *"auto" | "off"}`,
		`default: [{"isl":128,"osl":128},{"isl":2048,"osl":128},{"isl":128,"osl":1024}]`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("schema sweep lacks %s:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "…  ") {
		t.Errorf("a cut type or default:\n%s", out.String())
	}
}
