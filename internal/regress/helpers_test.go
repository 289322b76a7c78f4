package regress

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

// mkCell is an ok closed-loop cell row of plan "p" with the given metric
// values (every other metric NULL).
func mkCell(id string, vals map[string]float64) results.Cell {
	c := results.Cell{
		Plan: "p", Stage: "sweep", CellID: id, Endpoint: "completions", Engine: "vllm",
		EngineVersion: "0.11.0", Hardware: "linux/amd64, 1× H200", Metadata: map[string]string{"quant": "fp8"},
		Concurrency: 4, Requests: 64, Completed: 64, Status: results.StatusOK,
	}
	for name, x := range vals {
		col, ok := results.Lookup(name)
		if !ok || !col.IsMetric() {
			panic("no column " + name)
		}
		col.Field(&c).Set(reflect.ValueOf(results.Some(x)))
	}
	return c
}

// mkRun is run number i (a day apart) holding cells.
func mkRun(i int, cells ...results.Cell) *Run {
	id := fmt.Sprintf("run%03d", i)
	for j := range cells {
		cells[j].RunID = id
	}
	return &Run{ID: id, StartedAt: t0.AddDate(0, 0, i), Status: "ok", Cells: cells}
}

// noisy is base × exp(σ·N(0,1)): log-normal noise, multiplicative as
// latency and throughput noise is.
func noisy(rng *rand.Rand, base, sigma float64) float64 {
	return base * math.Exp(sigma*rng.NormFloat64())
}

// baseVals are a cell's typical values.
var baseVals = map[string]float64{
	"ttft_p50_ms": 40, "ttft_p99_ms": 90, "itl_p50_ms": 8, "itl_p99_ms": 15,
	"tpot_p50_ms": 8.2, "e2el_p50_ms": 1100, "e2el_p99_ms": 1400, "output_tok_s": 450, "req_s": 3.6,
}

// history builds n runs of one cell "sweep/128:128/c4" whose metrics vary
// by σ around baseVals, and a current run (number n) whose values are
// baseVals times shift (metric → factor; 1 when absent), with the same
// noise.
func history(seed uint64, n int, sigma float64, shift map[string]float64) ([]*Run, *Run) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var runs []*Run
	// Keys in sorted order: ranging over the map would hand the same
	// draws to other metrics on every run (the test was flaky).
	keys := slices.Sorted(maps.Keys(baseVals))
	for i := range n {
		vals := map[string]float64{}
		for _, k := range keys {
			vals[k] = noisy(rng, baseVals[k], sigma)
		}
		runs = append(runs, mkRun(i, mkCell("sweep/128:128/c4", vals)))
	}
	vals := map[string]float64{}
	for _, k := range keys {
		b := baseVals[k]
		f := 1.0
		if s, ok := shift[k]; ok {
			f = s
		}
		vals[k] = noisy(rng, b*f, sigma)
	}
	return runs, mkRun(n, mkCell("sweep/128:128/c4", vals))
}

func verdictOf(r *Report, metric string) *Verdict {
	for i := range r.Verdicts {
		if r.Verdicts[i].Metric == metric {
			return &r.Verdicts[i]
		}
	}
	return nil
}

// reqsOf is a test run's requests of one cell, held in memory.
func reqsOf(r *Run, cellID string) []results.Request {
	return r.Requests[cellID].(results.RequestSlice)
}

// sideOf is the bootstrap's side of one family of a run's first cell.
func sideOf(r *Run, family string, qs ...float64) side {
	sc := []sideCell{{run: r, cell: &r.Cells[0], reqs: r.Requests[r.Cells[0].CellID]}}
	sc[0].prepare([]string{family})
	return buildSide(sc, family, qs)
}
