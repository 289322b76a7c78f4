// Package resultstest builds deterministic rows for the outputs' golden
// tests: a two-cell sweep over a concurrency ladder whose metrics follow
// simple formulas, with requests and assertion verdicts to match. It also
// reads back the Parquet files a test's sink or run wrote, and lists the
// nullable columns that the outputs' null round-trip tests walk.
package resultstest

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// T0 is the fixture run's start.
var T0 = time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)

// RunID of the fixture run.
const RunID = "20261201T040000Z-a1b2c3"

// Run returns the fixture run's run-level record.
func Run() results.Run {
	fin := T0.Add(90 * time.Second)
	code := 1
	return results.Run{
		RunID: RunID, Plan: "fixture", Description: "two cells × concurrency 1, 4, 16 (deterministic fixture)",
		StartedAt: T0, FinishedAt: &fin, Status: "failed", ExitCode: &code,
		Model: "sim-llama", ModelDigest: "sha256:0123abcd", Metadata: map[string]string{"quant": "Q4_K_M", "gpu": "none"},
		Hostname: "bench-host", Hardware: "linux/amd64, 16 CPUs, 1× NVIDIA H200", BenchrunVersion: "v0.1.0",
		Stages: []results.StageOutcome{
			{Name: "server", Kind: "launch", Status: "ok", DurationS: 1.5},
			{Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 85.25},
		},
	}
}

// Point is one cell × ladder point of the fixture with its rows.
type Point struct {
	Cell     results.Cell
	Requests []results.Request
	Verdicts []results.Verdict
}

// Points returns the fixture's cells in run order: 64:32 and 256:32, each at
// concurrency 1, 4 and 16. Latencies grow with concurrency, throughput
// grows sub-linearly; the 256:32 cell at c=16 fails its ITL assertion.
func Points() []Point {
	var out []Point
	i := 0
	for _, shape := range [][2]int64{{64, 32}, {256, 32}} {
		var c1 float64
		for _, conc := range []int64{1, 4, 16} {
			out = append(out, point(i, shape[0], shape[1], conc, &c1))
			i++
		}
	}
	return out
}

func point(i int, isl, osl, conc int64, c1 *float64) Point {
	id := fmt.Sprintf("sweep/%d:%d/c%d", isl, osl, conc)
	c := results.Cell{
		RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id,
		StartedAt: T0.Add(time.Duration(i) * 10 * time.Second), Model: "sim-llama", ModelDigest: "sha256:0123abcd",
		Engine: "sim", Endpoint: "completions", Metadata: map[string]string{"quant": "Q4_K_M", "gpu": "none"},
		Hostname: "bench-host", Hardware: "linux/amd64, 16 CPUs, 1× NVIDIA H200", BenchrunVersion: "v0.1.0",
		ISL: isl, OSL: osl, Concurrency: conc,
	}
	// Requests: 2*conc per point, ttft rising with load and prompt size,
	// gaps rising with load; every other request of 256:32 c=16 stalls
	// at its end.
	n := int(2 * conc)
	fc := float64(conc)
	var reqs []results.Request
	var ttft, e2el, tpot, itl []float64
	var inTok, outTok float64
	for k := 0; k < n; k++ {
		t := 20 + float64(isl)/32 + 3*fc + float64(k%4)
		gap := 5 + 0.5*fc + 0.25*float64(k%3)
		gaps := make([]float64, osl-1)
		for g := range gaps {
			gaps[g] = gap
		}
		if isl == 256 && conc == 16 && k%2 == 0 {
			for g := len(gaps) - 3; g < len(gaps); g++ {
				gaps[g] = 40 // decode stalls under load: the ITL tail the assertion catches
			}
		}
		e := t
		for _, g := range gaps {
			e += g
		}
		reqs = append(reqs, results.Request{
			RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, Seq: int64(k), ResponseID: fmt.Sprintf("cmpl-%d-%d", i, k),
			SentAt: c.StartedAt.Add(time.Duration(k) * time.Millisecond), SendLagMs: 0.05,
			TTFTMs: results.Some(t), E2ELMs: results.Some(e), InputTokens: isl, OutputTokens: osl, Chunks: osl, ChunkGapsMs: gaps, Status: results.StatusOK,
		})
		ttft = append(ttft, t)
		e2el = append(e2el, e)
		tpot = append(tpot, (e-t)/float64(osl-1))
		itl = append(itl, gaps...)
		inTok += float64(isl)
		outTok += float64(osl)
	}
	ts, is, ps, es := stats.Summarize(ttft), stats.Summarize(itl), stats.Summarize(tpot), stats.Summarize(e2el)
	some := results.Some[float64]
	c.Requests, c.Completed = int64(n), int64(n)
	c.FirstCallMs = some(es.Max + 100)
	c.TTFTMs, c.TTFTP50Ms, c.TTFTP90Ms, c.TTFTP99Ms, c.TTFTMaxMs = some(ts.Mean), some(ts.P50), some(ts.P90), some(ts.P99), some(ts.Max)
	c.ITLMs, c.ITLP50Ms, c.ITLP90Ms, c.ITLP99Ms, c.ITLMaxMs = some(is.Mean), some(is.P50), some(is.P90), some(is.P99), some(is.Max)
	// One token per chunk: the per-token ITL is the per-event one.
	c.ITLTokMs, c.ITLTokP50Ms, c.ITLTokP90Ms, c.ITLTokP99Ms, c.ITLTokMaxMs = some(is.Mean), some(is.P50), some(is.P90), some(is.P99), some(is.Max)
	c.TPOTMs, c.TPOTP50Ms, c.TPOTP90Ms, c.TPOTP99Ms = some(ps.Mean), some(ps.P50), some(ps.P90), some(ps.P99)
	c.E2ELMs, c.E2ELP50Ms, c.E2ELP90Ms, c.E2ELP99Ms = some(es.Mean), some(es.P50), some(es.P90), some(es.P99)
	c.SendLagP99 = some(0.05)
	c.DurationS = es.Max / 1000 * 2
	c.ReqS = some(float64(n) / c.DurationS)
	c.OutputTokS = some(outTok / c.DurationS)
	c.DecodeTokS = some(outTok / c.DurationS)
	c.TotalTokS = some((inTok + outTok) / c.DurationS)
	c.Goodput = some(float64(n) / c.DurationS)
	c.PrefillTokS = some(inTok / (ts.Mean * float64(n) / 1000))
	c.EffectiveISL, c.EffectiveOSL = some(float64(isl)), some(float64(osl))
	if conc == 1 {
		*c1 = *c.DecodeTokS
	}
	c.SpeedupVsC1 = some(*c.DecodeTokS / *c1)
	c.BatchingEfficiency = some(*c.SpeedupVsC1 / fc)
	c.Status = results.StatusOK
	c.Notes = "prompts=cold (a fresh prompt every request)"

	pass := *c.ITLP99Ms < 2**c.ITLP50Ms
	v := results.Verdict{
		RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, Cell: fmt.Sprintf("sweep %d:%d c=%d", isl, osl, conc),
		JudgedAt: c.StartedAt.Add(5 * time.Second), Assertion: "itl_p99_ms < 2*itl_p50_ms", Pos: "plans/fixture.cue:20:13",
		Scope: "stage", Passed: pass, Outcome: results.OutcomePass,
		Values: map[string]string{"itl_p50_ms": fmt.Sprint(*c.ITLP50Ms), "itl_p99_ms": fmt.Sprint(*c.ITLP99Ms)},
	}
	if !pass {
		v.Outcome = results.OutcomeFail
	}
	st := results.Verdict{
		RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, Cell: v.Cell, JudgedAt: v.JudgedAt,
		Assertion: `status == "ok"`, Pos: "plans/fixture.cue:20:41", Scope: "stage", Passed: true, Outcome: results.OutcomePass,
		Values: map[string]string{"status": "ok"},
	}
	return Point{Cell: c, Requests: reqs, Verdicts: []results.Verdict{v, st}}
}

// Unmeasured returns a point whose every request failed (HTTP 500): its
// counts and its throughputs over the window are measured (8 sent, 0
// completed, 0 req/s), every latency statistic, the speedup (its c=1 row
// failed too), max_model_len, client_cpu_util and the cost are null, and
// its request rows have null ttft and e2el. Sinks' null round-trip tests
// write it beside Points.
func Unmeasured() Point {
	id := "sweep/64:32/c8"
	t0 := T0.Add(2 * time.Minute)
	zero := results.Some(0.0)
	c := results.Cell{
		RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, StartedAt: t0, Model: "sim-llama",
		Engine: "sim", Endpoint: "completions", Metadata: map[string]string{"quant": "Q4_K_M", "gpu": "none"},
		ISL: 64, OSL: 32, Concurrency: 8, Requests: 8, Failed: 8, DurationS: 0.5,
		ReqS: zero, OutputTokS: zero, DecodeTokS: zero, TotalTokS: zero, Goodput: zero, GoodputRatio: zero,
		SendLagMs: results.Some(0.05), SendLagP50Ms: results.Some(0.05), SendLagP90Ms: results.Some(0.05),
		SendLagP95Ms: results.Some(0.05), SendLagP99: results.Some(0.05), SendLagMaxMs: results.Some(0.05),
		SentReqS: results.Some(16.0),
		Status:   results.StatusError, Reason: "8 of 8 requests failed; first: HTTP 500: Internal server error",
		Notes: "prompts=cold (a fresh prompt every request)",
	}
	var reqs []results.Request
	for k := 0; k < 8; k++ {
		reqs = append(reqs, results.Request{
			RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, Seq: int64(k),
			SentAt: t0.Add(time.Duration(k) * time.Millisecond), SendLagMs: 0.05,
			Status: results.StatusError, Error: "HTTP 500: Internal server error",
		})
	}
	v := results.Verdict{
		RunID: RunID, Plan: "fixture", Stage: "sweep", CellID: id, Cell: "sweep 64:32 c=8",
		JudgedAt: t0.Add(time.Second), Assertion: "ttft_p99_ms < 500", Pos: "plans/fixture.cue:20:13", Scope: "stage",
		Outcome: results.OutcomeError, Values: map[string]string{"ttft_p99_ms": "null"},
		Error: "ttft_p99_ms is null: not measured (every request failed)",
	}
	return Point{Cell: c, Requests: reqs, Verdicts: []results.Verdict{v}}
}
