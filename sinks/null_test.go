package sinks_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
	"github.com/benchrun/benchrun/sinks/jsonsink"
)

// Null is "not measured"; 0 is a measurement. Two cell rows, one with
// every nullable metric (a pointer field of results.Cell) nil and one
// with every one 0, go through the durable sink (Parquet), come back
// through the run-directory reader (internal/rundir) and are replayed
// through every other registered sink, as `benchrun report` does: each
// null comes out null (an empty CSV field, JSON null, an Arrow null) and
// each 0 comes out 0, in every output of a cell table. A sink kind
// registered without a check here fails the test until it has one (or
// is listed in noCellColumns).
func TestNullsAndZerosRoundTripThroughEverySink(t *testing.T) {
	reg := registry()
	dir := t.TempDir()
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Attempt: 1}

	nulls, zeros := resultstest.Unmeasured().Cell, resultstest.Unmeasured().Cell
	nulls.CellID, zeros.CellID = "sweep/64:32/c1", "sweep/64:32/c2"
	zeros.StartedAt = zeros.StartedAt.Add(1e9)
	for _, col := range resultstest.NullableColumns() {
		f := fieldOf(&nulls, col)
		f.SetZero()
		z := fieldOf(&zeros, col)
		z.Set(reflect.New(z.Type().Elem())) // a pointer to 0
	}
	want := map[string]results.Cell{nulls.CellID: nulls, zeros.CellID: zeros}

	// Parquet, the durable sink, then the reader.
	var durable []pipeline.SinkKind
	for _, k := range reg.Sinks() {
		if k.Durable {
			durable = append(durable, k)
		}
	}
	if len(durable) == 0 {
		t.Fatal("no durable sink registered")
	}
	for _, k := range durable {
		s, err := k.New(pipeline.SinkSpec{Kind: k.Name, Name: k.Name, Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(pipelinetest.LiveEnv(ri)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []results.Cell{nulls, zeros} {
			if err := s.Cell(c, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Stop(&pipeline.Summary{Run: ri, Cells: 2, ExitCode: pipeline.ExitInfra}); err != nil {
			t.Fatal(err)
		}
	}
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := run.Cells()
	if err != nil || len(cells) != 2 {
		t.Fatalf("the reader read %d cells: %v", len(cells), err)
	}
	for _, got := range cells {
		w := want[got.CellID]
		for _, col := range resultstest.NullableColumns() {
			g, e := fieldOf(&got, col), fieldOf(&w, col)
			if g.IsNil() != e.IsNil() || (!g.IsNil() && !g.Elem().IsZero()) {
				t.Errorf("reader: %s %s = %s, want %s", got.CellID, col, show(g), show(e))
			}
		}
	}

	// Every other sink, driven from the run directory.
	var uses []*pipeline.SinkUse
	for _, k := range replayable(reg) {
		s, err := k.New(pipeline.SinkSpec{Kind: k.Name, Name: k.Name, Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		uses = append(uses, &pipeline.SinkUse{Kind: k, Spec: pipeline.SinkSpec{Kind: k.Name, Name: k.Name, Index: -1}, Sink: s, Attempts: 1})
	}
	if _, err := engine.Replay(dir, uses, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, k := range replayable(reg) {
		check, ok := nullChecks[k.Name]
		if !ok {
			if why, ok := noCellColumns[k.Name]; ok {
				t.Logf("sink %s: not checked: %s", k.Name, why)
				continue
			}
			t.Errorf("sink %s has no null check: add one to nullChecks (how a null and a 0 come out of it), or say in noCellColumns why it needs none", k.Name)
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, o := range check(t, dir) {
				seen[o.col] = true
				want := "0"
				if o.cell == nulls.CellID {
					want = "null"
				}
				if o.value != want {
					t.Errorf("%s: %s %s = %s, want %s", o.where, o.cell, o.col, o.value, want)
				}
			}
			if len(seen) == 0 {
				t.Fatalf("sink %s: no nullable column found in its output", k.Name)
			}
			t.Logf("sink %s: %d nullable columns checked", k.Name, len(seen))
			if k.Name != "json" { // result.json holds a subset, under vLLM's names
				for _, col := range resultstest.NullableColumns() {
					if !seen[col] {
						t.Errorf("sink %s: no column %s in its output", k.Name, col)
					}
				}
			}
		})
	}
}

// observed is one nullable value of a sink's output: "null" or its text.
type observed struct{ col, cell, where, value string }

// noCellColumns are the sinks that write no table of cell columns, with
// why the null round trip does not apply to them.
var noCellColumns = map[string]string{
	"report": "a report for people (a null metric is \"–\" in its tables and no point in its charts: sinks/report's tests)",
	"junit":  "test cases (a verdict, a cell not measured), no cell columns: a null metric is the error verdict's message (sinks/junit's tests)",
}

// nullChecks read a sink's output of the two rows back: for every
// nullable column it writes, "null" or "0" (or the text found) by cell id.
var nullChecks = map[string]func(t *testing.T, dir string) []observed{
	"csv":   csvNulls,
	"json":  jsonNulls,
	"arrow": arrowNulls,
}

// csvNulls reads cells.csv: a null is an empty field.
func csvNulls(t *testing.T, dir string) []observed {
	f, err := os.Open(filepath.Join(dir, "cells.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("cells.csv: %d records: %v", len(recs), err)
	}
	at := map[string]int{}
	for i, c := range recs[0] {
		at[c] = i
	}
	var out []observed
	for _, col := range resultstest.NullableColumns() {
		i, ok := at[col]
		if !ok {
			continue
		}
		for _, r := range recs[1:] {
			v := r[i]
			if v == "" {
				v = "null"
			}
			out = append(out, observed{col, r[at["cell_id"]], "cells.csv", v})
		}
	}
	return out
}

// jsonNulls reads result.json: every key of a cell that holds a nullable
// column (under vLLM's name or benchrun's). Which key holds which column
// is the json sink's own conversion of a row whose every nullable column
// has a distinct value. The keys no cell column holds (the standard
// deviations, computed from request rows; request_rate, null for a
// closed loop) are not checked.
func jsonNulls(t *testing.T, dir string) []observed {
	b, err := os.ReadFile(filepath.Join(dir, jsonsink.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Cells) != 2 {
		t.Fatalf("result.json: %d cells: %v", len(res.Cells), err)
	}
	var probe results.Cell
	colOf := map[string]string{} // the probe's value -> column
	for i, col := range resultstest.NullableColumns() {
		f := fieldOf(&probe, col)
		p := reflect.New(f.Type().Elem())
		if p.Elem().CanFloat() {
			p.Elem().SetFloat(float64(1000 + i))
		} else {
			p.Elem().SetInt(int64(1000 + i))
		}
		f.Set(p)
		colOf[fmt.Sprint(1000+i)] = col
	}
	pb, err := json.Marshal(resultdoc.NewCellResult(probe, nil))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(pb, &keys); err != nil {
		t.Fatal(err)
	}
	var out []observed
	for key, v := range keys {
		col, ok := colOf[string(v)]
		if !ok {
			continue
		}
		for _, c := range res.Cells {
			var id string
			_ = json.Unmarshal(c["cell_id"], &id)
			out = append(out, observed{col, id, fmt.Sprintf("result.json %q", key), string(c[key])})
		}
	}
	return out
}

// arrowNulls reads cells.arrow: a null is an Arrow null.
func arrowNulls(t *testing.T, dir string) []observed {
	f, err := os.Open(filepath.Join(dir, "cells.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []observed
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		sc := rec.Schema()
		ids := sc.FieldIndices("cell_id")
		if len(ids) != 1 {
			t.Fatal("cells.arrow has no cell_id column")
		}
		idCol := rec.Column(ids[0])
		for _, col := range resultstest.NullableColumns() {
			idx := sc.FieldIndices(col)
			if len(idx) != 1 {
				continue
			}
			arr := rec.Column(idx[0])
			for row := 0; row < arr.Len(); row++ {
				v := "null"
				if !arr.IsNull(row) {
					v = arr.ValueStr(row)
				}
				out = append(out, observed{col, idCol.ValueStr(row), "cells.arrow", v})
			}
		}
	}
	return out
}

// fieldOf is the field of c holding the Parquet column col.
func fieldOf(c *results.Cell, col string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ","); name == col {
			return v.Field(i)
		}
	}
	panic("no cell column " + col)
}

func show(v reflect.Value) string {
	if v.IsNil() {
		return "null"
	}
	return fmt.Sprint(v.Elem().Interface())
}
