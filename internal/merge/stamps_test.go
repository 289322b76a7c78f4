package merge

import (
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

func stampedShard(shard int64, source string, delays []float64) part {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	row := results.Cell{Stage: "s", CellID: "s/1:1/c2", Concurrency: 2, Shard: shard, Shards: 2, Status: results.StatusOK, StampSource: source}
	q := results.Request{Stage: "s", CellID: row.CellID, SentAt: t0.Add(time.Duration(shard) * time.Second),
		TTFTMs: results.Some(10.0), E2ELMs: results.Some(30.0), TTFTSchedMs: results.Some(10.0), E2ELSchedMs: results.Some(30.0),
		InputTokens: 1, OutputTokens: 3, Chunks: 3, ChunkGapsMs: []float64{10, 10}, ChunkTokens: []int64{1, 1, 1},
		Status: results.StatusOK, StampDelaysMs: delays}
	return part{dir: "d", runID: "r", row: row, reqs: []results.Request{q}}
}

// The merged row's stamp delays are the pooled requests' percentiles.
func TestMergeStampDelays(t *testing.T) {
	row, _, _ := mergeCell([]part{stampedShard(0, "kernel", []float64{1, 1, 1}), stampedShard(1, "kernel", []float64{3, 3, 3})}, schema.SLO{}, Options{SendLagThresholdMs: 5, StartThresholdMs: 100})
	if row.StampSource != "kernel" || row.StampDelayP50Ms == nil || *row.StampDelayP50Ms != 2 || *row.StampDelayP99Ms != 3 {
		t.Errorf("merged stamps %q %v %v", row.StampSource, row.StampDelayP50Ms, row.StampDelayP99Ms)
	}
}

// Shards timed with different clocks merge on the user-space one: the
// kernel shard's requests move by their delays.
func TestMergeMixedStampSources(t *testing.T) {
	row, reqs, _ := mergeCell([]part{stampedShard(0, "kernel", []float64{1, 2, 4}), stampedShard(1, "user", nil)}, schema.SLO{}, Options{SendLagThresholdMs: 5, StartThresholdMs: 100})
	if row.StampSource != "user" || row.StampDelayP50Ms != nil || !strings.Contains(row.Notes, "shards 0 timed events with kernel receive stamps, shards 1 with user-space stamps") {
		t.Errorf("merged %q %v, notes %q", row.StampSource, row.StampDelayP50Ms, row.Notes)
	}
	k := reqs[0]
	if *k.TTFTMs != 11 || *k.E2ELMs != 34 || *k.TTFTSchedMs != 11 || k.ChunkGapsMs[0] != 11 || k.ChunkGapsMs[1] != 12 || k.StampDelaysMs != nil {
		t.Errorf("kernel shard's request on user stamps: ttft %v e2el %v gaps %v delays %v", *k.TTFTMs, *k.E2ELMs, k.ChunkGapsMs, k.StampDelaysMs)
	}
	if *row.TTFTP50Ms != 10.5 {
		t.Errorf("ttft p50 %v, want 10.5 (11 and 10)", *row.TTFTP50Ms)
	}
}
