package sweep

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

// TestSweepModelMix is the proof of a model mix against the simulator
// serving a base model and two adapters, each at a speed of its own
// (fixed mode: TTFT 5, 15 and 30 ms, a token every 1, 2 and 3 ms):
// weights 0.6/0.3/0.1 over 1,000 requests.
//
//   - each request names the model it drew, and the simulator served that
//     model at that model's planned speed (its records);
//   - per-model request counts are within 3 standard deviations of
//     1,000 × weight;
//   - the pooled row holds every request; each model's row (cell id
//     …/model=NAME) holds its own, and its TTFT and ITL are that model's
//     speed, within the client's error;
//   - a second run draws the same models for the same requests.
//
// The speeds are a claim about a quiet machine: beside busy neighbours a
// miss is inconclusive (machinetest), the counts and names still judged.
func TestSweepModelMix(t *testing.T) {
	const n = 1000
	speeds := map[string]sim.ModelSpeed{
		"base":   {TTFT: 5 * time.Millisecond, ITL: time.Millisecond},
		"lora-a": {TTFT: 15 * time.Millisecond, ITL: 2 * time.Millisecond},
		"lora-b": {TTFT: 30 * time.Millisecond, ITL: 3 * time.Millisecond},
	}
	weights := map[string]float64{"base": 0.6, "lora-a": 0.3, "lora-b": 0.1}
	srv, url := startSim(t, func(c *sim.Config) {
		c.Models, c.ModelSpeeds = []string{"base", "lora-a", "lora-b"}, speeds
	})
	watch := machinetest.Start()
	var timing []string
	plan := fmt.Sprintf(`kind: "sweep", target: %q, model: "base"
		models: [{name: "base", weight: 0.6}, {name: "lora-a", weight: 0.3}, {name: "lora-b", weight: 0.1}]
		cells: [{isl: 16, osl: 8}], concurrency: [50], requests: %d, warmup: 0
		telemetry: {gpu: "off", host: "off", machine: "off"}`, url, n)
	st, p := loadStage(t, plan, "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 4 || len(c.reqs) != n {
		t.Fatalf("%d rows, %d requests; want the pooled row and 3 per-model rows", len(c.cells), len(c.reqs))
	}
	pooled := c.cells[0]
	if pooled.CellID != "sweep/16:8/c50" || pooled.Completed != n || pooled.Status != results.StatusOK || pooled.Model != "base=0.6,lora-a=0.3,lora-b=0.1" {
		t.Fatalf("pooled row %s: %s %q, %d completed, model %q", pooled.CellID, pooled.Status, pooled.Reason, pooled.Completed, pooled.Model)
	}
	counts := map[string]int{}
	for _, q := range c.reqs {
		rec, ok := srv.Record(q.ResponseID)
		if !ok || q.Model == "" || rec.Model != q.Model || rec.PlannedTTFT != speeds[q.Model].TTFT {
			t.Fatalf("request %d named %q; the simulator served %q with ttft %v (found %v)", q.Seq, q.Model, rec.Model, rec.PlannedTTFT, ok)
		}
		counts[q.Model]++
	}
	for _, row := range c.cells[1:] {
		m := row.Model
		w, known := weights[m]
		if !known || row.CellID != "sweep/16:8/c50/model="+m || row.Status != results.StatusOK {
			t.Errorf("per-model row %s: model %q, %s %q", row.CellID, m, row.Status, row.Reason)
			continue
		}
		want, sd := n*w, math.Sqrt(n*w*(1-w))
		if d := math.Abs(float64(counts[m]) - want); d > 3*sd || row.Completed != int64(counts[m]) {
			t.Errorf("%s: %d requests (row %d), want %.0f ± 3 × %.1f", m, counts[m], row.Completed, want, sd)
		}
		sp := speeds[m]
		ttft, itl := results.ValueOr(row.TTFTP50Ms, -1), results.ValueOr(row.ITLP50Ms, -1)
		wantTTFT, wantITL := ms(sp.TTFT), ms(sp.ITL)
		// The planned time is a floor (the simulator never answers early);
		// above it, the client's and a busy machine's error.
		if ttft < wantTTFT || ttft > wantTTFT+max(3, 0.2*wantTTFT) || math.Abs(itl-wantITL) > max(0.5, 0.2*wantITL) {
			timing = append(timing, fmt.Sprintf("%s: ttft p50 %.2f ms, itl p50 %.2f ms; the simulator's speed %.0f and %.0f ms", m, ttft, itl, wantTTFT, wantITL))
		}
		if !strings.Contains(row.Notes, "the pooled row is sweep/16:8/c50") {
			t.Errorf("%s: notes %s", m, row.Notes)
		}
		t.Logf("%s: %d requests (expected %.0f ± %.1f), ttft p50 %.2f ms (planned %.0f), itl p50 %.2f ms (planned %.0f)", m, counts[m], want, sd, ttft, wantTTFT, itl, wantITL)
	}
	if len(timing) > 0 {
		watch.Judge(t, "each model's row at its simulated speed within the client's error")
		for _, e := range timing {
			t.Error(e)
		}
	}

	st2, p2 := loadStage(t, plan, "")
	c2, err := runStage(t, st2, p2)
	if err != nil || len(c2.reqs) != n {
		t.Fatalf("second run: %v, %d requests", err, len(c2.reqs))
	}
	for k := range c2.reqs {
		if c2.reqs[k].Model != c.reqs[k].Model {
			t.Fatalf("request %d named %s, then %s", k, c.reqs[k].Model, c2.reqs[k].Model)
		}
	}
}

// TestSweepRefusesBadMixes: a model given twice, or a mix where requests
// cannot name their own model, is a vet error at the field.
func TestSweepRefusesBadMixes(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`models: [{name: "a"}, {name: "a", weight: 2}]`, `stages.sweep.models.1: model "a" is in the mix twice`},
		{`models: [{name: "a"}, {name: "b"}], dataset: {path: "t.jsonl", format: "mooncake"}`, `stages.sweep.models: a model mix is drawn per request`},
		{`cells: [{isl: 8, osl: 8, models: [{name: "a"}, {name: "a"}]}]`, `stages.sweep.cells.0.models.1: model "a" is in the mix twice`},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
			t.Errorf("%s:\n got %v\nwant %q", tc.cue, err, tc.want)
		}
	}
}

// TestSweepModelMixPerSession: in a conversation a session draws its
// model once, and every turn names it (the simulator served each turn as
// that model, its own cache serving the history); the per-model rows
// hold whole sessions.
func TestSweepModelMixPerSession(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.Models, c.PromptCache = []string{"base", "lora-a"}, true
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, model: "base", endpoint: "chat"
		models: [{name: "base"}, {name: "lora-a"}]
		cells: [{isl: 16, osl: 4}], concurrency: [4], turns: 3, requests: 48, warmup: 0
		telemetry: {gpu: "off", host: "off", machine: "off"}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 3 || len(c.reqs) != 48 {
		t.Fatalf("%d rows, %d requests", len(c.cells), len(c.reqs))
	}
	bySession := map[int64]string{}
	turns := map[string]int64{}
	for _, q := range c.reqs {
		rec, ok := srv.Record(q.ResponseID)
		if q.Session == nil || !ok || rec.Model != q.Model {
			t.Fatalf("request %d: session %v, named %q, served %q", q.Seq, q.Session, q.Model, rec.Model)
		}
		if m, seen := bySession[*q.Session]; seen && m != q.Model {
			t.Fatalf("session %d switched from %s to %s", *q.Session, m, q.Model)
		}
		bySession[*q.Session] = q.Model
		turns[q.Model]++
		if *q.Turn > 1 && (q.CachedTokens == nil || *q.CachedTokens == 0) {
			t.Errorf("request %d (turn %d, %s): no cached history (%v): the model's own cache should hold it", q.Seq, *q.Turn, q.Model, q.CachedTokens)
		}
	}
	for _, row := range c.cells[1:] {
		if row.Status != results.StatusOK || row.Completed != turns[row.Model] || row.Completed%3 != 0 || row.Completed == 0 {
			t.Errorf("%s: %s %q, %d completed of %d turns named %s (whole 3-turn sessions)", row.CellID, row.Status, row.Reason, row.Completed, turns[row.Model], row.Model)
		}
	}
}
