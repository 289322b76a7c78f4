package sweep

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// TestPrecisionVet: a precision target or repeats_until that cannot be
// met as written is a vet error at the field, with what to write instead.
func TestPrecisionVet(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`precision: {within: {ttft_p99_ms: "5%"}}`, `plan.cue:6:1: stages.sweep.precision: no budget: give max_requests, max_duration or both`},
		{`precision: {within: {ttft_p99: "5%"}, max_requests: 100}`, `plan.cue:6:22: stages.sweep.precision.within.ttft_p99: no column "ttft_p99" in the cells table (did you mean ttft_p99_ms?)`},
		{`precision: {within: {itl_p99_ms: "5%"}, max_requests: 100}`, `stages.sweep.precision.within.itl_p99_ms: itl_p99_ms pools every request's chunk gaps`},
		{`precision: {within: {ttft_max_ms: "5%"}, max_requests: 100}`, `stages.sweep.precision.within.ttft_max_ms: ttft_max_ms is the sample's maximum, which no number of requests bounds from above: target a percentile (ttft_p99_ms)`},
		{`precision: {within: {output_tok_s: "5%"}, max_requests: 100}`, `output_tok_s is not a percentile or mean of one value per request`},
		{`precision: {within: {}, max_requests: 100}`, `stages.sweep.precision.within: no metric`},
		{`precision: {within: {ttft_p99_ms: "0%"}, max_requests: 100}`, `stages.sweep.precision.within.ttft_p99_ms: "0%": want a percentage above 0 and below 100`},
		{`precision: {within: {ttft_p99_ms: "5"}, max_requests: 100}`, `plan.cue:6:35`},
		{`precision: {within: {ttft_p99_ms: "5%"}, max_duration: "2 minutes"}`, `stages.sweep.precision.max_duration`},
		{`precision: {within: {ttft_p99_ms: "5%"}, max_duration: "48h"}`, `stages.sweep.precision.max_duration: "48h" per pass: at most "24h"`},
		{`precision: {within: {ttft_p99_ms: "5%"}, max_requests: 20000000}`, `stages.sweep.precision.max_requests: 20000000 requests per pass: at most 10000000`},
		{`requests: 100, precision: {within: {ttft_p99_ms: "5%"}, max_requests: 1000}`, `stages.sweep.precision: precision sets each timed pass's length`},
		{`iterations: 2, precision: {within: {ttft_p99_ms: "5%"}, max_requests: 1000}`, `stages.sweep.iterations: precision makes one timed pass`},
		{`min_requests: 2000, precision: {within: {ttft_p99_ms: "5%"}, max_requests: 1000}`, `stages.sweep.min_requests: 2000 is above precision.max_requests 1000`},
		{`precision: {within: {ttft_p99_ms: "5%"}, max_requests: 1000, confidence: 1}`, `stages.sweep.precision.confidence`},
		{`repeats_until: {within: {output_tok_s: "2%"}}`, `stages.sweep.repeats_until: repeats_until stops a point's repeats early: give repeats`},
		{`repeats: 4, repeats_until: {within: {output_tok_s: "2%"}, min_repeats: 5}`, `stages.sweep.repeats_until.min_repeats: 5 is above repeats 4`},
		{`repeats: 4, repeats_until: {within: {model: "2%"}}`, `stages.sweep.repeats_until.within.model: model is not a metric`},
	} {
		st, p := loadStageOrErr(t, `kind: "sweep", target: "http://x"`+"\n"+tc.cue)
		var err error
		if st != nil {
			err = st.Validate(check(t, p.Plan))
		} else {
			err = p.err
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.cue, err, tc.want)
		}
	}
	for _, ok := range []string{
		`precision: {within: {ttft_p99_ms: "5%", e2el_ms: "2.5%"}, max_requests: 20000, max_duration: "2m"}`,
		`rates: [4], precision: {within: {tpot_p90_ms: "5%"}, max_duration: "2m", confidence: 0.99}, min_requests: 100`,
		`repeats: 10, repeats_until: {within: {output_tok_s: "2%", ttft_p99_ms: "10%"}}`,
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+ok, "")
		if err := st.Validate(check(t, p)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// planOrErr is a loaded plan, or the loader's error (a schema refusal).
type planOrErr struct {
	*schema.Plan
	err error
}

// loadStageOrErr is loadStage that hands back the loader's error (a value
// the schema itself refuses) instead of failing.
func loadStageOrErr(t *testing.T, sweepCUE string) (*Stage, planOrErr) {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	src := "name: \"t\"\nmodel: {name: \"sim-llama\"}\n\nstages: sweep: {\n" + sweepCUE + "\n}\n"
	p, err := schema.LoadSource("plan.cue", []byte(src), reg.LoadOptions(nil))
	if err != nil {
		return nil, planOrErr{err: err}
	}
	st, err := New(p.Stages[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Stage), planOrErr{Plan: p}
}

// The meter keeps its values sorted by merging each batch in, checks at
// every 5 % more requests, and once every target is met it says enough
// (loadgen.Load.Enough): here at the first check where the p50's bound
// is within 5 %, which the same sample, sorted whole, confirms.
func TestPrecisionMeterChecksAsRequestsFinish(t *testing.T) {
	col, _ := results.Lookup(results.ColTTFTP50Ms)
	plan := &precisionPlan{targets: []precisionTarget{{col: col, within: 5}}, conf: 0.95, maxRequests: 100000}
	m := newPrecisionMeter(plan)
	var all []float64
	for i := 0; i < 100000 && !m.enough.Load(); i++ {
		// A deterministic spread of TTFTs: 10..30 ms.
		r := resultWithTTFT(10 + 20*math.Mod(float64(i)*0.6180339887, 1))
		all = append(all, ms(r.TTFT()))
		m.add(&loadgen.RequestRows(results.Cell{}, []loadgen.Result{r})[0])
	}
	if !m.enough.Load() {
		t.Fatal("never enough")
	}
	n := m.metAtCount()
	if n != len(all) || n < stats.SamplesToBound(50, 0.95) {
		t.Fatalf("met at %d after %d results", n, len(all))
	}
	sorted := slices.Sorted(slices.Values(all))
	if got := m.fams["ttft"].merged(); !slices.Equal(got, sorted) {
		t.Fatalf("the merged sample is not the sample sorted")
	}
	if pct, ok := precisionOf(sorted, plan.targets[0], 0.95); !ok || pct > 5 {
		t.Errorf("met at %d with the bound %.2f %% wide", n, pct)
	}
}

// resultWithTTFT is a completed request whose first token came after ttft
// ms, its second 1 ms later.
func resultWithTTFT(ttft float64) loadgen.Result {
	sent := time.Unix(1e9, 0)
	first := sent.Add(time.Duration(ttft * float64(time.Millisecond)))
	return loadgen.Result{Sent: sent, Finished: first.Add(2 * time.Millisecond), OutputTokens: 2,
		Tokens: []loadgen.TokenEvent{{At: first, Tokens: 1}, {At: first.Add(time.Millisecond), Tokens: 1}}}
}

// BenchmarkPrecisionMeter is what following a pass's precision costs per
// finished request: its values appended, and the 5 %-spaced checks'
// merges and bounds amortized over the requests (a p99 target, 100,000
// requests of a fixed spread, so no check meets it and every one runs).
func BenchmarkPrecisionMeter(b *testing.B) {
	col, _ := results.Lookup(results.ColTTFTP99Ms)
	plan := &precisionPlan{targets: []precisionTarget{{col: col, within: 0.001}}, conf: 0.95}
	rows := make([]results.Request, 100_000)
	for i := range rows {
		r := resultWithTTFT(10 + 20*math.Mod(float64(i)*0.6180339887, 1))
		rows[i] = loadgen.RequestRows(results.Cell{}, []loadgen.Result{r})[0]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m := newPrecisionMeter(plan)
		for i := range rows {
			m.add(&rows[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/request")
}

// A target met while requests were still in flight: those that finished
// after it join the row, and when they widen the stored bound past the
// target the row says so rather than "target met" alone.
func TestPrecisionSaysWhenInFlightRequestsWidenedTheBound(t *testing.T) {
	col, _ := results.Lookup(results.ColTTFTP50Ms)
	plan := &precisionPlan{targets: []precisionTarget{{col: col, within: 5}}, conf: 0.95}
	s := &Stage{precision: plan}
	m := newPrecisionMeter(plan)
	var rows []results.Request
	for i := 0; i < 4000 && !m.enough.Load(); i++ {
		r := resultWithTTFT(10 + 20*math.Mod(float64(i)*0.6180339887, 1))
		row := loadgen.RequestRows(results.Cell{}, []loadgen.Result{r})[0]
		m.add(&row)
		rows = append(rows, row)
	}
	met := m.metAtCount()
	if met == 0 {
		t.Fatal("the target was never met")
	}
	for _, tc := range []struct {
		name    string
		late    float64 // the ttft of the requests that were in flight
		widened bool
	}{
		{"in flight like the rest", 20, false},
		{"in flight far slower", 5000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := slices.Clone(rows)
			for range met {
				all = append(all, loadgen.RequestRows(results.Cell{}, []loadgen.Result{resultWithTTFT(tc.late)})[0])
			}
			var row results.Cell
			s.fillPrecision(&row, results.AsRequests(all), len(all), false, m)
			if row.StopReason != stopTargetMet {
				t.Fatalf("stop_reason %q", row.StopReason)
			}
			over := *row.PrecisionReachedPct > *row.PrecisionTargetPct
			said := strings.Contains(row.Notes, "widened")
			if over != tc.widened || said != tc.widened {
				t.Errorf("reached %.2f %% (target %g %%), note %q: want widened=%v said", *row.PrecisionReachedPct, *row.PrecisionTargetPct, row.Notes, tc.widened)
			}
		})
	}
}

// On endpoint "messages", vet warns of a thinking budget Anthropic's API
// refuses (under 1024, or not below the cell's osl), where it is given;
// a budget it takes, or another endpoint, gets none.
func TestThinkingBudgetWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, cue string
		want      []string
	}{
		{"a budget Anthropic takes", `endpoint: "messages", cells: [{isl: 16, osl: 4096}], thinking_budget: 2048`, nil},
		{"under 1024 on the stage", `endpoint: "messages", cells: [{isl: 16, osl: 4096}], thinking_budget: 20`,
			[]string{"stages.sweep.thinking_budget: 20: Anthropic's Messages API refuses a thinking budget under 1024"}},
		{"under 1024 on an axis point, not below a cell's osl", `endpoint: "messages", cells: [{isl: 16, osl: 100}], reasoning: [{thinking_budget: 80}, {thinking_budget: 1024}]`,
			[]string{"stages.sweep.reasoning.0.thinking_budget: 80", "stages.sweep.cells.0: thinking budget 1024 is not below the cell's osl 100"}},
		{"not below the osl, on a cell", `endpoint: "messages", cells: [{isl: 16, osl: 2048, thinking_budget: 2048}]`,
			[]string{"stages.sweep.cells.0: thinking budget 2048 is not below the cell's osl 2048"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1", concurrency: [1], `+tc.cue, "")
			ws := s.Warnings(check(t, p))
			if len(ws) != len(tc.want) {
				t.Fatalf("%d warnings, want %d: %v", len(ws), len(tc.want), ws)
			}
			for i, w := range tc.want {
				if !strings.Contains(ws[i].Msg, w) || ws[i].Pos.Line == 0 {
					t.Errorf("warning %d: %q at %v, want it to say %q at its field", i, ws[i].Msg, ws[i].Pos, w)
				}
			}
		})
	}
}
