package sweep

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
	"gonum.org/v1/gonum/stat"
)

// TestSweepLengthDistributions is the proof of length distributions
// against the simulator (fixed mode, every request its max_tokens under
// ignore_eos): a cell drawing its output from a lognormal and its prompt
// from a bounded normal, 1,000 timed requests. Against the simulator's
// records of what it counted and wrote:
//
//   - every request row carries its draws (isl, osl), and the simulator
//     counted exactly the drawn prompt and wrote exactly the drawn output;
//   - the draws stay within the bounds and follow the distribution: the
//     row's realised mean output (effective_osl) within 2 % of the
//     distribution's mean, its spread near the stddev asked for;
//   - the row and its id name the distributions, and the percentiles of
//     the realised lengths are those of the request rows;
//   - the draws are the plan's seed's: a second run draws the same.
func TestSweepLengthDistributions(t *testing.T) {
	const n = 1000
	srv, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 500*time.Microsecond })
	plan := fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "completions"
		cells: [{isl: {dist: "normal", mean: 48, stddev: 8, min: 24, max: 96},
		         osl: {dist: "lognormal", mean: 64, stddev: 16, max: 400}}]
		concurrency: [50], requests: %d, warmup: 0
		telemetry: {gpu: "off", host: "off", machine: "off"}`, url, n)
	st, p := loadStage(t, plan, "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 1 || len(c.reqs) != n {
		t.Fatalf("%d rows, %d requests", len(c.cells), len(c.reqs))
	}
	row := c.cells[0]
	if row.Status != results.StatusOK || row.Completed != n {
		t.Fatalf("row: %s %q, %d completed; notes %s", row.Status, row.Reason, row.Completed, row.Notes)
	}
	const wantID = "sweep/normal(48,8,24..96):lognormal(64,16,..400)/c50"
	if row.CellID != wantID || row.ISLDist != "normal(48,8,24..96)" || row.OSLDist != "lognormal(64,16,..400)" {
		t.Errorf("cell id %q, isl_dist %q, osl_dist %q; want %q", row.CellID, row.ISLDist, row.OSLDist, wantID)
	}
	islDist := &loadgen.Lengths{Dist: "normal", Mean: 48, StdDev: 8, Min: 24, Max: 96}
	oslDist := &loadgen.Lengths{Dist: "lognormal", Mean: 64, StdDev: 16, Max: 400}
	if row.ISL != int64(math.Round(islDist.Expected())) || row.OSL != int64(math.Round(oslDist.Expected())) {
		t.Errorf("isl %d, osl %d: want the distributions' means, rounded (%.2f, %.2f)", row.ISL, row.OSL, islDist.Expected(), oslDist.Expected())
	}
	var outs, ins []float64
	for _, q := range c.reqs {
		if q.ISL == nil || q.OSL == nil {
			t.Fatalf("request %d: no draws recorded (isl %v, osl %v)", q.Seq, q.ISL, q.OSL)
		}
		rec, ok := srv.Record(q.ResponseID)
		if !ok {
			t.Fatalf("no record of %s", q.ResponseID)
		}
		if int64(rec.CompletionTokens) != *q.OSL || q.OutputTokens != *q.OSL {
			t.Fatalf("request %d drew osl %d; the simulator wrote %d tokens, the row says %d", q.Seq, *q.OSL, rec.CompletionTokens, q.OutputTokens)
		}
		if int64(rec.PromptTokens) != *q.ISL || q.InputTokens != *q.ISL {
			t.Fatalf("request %d drew isl %d; the simulator counted %d prompt tokens, the row says %d", q.Seq, *q.ISL, rec.PromptTokens, q.InputTokens)
		}
		if *q.ISL < 24 || *q.ISL > 96 || *q.OSL < 1 || *q.OSL > 400 {
			t.Fatalf("request %d: draws %d:%d outside their bounds", q.Seq, *q.ISL, *q.OSL)
		}
		outs = append(outs, float64(*q.OSL))
		ins = append(ins, float64(*q.ISL))
	}
	// 2 %: the bound. With a coefficient of variation of 0.25 the
	// mean of 1,000 draws has a standard error of 0.8 %, so a sampler
	// drawing right misses it once in a hundred seeds, and one drawing
	// from the wrong distribution (the log's mean for the lengths', say)
	// misses it by far.
	want := oslDist.Expected()
	sd := stat.StdDev(outs, nil)
	if got := *row.EffectiveOSL; math.Abs(got-want) > 0.02*want {
		t.Errorf("effective_osl %.2f: more than 2 %% off the distribution's mean %.2f", got, want)
	}
	t.Logf("osl: realised mean %.2f (distribution %.2f, %+.2f %%, %.1f standard errors), sd %.2f (asked 16); isl: mean %.2f (distribution %.2f)",
		*row.EffectiveOSL, want, 100*(*row.EffectiveOSL-want)/want, (*row.EffectiveOSL-want)/(sd/math.Sqrt(n)), sd, *row.EffectiveISL, islDist.Expected())
	if math.Abs(sd-16) > 2 {
		t.Errorf("output lengths' sd %.2f: the lognormal asked for 16", sd)
	}
	if got, want := *row.EffectiveISL, islDist.Expected(); math.Abs(got-want) > 0.02*want {
		t.Errorf("effective_isl %.2f: more than 2 %% off the distribution's mean %.2f", got, want)
	}
	so, si := stats.Summarize(outs), stats.Summarize(ins)
	if *row.EffectiveOSLP50 != so.P50 || *row.EffectiveOSLP99 != so.P99 || *row.EffectiveISLP90 != si.P90 {
		t.Errorf("percentiles: osl p50 %v p99 %v, isl p90 %v; the requests' are %v %v %v", *row.EffectiveOSLP50, *row.EffectiveOSLP99, *row.EffectiveISLP90, so.P50, so.P99, si.P90)
	}
	if strings.Contains(row.Notes, "off the length drawn") || strings.Contains(row.Notes, "below the") {
		t.Errorf("notes say the shape did not hold: %s", row.Notes)
	}

	// The seed's draws: the same plan draws the same lengths again.
	st2, p2 := loadStage(t, plan, "")
	c2, err := runStage(t, st2, p2)
	if err != nil || len(c2.reqs) != n {
		t.Fatalf("second run: %v, %d requests", err, len(c2.reqs))
	}
	for k := range c2.reqs {
		if *c2.reqs[k].OSL != *c.reqs[k].OSL || *c2.reqs[k].ISL != *c.reqs[k].ISL {
			t.Fatalf("request %d drew %d:%d, then %d:%d", k, *c.reqs[k].ISL, *c.reqs[k].OSL, *c2.reqs[k].ISL, *c2.reqs[k].OSL)
		}
	}
}

// TestSweepRefusesBadDistributions: a distribution that cannot be drawn
// from, or one where the lengths come from elsewhere, is a vet error at
// the field, with its position in the plan.
func TestSweepRefusesBadDistributions(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`cells: [{isl: {dist: "uniform", min: 64}, osl: 8}]`, `plan.cue:6:10: stages.sweep.cells.0.isl: a uniform distribution needs min and max`},
		{`cells: [{isl: 8, osl: {dist: "lognormal", stddev: 3}}]`, `stages.sweep.cells.0.osl: a lognormal distribution needs a mean above 0`},
		{`cells: [{isl: 8, osl: {dist: "normal", mean: 10, stddev: 1, min: 100, max: 200}}]`, `stages.sweep.cells.0.osl: min and max keep 0 of the normal(10, 1) distribution`},
		{`cells: [{isl: 8, osl: {dist: "empirical", values: [4, 8], weights: [1]}}]`, `stages.sweep.cells.0.osl: 1 weights for 2 values`},
		{`cells: [{isl: 8, osl: {dist: "uniform", min: 9, max: 4}}]`, `min 9 is above max 4`},
		{`cells: [{isl: {dist: "uniform", min: 1, max: 99999999}, osl: 8}]`, `stages.sweep.cells.0.isl: 99999999 tokens (the longest lengths uniform(1..99999999):8 draws): at most 10000000`},
		{`cells: [{isl: {dist: "uniform", min: 4, max: 8}, osl: 8}], endpoint: "embeddings"`, `needs a text generation endpoint`},
		{`cells: [{isl: 8, osl: {dist: "uniform", min: 4, max: 8}}], turns: 3`, `a conversation's turns carry their history`},
		{`cells: [{isl: {dist: "uniform", min: 4, max: 8}, osl: 8}], dataset: {path: "x.jsonl"}`, `the dataset gives the lengths`},
		{`cells: [{isl: {dist: "uniform", min: 4, max: 1000}, osl: 8}], shared_prefix: 10`, `shared_prefix 10 leaves no room in isl 4`},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.cue, err, tc.want)
		}
	}
	// A model's context holds the longest draw, not the mean.
	st, p := loadStage(t, `kind: "sweep", target: "http://x"
		cells: [{isl: {dist: "uniform", min: 10, max: 600}, osl: 8}]`, `model: {name: "sim-llama", max_model_len: 512}`)
	if err := st.Validate(check(t, p)); err == nil || !strings.Contains(err.Error(), "isl+osl = 608 exceeds model.max_model_len 512 (the longest lengths uniform(10..600):8 draws)") {
		t.Errorf("a draw past the context: %v", err)
	}
}
