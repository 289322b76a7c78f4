package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

// TestRerankSweep: a rerank sweep measured as embeddings are: a query and
// batch documents per request, every document scored (documents_s =
// batch × req_s exactly), each text isl tokens as the simulator counts
// them (effective_isl, calibrated by tokenize: the probe cannot count one
// text), the latency the simulator's TTFT.
func TestRerankSweep(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT = 10 * time.Millisecond })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "rerank",
		cells: [{isl: 16, osl: 1}], batch: [1, 8], concurrency: [2], requests: 6, warmup: 0`, url), "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("vet: %v", err)
	}
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.cells {
		if r.Status != results.StatusOK || r.Completed != 6 || r.Endpoint != "rerank" {
			t.Fatalf("%s: status %s (%s), %d completed", r.CellID, r.Status, r.Reason, r.Completed)
		}
		if got, want := v(r.DocumentsS), float64(r.Batch)*v(r.ReqS); got <= 0 || got < want*(1-1e-9) || got > want*(1+1e-9) {
			t.Errorf("%s: documents_s %.3f, want batch × req_s = %.3f", r.CellID, got, want)
		}
		if v(r.EffectiveISL) != 16 || strings.Contains(r.Notes, "differs from") {
			t.Errorf("%s: effective isl %v, want 16 per text (notes %q)", r.CellID, v(r.EffectiveISL), r.Notes)
		}
		t.Logf("%s: documents_s %.1f req_s %.1f effective_isl %v e2el p50 %.2f ms; notes %q", r.CellID, v(r.DocumentsS), v(r.ReqS), v(r.EffectiveISL), v(r.E2ELP50Ms), r.Notes)
		if e := v(r.E2ELP50Ms); e < 10 || e > 30 {
			t.Errorf("%s: e2el p50 %.1f ms, the simulator's 10", r.CellID, e)
		}
	}
	if len(c.cells) != 2 {
		t.Fatalf("%d rows, want one per batch", len(c.cells))
	}
}

// TestRerankRefused: vet refuses, at the field, a rerank sweep without
// documents per request or with stream, and batch off embeddings and
// rerank.
func TestRerankRefused(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`kind: "sweep", target: "http://x", endpoint: "rerank"`, `stages.sweep.batch: a rerank sweep needs documents per request`},
		{`kind: "sweep", target: "http://x", endpoint: "rerank", batch: [4], stream: true`, `stages.sweep.stream: a rerank answer comes in one body`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", batch: [4]`, `stages.sweep.batch: applies to endpoint "embeddings" or "rerank" only, not "chat"`},
	} {
		st, p := loadStage(t, tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
			t.Errorf("%s: err = %v, want %q at its position", tc.cue, err, tc.want)
		}
	}
	st, p := loadStage(t, `kind: "sweep", target: "http://x", endpoint: "rerank", batch: [4]`, "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Errorf("a rerank sweep with batch: %v", err)
	}
}
