package plans_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
)

// TestLoRAMixPlan runs plans/lora-mix.cue against the simulator, which the
// launch stage starts with its adapters loaded (--lora-modules): at each
// ladder point the pooled row holds every request and a row per model its
// own, the counts within 3 standard deviations of the weights, each
// model's TTFT its simulated speed (10, 20, 40 ms) within the client's
// error, and every request row names the model it sent.
func TestLoRAMixPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	watch := machinetest.Start()
	cells, reqs := runExampleTables(t, "lora-mix.cue")
	byID := map[string]results.Cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	var timing []string
	models := []struct {
		name   string
		weight float64
		ttft   float64
	}{{"base", 0.6, 10}, {"lora-a", 0.3, 20}, {"lora-b", 0.1, 40}}
	for _, point := range []string{"sweep/64:16/c1", "sweep/64:16/c8"} {
		pooled, ok := byID[point]
		if !ok || pooled.Status != results.StatusOK || pooled.Completed != 100 || pooled.Model != "base=0.6,lora-a=0.3,lora-b=0.1" {
			t.Errorf("%s: found %v, %s %q, %d completed, model %q", point, ok, pooled.Status, pooled.Reason, pooled.Completed, pooled.Model)
			continue
		}
		counts := map[string]int64{}
		for _, q := range reqs {
			if q.CellID == point {
				counts[q.Model]++
			}
		}
		for _, m := range models {
			row, ok := byID[point+"/model="+m.name]
			want, sd := 100*m.weight, math.Sqrt(100*m.weight*(1-m.weight))
			ttft := results.ValueOr(row.TTFTP50Ms, -1)
			switch {
			case !ok || row.Status != results.StatusOK || row.Model != m.name:
				t.Errorf("%s/model=%s: found %v, %s %q, model %q", point, m.name, ok, row.Status, row.Reason, row.Model)
			case row.Completed != counts[m.name] || math.Abs(float64(row.Completed)-want) > 3*sd:
				t.Errorf("%s/model=%s: %d completed, %d request rows; want %.0f ± 3 × %.1f", point, m.name, row.Completed, counts[m.name], want, sd)
			case ttft < m.ttft || ttft > m.ttft+max(4, 0.2*m.ttft):
				timing = append(timing, fmt.Sprintf("%s/model=%s: ttft p50 %.2f ms, the simulator's %.0f ms", point, m.name, ttft, m.ttft))
			}
		}
	}
	if len(timing) > 0 {
		watch.Judge(t, "each model's TTFT at its simulated speed")
		for _, e := range timing {
			t.Error(e)
		}
	}
}
