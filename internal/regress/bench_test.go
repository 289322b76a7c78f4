package regress

import "testing"

// BenchmarkBootstrapITL: one cell's ITL p50 and p99 of two runs of 1000
// requests × 256 gaps (go test -run X -bench . ./internal/regress).
func BenchmarkBootstrapITL(b *testing.B) {
	old := reqRun(1, "a", 1000, 16, 40, 8, 0.1, 450)
	nw := reqRun(2, "b", 1000, 16, 40, 8, 0.1, 450)
	for _, r := range []*Run{old, nw} {
		reqs := reqsOf(r, r.Cells[0].CellID)
		for i := range reqs {
			q := &reqs[i]
			for len(q.ChunkGapsMs) < 256 {
				q.ChunkGapsMs = append(q.ChunkGapsMs, q.ChunkGapsMs...)
			}
		}
	}
	m, _ := SelectMetrics([]string{"itl_p50_ms", "itl_p99_ms"})
	for b.Loop() {
		CompareRuns([]*Run{old}, []*Run{nw}, Options{Metrics: m})
	}
}
