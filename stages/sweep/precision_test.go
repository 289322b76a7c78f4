package sweep_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/stages/sweep"
	"gonum.org/v1/gonum/stat/distuv"
)

// val reads a nullable metric, NaN when it is null.
func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// simTTFT and simSpread are the simulator's TTFT distribution in these
// tests: a lognormal of median 50 ms (sim.Config.TTFTSpread), whose p-th
// percentile is simTTFT × exp(simSpread × z_p): every request a fresh
// draw, so a percentile's bound narrows as the requests grow.
const (
	simTTFT   = 50.0 // ms
	simSpread = 0.2
)

// spreadSim serves the simulator with that distribution.
func spreadSim(t *testing.T) string {
	return pipelinetest.Sim(t, func(c *sim.Config) {
		c.TTFT, c.ITL, c.EOSProb = 50*time.Millisecond, time.Millisecond, 0
		c.TTFTSpread = simSpread
		c.Seed = 7
	})
}

// runPrecisionSweep runs one sweep stage given its fields after target,
// and returns its one cell row with the cell's request rows.
func runPrecisionSweep(t *testing.T, url, fields string) (results.Cell, []results.Request) {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(sweep.Kind)
	rec := pipelinetest.RunStage(t, context.Background(), reg, fmt.Sprintf(`
name: "precise"
model: {name: "sim-llama"}
stages: sweep: {kind: "sweep", target: %q, cells: [{isl: 16, osl: 2}], telemetry: {machine: "off"}
	%s}`, url, fields), "sweep")
	if st := rec.Stage("sweep"); st.Status != pipeline.StatusOK {
		t.Fatalf("sweep %s: %s", st.Status, st.Reason)
	}
	if len(rec.Cells) != 1 {
		t.Fatalf("%d rows, want 1", len(rec.Cells))
	}
	row := rec.Cells[0]
	var reqs []results.Request
	for _, q := range rec.Requests {
		if q.CellID == row.CellID {
			reqs = append(reqs, q)
		}
	}
	return row, reqs
}

// ttftsOf is the cell's TTFT sample as the row's columns take it, from its
// request rows, in the order the requests finished.
func ttftsOf(reqs []results.Request) []float64 {
	type done struct{ at, ttft float64 }
	var ds []done
	for i := range reqs {
		if s, ok := measure.SampleOf(&reqs[i]); ok {
			ds = append(ds, done{float64(reqs[i].SentAt.UnixNano())/1e6 + s.E2ELMs, s.TTFTMs})
		}
	}
	slices.SortFunc(ds, func(a, b done) int { return int(math.Copysign(1, a.at-b.at)) })
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.ttft
	}
	return out
}

// p99Precision is the p99's bound over xs and its half-width relative to
// the p99, percent (NaN when unbounded).
func p99Precision(xs []float64) (stats.QuantileBound, float64) {
	s := slices.Sorted(slices.Values(xs))
	b := stats.SortedQuantileBound(s, 99, 0.95)
	if !b.Bounded() {
		return b, math.NaN()
	}
	est := stats.SortedPercentile(s, 99)
	return b, 100 * max(b.Hi-est, est-b.Lo) / est
}

// A closed-loop cell with a 5 % target on p99 TTFT keeps measuring until
// the p99's distribution-free 95 % bound over its own requests is within
// 5 % of it, then stops and says so; the bound recomputed from its request
// rows is the one the row reports, half as many requests did not reach
// it, and far fewer than the budget were sent.
func TestPrecisionStopsWhenTheBoundIsNarrow(t *testing.T) {
	watch := machinetest.Start()
	row, reqs := runPrecisionSweep(t, spreadSim(t), `concurrency: [16], warmup: 1
	precision: {within: {ttft_p99_ms: "5%"}, max_requests: 20000, max_duration: "90s"}`)
	if row.StopReason != "target met" {
		// Busy neighbours fatten the tail the client sees (a 26 ms stall
		// shifts a dozen requests of a thousand): then the budget can end
		// first, which says nothing of the stopping rule.
		watch.Judge(t, "a 5 % target on a p99 of a lognormal TTFT met within 20,000 requests")
		t.Fatalf("stop_reason %q (%d requests), want target met; notes: %s", row.StopReason, row.Requests, row.Notes)
	}
	if row.PrecisionMetric != results.ColTTFTP99Ms || val(row.PrecisionTargetPct) != 5 || val(row.PrecisionConfidence) != 0.95 {
		t.Errorf("precision_metric %q target %v confidence %v", row.PrecisionMetric, val(row.PrecisionTargetPct), val(row.PrecisionConfidence))
	}
	ttfts := ttftsOf(reqs)
	if int64(len(ttfts)) != row.Completed || len(reqs) != int(row.Requests) {
		t.Fatalf("%d ttfts of %d request rows; the row says %d completed of %d", len(ttfts), len(reqs), row.Completed, row.Requests)
	}
	b, got := p99Precision(ttfts)
	// The requests in flight when the target was met (16 here) join the
	// row after it: they may widen the stored bound a little past the
	// target (5.08 % once in CI, beside a compiler), which the row's notes
	// must then say.
	widened := strings.Contains(row.Notes, "widened ttft_p99_ms's bound past its target")
	if row.PrecisionReachedPct == nil || math.Abs(*row.PrecisionReachedPct-got) > 1e-9 || got > 5 && !widened || got > 5.5 {
		t.Errorf("precision_reached_pct %v; recomputed from the requests table %.4f %% (bound [%.3f, %.3f] ms around p99 %.3f), want it the same and within 5 %% (5.5 %% when the notes say the requests in flight widened it)",
			val(row.PrecisionReachedPct), got, b.Lo, b.Hi, val(row.TTFTP99Ms))
	}
	if lo, ok := results.Lookup("ttft_p99_ms_lo"); ok && lo.Float(&row) != nil && *lo.Float(&row) != b.Lo {
		t.Errorf("stored ttft_p99_ms_lo %v, recomputed %v", *lo.Float(&row), b.Lo)
	}
	if _, half := p99Precision(ttfts[:len(ttfts)/2]); !(half > 5) && !math.IsNaN(half) {
		t.Errorf("the first half of the requests (%d) already bound the p99 within %.2f %%: the cell measured on past its target", len(ttfts)/2, half)
	}
	if row.Requests >= 20000 || row.Requests < int64(stats.SamplesToBound(99, 0.95)) {
		t.Errorf("%d requests: want at least the %d a p99 needs to be bounded, and under the budget", row.Requests, stats.SamplesToBound(99, 0.95))
	}
	// The simulator's own p99: the client adds its own delays (the
	// loopback, and on this two-core machine shared with busy neighbours
	// several ms of waiting for a CPU, which fattens the tail), never takes
	// any away.
	truth := simTTFT * math.Exp(simSpread*distuv.UnitNormal.Quantile(0.99))
	if p99 := val(row.TTFTP99Ms); p99 < 0.95*truth || p99 > 1.3*truth {
		watch.Judge(t, "the p99 the client measured near the simulator's")
		t.Errorf("ttft_p99_ms %.3f ms, the simulator's p99 %.3f ms", p99, truth)
	}
	if !strings.Contains(row.Notes, "target met at ") {
		t.Errorf("notes do not say at how many requests: %s", row.Notes)
	}
	t.Logf("p50 TTFT %.3f ms (the simulator's %.0f)", val(row.TTFTP50Ms), simTTFT)
	t.Logf("p99 TTFT %.3f ms (the simulator's %.3f) within ±%.2f %% at 95 %% after %d requests (%.1f s)", val(row.TTFTP99Ms), truth, got, row.Requests, row.DurationS)
}

// A target the budget cannot reach stops at the budget and says which:
// max_requests here, with the p99 not even bounded (300 < 368 requests).
func TestPrecisionStopsAtTheRequestBudget(t *testing.T) {
	row, reqs := runPrecisionSweep(t, spreadSim(t), `concurrency: [4], warmup: 1
	precision: {within: {ttft_p99_ms: "1%", ttft_p50_ms: "0.5%"}, max_requests: 300}`)
	if row.StopReason != "budget: requests" || row.Requests != 300 || len(reqs) != 300 {
		t.Fatalf("stop_reason %q after %d requests (%d rows), want budget: requests after 300; notes: %s", row.StopReason, row.Requests, len(reqs), row.Notes)
	}
	if row.PrecisionMetric != results.ColTTFTP99Ms || row.PrecisionReachedPct != nil {
		t.Errorf("precision_metric %q reached %v: want the unbounded p99, NULL", row.PrecisionMetric, val(row.PrecisionReachedPct))
	}
	if why := results.WhyNull(row, results.ColPrecisionReachedPct); !strings.Contains(why, "too few requests") {
		t.Errorf("WhyNull: %q", why)
	}
	if !strings.Contains(row.Notes, "ttft_p99_ms not bounded from 300 values (a p99's needs at least 368 at 95 %)") || !strings.Contains(row.Notes, "ttft_p50_ms ±") {
		t.Errorf("notes: %s", row.Notes)
	}
}

// An open-loop cell stops at its time budget when its target is out of
// reach, and says so.
func TestPrecisionStopsAtTheTimeBudget(t *testing.T) {
	row, _ := runPrecisionSweep(t, spreadSim(t), `rates: [40], warmup: 0
	precision: {within: {ttft_ms: "0.01%"}, max_duration: "1s"}`)
	if row.StopReason != "budget: time" {
		t.Fatalf("stop_reason %q after %d requests, want budget: time; notes: %s", row.StopReason, row.Requests, row.Notes)
	}
	if row.Requests < 20 || row.Requests > 60 || row.DurationS < 0.9 {
		t.Errorf("%d requests over %.2f s at 40/s for 1 s", row.Requests, row.DurationS)
	}
	if p := val(row.PrecisionReachedPct); !(p > 0.01) {
		t.Errorf("precision_reached_pct %v, want the mean's interval, wider than the target", p)
	}
}

// Without a target the columns are empty and say why.
func TestNoPrecisionTargetLeavesTheColumnsNull(t *testing.T) {
	row, _ := runPrecisionSweep(t, pipelinetest.Sim(t), `concurrency: [1], requests: 4`)
	if row.StopReason != "" || row.PrecisionMetric != "" || row.PrecisionReachedPct != nil || row.PrecisionTargetPct != nil {
		t.Errorf("precision columns on a cell without a target: %q %q %v %v", row.StopReason, row.PrecisionMetric, row.PrecisionReachedPct, row.PrecisionTargetPct)
	}
	if why := results.WhyNull(row, results.ColPrecisionReachedPct); why != "the sweep has no precision target" {
		t.Errorf("WhyNull: %q", why)
	}
}

// repeatsRows runs a repeated sweep and returns its rows by point (the
// cell id without /repN), each in repeat order.
func repeatsRows(t *testing.T, fields string) map[string][]results.Cell {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(sweep.Kind)
	rec := pipelinetest.RunStage(t, context.Background(), reg, fmt.Sprintf(`
name: "rep"
model: {name: "sim-llama"}
stages: sweep: {kind: "sweep", target: %q, cells: [{isl: 16, osl: 4}], concurrency: [1, 2], requests: 8, warmup: 0, telemetry: {machine: "off"}
	%s}`, pipelinetest.Sim(t), fields), "sweep")
	if st := rec.Stage("sweep"); st.Status != pipeline.StatusOK {
		t.Fatalf("sweep %s: %s", st.Status, st.Reason)
	}
	byPoint := map[string][]results.Cell{}
	for _, c := range rec.Cells {
		point := c.CellID[:strings.LastIndex(c.CellID, "/rep")]
		if want := int64(len(byPoint[point]) + 1); c.Repeat != want {
			t.Fatalf("%s is repeat %d, want %d", c.CellID, c.Repeat, want)
		}
		byPoint[point] = append(byPoint[point], c)
	}
	return byPoint
}

// meanPrecision is the 95 % interval's half-width of the rows' ttft_ms
// mean, percent of it.
func meanPrecision(rows []results.Cell) float64 {
	var xs []float64
	for _, r := range rows {
		xs = append(xs, val(r.TTFTMs))
	}
	return stats.MeanCI(xs).HalfWidthPct
}

// repeats_until: a point is not measured again once the mean of its
// repeats' ttft_ms is known within 25 %: the repeats stop at the first
// count (from min_repeats on) whose interval over the rows is that
// narrow, checked here against the rows themselves, and the last row says
// why they stopped. On a busy machine a point may need all 10; the rule is
// checked either way.
func TestRepeatsStopOnceTheMeanIsKnown(t *testing.T) {
	byPoint := repeatsRows(t, `repeats: 10, repeats_until: {within: {ttft_ms: "25%"}, min_repeats: 3}`)
	if len(byPoint) != 2 {
		t.Fatalf("points %v", byPoint)
	}
	for point, rows := range byPoint {
		k := len(rows)
		if k < 3 {
			t.Errorf("%s: %d repeats, fewer than min_repeats 3", point, k)
			continue
		}
		for j := 3; j < k; j++ {
			if p := meanPrecision(rows[:j]); p <= 25 {
				t.Errorf("%s: the mean over %d repeats was already within ±%.2f %%, yet %d were measured", point, j, p, k)
			}
		}
		met := meanPrecision(rows) <= 25
		want := fmt.Sprintf("repeats: no more after repeat %d of at most 10", k)
		if !met {
			want = "repeats: all 10 measured without every mean known closely enough"
		}
		if !met && k < 10 || !strings.Contains(rows[k-1].Notes, want) || strings.Contains(rows[k-2].Notes, "repeats:") {
			t.Errorf("%s: %d repeats, mean within ±%.2f %%; the last repeat's notes %q, want %q (and the one before without)", point, k, meanPrecision(rows), rows[k-1].Notes, want)
		}
		t.Logf("%s: %d repeats, ttft_ms mean within ±%.2f %%", point, k, meanPrecision(rows))
	}
	// A metric every repeat measures alike is known at once: exactly
	// min_repeats rows.
	byPoint = repeatsRows(t, `repeats: 10, repeats_until: {within: {effective_osl: "1%"}, min_repeats: 3}`)
	for point, rows := range byPoint {
		if len(rows) != 3 || !strings.Contains(rows[2].Notes, "repeats: no more after repeat 3 of at most 10, every mean known closely enough at 95 %: effective_osl mean 4 ±0.00 % (target 1 %) over 3 repeats") {
			t.Errorf("%s: %d repeats, the last one's notes %q", point, len(rows), rows[len(rows)-1].Notes)
		}
	}
}

// A target the repeats cannot reach measures every repeat and says so.
func TestRepeatsUntilMeasuresAllWhenNeverPrecise(t *testing.T) {
	byPoint := repeatsRows(t, `repeats: 3, repeats_until: {within: {ttft_ms: "0.0001%"}}`)
	for point, rows := range byPoint {
		if len(rows) != 3 || !strings.Contains(rows[2].Notes, "repeats: all 3 measured without every mean known closely enough at 95 %: ttft_ms mean ") {
			t.Errorf("%s: %d rows, last notes %q", point, len(rows), rows[len(rows)-1].Notes)
		}
	}
}
