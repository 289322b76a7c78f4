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
// out runs that did not end ok, cells not ok or client-bound (Exclusion),
// and NULL values, each counted; then finds the change points of each
// series (ChangePoints). Series follow the order cells first appear, then
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
	var runExcl map[string]int
	for _, r := range rs {
		if why := runReason(r.Status); why != "" {
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
					s = &Series{Key: k, CellID: c.CellID, Metric: m}
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
				at := c.StartedAt
				if !r.StartedAt.IsZero() {
					at = r.StartedAt
				}
				s.Points = append(s.Points, Point{RunID: r.ID, At: at, Value: *v})
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
		vals := make([]float64, len(s.Points))
		for i, p := range s.Points {
			vals[i] = p.Value
		}
		s.ChangePoints = ChangePoints(vals, cpo)
		out = append(out, *s)
	}
	return out
}
