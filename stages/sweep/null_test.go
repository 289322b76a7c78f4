package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// failFirst makes the real simulator answer the first n streamed
// generation requests with HTTP 500 (its own X-Sim-Fault), and the rest
// normally: the c=1 point of a ladder fails, the points after it do not.
type failFirst struct {
	mu   sync.Mutex
	n    int
	next http.Handler
}

func (f *failFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Stream bool `json:"stream"`
	}
	if strings.HasSuffix(r.URL.Path, "/completions") && json.Unmarshal(body, &req) == nil && req.Stream {
		f.mu.Lock()
		if f.n > 0 {
			f.n--
			r.Header.Set(sim.FaultHeader, "error=500")
		}
		f.mu.Unlock()
	}
	f.next.ServeHTTP(w, r)
}

// A c=4 row whose c=1 row failed has nothing to compare with: its
// speedup_vs_c1 and batching_efficiency are null, never 0 (which read as
// "no scaling at all"), while its own measurements stand.
func TestSpeedupIsNullWhenTheC1RowFailed(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 2*time.Millisecond, time.Millisecond, 0
	s := simtest.NewSimFrom(t, cfg)
	url := simtest.Serve(t, &failFirst{n: 4, next: s})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 4}], concurrency: [1, 4], requests: 4, warmup: 0`, url), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 2 {
		t.Fatalf("%d cell rows, want 2", len(c.cells))
	}
	c1, c4 := c.cells[0], c.cells[1]
	if c1.Concurrency != 1 || c1.Status != results.StatusError || c1.Completed != 0 || c1.Failed != 4 {
		t.Fatalf("c=1 row: c=%d %s %q completed %d failed %d; want every request failed", c1.Concurrency, c1.Status, c1.Reason, c1.Completed, c1.Failed)
	}
	if c1.TTFTP99Ms != nil || c1.ITLP50Ms != nil || c1.SpeedupVsC1 != nil || v(c1.DecodeTokS) != 0 {
		t.Errorf("c=1 row: ttft p99 %v itl p50 %v speedup %v decode %v; want null latencies and speedup, a measured 0 tok/s",
			v(c1.TTFTP99Ms), v(c1.ITLP50Ms), v(c1.SpeedupVsC1), v(c1.DecodeTokS))
	}
	if c4.Concurrency != 4 || c4.Status != results.StatusOK || v(c4.DecodeTokS) <= 0 {
		t.Fatalf("c=4 row: c=%d %s %q decode %v", c4.Concurrency, c4.Status, c4.Reason, v(c4.DecodeTokS))
	}
	if c4.SpeedupVsC1 != nil || c4.BatchingEfficiency != nil {
		t.Errorf("c=4 row: speedup_vs_c1 %v batching_efficiency %v; want null (no measured c=1 row)", v(c4.SpeedupVsC1), v(c4.BatchingEfficiency))
	}
	if got := results.WhyNull(c4, "speedup_vs_c1"); !strings.Contains(got, "no c=1 row") {
		t.Errorf("WhyNull(speedup_vs_c1) = %q", got)
	}
}
