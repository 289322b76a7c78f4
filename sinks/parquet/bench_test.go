package parquet_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// syntheticRequests makes n request rows shaped like a real sweep's: 32
// cells' worth of ids, realistic latencies and gaps chunk gaps each.
func syntheticRequests(n, gaps int) []results.Request {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	rows := make([]results.Request, n)
	for i := range rows {
		cell := i / (n/32 + 1)
		g := make([]float64, gaps)
		toks := make([]int64, 0, gaps+1)
		for k := range g {
			g[k] = 5 + rng.ExpFloat64()
		}
		if gaps > 0 {
			// One token per event, as most servers stream: every column a
			// real request row fills is filled, so the size is honest.
			for range gaps + 1 {
				toks = append(toks, 1)
			}
		}
		ttft := 20 + 30*rng.Float64()
		lag := rng.Float64() / 10
		rows[i] = results.Request{
			RunID: "20261201T040000Z-abcdef", Plan: "bench", Stage: "sweep",
			CellID: fmt.Sprintf("sweep/128:128/c%d", 1<<(cell%8)), Seq: int64(i),
			ResponseID: fmt.Sprintf("cmpl-%08x", rng.Uint32()),
			SentAt:     t0.Add(time.Duration(i) * time.Millisecond), SendLagMs: lag,
			TTFTMs: results.Some(ttft), E2ELMs: results.Some(ttft + float64(gaps)*5.5), InputTokens: 128, OutputTokens: int64(gaps + 1),
			Chunks: int64(gaps + 1), ChunkGapsMs: g, Status: results.StatusOK,
			TTFTSchedMs: results.Some(ttft + lag), E2ELSchedMs: results.Some(ttft + lag + float64(gaps)*5.5), ChunkTokens: toks, UsageReported: true,
		}
	}
	return rows
}

func BenchmarkWriteRequests(b *testing.B) {
	for _, gaps := range []int{0, 16} {
		rows := syntheticRequests(1_000_000, gaps)
		b.Run(fmt.Sprintf("rows=1M/gaps=%d", gaps), func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "part-00001.parquet")
			for b.Loop() {
				if err := pqs.WriteFile(path, rows); err != nil {
					b.Fatal(err)
				}
			}
			st, _ := os.Stat(path)
			b.ReportMetric(float64(st.Size())/1e6, "MB")
		})
	}
}

// BenchmarkReadRequestsDuckDB reads 1,000,000 request rows back with
// DuckDB: a p99 TTFT per cell over every row, and every chunk gap unnested.
func BenchmarkReadRequestsDuckDB(b *testing.B) {
	for _, gaps := range []int{0, 16} {
		path := filepath.Join(b.TempDir(), "part-00001.parquet")
		if err := pqs.WriteFile(path, syntheticRequests(1_000_000, gaps)); err != nil {
			b.Fatal(err)
		}
		db := duck(b)
		b.Run(fmt.Sprintf("rows=1M/gaps=%d/p99-per-cell", gaps), func(b *testing.B) {
			for b.Loop() {
				rows := query(b, db, "SELECT cell_id, count(*), quantile_cont(ttft_ms, 0.99) FROM read_parquet("+sqlPath(path)+") GROUP BY cell_id")
				n := 0
				for _, r := range rows {
					var c int
					fmt.Sscan(r[1], &c)
					n += c
				}
				if len(rows) != 8 || n != 1_000_000 {
					b.Fatalf("%d cells, %d rows; want 8 and 1000000", len(rows), n)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=1M/gaps=%d/itl-p99-from-gaps", gaps), func(b *testing.B) {
			for b.Loop() {
				query(b, db, "SELECT quantile_cont(g, 0.99) FROM (SELECT unnest(chunk_gaps_ms) AS g FROM read_parquet("+sqlPath(path)+"))")
			}
		})
	}
}
