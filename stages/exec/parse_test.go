package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// genericFields is the mapping the generic fixtures are read with.
var genericFields = map[string]string{
	"name": "cell_id", "throughput.decode": "decode_tok_s", "throughput.prefill": "prefill_tok_s",
	"latency_ms.p50": "e2el_p50_ms", "latency_ms.p99": "e2el_p99_ms",
	"decode": "decode_tok_s", "prefill": "prefill_tok_s", "p50": "e2el_p50_ms", "p99": "e2el_p99_ms",
	"tokens_per_second": "decode_tok_s", "p99_latency_ms": "e2el_p99_ms", "benchmark": "bench_test",
}

// fixtures: each file with its parser.
var fixtures = []struct{ file, parser string }{
	{"llama-bench-cpu.json", parserLlamaBench},
	{"llama-bench-cpu.jsonl", parserLlamaBench},
	{"llama-bench-2023.json", parserLlamaBench},
	{"llama-bench-2024.jsonl", parserLlamaBench},
	{"llama-bench-multigpu.json", parserLlamaBench},
	{"mlx-benchmark.txt", parserMLX},
	{"mlx-benchmark-batch-old.txt", parserMLX},
	{"mlx-generate.txt", parserMLX},
	{"generic.json", parserJSON},
	{"generic-object.json", parserJSON},
	{"generic.jsonl", parserJSONL},
	{"generic.csv", parserCSV},
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compact is a row without its empty columns, for golden files a person
// can review: what the parser set, and nothing else.
func compact(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	for k, x := range m {
		switch y := x.(type) {
		case nil:
			delete(m, k)
		case string:
			if y == "" || y == "0001-01-01T00:00:00Z" {
				delete(m, k)
			}
		case float64:
			if y == 0 && !resultstest.IsNullable(k) {
				delete(m, k)
			}
		case bool:
			if !y {
				delete(m, k)
			}
		}
	}
	return m
}

func render(recs []record, err error) []byte {
	var buf bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&buf, "== %s\n", r.id)
		b, _ := json.MarshalIndent(compact(r.cell), "", "  ")
		buf.Write(b)
		buf.WriteString("\n")
		for _, q := range r.reqs {
			b, _ := json.Marshal(compact(q))
			fmt.Fprintf(&buf, "request %s\n", b)
		}
	}
	if err != nil {
		fmt.Fprintf(&buf, "== error: %v\n", err)
	}
	return buf.Bytes()
}

// TestGolden reads every fixture into rows and holds them to its golden
// file.
func TestGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			recs, err := parse(f.parser, readFixture(t, f.file), genericFields)
			if err != nil {
				t.Errorf("parse: %v", err)
			}
			if len(recs) == 0 {
				t.Fatal("no rows")
			}
			golden.Check(t, f.file+".golden", render(recs, err))
		})
	}
}

func byID(recs []record) map[string]record {
	out := map[string]record{}
	for _, r := range recs {
		out[r.id] = r
	}
	return out
}

func extra(t *testing.T, c results.Cell) map[string]any {
	t.Helper()
	m := map[string]any{}
	if c.ExecExtra != "" {
		if err := json.Unmarshal([]byte(c.ExecExtra), &m); err != nil {
			t.Fatalf("exec_extra is not JSON: %v: %s", err, c.ExecExtra)
		}
	}
	return m
}

// The real records of a current build, -o json and -o jsonl: the same
// rows either way (detected, not told), the speeds in the common columns
// of the same meaning, each repetition a request row, and every field no
// column took in exec_extra.
func TestLlamaBenchCurrent(t *testing.T) {
	for _, file := range []string{"llama-bench-cpu.json", "llama-bench-cpu.jsonl"} {
		t.Run(file, func(t *testing.T) {
			recs, err := parseLlamaBench(readFixture(t, file))
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d rows, %v; want 2", len(recs), err)
			}
			ids := byID(recs)
			pp, tg := ids["pp64"], ids["tg32"]
			if pp.cell.TestKind != "pp" || tg.cell.TestKind != "tg" {
				t.Fatalf("ids %v", keys(ids))
			}
			if pp.cell.PrefillTokS == nil || *pp.cell.PrefillTokS != *pp.cell.AvgTS || pp.cell.DecodeTokS != nil || pp.cell.ISL != 64 || pp.cell.OSL != 0 {
				t.Errorf("pp row: prefill %v decode %v avg_ts %v isl %d osl %d", pp.cell.PrefillTokS, pp.cell.DecodeTokS, *pp.cell.AvgTS, pp.cell.ISL, pp.cell.OSL)
			}
			if tg.cell.DecodeTokS == nil || *tg.cell.DecodeTokS != *tg.cell.AvgTS || tg.cell.OutputTokS == nil || tg.cell.PrefillTokS != nil || tg.cell.OSL != 32 {
				t.Errorf("tg row: decode %v prefill %v osl %d", tg.cell.DecodeTokS, tg.cell.PrefillTokS, tg.cell.OSL)
			}
			if len(pp.reqs) != 3 || pp.reqs[0].E2ELMs == nil || pp.reqs[0].InputTokens != 64 || pp.reqs[0].OutputTokens != 0 {
				t.Errorf("pp requests %+v", pp.reqs)
			}
			if tg.cell.FlashAttn != "auto" || tg.cell.Backends != "CPU" || tg.cell.NDepth == nil || *tg.cell.NDepth != 0 || tg.cell.NThreads == nil || *tg.cell.NThreads != 2 {
				t.Errorf("settings: fa %q backends %q depth %v threads %v", tg.cell.FlashAttn, tg.cell.Backends, tg.cell.NDepth, tg.cell.NThreads)
			}
			x := extra(t, tg.cell)
			for _, k := range []string{"model_filename", "load_mode", "n_cpu_moe", "cpu_mask", "fit_target"} {
				if _, ok := x[k]; !ok {
					t.Errorf("exec_extra lacks %s: %s", k, tg.cell.ExecExtra)
				}
			}
			for _, k := range []string{"avg_ts", "samples_ns", "n_prompt", "flash_attn"} {
				if _, ok := x[k]; ok {
					t.Errorf("exec_extra holds %s, which a column took", k)
				}
			}
			if pp.cell.E2ELP50Ms == nil || pp.cell.DurationS <= 0 || pp.cell.Requests != 3 {
				t.Errorf("pp e2el p50 %v duration %v requests %d", pp.cell.E2ELP50Ms, pp.cell.DurationS, pp.cell.Requests)
			}
			if pp.cell.EngineVersion != "unknown" {
				t.Errorf("engine_version %q: the build has no git metadata", pp.cell.EngineVersion)
			}
		})
	}
}

// Older releases: a bool per backend instead of backends, flash_attn a
// bool, no n_depth (NULL, not 0), and records of one test that differ in
// a setting get ids that say which.
func TestLlamaBenchOlderReleases(t *testing.T) {
	recs, err := parseLlamaBench(readFixture(t, "llama-bench-2023.json"))
	if err != nil || len(recs) != 2 {
		t.Fatalf("2023: %d rows, %v", len(recs), err)
	}
	c := byID(recs)["pp512"].cell
	if c.Backends != "CUDA,BLAS" || c.FlashAttn != "" || c.NDepth != nil || c.NUBatch != nil || c.EngineVersion != "b1275 (3469684)" {
		t.Errorf("2023 pp512: backends %q fa %q depth %v ubatch %v version %q", c.Backends, c.FlashAttn, c.NDepth, c.NUBatch, c.EngineVersion)
	}
	if x := extra(t, c); x["f16_kv"] != true || x["mul_mat_q"] != true {
		t.Errorf("2023 exec_extra %s", c.ExecExtra)
	}

	recs, err = parseLlamaBench(readFixture(t, "llama-bench-2024.jsonl"))
	if err != nil || len(recs) != 3 {
		t.Fatalf("2024: %d rows, %v", len(recs), err)
	}
	ids := byID(recs)
	off, on := ids["pp512/flash_attn=off"], ids["pp512/flash_attn=on"]
	if off.cell.FlashAttn != "off" || on.cell.FlashAttn != "on" || ids["tg128"].cell.FlashAttn != "on" {
		t.Errorf("2024 ids %v", keys(ids))
	}
	if on.cell.NDepth != nil || on.cell.SplitMode != "layer" || on.cell.TypeK != "f16" {
		t.Errorf("2024 pp512 fa=on: depth %v split %q type_k %q", on.cell.NDepth, on.cell.SplitMode, on.cell.TypeK)
	}

	recs, err = parseLlamaBench(readFixture(t, "llama-bench-multigpu.json"))
	if err != nil || len(recs) != 2 {
		t.Fatalf("multigpu: %d rows, %v", len(recs), err)
	}
	ids = byID(recs)
	pg := ids["pp512+tg128@d4096"].cell
	if pg.TestKind != "pg" || pg.TotalTokS == nil || pg.PrefillTokS != nil || pg.DecodeTokS != nil || pg.FlashAttn != "on" || pg.Devices != "CUDA0/CUDA1" {
		t.Errorf("multigpu ids %v, pg %+v", keys(ids), pg)
	}
}

// flash_attn in every form a release wrote.
func TestFlashAttnForms(t *testing.T) {
	for in, want := range map[string]string{
		`true`: "on", `false`: "off", `-1`: "auto", `0`: "off", `1`: "on", `"auto"`: "auto", `"on"`: "on", `"off"`: "off",
		`"enabled"`: "on", `"1"`: "on", `"-1"`: "auto", `"Auto"`: "auto",
	} {
		recs, err := parseLlamaBench([]byte(`{"n_prompt": 8, "n_gen": 0, "avg_ts": 1, "flash_attn": ` + in + `}`))
		if err != nil || len(recs) != 1 || recs[0].cell.FlashAttn != want {
			t.Errorf("flash_attn %s: got %+v, %v; want %q", in, recs, err, want)
		}
	}
	// A form no release wrote stays in exec_extra.
	recs, _ := parseLlamaBench([]byte(`{"n_prompt": 8, "flash_attn": [1]}`))
	if len(recs) != 1 || recs[0].cell.FlashAttn != "" || !strings.Contains(recs[0].cell.ExecExtra, `"flash_attn":[1]`) {
		t.Errorf("flash_attn [1]: %+v", recs)
	}
}

// A run cut short keeps the records that finished, with the error.
func TestLlamaBenchCutShort(t *testing.T) {
	b := readFixture(t, "llama-bench-cpu.json")
	cut := b[:bytes.LastIndex(b, []byte(`"n_prompt": 0`))]
	recs, err := parseLlamaBench(cut)
	if err == nil || len(recs) != 1 || recs[0].id != "pp64" {
		t.Errorf("cut JSON: %d rows, %v; want pp64 and an error", len(recs), err)
	}
	lines := readFixture(t, "llama-bench-cpu.jsonl")
	recs, err = parseLlamaBench(lines[:len(lines)-40])
	if err == nil || len(recs) != 1 {
		t.Errorf("cut JSONL: %d rows, %v; want 1 and an error", len(recs), err)
	}
	if _, err := parseLlamaBench([]byte("| model | size |\n| --- | --- |\n")); err == nil {
		t.Error("a markdown table parsed")
	}
}

// mlx_lm.benchmark: averages as the speeds, the largest trial's peak
// memory, trials as requests (total_time as e2el when printed).
func TestMLX(t *testing.T) {
	recs, err := parseMLX(readFixture(t, "mlx-benchmark.txt"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d rows, %v", len(recs), err)
	}
	c := recs[0].cell
	if recs[0].id != "pp1024+tg128" || *c.PrefillTokS != 1073.260 || *c.DecodeTokS != 71.448 || *c.PeakMemoryBytes != 46713000000 || c.ISL != 1024 || c.OSL != 128 {
		t.Errorf("row %s: %+v", recs[0].id, c)
	}
	if len(recs[0].reqs) != 3 || *recs[0].reqs[0].E2ELMs != 2757 || c.Notes != "" {
		t.Errorf("requests %+v notes %q", recs[0].reqs, c.Notes)
	}
	recs, err = parseMLX(readFixture(t, "mlx-benchmark-batch-old.txt"))
	if err != nil || len(recs) != 1 || recs[0].id != "pp1024+tg128/b4" || recs[0].cell.Concurrency != 4 || recs[0].reqs[0].InputTokens != 4096 || recs[0].cell.Notes == "" {
		t.Errorf("batch: %+v, %v", recs, err)
	}
	recs, err = parseMLX(readFixture(t, "mlx-generate.txt"))
	if err != nil || len(recs) != 1 || recs[0].id != "generate/pp14+tg128" || *recs[0].cell.DecodeTokS != 73.902 || *recs[0].cell.PeakMemoryBytes != 4562000000 {
		t.Errorf("generate: %+v, %v", recs, err)
	}
	if _, err := parseMLX([]byte("Traceback (most recent call last):\nModuleNotFoundError: No module named 'mlx'\n")); err == nil {
		t.Error("a traceback parsed")
	}
}

// The generic parsers: mapped fields to their columns, a column's own
// name needs no mapping, the rest in exec_extra, a value of the wrong type
// kept in exec_extra with a note; JSON, JSON lines and CSV agree.
func TestGeneric(t *testing.T) {
	want := map[string][3]any{"short": {812.5, 9120.0, 48.9}, "long": {640.25, 11230.5, nil}}
	for _, f := range []struct{ file, parser string }{{"generic.json", parserJSON}, {"generic.jsonl", parserJSONL}, {"generic.csv", parserCSV}} {
		t.Run(f.file, func(t *testing.T) {
			recs, err := parseGeneric(f.parser, readFixture(t, f.file), genericFields)
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d rows, %v", len(recs), err)
			}
			for _, r := range recs {
				w, ok := want[r.id]
				if !ok {
					t.Fatalf("row id %q", r.id)
				}
				c := r.cell
				var p99 any
				if c.E2ELP99Ms != nil {
					p99 = *c.E2ELP99Ms
				}
				if *c.DecodeTokS != w[0] || *c.PrefillTokS != w[1] || p99 != w[2] || c.ISL == 0 || c.OSL != 128 || c.Program != f.parser {
					t.Errorf("%s: decode %v prefill %v p99 %v isl %d osl %d", r.id, *c.DecodeTokS, *c.PrefillTokS, p99, c.ISL, c.OSL)
				}
			}
		})
	}
	recs, _ := parseGeneric(parserJSON, readFixture(t, "generic.json"), genericFields)
	long := byID(recs)["long"].cell
	if !strings.Contains(long.Notes, `latency_ms.p99: "n/a" is not a number for e2el_p99_ms`) || !strings.Contains(long.ExecExtra, `"gpu":"H100"`) {
		t.Errorf("notes %q extra %s", long.Notes, long.ExecExtra)
	}
	recs, err := parseGeneric(parserJSON, readFixture(t, "generic-object.json"), genericFields)
	if err != nil || len(recs) != 1 || recs[0].id != "decode-throughput" || recs[0].cell.Requests != 64 || recs[0].cell.Model != "llama-3.2-1b" ||
		!strings.Contains(recs[0].cell.ExecExtra, `"config.batch":8`) {
		t.Errorf("object: %+v, %v", recs, err)
	}
}

// Vet's column check: a typo gets a guess; benchrun's own columns and
// non-scalar ones are refused.
func TestCheckColumn(t *testing.T) {
	for col, want := range map[string]string{
		"decode_tok_s": "", "decode_toks": `did you mean "decode_tok_s"?`, "ttft_p95": `did you mean "ttft_p95_ms"?`,
		"run_id": "benchrun's own column", "metadata": "benchrun's own column", "nonsense_column_xyz": "is not a column",
	} {
		got := checkColumn(col)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("checkColumn(%q) = %q, want %q", col, got, want)
		}
	}
	// Every column the mapping may fill is settable from a string.
	for name, cc := range cellColumns {
		var c results.Cell
		if !setColumn(&c, cc, "1") {
			t.Errorf("column %s: cannot set from \"1\"", name)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Values no llama-bench run can print make the test's row an error that
// names the value (the record kept in exec_extra), never a measurement:
// each case edits one field of a real record.
func TestLlamaBenchImpossibleValues(t *testing.T) {
	var recs []map[string]any
	if err := json.Unmarshal(readFixture(t, "llama-bench-cpu.json"), &recs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		value any
		want  string
	}{
		{"avg_ts", -12.5, "avg_ts -12.5 is not a speed"},
		{"n_gen", -32, "n_gen -32 is negative"},
		{"samples_ns", []any{1e18}, "a sample of 1e+18 ns"},
		{"samples_ns", []any{0}, "a sample of 0 ns"},
		{"test_time", "0000-01-01T00:00:00Z", "test_time 0000-01-01T00:00:00Z"},
		{"avg_ns", -5, "avg_ns -5 is negative"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			rec := maps.Clone(recs[1])
			rec[tc.field] = tc.value
			b, _ := json.Marshal([]any{rec})
			got, err := parseLlamaBench(b)
			if err != nil || len(got) != 1 {
				t.Fatalf("%d records, %v", len(got), err)
			}
			c := got[0].cell
			if c.Status != results.StatusError || !strings.Contains(c.Reason, tc.want) {
				t.Fatalf("status %q reason %q; want an error naming %q", c.Status, c.Reason, tc.want)
			}
			if c.AvgTS != nil || c.DecodeTokS != nil || c.PrefillTokS != nil || len(got[0].reqs) != 0 {
				t.Errorf("an impossible record still measured: avg_ts %v decode %v prefill %v, %d repetitions", c.AvgTS, c.DecodeTokS, c.PrefillTokS, len(got[0].reqs))
			}
		})
	}
}
