package regress

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// reqRun is a synthetic run of one closed-loop cell at concurrency k
// with n requests, in completion order: TTFT and ITL are log-normal
// around ttft and itl with spread σ, and share a "load" with their
// neighbours: the mean of the last k shocks (a moving average: requests
// that overlap in one batch of k share the steps they decode in), so
// requests are not independent and correlation reaches k requests. The cell row carries the statistics the
// rows give, and throughput tput.
func reqRun(seed uint64, id string, n, k int, ttft, itl, sigma, tput float64) *Run {
	return stalledRun(seed, id, n, k, ttft, itl, sigma, tput, 0)
}

// stalledRun is reqRun on a machine that stalls: a request is hit by a
// stall with probability stall, which adds 25 ms to its first token and
// to one of its gaps (a machine stopping while it waited).
func stalledRun(seed uint64, id string, n, k int, ttft, itl, sigma, tput, stall float64) *Run {
	rng := rand.New(rand.NewPCG(seed, 99))
	shocks := make([]float64, k)
	var reqs []results.Request
	var ttfts, e2els, tpots, gaps []float64
	at := t0
	for i := range n {
		shocks[i%k] = rng.NormFloat64()
		load := 0.0
		for _, x := range shocks {
			load += x
		}
		load /= math.Sqrt(float64(k))
		f := sigma * (0.8*load + 0.6*rng.NormFloat64())
		tt := ttft * math.Exp(f)
		hit := stall > 0 && rng.Float64() < stall
		if hit {
			tt += 25
		}
		var g []float64
		e2 := tt
		for j := range 16 {
			x := itl * math.Exp(f+0.05*rng.NormFloat64())
			if hit && j == 7 {
				x += 25
			}
			g = append(g, x)
			e2 += x
		}
		reqs = append(reqs, results.Request{
			RunID: id, CellID: "sweep/128:16/c4", Seq: int64(i), SentAt: at, Status: results.StatusOK,
			TTFTMs: results.Some(tt), E2ELMs: results.Some(e2), OutputTokens: 17, Chunks: 17, ChunkGapsMs: g,
		})
		at = at.Add(time.Duration(e2*float64(time.Millisecond)) / time.Duration(k))
		ttfts, e2els, gaps = append(ttfts, tt), append(e2els, e2), append(gaps, g...)
		tpots = append(tpots, (e2-tt)/16)
	}
	c := mkCell("sweep/128:16/c4", map[string]float64{
		"ttft_p50_ms": stats.Percentile(ttfts, 50), "ttft_p99_ms": stats.Percentile(ttfts, 99),
		"itl_p50_ms": stats.Percentile(gaps, 50), "itl_p99_ms": stats.Percentile(gaps, 99),
		"tpot_p50_ms": stats.Percentile(tpots, 50),
		"e2el_p50_ms": stats.Percentile(e2els, 50), "e2el_p99_ms": stats.Percentile(e2els, 99),
		"output_tok_s": tput, "req_s": tput / 17,
	})
	c.Concurrency, c.Requests, c.Completed = int64(k), int64(n), int64(n)
	r := mkRun(0, c)
	r.ID, r.Cells[0].RunID = id, id
	r.Requests = map[string]results.Requests{c.CellID: results.RequestSlice(reqs)}
	return r
}

func TestCompareSlower(t *testing.T) {
	old := reqRun(1, "old", 200, 4, 40, 8, 0.1, 450)
	slow := reqRun(2, "new", 200, 4, 48, 9.6, 0.1, 380) // 20% slower
	rep := CompareRuns([]*Run{old}, []*Run{slow}, Options{})
	want := map[string]Outcome{
		"ttft_p50_ms": Regressed, "itl_p50_ms": Regressed, "tpot_p50_ms": Regressed, "e2el_p50_ms": Regressed,
		"output_tok_s": Unknown, "req_s": Unknown,
	}
	for _, v := range rep.Verdicts {
		w, ok := want[v.Metric]
		if !ok {
			continue
		}
		if v.Outcome != w {
			t.Errorf("%s: %s, want %s", v, v.Outcome, w)
		}
		switch v.Method {
		case MethodBootstrap:
			if v.N != 200 || v.NNew != 200 || !(v.Low > 1) || math.IsNaN(v.MWU) || v.MWU > 0.05 {
				t.Errorf("%s: n %d+%d, interval [%v, %v], MWU p %v", v.Metric, v.N, v.NNew, v.Low, v.High, v.MWU)
			}
			// The point estimate is the rows' own statistic.
			m, _ := LookupMetric(v.Metric)
			if row := *m.Value(&slow.Cells[0]); math.Abs(v.New-row) > 1e-9*row {
				t.Errorf("%s: new %v, the row says %v", v.Metric, v.New, row)
			}
		case MethodNone:
			if !strings.Contains(v.Reason, "one number per run: two single runs cannot decide it") {
				t.Errorf("%s: reason %q", v.Metric, v.Reason)
			}
		}
	}
	if rep.Count(Regressed) < 4 || rep.Correction != BenjaminiHochberg {
		t.Errorf("%d regressed under %s", rep.Count(Regressed), rep.Correction)
	}
	if len(rep.Summaries) == 0 || rep.Summaries[0].Metric != "ttft_p50_ms" || math.Abs(rep.Summaries[0].Change-0.2) > 0.06 {
		t.Errorf("geomean summaries %+v", rep.Summaries)
	}
}

// TestCompareSame: two runs of the same distribution, with enough
// requests, are `same` on their medians (the interval within ±5%).
func TestCompareSame(t *testing.T) {
	a := reqRun(3, "a", 600, 4, 40, 8, 0.05, 450)
	b := reqRun(4, "b", 600, 4, 40, 8, 0.05, 452)
	rep := CompareRuns([]*Run{a}, []*Run{b}, Options{})
	for _, name := range []string{"ttft_p50_ms", "itl_p50_ms", "tpot_p50_ms", "e2el_p50_ms"} {
		if v := verdictOf(rep, name); v.Outcome != Same {
			t.Errorf("%s: %s, want same", v, v.Outcome)
		}
	}
	if rep.Count(Regressed) != 0 {
		t.Errorf("identical runs regressed: %v", rep.Regressions())
	}
}

// TestCompareUnknown: few, noisy requests cannot tell whether anything
// changed; the verdict says so and how many more requests would.
func TestCompareUnknown(t *testing.T) {
	a := reqRun(5, "a", 24, 1, 40, 8, 0.25, 450)
	b := reqRun(6, "b", 24, 1, 40, 8, 0.25, 450)
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	v := CompareRuns([]*Run{a}, []*Run{b}, Options{Metrics: m}).Verdicts[0]
	if v.Outcome != Unknown || v.MoreRequests <= 0 || !strings.Contains(v.Reason, "more requests a side would likely decide it") {
		t.Errorf("%s (more: %d), want unknown with a hint", v, v.MoreRequests)
	}
	// Too few requests for the bootstrap at all: per-run, so unknown.
	a, b = reqRun(5, "a", 3, 1, 40, 8, 0.25, 450), reqRun(6, "b", 3, 1, 80, 16, 0.25, 450)
	v = CompareRuns([]*Run{a}, []*Run{b}, Options{Metrics: m}).Verdicts[0]
	if v.Outcome != Unknown || !strings.Contains(v.Reason, "fewer than 5 measured requests a side") {
		t.Errorf("3 requests: %s", v)
	}
}

// TestCompareRepeats: several runs a side pool as repeats, so throughput
// is judged by Welch on the per-run values.
func TestCompareRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	side := func(tag string, tput float64, n int) []*Run {
		var rs []*Run
		for i := range n {
			rs = append(rs, reqRun(rng.Uint64(), tag+string(rune('0'+i)), 60, 4, 40, 8, 0.1, noisy(rng, tput, 0.01)))
		}
		return rs
	}
	m, _ := SelectMetrics([]string{"output_tok_s", "ttft_p50_ms"})
	olds := side("o", 450, 4)
	rep := CompareRuns(olds, side("n", 400, 4), Options{Metrics: m})
	v := verdictOf(rep, "output_tok_s")
	if v.Outcome != Regressed || v.Method != MethodWelch || v.N != 4 || v.NNew != 4 || !(v.High < 1) {
		t.Errorf("11%% less throughput over 4 runs a side: %s by %s (n %d+%d)", v, v.Method, v.N, v.NNew)
	}
	if b := verdictOf(rep, "ttft_p50_ms"); b.N != 4 || b.Method != MethodWelch {
		t.Errorf("ttft over 4 runs a side: n = %d by %s, want the 4 runs' values by welch", b.N, b.Method)
	}
	if v := verdictOf(CompareRuns(olds, side("s", 450, 4), Options{Metrics: m}), "output_tok_s"); v.Outcome != Same {
		t.Errorf("same throughput over 4 runs a side: %s", v)
	}
	if v := verdictOf(CompareRuns(olds, side("x", 400, 1), Options{Metrics: m}), "output_tok_s"); v.Outcome != Unknown || !strings.Contains(v.Reason, "at least two runs a side (4 old, 1 new)") {
		t.Errorf("one new run: %s", v)
	}
}

// TestCompareMatching: cells on one side only are listed with the nearest
// cell of the other side; when nothing matches, NoMatch says what
// differs; excluded and NULL cells are counted.
func TestCompareMatching(t *testing.T) {
	a := reqRun(1, "a", 30, 4, 40, 8, 0.1, 450)
	b := reqRun(2, "b", 30, 4, 40, 8, 0.1, 450)
	b.Cells[0].EngineVersion = "0.12.0"
	rep := CompareRuns([]*Run{a}, []*Run{b}, Options{})
	if rep.NoMatch != "no cell matches: engine_version differs (0.11.0 vs 0.12.0)" {
		t.Errorf("NoMatch = %q", rep.NoMatch)
	}
	if len(rep.OnlyOld) != 1 || len(rep.OnlyNew) != 1 || len(rep.Verdicts) != 0 {
		t.Fatalf("only old %v, only new %v, %d verdicts", rep.OnlyOld, rep.OnlyNew, len(rep.Verdicts))
	}
	if d := rep.OnlyNew[0].Diffs; len(d) != 1 || d[0].Field != "engine_version" {
		t.Errorf("only-new diffs %v", d)
	}
	// A metadata difference names the key.
	k1, k2 := KeyOf(mkCell("c", nil)), KeyOf(mkCell("c", nil))
	k2.Metadata = canonicalMeta(map[string]string{"quant": "int4"})
	if e := Explain([]Key{k1}, []Key{k2}); e != "no cell matches: metadata.quant differs (fp8 vs int4)" {
		t.Errorf("Explain = %q", e)
	}
	if k := k2.Without("quant"); k.Metadata != "" || k.Without("engine_version").EngineVersion != "" {
		t.Errorf("Without: %+v", k)
	}
	// Extra cells on one side are listed, not dropped.
	extra := mkCell("sweep/2048:16/c4", baseVals)
	a.Cells = append(a.Cells, extra)
	b.Cells[0].EngineVersion = "0.11.0"
	rep = CompareRuns([]*Run{a}, []*Run{b}, Options{})
	if rep.NoMatch != "" || len(rep.OnlyOld) != 1 || rep.OnlyOld[0].Key.CellID != "sweep/2048:16/c4" || len(rep.OnlyNew) != 0 {
		t.Errorf("NoMatch %q, only old %v, only new %v", rep.NoMatch, rep.OnlyOld, rep.OnlyNew)
	}
	// An error cell on the new side is excluded and counted; a NULL
	// metric is skipped.
	b.Cells = append(b.Cells, extra)
	b.Cells[1].Status = results.StatusError
	b.Cells[0].ITLP99Ms = nil
	rep = CompareRuns([]*Run{a}, []*Run{b}, Options{})
	if rep.Excluded[ReasonCellError] != 1 || len(rep.OnlyOld) != 0 {
		t.Errorf("excluded %v, only old %v", rep.Excluded, rep.OnlyOld)
	}
	var skipped []string
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Metric+":"+s.Reason)
	}
	if strings.Join(skipped, ",") != ":new side: cell error,itl_p99_ms:not measured" {
		t.Errorf("skipped %v", skipped)
	}
	if verdictOf(rep, "itl_p99_ms") != nil {
		t.Error("a metric NULL on one side was judged")
	}
}

// TestBootstrapFalseAlarms measures how often two runs drawn from the
// same distribution are called different, over many pairs of correlated
// request series (the batch "load" of reqRun): with the block bootstrap
// over completion order, and, for contrast, with blocks of one request
// (the independent bootstrap), whose intervals are too narrow for
// correlated requests. It also measures the power on a 10% change.
func TestBootstrapFalseAlarms(t *testing.T) {
	const pairs, n, k, resamples = 300, 300, 8, 400
	alpha := 0.05
	var blockHits, twoKHits, iidHits, flagged, detected int
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	o := Options{Metrics: m, Resamples: resamples, Seed: 1}
	for i := range pairs {
		a := reqRun(uint64(2*i), "a", n, k, 40, 8, 0.3, 450)
		b := reqRun(uint64(2*i+1), "b", n, k, 40, 8, 0.3, 450)
		sa, sb := sideOf(a, "ttft", 0.5), sideOf(b, "ttft", 0.5)
		if sa.runs[0].block != 3*k {
			t.Fatalf("block length %d, want 3k = %d", sa.runs[0].block, 3*k)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		if r := bootstrapRatios(&sa, &sb, []float64{0.5}, resamples, alpha, rng)[0]; r.low > 1 || r.high < 1 {
			blockHits++
		}
		sa.runs[0].block, sb.runs[0].block = 2*k, 2*k
		if r := bootstrapRatios(&sa, &sb, []float64{0.5}, resamples, alpha, rng)[0]; r.low > 1 || r.high < 1 {
			twoKHits++
		}
		sa.runs[0].block, sb.runs[0].block = 1, 1
		if r := bootstrapRatios(&sa, &sb, []float64{0.5}, resamples, alpha, rng)[0]; r.low > 1 || r.high < 1 {
			iidHits++
		}
		if v := CompareRuns([]*Run{a}, []*Run{b}, o).Verdicts[0]; v.Outcome == Regressed || v.Outcome == Improved {
			flagged++
		}
		c := reqRun(uint64(2*i+1), "c", n, k, 44, 8, 0.3, 450)
		if v := CompareRuns([]*Run{a}, []*Run{c}, o).Verdicts[0]; v.Outcome == Regressed {
			detected++
		}
	}
	rate := func(x int) float64 { return float64(x) / pairs }
	t.Logf("identical pairs (%d, %d requests, c=%d, σ=0.3): interval excludes 1 in %.1f%% with blocks of %d (3k), %.1f%% with 2k, %.1f%% with blocks of 1 (nominal %.0f%%); flagged changed (with the 5%% threshold) in %.1f%%; a 10%% TTFT p50 slowdown detected in %.1f%%",
		pairs, n, k, 100*rate(blockHits), 3*k, 100*rate(twoKHits), 100*rate(iidHits), 100*alpha, 100*rate(flagged), 100*rate(detected))
	if rate(blockHits) > 0.075 {
		t.Errorf("block bootstrap false-alarm rate %.3f over the bound 0.075", rate(blockHits))
	}
	if rate(flagged) > 0.075 {
		t.Errorf("flagged identical pairs at %.3f, over the bound 0.075", rate(flagged))
	}
	if rate(iidHits) <= rate(blockHits) {
		t.Errorf("the independent bootstrap (%.3f) is no bolder than the block bootstrap (%.3f) on correlated requests: the test does not show why blocks are needed", rate(iidHits), rate(blockHits))
	}
}

// TestBlockLength: 2k requests, at least ∛n, at most n/3.
func TestBlockLength(t *testing.T) {
	c := mkCell("c", nil)
	for _, x := range []struct {
		conc, n int
		rate    float64
		e2el    float64
		want    int
	}{
		{4, 200, 0, 0, 12},
		{1, 1000, 0, 0, 10},    // ∛1000
		{64, 300, 0, 0, 100},   // capped at n/3
		{0, 300, 10, 2000, 60}, // open loop: 10 req/s × 2 s = 20 in flight
		{4, 2, 0, 0, 1},
	} {
		c.Concurrency, c.Rate = int64(x.conc), x.rate
		if got := BlockLength(&c, x.n, x.e2el); got != x.want {
			t.Errorf("BlockLength(c=%d, n=%d, rate=%v) = %d, want %d", x.conc, x.n, x.rate, got, x.want)
		}
	}
}

// TestWeightedStats: the resampling statistic with all weights 1 is
// stats.Percentile's; weights repeat values.
func TestWeightedStats(t *testing.T) {
	r := reqRun(9, "a", 50, 4, 40, 8, 0.3, 450)
	s := sideOf(r, "itl", 0, 0.5, 0.99)
	out := make([]float64, 3)
	s.stats(nil, []float64{0, 0.5, 0.99}, out)
	if !near(out[1], *r.Cells[0].ITLP50Ms, 1e-9) || !near(out[2], *r.Cells[0].ITLP99Ms, 1e-9) {
		t.Errorf("p50, p99 = %v, %v; rows say %v, %v", out[1], out[2], *r.Cells[0].ITLP50Ms, *r.Cells[0].ITLP99Ms)
	}
	// Weighting request 0 twice is its gaps twice.
	counts := make([]int32, s.nReq)
	for i := range counts {
		counts[i] = 1
	}
	counts[0] = 2
	var all []float64
	for i, q := range reqsOf(r, r.Cells[0].CellID) {
		all = append(all, q.ChunkGapsMs...)
		if i == 0 {
			all = append(all, q.ChunkGapsMs...)
		}
	}
	s.stats(counts, []float64{0, 0.5, 0.99}, out)
	if !near(out[0], stats.Mean(all), 1e-9) || !near(out[1], stats.Percentile(all, 50), 1e-9) || !near(out[2], stats.Percentile(all, 99), 1e-9) {
		t.Errorf("weighted %v; expanded mean %v p50 %v p99 %v", out, stats.Mean(all), stats.Percentile(all, 50), stats.Percentile(all, 99))
	}
}

// TestSplitByAndIgnore: variants within one side compare by a metadata
// key; an ignored key part lets two engine versions compare.
func TestSplitByAndIgnore(t *testing.T) {
	q4 := reqRun(1, "r1", 100, 4, 40, 8, 0.05, 450)
	q8 := reqRun(2, "r2", 100, 4, 60, 12, 0.05, 300)
	q4.Cells[0].Metadata = map[string]string{"quant": "Q4_K_M", "gpu": "h200"}
	q8.Cells[0].Metadata = map[string]string{"quant": "Q8_0", "gpu": "h200"}
	values, variants := SplitBy([]*Run{q4, q8}, "quant")
	if len(values) != 2 || values[0] != "Q4_K_M" || values[1] != "Q8_0" || len(variants["Q8_0"]) != 1 {
		t.Fatalf("SplitBy: %v %v", values, variants)
	}
	if m := variants["Q8_0"][0].Cells[0].Metadata; len(m) != 1 || m["gpu"] != "h200" || q8.Cells[0].Metadata["quant"] != "Q8_0" {
		t.Errorf("variant metadata %v (the run's own %v must stay)", m, q8.Cells[0].Metadata)
	}
	rep := CompareRuns(variants["Q4_K_M"], variants["Q8_0"], Options{})
	if v := verdictOf(rep, "ttft_p50_ms"); v == nil || v.Outcome != Regressed || variants["Q8_0"][0].Requests["sweep/128:16/c4"].Len() != 100 {
		t.Errorf("Q4 → Q8 ttft: %v", v)
	}
	// Two engine versions: no match, unless engine_version is ignored.
	a, b := reqRun(3, "a", 60, 4, 40, 8, 0.05, 450), reqRun(4, "b", 60, 4, 40, 8, 0.05, 450)
	b.Cells[0].EngineVersion = "0.12.0"
	if rep := CompareRuns([]*Run{a}, []*Run{b}, Options{}); len(rep.Verdicts) != 0 {
		t.Errorf("different engine versions were compared")
	}
	if rep := CompareRuns([]*Run{a}, []*Run{b}, Options{Ignore: []string{"engine_version"}}); len(rep.Verdicts) == 0 || rep.NoMatch != "" {
		t.Errorf("--ignore engine_version: %d verdicts, %q", len(rep.Verdicts), rep.NoMatch)
	}
}

// TestSplitByColumn: variants by a column of the rows: --by engine splits
// by the engine and blanks it and its version, so two engines' cells
// match; a metadata key of a column's name is not read.
func TestSplitByColumn(t *testing.T) {
	a, b := reqRun(1, "a", 60, 4, 40, 8, 0.05, 450), reqRun(2, "b", 60, 4, 60, 12, 0.05, 300)
	b.Cells[0].Engine, b.Cells[0].EngineVersion = "sglang", "0.5.1"
	meta := a.Cells[0].Metadata
	a.Cells[0].Metadata = maps.Clone(meta)
	a.Cells[0].Metadata["engine"] = "ignored"
	values, variants := SplitBy([]*Run{a, b}, "engine")
	if len(values) != 2 || values[0] != a.Cells[0].Engine || values[1] != "sglang" {
		t.Fatalf("SplitBy engine: %v", values)
	}
	c := variants["sglang"][0].Cells[0]
	if c.Engine != "" || c.EngineVersion != "" || b.Cells[0].Engine != "sglang" {
		t.Errorf("variant cell engine %q %q (the run's own %q must stay)", c.Engine, c.EngineVersion, b.Cells[0].Engine)
	}
	if variants[values[0]][0].Cells[0].Metadata["engine"] != "ignored" {
		t.Error("the metadata key of a column's name was taken out")
	}
	a.Cells[0].Metadata = meta
	_, variants = SplitBy([]*Run{a, b}, "engine")
	rep := CompareRuns(variants[values[0]], variants["sglang"], Options{})
	if v := verdictOf(rep, "ttft_p50_ms"); v == nil || v.Outcome != Regressed {
		t.Errorf("engine a → sglang ttft: %v (%s)", v, rep.NoMatch)
	}
}

// TestVerdictJSON: a verdict's NaN numbers are null, its direction a word.
func TestVerdictJSON(t *testing.T) {
	a, b := reqRun(1, "a", 30, 4, 40, 8, 0.1, 450), reqRun(2, "b", 30, 4, 40, 8, 0.1, 450)
	rep := CompareRuns([]*Run{a}, []*Run{b}, Options{})
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{`"metric":"output_tok_s"`, `"better":"higher"`, `"low":null`, `"mwu_p":null`, `"outcome":"unknown"`, `"correction":"benjamini-hochberg"`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	var back struct{ Verdicts []struct{ Better Better } }
	if err := json.Unmarshal(out, &back); err != nil || back.Verdicts[0].Better != Lower {
		t.Errorf("read back: %v %+v", err, back.Verdicts[0])
	}
}

// TestCompareRunToRunNoise: ten runs a side of one setting whose runs
// differ from each other (each run's latencies and throughput off by a
// few percent, as a server's launch moves them, and 0-10% of its 16 requests
// hit by a 25 ms stall of the machine, which moves the p99s most) call nothing regressed or improved over every default
// metric, in every one of 20 such comparisons; requests pooled over the
// runs did (their bootstrap sees only the spread within a run). A 10%
// slower server over the same noise is still found.
func TestCompareRunToRunNoise(t *testing.T) {
	side := func(rng *rand.Rand, tag string, slower float64) []*Run {
		var rs []*Run
		for i := range 10 {
			off := math.Exp(0.03 * rng.NormFloat64())
			stall := 0.1 * rng.Float64() // how busy the machine was that night
			rs = append(rs, stalledRun(rng.Uint64(), fmt.Sprintf("%s%02d", tag, i), 16, 4, 40*slower*off, 8*slower*off, 0.1, 450/(slower*off), stall))
		}
		return rs
	}
	calls := 0
	for trial := range 20 {
		rng := rand.New(rand.NewPCG(uint64(trial), 5))
		rep := CompareRuns(side(rng, "o", 1), side(rng, "n", 1), Options{})
		for _, v := range rep.Verdicts {
			if v.Outcome == Regressed || v.Outcome == Improved {
				calls++
				t.Errorf("trial %d: identical settings: %s", trial, v)
			}
		}
	}
	rng := rand.New(rand.NewPCG(99, 5))
	rep := CompareRuns(side(rng, "o", 1), side(rng, "n", 1.1), Options{})
	for _, m := range []string{"ttft_p50_ms", "tpot_p50_ms", "e2el_p50_ms"} {
		if v := verdictOf(rep, m); v.Outcome != Regressed {
			t.Errorf("10%% slower: %s", v)
		}
	}
}

// TestMetadataKeyNamedLikeAColumn: a metadata key with a column's name
// (metadata engine: "eng-a") is reached as metadata.engine, by --by and by
// --ignore, where the bare name means the column.
func TestMetadataKeyNamedLikeAColumn(t *testing.T) {
	a, b := reqRun(1, "a", 60, 4, 40, 8, 0.05, 450), reqRun(2, "b", 60, 4, 60, 12, 0.05, 300)
	a.Cells[0].Metadata = map[string]string{"engine": "eng-a"}
	b.Cells[0].Metadata = map[string]string{"engine": "eng-b"}
	if rep := CompareRuns([]*Run{a}, []*Run{b}, Options{Ignore: []string{"engine"}}); len(rep.Verdicts) != 0 {
		t.Errorf("--ignore engine (the column) matched cells whose metadata engine differs")
	}
	if rep := CompareRuns([]*Run{a}, []*Run{b}, Options{Ignore: []string{"metadata.engine"}}); len(rep.Verdicts) == 0 || rep.NoMatch != "" {
		t.Errorf("--ignore metadata.engine: %d verdicts, %q", len(rep.Verdicts), rep.NoMatch)
	}
	values, variants := SplitBy([]*Run{a, b}, "metadata.engine")
	if len(values) != 2 || values[0] != "eng-a" || values[1] != "eng-b" {
		t.Fatalf("SplitBy metadata.engine: %v", values)
	}
	if m := variants["eng-b"][0].Cells[0].Metadata; len(m) != 0 || b.Cells[0].Metadata["engine"] != "eng-b" {
		t.Errorf("variant metadata %v (the run's own %v must stay)", m, b.Cells[0].Metadata)
	}
	rep := CompareRuns(variants["eng-a"], variants["eng-b"], Options{})
	if v := verdictOf(rep, "ttft_p50_ms"); v == nil || v.Outcome != Regressed {
		t.Errorf("eng-a → eng-b ttft: %v (%s)", v, rep.NoMatch)
	}
}
