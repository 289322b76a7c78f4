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
