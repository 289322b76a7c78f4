package runview

import (
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// The distribution charts are the requests' percentiles: TTFT 1..100 ms
// reads p50 50.50 and p99 99.01 (linear interpolation, as every percentile
// benchrun reports); failed requests are not in them.
func TestDistChartsAreTheRequests(t *testing.T) {
	var reqs []results.Request
	for i := 1; i <= 100; i++ {
		v := float64(i)
		reqs = append(reqs, results.Request{SentAt: time.Unix(int64(i), 0), Status: results.StatusOK, TTFTMs: &v,
			E2ELMs: results.Some(10 * v), ChunkGapsMs: []float64{2, 4}})
	}
	reqs = append(reqs, results.Request{Status: results.StatusError, Error: "boom"})
	d := DistOf(results.AsRequests(reqs))
	if len(d.TTFT) != distLevels || d.TTFT[50] != 50.5 || d.TTFT[0] != 1 || d.TTFT[100] != 100 || d.ITL[50] != 3 || d.E2EL[100] != 1000 {
		t.Fatalf("levels: ttft p0 %v p50 %v p100 %v, itl p50 %v, e2el p100 %v", d.TTFT[0], d.TTFT[50], d.TTFT[100], d.ITL[50], d.E2EL[100])
	}
	cells := []results.Cell{
		{Stage: "sweep", CellID: "sweep/64:32/c1", ISL: 64, OSL: 32, Concurrency: 1, Status: results.StatusOK},
		{Stage: "sweep", CellID: "sweep/64:32/c4", ISL: 64, OSL: 32, Concurrency: 4, Status: results.StatusOK},
		{Stage: "sweep", CellID: "sweep/64:32/c8", ISL: 64, OSL: 32, Concurrency: 8, Status: results.StatusError},
	}
	charts := DistCharts(cells, map[string]Dist{"sweep/64:32/c1": d, "sweep/64:32/c4": d, "sweep/64:32/c8": d})
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "dist-ttft-sweep-64-32 dist-itl-sweep-64-32 dist-e2el-sweep-64-32" {
		t.Fatalf("charts %q", got)
	}
	ttft := charts[0].SVG
	for _, want := range []string{"c=1 p50: 50.50 ms", "c=4 p99: 99.01 ms", "c=1 p0: 1.00 ms"} {
		if !strings.Contains(ttft, want) {
			t.Errorf("TTFT chart lacks %q", want)
		}
	}
	if strings.Contains(ttft, "c=8") {
		t.Error("the error cell is drawn")
	}
	if strings.Count(ttft, `<path class="series"`) != 2 {
		t.Errorf("want one curve per ok load level")
	}
}
