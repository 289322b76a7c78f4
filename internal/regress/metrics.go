package regress

import (
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// Better says which way a metric improves: the ↑/↓ marks of the cells
// table in docs/RESULTS.md.
type Better int

const (
	// Lower is better: latencies, lags, costs (↓).
	Lower Better = -1
	// Higher is better: throughputs, ratios (↑).
	Higher Better = 1
)

func (b Better) String() string {
	if b == Higher {
		return "higher"
	}
	return "lower"
}

// MarshalText writes "higher" or "lower".
func (b Better) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads "higher" or "lower".
func (b *Better) UnmarshalText(t []byte) error {
	switch string(t) {
	case "higher":
		*b = Higher
	case "lower":
		*b = Lower
	default:
		return fmt.Errorf("better: %q is neither higher nor lower", t)
	}
	return nil
}

// Arrow is the mark docs/RESULTS.md uses: ↑ or ↓.
func (b Better) Arrow() string {
	if b == Higher {
		return "↑"
	}
	return "↓"
}

// Worse says whether a relative change (new/old − 1) goes the bad way.
func (b Better) Worse(change float64) bool {
	if b == Higher {
		return change < 0
	}
	return change > 0
}

// Metric is one cell column the regression checks read, with the
// direction that is better and the size of change that matters.
//
// A change counts only when it exceeds both Threshold (relative, 0.05 =
// 5%) and Floor (absolute, in the column's unit): the relative threshold
// keeps noise on large values quiet, the floor keeps noise on tiny values
// quiet (a 0.3 ms TTFT moving by 50% is 0.15 ms of scheduling jitter).
// Callers may change both on the copies Metrics and DefaultMetrics
// return, for instance from a plan's `baseline:`.
type Metric struct {
	// Name is the cells column, e.g. "ttft_p99_ms".
	Name   string
	Unit   string
	Better Better
	// Threshold is the smallest relative change that counts (5% for
	// means, medians and throughputs, 10% for tail percentiles and maxima).
	Threshold float64
	// Floor is the smallest absolute change that counts: 1 ms for
	// TTFT/E2EL-type latencies, 0.2 ms for ITL/TPOT-type, 1 tok/s for token
	// throughputs, 0.1 req/s for request rates.
	Floor float64
	// Default marks the metrics checked when the caller names none.
	Default bool
	// Sample is the request-level sample the column summarizes ("ttft",
	// "e2el", "tpot", "itl", "ttft_sched", "e2el_sched"), so two runs can
	// be compared from their request rows; "" for a column that is one
	// number per cell (a throughput), which only repeats can decide.
	Sample string
	// Quantile is the column's statistic over Sample: 0.5 for p50, 0.99
	// for p99; 0 for the mean.
	Quantile float64
}

// String is the metric's name.
func (m Metric) String() string { return m.Name }

// Value is the metric's value in a cell row; nil when it was not measured
// (NULL), which the checks skip and never read as 0.
func (m Metric) Value(c *results.Cell) *float64 {
	col, ok := results.Lookup(m.Name)
	if !ok {
		return nil
	}
	return col.Float(c)
}

// table is every cells column the catalogue gives a regression threshold
// (a DOUBLE with a direction, ↑ or ↓), in the catalogue's order: the
// metrics a regression check can read. A test holds the catalogue to
// docs/RESULTS.md's marks, both ways, so the two cannot drift.
func table() []Metric {
	var out []Metric
	for _, c := range results.Ordered() {
		if c.Threshold <= 0 || !c.IsMetric() {
			continue
		}
		m := Metric{Name: c.Name, Unit: c.Unit, Better: Lower, Threshold: c.Threshold, Floor: c.Floor, Default: c.Default, Sample: c.Sample, Quantile: c.Quantile}
		if c.Better == results.HigherBetter {
			m.Better = Higher
		}
		if m.Quantile == 1 {
			// A maximum is one request: no bootstrap can bound it.
			m.Sample = ""
		}
		if m.Sample == "" {
			m.Quantile = 0
		}
		out = append(out, m)
	}
	return out
}

// DefaultMetrics returns the metrics checked when none are named: TTFT
// p50/p99, ITL p50/p99, TPOT p50, E2EL p50/p99, output tok/s and req/s.
func DefaultMetrics() []Metric {
	var out []Metric
	for _, m := range table() {
		if m.Default {
			out = append(out, m)
		}
	}
	return out
}

// LookupMetric returns the metric of a cells column.
func LookupMetric(name string) (Metric, bool) {
	for _, m := range table() {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// SelectMetrics returns the metrics of the named columns, in the order
// given; an unknown name is an error that lists the known ones.
func SelectMetrics(names []string) ([]Metric, error) {
	var out []Metric
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		m, ok := LookupMetric(n)
		if !ok {
			var known []string
			for _, m := range table() {
				known = append(known, m.Name)
			}
			return nil, fmt.Errorf("unknown metric %q (metrics: %s)", n, strings.Join(known, ","))
		}
		out = append(out, m)
	}
	return out, nil
}
