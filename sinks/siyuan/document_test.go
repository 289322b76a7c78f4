package siyuan

import (
	"fmt"
	"github.com/benchrun/benchrun/sinks/internal/runview"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

var someF = results.Some[float64]

// quickstartRun is the seed's default sweep (three cells over c = 1, 4,
// 8; the numbers are the seed's CSV) as an ok run with passing checks.
func quickstartRun() Document {
	t0 := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
	fin := t0.Add(4 * time.Minute)
	run := results.Run{
		RunID: "20261203T093000Z-9f8e7d", Plan: "quickstart", StartedAt: t0, FinishedAt: &fin, Status: "ok",
		Model: "meta-llama/Llama-3.2-1B-Instruct", Metadata: map[string]string{"quant": "bf16"},
		Hostname: "ws", Hardware: "linux/amd64, 16 CPUs, 1× NVIDIA RTX 4090", BenchrunVersion: "v0.4.0",
		Stages: []results.StageOutcome{{Name: "server", Kind: "launch", Status: "ok", DurationS: 12}, {Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 220}},
	}
	// isl, osl, c, ttft, prefill tok/s, itl p50, itl p99, decode tok/s, speedup, efficiency
	rows := [][10]float64{
		{128, 128, 1, 14.375232, 8904.204, 4.709812, 11.978596, 194.13823, 1, 1},
		{128, 128, 4, 25.81384, 4969.912, 6.5161915, 15.847513, 552.3547, 2.845162, 0.7112905},
		{128, 128, 8, 36.65184, 3492.3213, 4.9885244, 10.634405, 1434.3369, 7.388225, 0.92352813},
		{2048, 128, 1, 67.9156, 30155.074, 5.575619, 8.472811, 159.87682, 1, 1},
		{2048, 128, 4, 245.00293, 8360.729, 7.7572827, 15.318566, 414.64108, 2.5935037, 0.6483759},
		{2048, 128, 8, 464.48145, 4409.434, 6.383371, 11.002449, 787.79083, 4.927487, 0.61593586},
		{128, 1024, 1, 10.374589, 12337.838, 4.823417, 8.758105, 190.86696, 1, 1},
		{128, 1024, 4, 26.746096, 4836.729, 6.6391444, 13.775986, 592.14624, 3.102403, 0.77560073},
		{128, 1024, 8, 39.64144, 3232.0154, 5.407993, 9.28407, 1437.6843, 7.5323896, 0.9415487},
	}
	d := Document{Run: run, Status: "ok", RunDir: "runs/plan=quickstart/date=2026-12-03/run=20261203T093000Z-9f8e7d"}
	for i, r := range rows {
		isl, osl, conc := int64(r[0]), int64(r[1]), int64(r[2])
		c := results.Cell{
			RunID: run.RunID, Plan: "quickstart", Stage: "sweep", CellID: fmt.Sprintf("sweep/%d:%d/c%d", isl, osl, conc),
			StartedAt: t0.Add(time.Duration(i) * 20 * time.Second), Model: run.Model, Engine: "vllm", EngineVersion: "0.11.0",
			Metadata: map[string]string{"quant": "bf16"}, Hardware: run.Hardware, BenchrunVersion: "v0.4.0",
			ISL: isl, OSL: osl, Concurrency: conc, Requests: 3 * conc, Completed: 3 * conc,
			TTFTMs: someF(r[3]), TTFTP50Ms: someF(r[3]), TTFTP99Ms: someF(r[3] * 1.4), PrefillTokS: someF(r[4]),
			ITLP50Ms: someF(r[5]), ITLP99Ms: someF(r[6]), DecodeTokS: someF(r[7]), OutputTokS: someF(r[7]), ReqS: someF(r[7] / r[1]),
			TPOTP50Ms: someF(r[5] * 1.02), SpeedupVsC1: someF(r[8]), BatchingEfficiency: someF(r[9]), ClientCPUUtil: someF(0.05 * r[2]),
			Status: results.StatusOK,
		}
		d.Cells = append(d.Cells, c)
		d.Verdicts = append(d.Verdicts, results.Verdict{
			RunID: run.RunID, Plan: "quickstart", Stage: "sweep", CellID: c.CellID, Cell: stagePointLabel(c), Level: "row",
			Assertion: "ttft_p99_ms < 1000", Outcome: results.OutcomePass, Passed: true,
			Values: map[string]string{"ttft_p99_ms": fmt.Sprint(*c.TTFTP99Ms)},
		})
	}
	d.Charts = []ChartRef{
		{Title: "Output tokens/s vs concurrency", Path: "assets/throughput-20261203093412-abcdefg.svg"},
		{Title: "TTFT p50 and p99 [ms]", Path: "assets/ttft v1-20261203093412-hijklmn.svg"},
	}
	return d
}

// failedRun is the shared fixture (a failed run: the 256:32 c=16 cell
// fails its ITL assertion) with a confirmed regression of one cell's
// throughput against history.
func failedRun() Document {
	d := Document{Run: resultstest.Run(), Status: "failed", Reason: "1 assertion failed; output_tok_s regressed at sweep 64:32 c=4", RunDir: "runs/plan=fixture/date=2026-12-01/run=" + resultstest.RunID}
	for _, p := range resultstest.Points() {
		d.Cells = append(d.Cells, p.Cell)
		d.Verdicts = append(d.Verdicts, p.Verdicts...)
	}
	judged := resultstest.T0.Add(80 * time.Second)
	d.Verdicts = append(d.Verdicts,
		results.Verdict{
			RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: "sweep/64:32/c4", Cell: "sweep 64:32 c=4", JudgedAt: judged,
			Assertion: "regression of output_tok_s", Name: "output_tok_s", Severity: "fail", Level: levelRegression, Scope: "plan", Outcome: "regressed",
			Values: map[string]string{"old": "612.5", "new": "498.25", "change_pct": "-18.6531", "low": "580", "high": "650", "n": "12", "method": "history",
				"outcome": "regressed", "measurements": "2", "first": "471.2", "confirm": "confirmed: both measurements regressed"},
		},
		results.Verdict{
			RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: "sweep/64:32/c4", Cell: "sweep 64:32 c=4", JudgedAt: judged,
			Assertion: "regression of ttft_p50_ms", Name: "ttft_p50_ms", Severity: "fail", Level: levelRegression, Scope: "plan", Outcome: "same", Passed: true,
			Values: map[string]string{"old": "35.1", "new": "35.4", "change_pct": "0.854701", "n": "12", "outcome": "same"},
		})
	return d
}

// interruptedRun stopped mid-sweep: an ok cell, a cell whose every
// request failed (its reason has a pipe and a second line), and an ok
// cell of one output token (no ITL, no TPOT) whose client CPU time could
// not be read.
func interruptedRun() Document {
	pts := resultstest.Points()
	un := resultstest.Unmeasured()
	un.Cell.Reason = "8 of 8 requests failed; first: HTTP 500: upstream a|b\nstack trace line"
	one := pts[1].Cell
	one.CellID, one.OSL = "sweep/64:1/c4", 1
	one.ITLMs, one.ITLP50Ms, one.ITLP99Ms, one.TPOTMs, one.TPOTP50Ms, one.SpeedupVsC1, one.BatchingEfficiency = nil, nil, nil, nil, nil, nil, nil
	one.ClientCPUUtil = nil
	run := resultstest.Run()
	run.Status, run.Stages[1].Status, run.Stages[1].Reason = "interrupted", "interrupted", "SIGINT after 3 of 6 points"
	first := pts[0].Cell
	first.ClientCPUUtil = someF(0) // a measured 0 prints 0
	d := Document{Run: run, Status: "interrupted", Reason: "interrupted by SIGINT\n(second line)", Cells: []results.Cell{first, un.Cell, one}}
	d.Verdicts = append(d.Verdicts, pts[0].Verdicts...)
	d.Verdicts = append(d.Verdicts, un.Verdicts...)
	return d
}

// rateRun is an open-loop ladder (Poisson, 1-16 req/s) whose throughput
// flattens at 16 req/s while TTFT p99 doubles; it checks nothing.
func rateRun() Document {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	run := results.Run{RunID: "20261204T010000Z-0a0b0c", Plan: "rates", StartedAt: t0, Status: "ok", Model: "qwen3-8b", Hardware: "linux/amd64, 1× NVIDIA H200", BenchrunVersion: "v0.4.0"}
	d := Document{Run: run, Status: "ok", RunDir: "runs/plan=rates/date=2026-12-04/run=" + run.RunID}
	for i, r := range [][4]float64{{1, 250, 40, 9}, {2, 498, 42, 9.5}, {4, 990, 51, 10.2}, {8, 1890, 80, 12.5}, {16, 1950, 170, 30}} {
		c := results.Cell{
			RunID: run.RunID, Plan: "rates", Stage: "load", CellID: fmt.Sprintf("load/512:256/r%g", r[0]), StartedAt: t0.Add(time.Duration(i) * time.Minute),
			Model: "qwen3-8b", Engine: "sglang", EngineVersion: "unknown", ISL: 512, OSL: 256, Rate: r[0], Arrival: "poisson", Burstiness: 1, Concurrency: 0,
			Requests: 100, Completed: 100, OutputTokS: someF(r[1]), ReqS: someF(r[1] / 256), DecodeTokS: someF(r[1]), TTFTP50Ms: someF(r[2] * 0.6), TTFTP99Ms: someF(r[2]),
			PrefillTokS: someF(512 / (r[2] * 0.6) * 1000), ITLP50Ms: someF(r[3] * 0.8), ITLP99Ms: someF(r[3]), TPOTP50Ms: someF(r[3] * 0.82), ClientCPUUtil: someF(0.01 * r[0]),
			Status: results.StatusOK,
		}
		d.Cells = append(d.Cells, c)
	}
	return d
}

// telemetryRun is the quickstart run measured with telemetry: on the GPU
// server, GPU and server metrics and the server's process at every point
// (the last point's energy counter did not answer; no preemption
// anywhere, a measured 0); then two points of a stage on a CPU-only
// server that benchrun launched, where only the process was measured and
// the sweep's notes say why the rest was not.
func telemetryRun() Document {
	d := quickstartRun()
	someI := results.Some[int64]
	for i := range d.Cells {
		c := &d.Cells[i]
		f := float64(c.Concurrency)
		c.GPUUtilMean, c.GPUUtilP95 = someF(20+8*f), someF(30+8*f)
		c.GPUMemPeakBytes, c.GPUMemReservedBytes = someI(int64(21<<30)+int64(f)*(256<<20)), someI(int64(512<<20))
		c.PowerWMean, c.PowerWMax = someF(120+25*f), someF(150+30*f)
		c.EnergyJ = someF(*c.PowerWMean * 20)
		c.TokensPerJoule = someF(*c.OutputTokS * 20 / *c.EnergyJ)
		c.EnergyJPerToken = someF(1 / *c.TokensPerJoule)
		c.ServerRunningPeak, c.ServerWaitingPeak, c.ServerParkWaits = someF(f), someF(0), someF(0)
		c.ServerQueueMeanMs, c.KVCacheUsagePeak, c.ServerPreemptions = someF(0.2*f), someF(0.04*f), someF(0)
		c.ServerCPUUtil, c.ServerRSSPeakBytes = someF(1.1), someI(int64(5<<30))
		if i == len(d.Cells)-1 {
			c.EnergyJ, c.TokensPerJoule, c.EnergyJPerToken = nil, nil, nil
		}
	}
	for _, c := range d.Cells[:2] {
		c.Stage, c.CellID = "cpu", "cpu"+strings.TrimPrefix(c.CellID, "sweep")
		c.GPUUtilMean, c.GPUUtilP95, c.GPUMemPeakBytes, c.GPUMemReservedBytes, c.PowerWMean, c.PowerWMax = nil, nil, nil, nil, nil, nil
		c.EnergyJ, c.TokensPerJoule, c.EnergyJPerToken = nil, nil, nil
		c.ServerRunningPeak, c.ServerWaitingPeak, c.ServerParkWaits, c.ServerQueueMeanMs, c.KVCacheUsagePeak, c.ServerPreemptions = nil, nil, nil, nil, nil, nil
		c.ServerCPUUtil, c.ServerRSSPeakBytes = someF(3.5), someI(int64(9<<30))
		c.Notes = "prompts=cold; GPU telemetry not measured: no NVML on this machine (libnvidia-ml.so.1 not found); " +
			"server metrics not measured: the engine (llama-server) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL"
		d.Cells = append(d.Cells, c)
	}
	return d
}

func TestDocumentGolden(t *testing.T) {
	for name, d := range map[string]Document{
		"quickstart.md":  quickstartRun(),
		"failed.md":      failedRun(),
		"interrupted.md": interruptedRun(),
		"rates.md":       rateRun(),
		"telemetry.md":   telemetryRun(),
		"empty.md":       {Run: results.Run{RunID: "20261205T000000Z-eeeeee", Plan: "p", Status: "failed"}, Status: "failed", Reason: "the server did not start: exit status 1"},
	} {
		t.Run(name, func(t *testing.T) {
			got := d.Markdown()
			golden.Check(t, name, []byte(got))
			// Same input, same bytes: maps (metadata, values) are read in order.
			for range 5 {
				if again := d.Markdown(); again != got {
					t.Fatal("Markdown is not deterministic")
				}
			}
		})
	}
}

// A failed or interrupted run says so before anything else; an ok one
// says ok.
func TestDocumentSummaryLine(t *testing.T) {
	for _, tc := range []struct {
		d    Document
		want string
	}{
		{quickstartRun(), "**ok** · all 9 checks passed · model meta-llama/Llama-3.2-1B-Instruct (bf16)"},
		{failedRun(), "**Run failed**: 1 assertion failed; output\\_tok\\_s regressed at sweep 64:32 c=4 · 1 of 12 checks failed, **regressed**: 1 of 2 history checks · model sim-llama (Q4\\_K\\_M) · engine sim · linux/amd64, 16 CPUs, 1× NVIDIA H200 · 2026-12-01 04:00 UTC"},
		{interruptedRun(), "**Run interrupted**: interrupted by SIGINT … · 1 of 3 checks failed"},
		{rateRun(), "**ok** · no checks · model qwen3-8b · engine sglang (version unknown)"},
	} {
		first, _, _ := strings.Cut(tc.d.Markdown(), "\n")
		if !strings.HasPrefix(first, tc.want) {
			t.Errorf("summary line\n%s\nwant it to start with\n%s", first, tc.want)
		}
	}
}

// Null is not 0: an unmeasured metric prints a dash in the latency
// tables (with why) and "not measured" in the memory table; a measured 0
// prints 0; a cell that did not end ok shows its status, never its
// zero throughputs.
func TestDocumentNotMeasured(t *testing.T) {
	md := interruptedRun().Markdown()
	for _, want := range []string{
		"| 64 | 32 | c=8 | *error* | *error* | *error* |",
		"- 64:32 c=8: **error**: 8 of 8 requests failed; first: HTTP 500: upstream a\\|b …",
		"| 64 | 1 | c=4 | 477 | – | – | – |",
		"- ITL p50 ms, ITL p99 ms at 64:1 c=4: no completed request had two token events",
		"- TPOT p50 ms at 64:1 c=4: no completed request had more than one output token",
		"| 64 | 1 | c=4 | not measured |",
		"| 64 | 32 | c=1 | 0 |",
		"Memory and GPU utilisation were not measured for this run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	// The error cell measured 0 tok/s over its window; no table shows it.
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| 64 | 32 | c=8 |") && strings.Contains(line, "| 0 ") {
			t.Errorf("an error cell shows a number: %s", line)
		}
	}
}

// The memory section shows the telemetry columns once any is measured:
// a table per source, "not measured" for a NULL, 0 for a measured 0, a
// line with the notes' reason for a source that measured nothing, and no
// longer the sentence that says nothing was measured.
func TestDocumentTelemetry(t *testing.T) {
	md := telemetryRun().Markdown()
	for _, want := range []string{
		"| ISL | OSL | load | GPU memory peak GiB | GPU util mean % | GPU util p95 % | power mean W |",
		"| 128 | 128 | c=4 | 22.0 | 52.0 | 62.0 | 220 |",
		"| ISL | OSL | load | power max W | energy J | tokens per joule |",
		"| 128 | 1024 | c=8 | 390 | not measured | not measured |",
		"| 128 | 128 | c=8 | 8 | 0 | 0 |",
		"| 128 | 128 | c=8 | 1.60 | 32% | 0 |",
		"| 128 | 128 | c=1 | 0.05 |",
		"- GPU: not measured (no NVML on this machine (libnvidia-ml.so.1 not found))\n- Server metrics: not measured (the engine (llama-server) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL)",
		"| ISL | OSL | load | server CPU (cores) | server RSS peak GiB |",
		"| 128 | 128 | c=4 | 3.50 | 9.00 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	if strings.Contains(md, "were not measured for this run") {
		t.Error("the memory section says nothing was measured, though GPU and server telemetry were")
	}
	_, cpu, _ := strings.Cut(md, "## Stage cpu")
	cpu, _, _ = strings.Cut(cpu, "## Checks")
	if strings.Contains(cpu, "GPU util") || strings.Contains(cpu, "park waits") {
		t.Errorf("the CPU stage shows a table of a source it measured nothing of:\n%s", cpu)
	}
}

// Markdown-significant characters of values cannot break a table or
// turn into SiYuan markup.
func TestDocumentEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"a|b\nc":           `a\|b c`,
		"$5 and $6":        `\$5 and \$6`,
		"#tag# ==mark==":   `\#tag\# \=\=mark\=\=`,
		"((20261201-abc))": `\(\(20261201-abc))`,
		"<b>x</b> *y* _z_": `&lt;b&gt;x&lt;/b&gt; \*y\* \_z\_`,
		"c=4 (rep 1)":      "c=4 (rep 1)",
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := mdCode("a`b"); got != "``a`b``" {
		t.Errorf("code = %q", got)
	}
	if got := mdCode("x | y"); got != `x \| y` {
		t.Errorf("code with a pipe = %q, want escaped text", got)
	}
	if got := linkDest("assets/my chart v1-1.svg"); got != "<assets/my chart v1-1.svg>" {
		t.Errorf("linkDest = %q", got)
	}
}

// A table wider than maxColumns is split into parts of about equal
// width, each repeating the identifying columns, every row in each.
func TestDocumentTableSplit(t *testing.T) {
	tb := mdTable{ids: []mdColumn{{head: "cell"}, {head: "metric"}}}
	for i := range 9 {
		tb.cols = append(tb.cols, mdColumn{head: fmt.Sprintf("v%d", i), num: true})
	}
	tb.rows = [][]string{{"a", "m", "0", "1", "2", "3", "4", "5", "6", "7", "8"}, {"b", "m", "10", "11", "12", "13", "14", "15", "16", "17", "18"}}
	var b strings.Builder
	tb.write(&b)
	want := `| cell | metric | v0 | v1 | v2 | v3 | v4 |
| --- | --- | ---: | ---: | ---: | ---: | ---: |
| a | m | 0 | 1 | 2 | 3 | 4 |
| b | m | 10 | 11 | 12 | 13 | 14 |

| cell | metric | v5 | v6 | v7 | v8 |
| --- | --- | ---: | ---: | ---: | ---: |
| a | m | 5 | 6 | 7 | 8 |
| b | m | 15 | 16 | 17 | 18 |

`
	if b.String() != want {
		t.Errorf("split table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	tb.cols, tb.rows = tb.cols[:6], [][]string{{"a", "m", "0", "1", "2", "3", "4", "5"}}
	tb.write(&b)
	if n := strings.Count(b.String(), "| cell |"); n != 1 {
		t.Errorf("a table of %d columns was split into %d", 8, n)
	}
}

func TestDocumentNumbers(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 30155.074: "30155", 194.13823: "194", 14.375: "14.4", 4.709812: "4.71", 0.7112905: "0.711", 0.000512: "0.000512", -2.5: "-2.50"} {
		if got := runview.ShortNum(v); got != want {
			t.Errorf("ShortNum(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{0.052: "+5.2%", -0.186531: "-18.7%", 1.5: "+150%", 0: "0.0%", -0.00001: "0.0%"} {
		if got := signedPct(v); got != want {
			t.Errorf("signedPct(%v) = %q, want %q", v, got, want)
		}
	}
}

// ladderCells builds a closed-loop ladder of one cell: per point the
// concurrency, output tok/s, TTFT p99 and ITL p99 (negative: null).
func ladderCells(pts ...[4]float64) []results.Cell {
	opt := func(v float64) *float64 {
		if v < 0 {
			return nil
		}
		return someF(v)
	}
	var out []results.Cell
	for _, p := range pts {
		out = append(out, results.Cell{Stage: "sweep", CellID: fmt.Sprintf("sweep/128:128/c%g", p[0]), ISL: 128, OSL: 128, Concurrency: int64(p[0]),
			OutputTokS: opt(p[1]), TTFTP99Ms: opt(p[2]), ITLP99Ms: opt(p[3]), Status: results.StatusOK})
	}
	return out
}

// The knee rule: the first step where output tok/s gains under 10% while
// TTFT p99 or ITL p99 grows over 50%.
func TestTakeawayKnee(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cells  []results.Cell
		at     int64 // the knee's concurrency, 0: none
		metric string
	}{
		{"ttft grows, throughput flat", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 380, 25, 6}, [4]float64{8, 400, 40, 6.5}), 8, "TTFT p99"},
		{"itl grows, throughput falls", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 380, 25, 6}, [4]float64{8, 340, 26, 12}), 8, "ITL p99"},
		{"the larger growth names it", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{2, 105, 31, 15}), 2, "ITL p99"},
		{"throughput still grows", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 115, 80, 20}), 0, ""},
		{"latency grows, but not over 50%", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 101, 29.9, 7.4}), 0, ""},
		{"boundaries: +10% gain is not a knee", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 110, 60, 5}), 0, ""},
		{"boundaries: +50% latency is not a knee", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 100, 30, 7.5}), 0, ""},
		{"just inside both", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 109.9, 30.1, 5}), 4, "TTFT p99"},
		{"the first knee only", ladderCells([4]float64{1, 100, 20, 5}, [4]float64{2, 101, 40, 5}, [4]float64{4, 102, 80, 5}), 2, "TTFT p99"},
		{"order of the rows does not matter", ladderCells([4]float64{8, 400, 40, 6.5}, [4]float64{1, 100, 20, 5}, [4]float64{4, 380, 25, 6}), 8, "TTFT p99"},
		{"a null throughput is no step", ladderCells([4]float64{1, -1, 20, 5}, [4]float64{4, 100, 90, 5}, [4]float64{8, 105, 200, 5}), 8, "TTFT p99"},
		{"null p99s are no latency growth", ladderCells([4]float64{1, 100, -1, -1}, [4]float64{4, 100, -1, -1}), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := ladders(tc.cells)
			if len(ls) != 1 {
				t.Fatalf("%d ladders, want 1", len(ls))
			}
			k, ok := kneeOf(ls[0])
			switch {
			case tc.at == 0 && ok:
				t.Errorf("knee at c=%d (%s %+.2f, gain %+.2f); want none", k.At.Concurrency, k.Metric, k.Growth, k.Gain)
			case tc.at != 0 && !ok:
				t.Errorf("no knee; want one at c=%d", tc.at)
			case ok && (k.At.Concurrency != tc.at || k.Metric != tc.metric):
				t.Errorf("knee at c=%d by %s; want c=%d by %s", k.At.Concurrency, k.Metric, tc.at, tc.metric)
			}
		})
	}
	// The takeaway says where and by how much.
	got := takeaways(Document{Cells: ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 380, 25, 6}, [4]float64{8, 400, 40, 6.5})})
	want := "Knee at 128:128 c=8: from c=4, output tok/s +5.3% while TTFT p99 grew +60.0% (25.0 → 40.0 ms); run at c=4 or below for tail latency."
	if !containsLine(got, want) {
		t.Errorf("takeaways %q lack %q", got, want)
	}
	// Ladders of different cells are separate: no step across them.
	mixed := append(ladderCells([4]float64{1, 100, 20, 5}), results.Cell{Stage: "sweep", ISL: 2048, OSL: 128, Concurrency: 4, OutputTokS: someF(101), TTFTP99Ms: someF(400), Status: results.StatusOK})
	if ls := ladders(mixed); len(ls) != 2 {
		t.Errorf("%d ladders of two cells, want 2", len(ls))
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func TestTakeawayBestPoint(t *testing.T) {
	cells := ladderCells([4]float64{1, 100, 20, 5}, [4]float64{4, 380, 25, 6}, [4]float64{8, 380, 40, -1})
	// An error cell's number is no measurement of its point; a null is none.
	cells = append(cells, results.Cell{Stage: "sweep", ISL: 128, OSL: 128, Concurrency: 16, OutputTokS: someF(999), Status: results.StatusError},
		results.Cell{Stage: "sweep", ISL: 128, OSL: 128, Concurrency: 32, Status: results.StatusOK})
	c, ok := bestPoint(cells)
	if !ok || c.Concurrency != 4 {
		t.Fatalf("best point c=%d (found %v); want c=4, the first of equals", c.Concurrency, ok)
	}
	got := takeaways(Document{Cells: cells})
	if want := "Best throughput: 380 output tok/s at 128:128 c=4, with TTFT p99 25.0 ms and ITL p99 6.00 ms."; got[0] != want {
		t.Errorf("takeaway %q, want %q", got[0], want)
	}
	// A measured 0 is a best point; no measurement is none, and no
	// takeaway is made up.
	zero := []results.Cell{{ISL: 1, OSL: 1, Concurrency: 1, OutputTokS: someF(0), Status: results.StatusOK}}
	if c, ok := bestPoint(zero); !ok || *c.OutputTokS != 0 {
		t.Errorf("a measured 0 is no best point")
	}
	if _, ok := bestPoint([]results.Cell{{Status: results.StatusOK}}); ok {
		t.Errorf("a null throughput made a best point")
	}
	none := takeaways(Document{Cells: []results.Cell{{Status: results.StatusOK}}})
	if len(none) != 1 || !strings.HasPrefix(none[0], "None:") {
		t.Errorf("takeaways of nothing measured: %q", none)
	}
}

func TestTakeawayAssertionMargin(t *testing.T) {
	fail := func(expr string, vals map[string]string) results.Verdict {
		return results.Verdict{Assertion: expr, Cell: "sweep 256:32 c=16", Outcome: results.OutcomeFail, Values: vals}
	}
	for _, tc := range []struct {
		v    results.Verdict
		want string
	}{
		{fail("itl_p99_ms < 2*itl_p50_ms", map[string]string{"itl_p50_ms": "7", "itl_p99_ms": "40"}),
			"Check `itl_p99_ms < 2*itl_p50_ms` failed at sweep 256:32 c=16: 40.0 against a limit of 14.0, 186% over it."},
		{fail("output_tok_s >= 500", map[string]string{"output_tok_s": "450"}),
			"Check `output_tok_s >= 500` failed at sweep 256:32 c=16: 450 against a limit of 500, 10.0% under it."},
		{fail("ttft_p99_ms <= itl_p50_ms * 10", map[string]string{"itl_p50_ms": "5", "ttft_p99_ms": "62.5"}),
			"Check `ttft_p99_ms <= itl_p50_ms * 10` failed at sweep 256:32 c=16: 62.5 against a limit of 50.0, 25.0% over it."},
		// No margin where the expression is no single comparison, or a value is missing.
		{fail(`status == "ok"`, map[string]string{"status": "error"}), "Check `status == \"ok\"` failed at sweep 256:32 c=16 (status = error)."},
		{fail("ttft_p99_ms < 500 && itl_p99_ms < 50", map[string]string{"ttft_p99_ms": "600", "itl_p99_ms": "10"}),
			"Check `ttft_p99_ms < 500 && itl_p99_ms < 50` failed at sweep 256:32 c=16 (itl\\_p99\\_ms = 10.0, ttft\\_p99\\_ms = 600)."},
		{fail("ttft_p99_ms < 500", map[string]string{"ttft_p50_ms": "600"}), "Check `ttft_p99_ms < 500` failed at sweep 256:32 c=16 (ttft\\_p50\\_ms = 600)."},
		{results.Verdict{Assertion: "ttft_p99_ms < 500", Name: "fast first token", Cell: "sweep 64:32 c=8", Outcome: results.OutcomeError, Error: "ttft_p99_ms is null: not measured (every request failed)"},
			"Check fast first token could not be judged at sweep 64:32 c=8: ttft\\_p99\\_ms is null: not measured (every request failed)."},
	} {
		if got := failedTakeaway(tc.v); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.v.Assertion, got, tc.want)
		}
	}
	// The failed run's takeaways name its failed check and its regression.
	got := takeaways(failedRun())
	for _, want := range []string{
		"Check `itl_p99_ms < 2*itl_p50_ms` failed at sweep 256:32 c=16:",
		"output\\_tok\\_s regressed at sweep 64:32 c=4: 612 → 498 (-18.7%), confirmed by a second measurement (first 471).",
	} {
		found := false
		for _, l := range got {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("takeaways %q lack %q", got, want)
		}
	}
	// Warnings and passes are no failures.
	warn := failedRun()
	for i := range warn.Verdicts {
		if warn.Verdicts[i].Outcome == results.OutcomeFail {
			warn.Verdicts[i].Outcome = results.OutcomeWarn
		}
	}
	for _, l := range takeaways(warn) {
		if strings.HasPrefix(l, "Check ") {
			t.Errorf("a warning made a failed-check takeaway: %s", l)
		}
	}
}

// Beyond maxListed verdicts the passing ones are counted, the failing
// ones still listed.
func TestDocumentManyChecks(t *testing.T) {
	d := quickstartRun()
	base := d.Verdicts[0]
	d.Verdicts = nil
	for i := range 40 {
		v := base
		v.Values = maps.Clone(base.Values)
		v.Cell = fmt.Sprintf("sweep 128:128 c=%d", i)
		if i == 33 {
			v.Outcome, v.Passed = results.OutcomeFail, false
		}
		d.Verdicts = append(d.Verdicts, v)
	}
	md := d.Markdown()
	if !strings.Contains(md, "| `ttft_p99_ms < 1000` | sweep 128:128 c=33 | ✗ **fail** |") {
		t.Error("the failed check is not listed")
	}
	if strings.Contains(md, "c=32 | ✓ pass") {
		t.Error("passing checks are listed beyond maxListed")
	}
	if !strings.Contains(md, "Not listed: `ttft_p99_ms < 1000` passed on 39 cells.") {
		t.Error("the passes are not counted")
	}
}

// When every one of more than maxListed checks is as expected, none is
// listed one by one: the section says so, with the count, and draws no
// table (it drew an empty one: a header and no rows).
func TestDocumentAllChecksElided(t *testing.T) {
	regression := func(i int) results.Verdict {
		return results.Verdict{Level: levelRegression, Name: "ttft_p50_ms", Assertion: "regression of ttft_p50_ms", Cell: fmt.Sprintf("sweep 128:128 c=%d", i), Outcome: "same", Passed: true,
			Values: map[string]string{"old": "10", "new": "10.1", "change_pct": "1"}}
	}
	pass := func(i int) results.Verdict {
		return results.Verdict{Assertion: "ttft_p99_ms < 1000", Cell: fmt.Sprintf("sweep 128:128 c=%d", i), Outcome: results.OutcomePass, Passed: true, Values: map[string]string{"ttft_p99_ms": "20"}}
	}
	for _, tc := range []struct {
		name    string
		of      func(int) results.Verdict
		section string
		want    string
	}{
		{"regressions all same", regression, "### Regressions against history", "All 42 checks same, not listed one by one: regression of ttft\\_p50\\_ms same on 42 cells."},
		{"assertions all passed", pass, "### Assertions", "All 42 checks passed, not listed one by one: `ttft_p99_ms < 1000` passed on 42 cells."},
	} {
		d := quickstartRun()
		d.Verdicts = nil
		for i := range 42 {
			d.Verdicts = append(d.Verdicts, tc.of(i))
		}
		md := d.Markdown()
		_, after, ok := strings.Cut(md, tc.section+"\n\n")
		if !ok {
			t.Fatalf("%s: no section %q:\n%s", tc.name, tc.section, md)
		}
		if !strings.HasPrefix(after, tc.want+"\n") {
			t.Errorf("%s: section reads\n%.300s\nwant it to start %q", tc.name, after, tc.want)
		}
	}
}

// The reason GPU telemetry was not measured is the GPU's note alone: a
// note after it (the prompt calibration's) is not part of it.
func TestDocumentTelemetryReasonIsItsOwnNote(t *testing.T) {
	d := telemetryRun()
	for i := range d.Cells {
		if d.Cells[i].Stage == "cpu" {
			d.Cells[i].Notes = "GPU telemetry not measured: no NVML on this machine (libnvidia-ml.so.1 not found); " +
				"prompt length calibrated by tokenize (120 single-token and 4 multi-token words, 3 tokens of overhead, 2 requests); " +
				"server metrics not measured: the engine (llama-server) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL"
		}
	}
	md := d.Markdown()
	want := "- GPU: not measured (no NVML on this machine (libnvidia-ml.so.1 not found))\n- Server metrics: not measured (the engine (llama-server) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL)"
	if !strings.Contains(md, want) {
		_, got, _ := strings.Cut(md, "- GPU: ")
		t.Errorf("document lacks %q; reads %.200q", want, "- GPU: "+got)
	}
}

// A run whose rows say another GGUF was served than the plan's model.file
// is summed up with the rows' file as served, the plan's named as the
// plan's (it was labelled served from the plan's file).
func TestDocumentSummaryNamesTheFileTheRowsServed(t *testing.T) {
	d := quickstartRun()
	d.Run.ModelFile, d.Run.ModelQuant = "Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"
	for i := range d.Cells {
		d.Cells[i].Model = "models/Llama-3.2-1B-Instruct-Q8_0.gguf"
	}
	line, _, _ := strings.Cut(d.Markdown(), "\n")
	if !strings.Contains(line, "served Llama-3.2-1B-Instruct-Q8\\_0.gguf") || strings.Contains(line, "served Llama-3.2-1B-Instruct-Q4") {
		t.Errorf("summary %q: want the rows' file as served", line)
	}
	if !strings.Contains(line, "plan's model.file Llama-3.2-1B-Instruct-Q4\\_K\\_M.gguf, Q4\\_K\\_M (not what the rows say was served)") {
		t.Errorf("summary %q: want the plan's file set apart", line)
	}
}
