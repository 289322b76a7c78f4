package measure_test

import (
	"iter"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// countedReads are Requests that count how often they are read whole: a
// long cell's end is as slow as its readings of the spool.
type countedReads struct {
	results.Requests
	reads int
}

func (c *countedReads) All() iter.Seq[*results.Request] {
	c.reads++
	return c.Requests.All()
}

// streamedRows are n streamed requests of osl tokens, one token an event,
// kernel-stamped, sent 2 ms apart, their gaps 1 ms with a few µs of
// jitter (the simulator's fixed timings as the client measures them).
func streamedRows(n, osl int) iter.Seq[results.Request] {
	return func(yield func(results.Request) bool) {
		rng := rand.New(rand.NewPCG(1, 2))
		start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
		for i := range n {
			gaps := make([]float64, osl-1)
			stamps := make([]float64, osl)
			e2el := 1.0
			for k := range gaps {
				gaps[k] = 1 + rng.Float64()*0.05
				e2el += gaps[k]
			}
			for k := range stamps {
				stamps[k] = 0.005 + rng.Float64()*0.01
			}
			if !yield(results.Request{
				Seq: int64(i), Status: results.StatusOK, SentAt: start.Add(time.Duration(i) * 2 * time.Millisecond),
				TTFTMs: results.Some(1 + rng.Float64()*0.1), E2ELMs: results.Some(e2el),
				InputTokens: 32, OutputTokens: int64(osl), ChunkGapsMs: gaps, StampDelaysMs: stamps,
				SendLagMs: rng.Float64() * 0.02,
			}) {
				return
			}
		}
	}
}

// BenchmarkCellEnd times a long streamed cell's end: its row (FillCell)
// and its time slices (Slices) computed from its spooled rows, as a
// sweep's cell ends. It reports the readings of the spool and the
// seconds of one cell end per million requests.
func BenchmarkCellEnd(b *testing.B) {
	for _, n := range []int{20_000, 100_000} {
		b.Run(time.Duration(n/500*int(time.Second)).String()+"@500", func(b *testing.B) {
			s, err := rundir.NewRequestSpool(b.TempDir(), "sweep/32:64/r500", 0)
			if err != nil {
				b.Fatal(err)
			}
			for r := range streamedRows(n, 64) {
				s.Add(r)
			}
			spooled, err := s.Finish()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Remove()
			reads := &countedReads{Requests: spooled}
			b.ResetTimer()
			for b.Loop() {
				reads.reads = 0
				row := results.Cell{StampSource: "kernel"}
				measure.FillCell(&row, reads, measure.CellWindow{Span: time.Duration(n) * 2 * time.Millisecond}, measure.SLO{})
				if row.Completed != int64(n) || row.ITLP99Ms == nil || row.StampDelayP99Ms == nil {
					b.Fatalf("row: completed %d of %d, itl_p99 %v, stamp_delay_p99 %v", row.Completed, n, row.ITLP99Ms, row.StampDelayP99Ms)
				}
				measure.Slices(row, reads)
			}
			b.ReportMetric(float64(reads.reads), "reads")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(n)*1e6, "s/Mreq")
		})
	}
}
