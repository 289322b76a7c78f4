package regress

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

func TestKeyOfRepeat(t *testing.T) {
	for _, tc := range []struct {
		id     string
		repeat int64
		want   string
	}{
		{"sweep/64:32/c4/rep2", 2, "sweep/64:32/c4"},
		{"sweep/64:32/c4/rep1", 1, "sweep/64:32/c4"},
		{"sweep/64:32/c4/rep12", 12, "sweep/64:32/c4"},
		{"sweep/64:32/c4", 0, "sweep/64:32/c4"},
		{"sweep/64:32/c4/rep2", 0, "sweep/64:32/c4/rep2"},   // no repeats: the id is whole
		{"sweep/64:32/c4/rep12", 2, "sweep/64:32/c4/rep12"}, // not its repeat's suffix
		{"sweep/64:32/c4/rep2", 3, "sweep/64:32/c4/rep2"},
	} {
		c := mkCell(tc.id, nil)
		c.Repeat = tc.repeat
		if got := KeyOf(c).CellID; got != tc.want {
			t.Errorf("KeyOf(%q, repeat %d).CellID = %q, want %q", tc.id, tc.repeat, got, tc.want)
		}
		if got := PointID(c); got != tc.want {
			t.Errorf("PointID(%q, repeat %d) = %q, want %q", tc.id, tc.repeat, got, tc.want)
		}
	}
	// Two repeats of one point share a key; the same point without
	// repeats in another run matches them too.
	a, b := mkCell("s/1:1/c1/rep1", nil), mkCell("s/1:1/c1/rep2", nil)
	a.Repeat, b.Repeat = 1, 2
	if KeyOf(a) != KeyOf(b) || KeyOf(a) != KeyOf(mkCell("s/1:1/c1", nil)) {
		t.Errorf("repeats do not share a key: %v %v", KeyOf(a), KeyOf(b))
	}
}

// repRun is one run of cell "sweep/128:16/c4" with reps repeats (rows
// .../rep1 … .../repN, Repeat 1..N; reps 0: one row without repeats),
// each a reqRun of its own seed, the i-th repeat's throughput tputs[i].
func repRun(seed uint64, id string, reps int, ttft float64, tputs []float64) *Run {
	if reps == 0 {
		return reqRun(seed, id, 120, 4, ttft, 8, 0.1, tputs[0])
	}
	out := &Run{ID: id, StartedAt: t0, Status: "ok", Requests: map[string]results.Requests{}}
	for i := range reps {
		r := reqRun(seed*100+uint64(i), id, 120, 4, ttft, 8, 0.1, tputs[i])
		c := r.Cells[0]
		reqs := reqsOf(r, c.CellID)
		c.CellID = fmt.Sprintf("%s/rep%d", c.CellID, i+1)
		c.Repeat = int64(i + 1)
		for j := range reqs {
			reqs[j].CellID = c.CellID
		}
		out.Cells = append(out.Cells, c)
		out.Requests[c.CellID] = results.RequestSlice(reqs)
	}
	return out
}

// tputs is n throughputs around base with a 1% spread.
func tputs(seed uint64, n int, base float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]float64, max(n, 1))
	for i := range out {
		out[i] = noisy(rng, base, 0.01)
	}
	return out
}

// Two single runs with repeats decide throughput: each repeat is a
// sample of the point. Without repeats they cannot.
func TestCompareRunRepeats(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reps      int
		newTput   float64
		want      Outcome
		method    string
		n         int // samples a side for output_tok_s
		ttftNewMs float64
		ttftWant  Outcome // "": not checked
	}{
		{"5 repeats, 10% less throughput", 5, 405, Regressed, MethodWelch, 5, 40, Same},
		{"5 repeats, 10% more throughput", 5, 495, Improved, MethodWelch, 5, 40, Same},
		{"5 repeats, same", 5, 450, Same, MethodWelch, 5, 40, Same},
		{"3 repeats, slower TTFT", 3, 450, Same, MethodWelch, 3, 52, Regressed},
		// (120 requests a side are too few to call TTFT the same.)
		{"no repeats, 10% less throughput", 0, 405, Unknown, MethodNone, 1, 40, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := repRun(1, "old", tc.reps, 40, tputs(11, tc.reps, 450))
			nw := repRun(2, "new", tc.reps, tc.ttftNewMs, tputs(12, tc.reps, tc.newTput))
			rep := CompareRuns([]*Run{old}, []*Run{nw}, Options{})
			if len(rep.OnlyOld)+len(rep.OnlyNew) != 0 || rep.NoMatch != "" {
				t.Fatalf("cells unmatched: old %v new %v %s", rep.OnlyOld, rep.OnlyNew, rep.NoMatch)
			}
			if len(rep.Verdicts) != len(DefaultMetrics()) {
				t.Fatalf("%d verdicts, want one per metric (%d): the repeats are one point", len(rep.Verdicts), len(DefaultMetrics()))
			}
			v := verdictOf(rep, "output_tok_s")
			if v.Outcome != tc.want || v.Method != tc.method || v.N != tc.n || v.NNew != tc.n {
				t.Errorf("output_tok_s: %s by %s, n %d+%d; want %s by %s, %d+%d (%s)", v.Outcome, v.Method, v.N, v.NNew, tc.want, tc.method, tc.n, tc.n, v)
			}
			if v.CellID != "sweep/128:16/c4" || v.Key.CellID != "sweep/128:16/c4" || len(v.Runs) != 1 || v.Runs[0] != "old" {
				t.Errorf("cell %q key %q runs %v: want the point's id and the one old run", v.CellID, v.Key.CellID, v.Runs)
			}
			// The request-level metrics pool every repeat's requests: one
			// run a side.
			tt := verdictOf(rep, "ttft_p50_ms")
			if tt.Method != MethodBootstrap || tt.N != 120*max(tc.reps, 1) || tc.ttftWant != "" && tt.Outcome != tc.ttftWant {
				t.Errorf("ttft_p50_ms: %s by %s of %d requests; want %s by %s of %d", tt.Outcome, tt.Method, tt.N, tc.ttftWant, MethodBootstrap, 120*max(tc.reps, 1))
			}
		})
	}
}

// histRepeats is n history runs and a current run (number n) of cell
// "sweep/128:128/c4" with reps repeats each: repeat j of a run is
// baseVals × spread[j] × the run's noise (σ 1%), so the repeats of a run
// differ far more than runs' means do; current's values are also
// multiplied by shift.
func histRepeats(n, reps int, spread []float64, shift float64) ([]*Run, *Run) {
	rng := rand.New(rand.NewPCG(5, 9))
	mk := func(i int, f float64) *Run {
		noise := noisy(rng, 1, 0.01)
		var cells []results.Cell
		for j := range reps {
			vals := map[string]float64{}
			for k, b := range baseVals {
				vals[k] = b * spread[j] * noise * f
			}
			c := mkCell(fmt.Sprintf("sweep/128:128/c4/rep%d", j+1), vals)
			c.Repeat = int64(j + 1)
			cells = append(cells, c)
		}
		return mkRun(i, cells...)
	}
	var hist []*Run
	for i := range n {
		hist = append(hist, mk(i, 1))
	}
	return hist, mk(n, shift)
}

// Against history a run's value of a point is the mean of its repeats:
// one verdict per point and metric, N counting runs, not repeats.
func TestHistoryRepeats(t *testing.T) {
	spread := []float64{0.8, 1, 1.25} // geometric mean 1
	for _, tc := range []struct {
		name  string
		shift float64
		edit  func(cur *Run)
		want  Outcome
		nNew  int
		excl  map[string]int
	}{
		{"same", 1, nil, Same, 3, nil},
		// 10% on a run-to-run spread of 1%: clear, though the repeats
		// within a run spread by ±25% (as samples they would hide it).
		{"10% slower", 1.10, nil, Regressed, 3, nil},
		{"10% faster", 1 / 1.10, nil, Improved, 3, nil},
		// A repeat that failed is left out of the mean and counted: the
		// other two (0.8 and 1.25, mean 1) still say the same.
		{"one repeat failed", 1, func(cur *Run) { cur.Cells[1].Status = results.StatusError }, Same, 2, map[string]int{ReasonCellError: 1}},
		// Only the 1.25 repeat measured: 25% above the history's mean.
		{"two repeats NULL", 1, func(cur *Run) {
			cur.Cells[0].TTFTP50Ms, cur.Cells[1].TTFTP50Ms = nil, nil
		}, Regressed, 1, map[string]int{ReasonNull: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hist, cur := histRepeats(10, 3, spread, tc.shift)
			if tc.edit != nil {
				tc.edit(cur)
			}
			rep := CheckHistory(hist, cur, Options{Metrics: mustMetrics(t, "ttft_p50_ms", "output_tok_s")})
			if len(rep.Verdicts) != 2 {
				t.Fatalf("%d verdicts, want 2 (one point, two metrics): %v", len(rep.Verdicts), rep.Verdicts)
			}
			v := verdictOf(rep, "ttft_p50_ms")
			if v.Outcome != tc.want || v.N != 10 || v.NNew != tc.nNew || len(v.Runs) != 10 {
				t.Errorf("%s, N %d NNew %d runs %d; want %s, 10, %d, 10 (%s)", v.Outcome, v.N, v.NNew, len(v.Runs), tc.want, tc.nNew, v)
			}
			if math.Abs(v.Old/baseVals["ttft_p50_ms"]-1) > 0.02 {
				t.Errorf("history center %.4g, want the runs' means ≈ %.4g", v.Old, baseVals["ttft_p50_ms"])
			}
			if v.Key.CellID != "sweep/128:128/c4" || v.CellID == "" || cur.Cells[0].CellID != v.CellID && cur.Cells[1].CellID != v.CellID {
				t.Errorf("cell %q key %q: want a current row's id and the point's key", v.CellID, v.Key.CellID)
			}
			for reason, n := range tc.excl {
				if v.Excluded[reason] != n {
					t.Errorf("excluded %v, want %s: %d", v.Excluded, reason, n)
				}
			}
		})
	}

	// Every repeat of current excluded: the point is skipped, once.
	hist, cur := histRepeats(10, 3, spread, 1)
	for i := range cur.Cells {
		cur.Cells[i].Status = results.StatusError
	}
	rep := CheckHistory(hist, cur, Options{})
	if len(rep.Verdicts) != 0 || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != ReasonCellError || rep.Skipped[0].Key.CellID != "sweep/128:128/c4" {
		t.Errorf("all repeats failed: %d verdicts, skipped %v", len(rep.Verdicts), rep.Skipped)
	}
}

func mustMetrics(t *testing.T, names ...string) []Metric {
	t.Helper()
	ms, err := SelectMetrics(names)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// A run's repeats are one point of a series: their mean.
func TestSeriesRepeats(t *testing.T) {
	spread := []float64{0.8, 1, 1.25}
	hist, cur := histRepeats(6, 3, spread, 1.5)
	ss := SeriesOf(append(hist, cur), mustMetrics(t, "ttft_p50_ms"), Options{}, ChangePointOptions{})
	if len(ss) != 1 {
		t.Fatalf("%d series, want 1", len(ss))
	}
	s := ss[0]
	if len(s.Points) != 7 || s.CellID != "sweep/128:128/c4" {
		t.Fatalf("%d points of %q, want 7 (one a run) of the point", len(s.Points), s.CellID)
	}
	for i, p := range s.Points {
		r := append(hist, cur)[i]
		var xs []float64
		for _, c := range r.Cells {
			xs = append(xs, *c.TTFTP50Ms)
		}
		if p.RunID != r.ID || math.Abs(p.Value-GeoMean(xs)) > 1e-9 {
			t.Errorf("point %d: %s %.6g, want %s %.6g", i, p.RunID, p.Value, r.ID, GeoMean(xs))
		}
	}
}
