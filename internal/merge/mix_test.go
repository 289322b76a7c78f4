package merge

import (
	"path/filepath"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// TestMergeModelRows: a model mix's per-model row (cell id
// <pooled>/model=NAME) has no request rows of its own; merged, it is
// recomputed from its model's requests of the pooled row across the
// shards, and the merged run writes those requests once, with the pooled
// row.
func TestMergeModelRows(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeShard(t, a, 0, t0, []float64{1, 2, 3}, 1)
	writeShard(t, b, 1, t0.Add(500*time.Millisecond), []float64{100, 200}, 1)
	for _, d := range []string{a, b} {
		reqPath := filepath.Join(d, results.TableRequests, rundir.PartName(1, 1))
		reqs, err := pq.ReadFile[results.Request](reqPath)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			reqs[i].Model = []string{"x", "y"}[i%2] // shard a: x y x; shard b: x y
		}
		if err := rundir.WriteFile(reqPath, reqs); err != nil {
			t.Fatal(err)
		}
		cellPath := filepath.Join(d, results.TableCells, rundir.PartName(1, 1))
		cells, err := pq.ReadFile[results.Cell](cellPath)
		if err != nil {
			t.Fatal(err)
		}
		x := cells[0]
		x.CellID, x.Model = x.CellID+"/model=x", "x"
		if err := rundir.WriteFile(cellPath, append(cells, x)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Merge([]string{a, b}, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("%d merged rows, want the pooled and the model's", len(res.Cells))
	}
	pooled, x := res.Cells[0], res.Cells[1]
	if pooled.CellID != "s/1:1/c2" || pooled.Completed != 5 || res.Requests["s\x00s/1:1/c2"] != 5 {
		t.Errorf("pooled %s: %d completed, %d requests written", pooled.CellID, pooled.Completed, res.Requests["s\x00s/1:1/c2"])
	}
	// Model x: ttfts 1 and 3 (shard a) and 100 (shard b): median 3.
	if x.CellID != "s/1:1/c2/model=x" || x.Model != "x" || x.Completed != 3 || x.TTFTP50Ms == nil || *x.TTFTP50Ms != 3 || x.Status != results.StatusOK {
		t.Errorf("model row %s: model %q, %d completed, ttft p50 %v, %s %q", x.CellID, x.Model, x.Completed, val(x.TTFTP50Ms), x.Status, x.Reason)
	}
	if n := res.Requests["s\x00s/1:1/c2/model=x"]; n != 0 {
		t.Errorf("the model row's requests written again: %d", n)
	}
	for _, tc := range []struct{ id, pooled, model string }{
		{"sweep/64:16/c8/model=lora-a", "sweep/64:16/c8", "lora-a"},
		{"sweep/64:16/c8/model=lora-a/rep2", "sweep/64:16/c8/rep2", "lora-a"},
		{"sweep/64:16/c8", "sweep/64:16/c8", ""},
	} {
		p, m, ok := mixRowOf(tc.id)
		if p != tc.pooled || m != tc.model || ok != (tc.model != "") {
			t.Errorf("mixRowOf(%q) = %q %q %v", tc.id, p, m, ok)
		}
	}
}
