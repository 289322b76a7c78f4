package merge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

func stampedShard(shard int64, source string, delays []float64) part {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	row := results.Cell{Stage: "s", CellID: "s/1:1/c2", Concurrency: 2, Shard: shard, Shards: 2, Status: results.StatusOK, StampSource: source}
	q := results.Request{Stage: "s", CellID: row.CellID, SentAt: t0.Add(time.Duration(shard) * time.Second),
		TTFTMs: results.Some(10.0), E2ELMs: results.Some(30.0), TTFTSchedMs: results.Some(10.0), E2ELSchedMs: results.Some(30.0),
		InputTokens: 1, OutputTokens: 3, Chunks: 3, ChunkGapsMs: []float64{10, 10}, ChunkTokens: []int64{1, 1, 1},
		Status: results.StatusOK, StampDelaysMs: delays}
	return part{dir: "d", runID: "r", row: row, reqs: heldRows("s", []results.Request{q})}
}

// The merged row's stamp delays are the pooled requests' percentiles.
func TestMergeStampDelays(t *testing.T) {
	row, _, _ := mergeCell([]part{stampedShard(0, "kernel", []float64{1, 1, 1}), stampedShard(1, "kernel", []float64{3, 3, 3})}, measure.SLO{}, Options{SendLagThresholdMs: 5, StartThresholdMs: 100})
	if row.StampSource != "kernel" || row.StampDelayP50Ms == nil || *row.StampDelayP50Ms != 2 || *row.StampDelayP99Ms != 3 {
		t.Errorf("merged stamps %q %v %v", row.StampSource, row.StampDelayP50Ms, row.StampDelayP99Ms)
	}
}

// Shards timed with different clocks merge on the user-space one: the
// kernel shard's requests move by their delays.
func TestMergeMixedStampSources(t *testing.T) {
	row, reqs, _ := mergeCell([]part{stampedShard(0, "kernel", []float64{1, 2, 4}), stampedShard(1, "user", nil)}, measure.SLO{}, Options{SendLagThresholdMs: 5, StartThresholdMs: 100})
	if row.StampSource != "user" || row.StampDelayP50Ms != nil || !strings.Contains(row.Notes, "shards 0 timed events with kernel receive stamps, shards 1 with user-space stamps") {
		t.Errorf("merged %q %v, notes %q", row.StampSource, row.StampDelayP50Ms, row.Notes)
	}
	var k results.Request
	for q := range reqs.All() {
		if q.Seq == 0 {
			k = *q
		}
	}
	if *k.TTFTMs != 11 || *k.E2ELMs != 34 || *k.TTFTSchedMs != 11 || k.ChunkGapsMs[0] != 11 || k.ChunkGapsMs[1] != 12 || k.StampDelaysMs != nil {
		t.Errorf("kernel shard's request on user stamps: ttft %v e2el %v gaps %v delays %v", *k.TTFTMs, *k.E2ELMs, k.ChunkGapsMs, k.StampDelaysMs)
	}
	if *row.TTFTP50Ms != 10.5 {
		t.Errorf("ttft p50 %v, want 10.5 (11 and 10)", *row.TTFTP50Ms)
	}
}

// A cell one process measured and the same requests sent by two shards
// and merged are the same cell: every request-derived column comes from
// measure.FillCell over the same rows and window.
func TestMergedCellIsOneProcessCell(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []results.Request
	for i := range 40 {
		gaps := []float64{float64(5 + i%7), float64(9 + i%3)}
		q := results.Request{Stage: "s", CellID: "s/1:1/c2", Seq: int64(i), SentAt: t0.Add(time.Duration(i) * 37 * time.Millisecond),
			SendLagMs: float64(i%5) / 10, TTFTMs: results.Some(float64(20 + i%11)), E2ELMs: results.Some(float64(60 + i%13)),
			InputTokens: 50, OutputTokens: 4, Chunks: 3, ChunkGapsMs: gaps, ChunkTokens: []int64{1, 1, 2}, Status: results.StatusOK}
		if i%9 == 4 {
			q = results.Request{Stage: "s", CellID: q.CellID, Seq: q.Seq, SentAt: q.SentAt, SendLagMs: q.SendLagMs, Status: results.StatusError, Error: "reset"}
		}
		q.TTFTSchedMs, q.E2ELSchedMs = nil, nil
		all = append(all, q)
	}
	slo := measure.SLO{TTFTMs: 27, ITLMs: 12}
	one := results.Cell{Stage: "s", CellID: "s/1:1/c2", Concurrency: 2}
	intervals, span := measure.SendsOf(results.AsRequests(all))
	measure.FillCell(&one, results.AsRequests(all), measure.CellWindow{Span: measure.UnionWindow(results.AsRequests(all)), SendIntervals: intervals, SendSpan: span}, slo)

	var shards [2][]results.Request
	for i, q := range all {
		shards[i%2] = append(shards[i%2], q)
	}
	ps := []part{
		{dir: "a", runID: "ra", row: results.Cell{Stage: "s", CellID: one.CellID, Concurrency: 2, Shard: 0, Shards: 2, Status: results.StatusError}, reqs: heldRows("s", shards[0])},
		{dir: "b", runID: "rb", row: results.Cell{Stage: "s", CellID: one.CellID, Concurrency: 2, Shard: 1, Shards: 2, Status: results.StatusError}, reqs: heldRows("s", shards[1])},
	}
	merged, _, _ := mergeCell(ps, slo, Options{SendLagThresholdMs: 5, StartThresholdMs: 100})

	a, b := columnsOf(t, one), columnsOf(t, merged)
	checked := 0
	for name, v := range a {
		switch name {
		case "shard", "shards", "notes", "reason", "status", "started_at":
			continue // the merge's own: which shards, and its wording
		}
		checked++
		if b[name] != v {
			t.Errorf("%s: one process %s, merged %s", name, v, b[name])
		}
	}
	if checked < 60 || one.Failed != 4 || one.TTFTP99Ms == nil {
		t.Fatalf("compared %d columns of a cell with %d failed", checked, one.Failed)
	}
}

// columnsOf is a row's columns as JSON text, by name.
func columnsOf(t *testing.T, row results.Cell) map[string]string {
	t.Helper()
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}
