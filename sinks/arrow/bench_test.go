package arrow

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// benchRequests are n request rows filling every column, as a sweep's
// cells of 1,000 requests each, with gaps chunk gaps per row.
func benchRequests(n, gaps int) []results.Request {
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	reqs := make([]results.Request, n)
	for i := range reqs {
		g := make([]float64, gaps)
		tok := make([]int64, gaps)
		for k := range g {
			g[k] = 5 + float64((i*31+k*7)%97)/13
			tok[k] = 1
		}
		ttft := 20 + float64(i%113)/7
		reqs[i] = results.Request{
			RunID: "20261201T040000Z-a1b2c3", Plan: "bench", Stage: "sweep", CellID: fmt.Sprintf("sweep/128:128/c%d", i/1000),
			Attempt: 1, Seq: int64(i % 1000), ResponseID: fmt.Sprintf("cmpl-%08x", i),
			SentAt: t0.Add(time.Duration(i) * time.Millisecond), SendLagMs: 0.01 * float64(i%17),
			TTFTMs: results.Some(ttft), E2ELMs: results.Some(ttft + 600), InputTokens: 128, OutputTokens: 128,
			Chunks: int64(gaps), ChunkGapsMs: g, Status: "ok", TTFTSchedMs: results.Some(ttft), E2ELSchedMs: results.Some(ttft + 600),
			ChunkTokens: tok, UsageReported: true,
		}
	}
	return reqs
}

// BenchmarkRequests writes 100,000 request rows, 1,000 per cell (a
// record batch each), through Tables to the two files (close: footer,
// fsync, rename included), and reports ns and bytes of requests.arrow per
// row.
func BenchmarkRequests(b *testing.B) {
	const n, perCell = 100_000, 1000
	for _, gaps := range []int{0, 16} {
		b.Run(fmt.Sprintf("gaps=%d", gaps), func(b *testing.B) {
			reqs := benchRequests(n, gaps)
			dir := b.TempDir()
			var size int64
			b.ResetTimer()
			for range b.N {
				tb, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < n; i += perCell {
					if err := tb.Cell(results.Cell{CellID: reqs[i].CellID}, results.AsRequests(reqs[i:i+perCell])); err != nil {
						b.Fatal(err)
					}
				}
				if err := tb.Close(); err != nil {
					b.Fatal(err)
				}
				fi, err := os.Stat(filepath.Join(dir, RequestsFile))
				if err != nil {
					b.Fatal(err)
				}
				size = fi.Size()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
			b.ReportMetric(float64(size)/n, "bytes/row")
		})
	}
}
