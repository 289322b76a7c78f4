package judge

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

func TestAssertions(t *testing.T) {
	row := results.Cell{Stage: "sweep", ISL: 64, OSL: 32, Concurrency: 4, ITLP50Ms: results.Some(5.0), ITLP99Ms: results.Some(12.0), Status: "ok"}
	tests := []struct {
		expr    string
		pass    bool
		compile string // expected compile error fragment
		at      string // expected position: the literal (p.cue:3:5) moved to the offending character
	}{
		{expr: "itl_p99_ms < 2*itl_p50_ms", pass: false},
		{expr: "itl_p99_ms < 3*itl_p50_ms", pass: true},
		{expr: `status == "ok"`, pass: true},
		{expr: "concurrency >= 4 && isl == 64", pass: true},
		{expr: "itl_p99 < 2*itl_p50", compile: "unknown name itl_p99 (did you mean itl_p99_ms?)", at: "p.cue:3:6: "},
		{expr: "isl +", compile: "unexpected token", at: "p.cue:3:10: "},
		// tft_ms, not ttf_ms: that is one edit from ttfo_ms as well.
		{expr: "ttft_ms > 0 && tft_ms < 9", compile: "unknown name tft_ms (did you mean ttft_ms?)", at: "p.cue:3:21: "},
		{expr: "isl", compile: "expected bool", at: "p.cue:3:5: "},
		// Nullable columns keep their types at vet time.
		{expr: `ttft_p99_ms < "fast"`, compile: "mismatched types float64 and string", at: "p.cue:3:5: "},
		{expr: "ttft_p99 < 500", compile: "unknown name ttft_p99 (did you mean ttft_p99_ms?)", at: "p.cue:3:6: "},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tt.expr, Pos: schema.Pos{File: "p.cue", Line: 3, Col: 5}}, "sweep")
			if tt.compile != "" {
				if err == nil || !strings.Contains(err.Error(), tt.compile) || !strings.HasPrefix(err.Error(), tt.at) {
					t.Fatalf("compile error = %v, want %s and %q", err, tt.at, tt.compile)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := a.Judge(row)
			if v.Passed != tt.pass || v.Error != "" {
				t.Fatalf("verdict = %+v, want passed=%v", v, tt.pass)
			}
		})
	}
	a, _ := CompileAssertion(schema.Assertion{Expr: "itl_p99_ms < 2*itl_p50_ms"}, "")
	if got := a.Judge(row).FormatValues(); got != "itl_p50_ms=5 itl_p99_ms=12" {
		t.Fatalf("values = %q", got)
	}
}

// An assertion that reads a null (not measured) metric is an error verdict
// naming the metric and why it is null, never a pass, whatever the
// operator: expr alone would fail `<` with "invalid operation: <nil> <
// int" but read `!=` and `not in` as true. An expression that tests for
// null itself is evaluated as written.
func TestAssertionOnNullMetric(t *testing.T) {
	failed := results.Cell{Stage: "sweep", ISL: 64, OSL: 32, Concurrency: 4, Requests: 8, Failed: 8, Status: "error",
		ReqS: results.Some(0.0), ITLP50Ms: nil, TTFTP99Ms: nil}
	noC1 := results.Cell{Stage: "sweep", Concurrency: 4, Requests: 8, Completed: 8, Status: "ok", ReqS: results.Some(10.0), TTFTP99Ms: results.Some(40.0)}
	tests := []struct {
		expr string
		row  results.Cell
		pass bool
		err  string // "" for a verdict that evaluated
	}{
		{"ttft_p99_ms < 500", failed, false, "ttft_p99_ms is null: not measured (every request failed)"},
		{"ttft_p99_ms != 0", failed, false, "ttft_p99_ms is null: not measured (every request failed)"},
		{"not (ttft_p99_ms in [1.0, 2.0])", failed, false, "ttft_p99_ms is null"},
		{"req_s < 1 && itl_p50_ms < 10", failed, false, "itl_p50_ms is null: not measured (every request failed)"},
		{"req_s == 0", failed, true, ""}, // a measured zero is a value
		{"speedup_vs_c1 > 0.5", noC1, false, "speedup_vs_c1 is null: not measured (no c=1 row of this cell measured output throughput to compare with)"},
		{"ttft_p99_ms == nil || ttft_p99_ms < 500", failed, true, ""},
		{"ttft_p99_ms == nil || ttft_p99_ms < 500", noC1, true, ""},
		{"(ttft_p99_ms ?? 0) < 500", failed, true, ""},
		{"ttft_p99_ms != nil && ttft_p99_ms < 500", failed, false, ""},
		{"ttft_p99_ms == nil && ttft_p99_ms < 1 || req_s > 1", failed, false, "ttft_p99_ms is null: not measured (every request failed): invalid operation"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tt.expr, Pos: schema.Pos{File: "p.cue", Line: 3, Col: 5}}, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			v := a.Judge(tt.row)
			if v.Passed != tt.pass || (tt.err == "") != (v.Error == "") || !strings.Contains(v.Error, tt.err) {
				t.Fatalf("verdict passed=%v error=%q; want passed=%v error containing %q", v.Passed, v.Error, tt.pass, tt.err)
			}
		})
	}
	a, _ := CompileAssertion(schema.Assertion{Expr: "ttft_p99_ms < 500 && req_s >= 0"}, "")
	if got := a.Judge(failed).FormatValues(); got != "req_s=0 ttft_p99_ms=null" {
		t.Errorf("values = %q, want the null shown as null", got)
	}
}

// Assertions at each level, with the helpers, read what they should and
// are never green because nothing was measured.
func TestAssertionLevels(t *testing.T) {
	ok := results.Cell{Stage: "sweep", CellID: "sweep/16:4/c1", Status: "ok", DecodeTokS: results.Some(600.0), TTFTMs: results.Some(10.0), Failed: 0}
	slow := results.Cell{Stage: "sweep", CellID: "sweep/16:4/c2", Status: "ok", DecodeTokS: results.Some(300.0), TTFTMs: results.Some(30.0), Failed: 2}
	null := results.Cell{Stage: "sweep", CellID: "sweep/16:4/c4", Status: "error"}
	reqs := []results.Request{
		{Status: "ok", TTFTMs: results.Some(10.0), E2ELMs: results.Some(40.0), ChunkGapsMs: []float64{1, 2, 3}},
		{Status: "ok", TTFTMs: results.Some(20.0), E2ELMs: results.Some(50.0), ChunkGapsMs: []float64{4}},
		{Status: "error", TTFTMs: results.Some(999.0)}, // a failed request adds nothing
	}
	for _, tt := range []struct {
		expr, level string
		judge       func(a *Assertion) Verdict
		pass        bool
		err         string
	}{
		{"p(requests.ttft_ms, 50) == 15", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, results.AsRequests(reqs), nil) }, true, ""},
		{"len(requests.itl_ms) == 4 && p(requests.itl_ms, 100) == 4", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, results.AsRequests(reqs), nil) }, true, ""},
		{"p(requests.ttft_ms, 99) < 100", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, false, "p: no samples"},
		{"within(ttft_ms, 11, 10)", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, true, ""},
		{"within(ttft_ms, 12, 10)", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, false, ""},
		{"pct_change(600, decode_tok_s) == 0", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, true, ""},
		{"pct_change(0, decode_tok_s) > 0", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, false, "the old value is 0"},
		{"decode_tok_s >= 0.95 * baseline.decode_tok_s", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, &slow) }, true, ""},
		{"decode_tok_s >= 0.95 * baseline.decode_tok_s", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(slow, nil, &ok) }, false, ""},
		{"decode_tok_s >= 0.95 * baseline.decode_tok_s", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, false, "no cell of the baseline's runs matches"},
		{"baseline == nil || decode_tok_s >= baseline.decode_tok_s", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, nil) }, true, ""},
		{"decode_tok_s >= 0.95 * baseline.decode_tok_s", LevelRow, func(a *Assertion) Verdict { return a.JudgeRow(ok, nil, &null) }, false, "invalid operation"},
		{`all(rows, .status == "ok")`, LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", []results.Cell{ok, slow}) }, true, ""},
		{`all(rows, .status == "ok")`, LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", nil) }, false, "no rows"},
		{"count(rows, .failed > 0) == 0", LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", []results.Cell{ok, slow}) }, false, ""},
		{"max(map(rows, .decode_tok_s)) > 500", LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", []results.Cell{ok, slow}) }, true, ""},
		{"max(map(rows, .decode_tok_s)) > 500", LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", []results.Cell{null}) }, false, "max: a value is null (not measured)"},
		{"sum(map(rows, .failed)) == 2 && mean(map(rows, .decode_tok_s)) == 450", LevelStage, func(a *Assertion) Verdict { return a.JudgeStage("sweep", []results.Cell{ok, slow}) }, true, ""},
		{"stages.a.rows[0].decode_tok_s >= 1.5 * stages.b.rows[0].decode_tok_s", LevelRun,
			func(a *Assertion) Verdict { return a.JudgeRun(map[string][]results.Cell{"a": {ok}, "b": {slow}}) }, true, ""},
		{"len(stages.a.rows) > 0", LevelRun, func(a *Assertion) Verdict { return a.JudgeRun(map[string][]results.Cell{"b": {slow}}) }, false, "stage a has no rows"},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tt.expr}, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			if a.Level != tt.level {
				t.Fatalf("level %s, want %s", a.Level, tt.level)
			}
			v := tt.judge(a)
			if v.Passed != tt.pass || !strings.Contains(v.Error, tt.err) || (tt.err == "" && v.Error != "") {
				t.Fatalf("verdict passed=%v error=%q, want passed=%v error containing %q", v.Passed, v.Error, tt.pass, tt.err)
			}
		})
	}
	if _, err := CompileAssertion(schema.Assertion{Expr: "len(rows) == len(stages.x.rows)"}, "s"); err == nil || !strings.Contains(err.Error(), "reads both") {
		t.Errorf("mixing levels: %v", err)
	}
	a, _ := CompileAssertion(schema.Assertion{Expr: "ttft_ms < 1", Severity: SeverityWarn, Name: "tight"}, "s")
	if v := a.JudgeRow(ok, nil, nil); v.Passed || v.Fails() || v.Severity != SeverityWarn || v.Name != "tight" {
		t.Errorf("a warn check that does not hold must not fail the run: %+v", v)
	}
}

// TestBaselineJudgedWithItsOwnMachine: a check against `baseline.COLUMN`
// is inconclusive when the lateness measured in the baseline's own run
// (or a baseline gap percentile that fell among token events joined in
// one read, which reads 0 whatever the server did) could explain its
// failure, and fails when neither side's machine can.
func TestBaselineJudgedWithItsOwnMachine(t *testing.T) {
	a, err := CompileAssertion(schema.Assertion{Expr: "itl_p50_ms <= 2 * baseline.itl_p50_ms"}, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	row := func(itl, late, joined float64) *results.Cell {
		c := &results.Cell{Stage: "sweep", CellID: "sweep/16:8/c1", ISL: 16, OSL: 8, Concurrency: 1, Status: results.StatusOK,
			Requests: 6, Completed: 6, ITLP50Ms: results.Some(itl), EventsJoinedPct: results.Some(joined), RunID: "r"}
		if late > 0 {
			c.MachineLateP99Ms = results.Some(late)
		}
		return c
	}
	now := *row(2.02, 0.3, 0)
	for _, tc := range []struct {
		name         string
		base         *results.Cell
		inconclusive bool
		explained    []string
	}{
		{"the baseline's p50 fell among joined events", row(0, 1, 50), true,
			[]string{"baseline.itl_p50_ms any value above 0", "50% of its token events came joined", "in the baseline's run the machine ran an event loop's tasks up to 1.00 ms late"}},
		{"the baseline's run was late enough", row(0.8, 0.2, 0), true,
			[]string{"baseline.itl_p50_ms 1 instead of 0.8", "itl_p50_ms 1.72 instead of 2.02"}},
		{"neither machine explains it", row(0.8, 0.05, 5), false, nil},
		{"joined, but the baseline's lateness was not measured", row(0, 0, 50), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := a.JudgeRow(now, nil, tc.base)
			if v.Passed || v.Error != "" || v.Inconclusive != tc.inconclusive || v.Fails() == tc.inconclusive {
				t.Fatalf("verdict %+v; want failed, inconclusive=%v", v, tc.inconclusive)
			}
			t.Log(v.Explained)
			for _, want := range tc.explained {
				if !strings.Contains(v.Explained, want) {
					t.Errorf("reason %q lacks %q", v.Explained, want)
				}
			}
		})
	}
}

// The quickstart's rows from a starved machine (benchrun at nice 19 beside
// four CPU burners and a test run): a stall of 10 s held up the requests in
// flight, so a mean TTFT of 5 s is the machine's; the same row with no such
// stall fails.
func TestStallExplainsWhatItHeldUp(t *testing.T) {
	a, err := CompileAssertion(schema.Assertion{Expr: "ttft_ms < 40"}, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	row := func(conc int64, ttft, p99, maxLate float64) results.Cell {
		return results.Cell{Stage: "sweep", CellID: "sweep/64:32/c4", ISL: 64, OSL: 32, Concurrency: conc, Status: results.StatusOK,
			Requests: 8, Completed: 8, TTFTMs: results.Some(ttft),
			MachineLateP99Ms: results.Some(p99), MachineLateMaxMs: results.Some(maxLate)}
	}
	for _, tc := range []struct {
		name         string
		c            results.Cell
		inconclusive bool
		explained    []string
	}{
		{"c=4: a 10 s stall held up 4 of 8", row(4, 5179.67, 2286.6, 10321), true,
			[]string{"stood still for 10321 ms once (machine_late_max_ms), which can hold up 4 of its 8 requests", "ttft_ms 0 instead of 5180"}},
		{"c=1: a 13 s stall held up 1 of 8", row(1, 1560.2, 43.8, 13287), true,
			[]string{"hold up 1 of its 8 requests"}},
		{"c=1: the stall's share is too small", row(1, 1560.2, 43.8, 3000), false, nil},
		{"no stall to speak of", row(4, 5179.67, 2.3, 31), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := a.JudgeRow(tc.c, nil, nil)
			if v.Passed || v.Error != "" || v.Inconclusive != tc.inconclusive {
				t.Fatalf("verdict %+v; want failed, inconclusive=%v", v, tc.inconclusive)
			}
			for _, want := range tc.explained {
				if !strings.Contains(v.Explained, want) {
					t.Errorf("reason %q lacks %q", v.Explained, want)
				}
			}
		})
	}
}
