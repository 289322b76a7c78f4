package regress

import (
	"math"
	"slices"
	"time"
)

// Point is one run's value of a series.
type Point struct {
	RunID string    `json:"run_id"`
	At    time.Time `json:"at"`
	Value float64   `json:"value"`
	// Failed: the run failed its own checks (Run.FailedChecks);
	// Regressed: its baseline check called this value regressed.
	Failed    bool `json:"run_failed,omitempty"`
	Regressed bool `json:"regressed,omitempty"`
}

// Series is one cell's metric over runs, oldest first, with the change
// points found in it (their Index is into Points).
type Series struct {
	Key          Key            `json:"key"`
	CellID       string         `json:"cell_id"`
	Metric       Metric         `json:"-"`
	Points       []Point        `json:"points"`
	ChangePoints []ChangePoint  `json:"change_points"`
	Excluded     map[string]int `json:"excluded,omitempty"`
}

// SeriesOf builds, for every cell key of runs and every metric, the
// series of its values over the runs (by start, oldest first), leaving
// out runs that did not end ok (but for those that failed their own
// checks only, whose points are marked), cells not ok or client-bound (Exclusion),
// and NULL values, each counted; then finds the change points of each
// series (ChangePoints). A run's repeats of a point (one Key) give the
// run one point, the mean of the repeats (as CheckHistory reads them).
// Series follow the order cells first appear, then
// metrics' order; a series with no value is left out.
func SeriesOf(runs []*Run, metrics []Metric, o Options, cpo ChangePointOptions) []Series {
	if metrics == nil {
		metrics = DefaultMetrics()
	}
	rs := slices.Clone(runs)
	slices.SortStableFunc(rs, func(a, b *Run) int { return a.StartedAt.Compare(b.StartedAt) })
	type idx struct {
		key    Key
		metric int
	}
	var order []idx
	byIdx := map[idx]*Series{}
	// The values of each series' points (a run's repeats), and the run
	// its last point is of.
	vals := map[idx][][]float64{}
	lastRun := map[idx]*Run{}
	var runExcl map[string]int
	for _, r := range rs {
		if why := runReason(r); why != "" {
			count(&runExcl, why)
			continue
		}
		for i := range r.Cells {
			c := &r.Cells[i]
			k := o.keyOf(c)
			why := Exclusion(c, r, o)
			for mi, m := range metrics {
				id := idx{k, mi}
				s := byIdx[id]
				if s == nil {
					s = &Series{Key: k, CellID: PointID(*c), Metric: m}
					byIdx[id] = s
					order = append(order, id)
				}
				if why != "" {
					count(&s.Excluded, why)
					continue
				}
				v := m.Value(c)
				if v == nil || math.IsNaN(*v) {
					count(&s.Excluded, ReasonNull)
					continue
				}
				if lastRun[id] == r {
					pv := vals[id]
					pv[len(pv)-1] = append(pv[len(pv)-1], *v)
					continue
				}
				at := c.StartedAt
				if !r.StartedAt.IsZero() {
					at = r.StartedAt
				}
				s.Points = append(s.Points, Point{RunID: r.ID, At: at, Value: *v, Failed: r.FailedChecks, Regressed: r.Regressed[marked(c.CellID, m.Name)]})
				vals[id] = append(vals[id], []float64{*v})
				lastRun[id] = r
			}
		}
	}
	var out []Series
	for _, id := range order {
		s := byIdx[id]
		if len(s.Points) == 0 {
			continue
		}
		merge(&s.Excluded, runExcl)
		ys := make([]float64, len(s.Points))
		for i := range s.Points {
			s.Points[i].Value = repeatMean(vals[id][i])
			ys[i] = s.Points[i].Value
		}
		s.ChangePoints = ChangePoints(ys, cpo)
		out = append(out, *s)
	}
	return out
}
