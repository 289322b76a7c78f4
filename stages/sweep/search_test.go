package sweep

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// stepEngine is the simulator's engine with a step cost that rises with
// the batch: every step costs base + perSeq per running sequence (a
// prompt's prefill costs what one decode does: perSeq spread over its
// isl tokens), so a closed loop of c ≤ seqs sessions decodes a token
// every base + c·perSeq: tpot(c) is known exactly.
func stepEngine(seqs int, base, perSeq time.Duration, isl int) func(*sim.Config) {
	return func(c *sim.Config) {
		c.Mode = sim.ModeEngine
		c.Engine.MaxNumSeqs = seqs
		c.Engine.StepBase = base
		c.Engine.PerSeq = perSeq
		c.Engine.PerPrefillToken = perSeq / time.Duration(isl)
		c.Engine.Jitter = 0
	}
}

// byCell are the rows by cell id; probes are the search's probe rows in
// the order measured.
func searchRows(t *testing.T, c *collected) (probes []results.Cell, knee results.Cell) {
	t.Helper()
	n := 0
	for _, r := range c.cells {
		switch r.Search {
		case searchProbe:
			probes = append(probes, r)
		case searchKnee:
			knee = r
			n++
		default:
			t.Errorf("%s: search %q, want probe or knee", r.CellID, r.Search)
		}
	}
	if n != 1 {
		t.Fatalf("%d knee rows, want 1", n)
	}
	return probes, knee
}

// TestSearchFindsTheKnee: a concurrency search for tpot p50 ≤ 19 ms on an
// engine whose tpot is 2 + 2c ms: c = 8 (18 ms) meets it, c = 9 (20 ms)
// does not. The search doubles 1, 2, 4, 8, 16 (34 ms: broken), bisects
// 12, 10, 9, and reports 8; every probe is a row, at its own cell id.
// (The median: a p99 of a probe's 16 requests is its slowest, which one
// stalled stamp on a busy machine moves by a millisecond.)
func TestSearchFindsTheKnee(t *testing.T) {
	_, url := startSim(t, stepEngine(16, 2*time.Millisecond, 2*time.Millisecond, 16))
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off"
		cells: [{isl: 16, osl: 16}]
		search: {slo: {tpot_p50_ms: 19}, over: "concurrency", lo: 1, hi: 64}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	probes, knee := searchRows(t, c)
	var loads []int64
	for _, r := range probes {
		loads = append(loads, r.Concurrency)
		t.Logf("%s: tpot p50 %.2f ms, req_s %.1f: %s", r.CellID, v(r.TPOTP50Ms), v(r.ReqS), r.Notes[strings.LastIndex(r.Notes, "search:"):])
		// The engine's tpot is exactly 2 + 2c ms. A probe read on the
		// wrong side of 19 ms by no more than the machine's lateness
		// during it (every engine step a late wake) sends the search down
		// another path: that run says nothing about the search, and says
		// so. Read wrong by more, the measurement is wrong.
		exact := 2 + 2*float64(r.Concurrency)
		if got := v(r.TPOTP50Ms); (got <= 19) != (exact <= 19) {
			over, late := got-exact, machine.Late(&r)
			if over > 0 && over <= late {
				t.Skipf("inconclusive: probe c=%d read tpot p50 %.2f ms where the engine's is %.0f ms, %.2f ms over, within the machine's lateness during it (p99 %.2f ms)", r.Concurrency, got, exact, over, late)
			}
			t.Errorf("probe c=%d: tpot p50 %.2f ms, the engine's is %.0f ms (the machine's lateness p99 %.2f ms)", r.Concurrency, got, exact, late)
		}
		if r.Status != results.StatusOK || r.CellID != fmt.Sprintf("sweep/16:16/c%d", r.Concurrency) {
			t.Errorf("%s: %s %s", r.CellID, r.Status, r.Reason)
		}
		// Every probe's requests are stored with it.
		n := 0
		for _, q := range c.reqs {
			if q.CellID == r.CellID {
				n++
			}
		}
		if n != int(r.Requests) || n == 0 {
			t.Errorf("%s: %d request rows for %d requests", r.CellID, n, r.Requests)
		}
	}
	if want := []int64{1, 2, 4, 8, 16, 12, 10, 9}; !slices.Equal(loads, want) {
		t.Errorf("probed concurrency %v, want %v", loads, want)
	}
	t.Logf("knee %s: %s %s; notes %q", knee.CellID, knee.Status, knee.Reason, knee.Notes)
	if knee.CellID != "sweep/16:16/knee" || knee.Status != results.StatusOK || v(knee.MaxConcurrencyWithinSLO) != 8 || knee.MaxRateWithinSLO != nil {
		t.Fatalf("knee %s: %s, max concurrency %v, max rate %v", knee.CellID, knee.Status, v(knee.MaxConcurrencyWithinSLO), v(knee.MaxRateWithinSLO))
	}
	if knee.Concurrency != 8 || v(knee.TPOTP50Ms) > 19 || knee.Goodput == nil || !strings.Contains(knee.Notes, "the knee: 8 sessions met it, 9 sessions did not (tpot_p50_ms") {
		t.Errorf("knee: concurrency %d, tpot p50 %v, goodput %v, notes %q", knee.Concurrency, v(knee.TPOTP50Ms), v(knee.Goodput), knee.Notes)
	}
	// The knee row is the last one, and every other row is a probe.
	if last := c.cells[len(c.cells)-1]; last.CellID != knee.CellID || len(probes) != len(c.cells)-1 {
		t.Errorf("last row %s; %d probes of %d rows", last.CellID, len(probes), len(c.cells))
	}
}

// TestSearchStopsAtSaturation: an open-loop rate search with an SLO no
// short probe breaks (ttft p99 ≤ 60 s) on an engine that serves about
// 42 requests/s (4 sequences of 16 steps of 6 ms). Past that rate the
// waiting queue holds a large part of each probe and throughput stays
// flat, so the first probe at twice the capacity (80/s) is saturated:
// the search stops climbing there instead of probing up to hi (640/s),
// and the knee is bracketed below the saturated probe (bisection goes on
// between 40 and 80; a probe well past the capacity is saturated too).
func TestSearchStopsAtSaturation(t *testing.T) {
	_, url := startSim(t, stepEngine(4, 2*time.Millisecond, time.Millisecond, 16))
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off", requests: 40, arrival: "constant"
		cells: [{isl: 16, osl: 16}]
		telemetry: {interval: "10ms"}
		search: {slo: {ttft_p99_ms: 60000}, over: "rate", lo: 20, hi: 640, precision: 10}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	probes, knee := searchRows(t, c)
	var loads []float64
	saturated := 0.0
	for _, r := range probes {
		loads = append(loads, r.Rate)
		t.Logf("%s: req_s %.1f, e2el p99 %.0f ms, waiting peak %v: %s", r.CellID, v(r.ReqS), v(r.E2ELP99Ms), v(r.ServerWaitingPeak), r.Notes[strings.LastIndex(r.Notes, "search:"):])
		if strings.Contains(r.Notes, "search: saturated") && saturated == 0 {
			saturated = r.Rate // the first, in the order measured
		}
		if r.CellID != fmt.Sprintf("sweep/16:16/r%g", r.Rate) {
			t.Errorf("probe id %s at rate %g", r.CellID, r.Rate)
		}
	}
	if len(loads) < 2 || !slices.Equal(loads[:2], []float64{20, 40}) {
		t.Fatalf("probed %v, want a doubling from 20 first", loads)
	}
	// At twice the capacity (a machine busy enough to stretch the
	// simulator's steps lowers its capacity: at 40/s then).
	if saturated != 80 && saturated != 40 {
		t.Errorf("first saturated probe %g, want 80 (twice the capacity)", saturated)
	}
	if slices.Max(loads) > saturated {
		t.Errorf("probed %v: past the first saturated probe", loads)
	}
	t.Logf("knee %s: %s; notes %q", knee.CellID, knee.Status, knee.Notes)
	if knee.CellID != "sweep/16:16/knee" || knee.Status != results.StatusOK || v(knee.MaxRateWithinSLO) < saturated/2 || v(knee.MaxRateWithinSLO) >= saturated || knee.Rate != v(knee.MaxRateWithinSLO) {
		t.Errorf("knee %s: %s, max rate %v", knee.CellID, knee.Status, v(knee.MaxRateWithinSLO))
	}
}

// When even lo breaks the SLO the knee row says so: an error with the
// reason and no max_*; when every probe up to hi meets it, the knee is hi
// and the notes say to raise it.
func TestSearchKneeAtTheEnds(t *testing.T) {
	_, url := startSim(t, stepEngine(16, 2*time.Millisecond, 2*time.Millisecond, 16))
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off"
		cells: [{isl: 16, osl: 16}]
		search: {slo: {tpot_p99_ms: 3}, over: "concurrency", lo: 1, hi: 8}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	probes, knee := searchRows(t, c)
	if len(probes) != 1 || knee.Status != results.StatusError || knee.MaxConcurrencyWithinSLO != nil ||
		!strings.Contains(knee.Reason, "no probed concurrency met the SLO: the lowest, 1 sessions, did not (tpot_p99_ms") || knee.Model == "" {
		t.Errorf("%d probes; knee %s %q, max %v, model %q", len(probes), knee.Status, knee.Reason, v(knee.MaxConcurrencyWithinSLO), knee.Model)
	}

	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off", repeats: 2
		cells: [{isl: 16, osl: 16}]
		search: {slo: {tpot_p99_ms: 1000, ttft_p99_ms: 1000}, over: "concurrency", lo: 1, hi: 3}`, url), "")
	c, err = runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range c.cells {
		ids = append(ids, r.CellID)
	}
	want := []string{"sweep/16:16/c1/rep1", "sweep/16:16/c2/rep1", "sweep/16:16/c3/rep1", "sweep/16:16/knee/rep1",
		"sweep/16:16/c1/rep2", "sweep/16:16/c2/rep2", "sweep/16:16/c3/rep2", "sweep/16:16/knee/rep2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("rows %v, want %v", ids, want)
	}
	for _, k := range []results.Cell{c.cells[3], c.cells[7]} {
		if k.Status != results.StatusOK || v(k.MaxConcurrencyWithinSLO) != 3 || !strings.Contains(k.Notes, "the knee is at or above 3 sessions (raise search.hi)") || k.Repeat == 0 {
			t.Errorf("%s: %s, max %v, repeat %d, notes %q", k.CellID, k.Status, v(k.MaxConcurrencyWithinSLO), k.Repeat, k.Notes)
		}
	}
}

// A search over rate with a trace scales the trace to each probe's mean
// rate: time_scale = rate / the trace's recorded rate.
func TestSearchOverATrace(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.Mode = sim.ModeEngine })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off"
		dataset: {path: %q, format: "mooncake"}
		search: {slo: {ttft_p99_ms: 10000}, over: "rate", lo: 8, hi: 16, precision: 8}`, url, syntheticTrace(t)), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	probes, knee := searchRows(t, c)
	if len(probes) != 2 || probes[0].CellID != "sweep/trace/r8" || probes[1].CellID != "sweep/trace/r16" || knee.CellID != "sweep/trace/knee" {
		t.Fatalf("rows: %d probes, knee %s", len(probes), knee.CellID)
	}
	for _, r := range probes {
		if r.Status != results.StatusOK || r.Arrival != ArrivalTrace || r.Requests != 16 || r.Rate != r.Rate || v(r.TimeScale) <= 0 {
			t.Errorf("%s: %s %s arrival %q, %d requests, time scale %v", r.CellID, r.Status, r.Reason, r.Arrival, r.Requests, v(r.TimeScale))
		}
		if want := r.Rate / (15 / 3.4); v(r.TimeScale)-want > 1e-9 || want-v(r.TimeScale) > 1e-9 {
			t.Errorf("%s: time scale %v, want %v", r.CellID, v(r.TimeScale), want)
		}
	}
	if v(knee.MaxRateWithinSLO) != 16 {
		t.Errorf("knee max rate %v", v(knee.MaxRateWithinSLO))
	}
}

func TestSearchValidate(t *testing.T) {
	ok := `search: {slo: {ttft_p99_ms: 500}, over: "rate", lo: 1, hi: 64}`
	for _, tc := range []struct{ cue, extra, want string }{
		{ok + `, rates: [1, 2]`, "", "stages.sweep.rates: a search over rate chooses the rates it probes"},
		{`search: {slo: {}, over: "rate", lo: 1, hi: 64}`, "", "stages.sweep.search.slo: no objective"},
		{`search: {slo: {ttft_p99: 500}, over: "rate", lo: 1, hi: 64}`, "", `stages.sweep.search.slo.ttft_p99: "ttft_p99" is not a latency column`},
		{`search: {slo: {req_s: 500}, over: "rate", lo: 1, hi: 64}`, "", `"req_s" is not a latency column`},
		{`search: {slo: {ttft_p99_ms: 500}, over: "rate", lo: 8, hi: 4}`, "", "stages.sweep.search.hi: 4 is not above lo 8"},
		{`search: {slo: {ttft_p99_ms: 500}, over: "concurrency", lo: 1.5, hi: 4}`, "", "stages.sweep.search.lo: 1.5: a search over concurrency probes whole sessions"},
		{`search: {slo: {ttft_p99_ms: 500}, over: "concurrency", lo: 1, hi: 200000}`, "", "stages.sweep.search.hi: 200000 sessions: at most 100000"},
		{`search: {slo: {ttft_p99_ms: 500}, over: "concurrency", lo: 1, hi: 4}, rates: [2]`, "", "stages.sweep.rates: rates make every point an open loop"},
		{`search: {slo: {ttft_p99_ms: 500}, over: "concurrency", lo: 1, hi: 4}, dataset: {path: "t.jsonl", format: "mooncake"}`, "", "stages.sweep.search.over: a trace replay is an open loop"},
		{ok, `shard: {count: 2, index: 1}`, "stages.sweep.search: the plan's shard block splits every cell over 2 processes"},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1"
			`+tc.cue, tc.extra)
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n  got  %v\n  want %s", tc.cue, err, tc.want)
		}
	}
	// Positions: the bad objective at its own line.
	st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1"
		search: {over: "rate", lo: 1, hi: 64
			slo: {ttft_p99_ms: 500, bogus_ms: 3}}`, "")
	err := st.Validate(check(t, p))
	var errs schema.Errors
	if e, ok := err.(schema.Errors); ok {
		errs = e
	}
	if len(errs) != 1 || errs[0].Pos.Line != 7 || !strings.Contains(errs[0].Error(), "plan.cue:7:") {
		t.Errorf("errors %v", err)
	}
	// A valid search with a ramp (each probe ramps) plans one step per
	// search, its id the knee's.
	st, p = loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1", cells: [{isl: 64, osl: 32}, {isl: 128, osl: 32}]
		ramp: {from: 1, duration: "2s"}
		`+ok, "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("valid search: %v", err)
	}
	steps := st.Plan()
	if len(steps) != 2 || steps[0].ID != "sweep/64:32/knee" || steps[1].ID != "sweep/128:32/knee" || steps[0].Requests == 0 || steps[0].Estimate <= 0 ||
		!strings.HasPrefix(steps[0].Label, "64:32 search rate 1..64 (2-") {
		t.Errorf("plan: %+v", steps)
	}
	shape := st.LoadShape()
	if !slices.Equal(shape.Rates, []float64{1}) {
		t.Errorf("load shape rates %v, want the first probe's", shape.Rates)
	}
}

// Shards would probe different loads: a sharded search is refused
// before anything is sent.
func TestSearchRefusesShards(t *testing.T) {
	st := stageOf(t, `search: {slo: {ttft_p99_ms: 500}, over: "rate", lo: 1, hi: 64}`)
	st.shard, st.shards = 1, 2
	env := &pipeline.Env{Stage: st.spec}
	if err := st.refuseShardedSearch(env); err == nil || !strings.Contains(err.Error(), "stages.s.search: a search chooses each probe from the last probe's row, which a shard (--shard 1/2)") {
		t.Errorf("err = %v", err)
	}
}

// Each saturation sign alone, against the probe below: throughput flat
// across a doubling while latency climbs; an open loop serving well
// under what it offered while latency climbs; the server's queue holding
// a quarter of the probe's requests and growing. And none of them at a
// load the server keeps up with.
func TestSearchSaturationSigns(t *testing.T) {
	f := results.Some[float64]
	row := func(reqS, sent, e2el float64, waiting *float64) results.Cell {
		return results.Cell{Status: results.StatusOK, Requests: 40, ReqS: f(reqS), SentReqS: f(sent), E2ELP99Ms: f(e2el), E2ELP50Ms: f(e2el * 0.8), ServerWaitingPeak: waiting}
	}
	late := func(c results.Cell, p99 float64) results.Cell {
		c.MachineLateP99Ms = f(p99)
		return c
	}
	starve := func(c results.Cell, waitMs, durS float64) results.Cell {
		c.ClientCPUWaitMs, c.DurationS = f(waitMs), durS
		return c
	}
	starveServer := func(c results.Cell, waitMs, durS float64) results.Cell {
		c.ServerCPUWaitMs, c.DurationS = f(waitMs), durS
		return c
	}
	for _, tc := range []struct {
		name       string
		over       string
		below      results.Cell
		at         results.Cell
		want       string // "" : not saturated
		belowLoad  float64
		probedLoad float64
	}{
		{"keeps up", overRate, row(19, 20, 60, f(0)), row(37, 40, 70, f(1)), "", 20, 40},
		{"flat throughput", overConcurrency, row(27.5, 0, 290, nil), row(28, 0, 470, nil), "throughput flat: req_s 28 at 16 sessions vs 27.5 at 8 (+1.8% for 2× the load)", 8, 16},
		{"flat, latency steady", overConcurrency, row(27.5, 0, 290, nil), row(28, 0, 300, nil), "", 8, 16},
		{"a fine step is not judged flat", overConcurrency, row(27.5, 0, 290, nil), row(27.6, 0, 470, nil), "", 8, 9},
		{"served under offered", overRate, row(37.9, 40, 119, nil), row(40.7, 80, 499, nil), "served 40.7 req/s of the 80 offered (51%) while e2el_p99_ms rose 119 → 499", 40, 80},
		{"queue", overRate, row(37.9, 40, 119, f(1)), row(40, 50, 130, f(11)), "the server's waiting queue grew to 11 of the probe's 40 requests, 1 at 40 req/s", 40, 50},
		{"queue that did not grow", overRate, row(37.9, 40, 119, f(12)), row(40, 50, 130, f(11)), "", 40, 50},
		// A fixed 6 ms server beside busy neighbours: 152 then 94 req/s,
		// its tail 8 → 20 ms, while the machine ran its loop 14 ms late
		// (p99): the machine could explain the step, which is not called
		// saturated; with the machine quiet it is.
		{"flat, the machine late", overConcurrency, row(152, 0, 8, nil), late(row(94, 0, 20, nil), 14), "", 1, 2},
		{"flat, the machine quiet", overConcurrency, row(152, 0, 8, nil), late(row(94, 0, 20, nil), 0.1), "throughput flat: req_s 94 at 2 sessions vs 152 at 1", 1, 2},
		// The probe's lateness low (a sleeper is woken promptly) while
		// benchrun's threads waited 60 ms for a CPU in a 170 ms window
		// beside CPU-bound neighbours: the step is theirs, not saturation;
		// 2 ms of waiting explains nothing.
		{"flat, the client starved", overConcurrency, row(152, 0, 8, nil), starve(late(row(94, 0, 20, nil), 0.1), 60, 0.17), "", 1, 2},
		{"flat, the server starved", overConcurrency, row(152, 0, 8, nil), starveServer(late(row(94, 0, 20, nil), 0.1), 60, 0.17), "", 1, 2},
		{"flat, hardly starved", overConcurrency, row(152, 0, 8, nil), starve(late(row(94, 0, 20, nil), 0.1), 2, 0.17), "throughput flat: req_s 94 at 2 sessions vs 152 at 1", 1, 2},
	} {
		sr := &search{cfg: &SearchConfig{Over: tc.over, SLO: map[string]float64{"e2el_p99_ms": 1e9}}, s: &Stage{cfg: Config{Iterations: 1}}}
		sr.judge(&tc.below, tc.belowLoad)
		got := sr.saturated(&tc.at, tc.probedLoad)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRateLadderPastSaturationIsNoted: a plain rate ladder (no search)
// that climbs past what the server serves (an engine of 40 req/s) says so
// on the rows past it, by the search's rule against the cell's point just
// below; the rows within its capacity say nothing of it.
func TestRateLadderPastSaturationIsNoted(t *testing.T) {
	_, url := startSim(t, stepEngine(4, 2*time.Millisecond, time.Millisecond, 16))
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off", requests: 40, arrival: "constant"
		cells: [{isl: 16, osl: 16}]
		telemetry: {interval: "10ms"}
		rates: [10, 20, 160]`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 3 {
		t.Fatalf("%d rows", len(c.cells))
	}
	for _, r := range c.cells {
		t.Logf("%s: req_s %.1f of %.1f sent, e2el p99 %.0f ms: %s", r.CellID, v(r.ReqS), v(r.SentReqS), v(r.E2ELP99Ms), r.Notes)
	}
	for _, r := range c.cells[:2] {
		if strings.Contains(r.Notes, "saturated") {
			t.Errorf("%s, within the capacity: %q", r.CellID, r.Notes)
		}
	}
	if top := c.cells[2]; !strings.Contains(top.Notes, "saturated: ") {
		t.Errorf("%s, four times the capacity: no saturation note in %q", top.CellID, top.Notes)
	}
}
