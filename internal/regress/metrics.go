package regress

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

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
	i, ok := cellColumns()[m.Name]
	if !ok {
		return nil
	}
	p := reflect.ValueOf(c).Elem().Field(i)
	if p.IsNil() {
		return nil
	}
	return p.Interface().(*float64)
}

// cellColumns maps each nullable DOUBLE column of the cells table to its
// field index in results.Cell.
var cellColumns = sync.OnceValue(func() map[string]int {
	out := map[string]int{}
	for _, c := range results.Columns() {
		if c.IsMetric() {
			out[c.Name] = c.Index
		}
	}
	return out
})

// defaults are the metrics checked when a caller names none: what a
// person reads first (median and tail of TTFT, ITL and E2EL, median
// TPOT) and the two throughputs.
var defaults = []string{
	"ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms",
	"e2el_p50_ms", "e2el_p99_ms", "output_tok_s", "req_s",
}

// table is every cells column with a direction (↑ or ↓) that is a
// DOUBLE: the metrics a regression check can read. A test holds it to
// docs/RESULTS.md's marks, both ways, so the two cannot drift.
var table = sync.OnceValue(func() []Metric {
	var out []Metric
	// A latency family: mean, p50, p90, p95, p99, max.
	family := func(base, unit string, floor float64, sample string) {
		stats := []struct {
			suffix string
			q      float64
			tail   bool
		}{{"", 0, false}, {"_p50", 0.5, false}, {"_p90", 0.9, true}, {"_p95", 0.95, true}, {"_p99", 0.99, true}, {"_max", 1, true}}
		for _, s := range stats {
			m := Metric{Name: base + s.suffix + "_ms", Unit: unit, Better: Lower, Threshold: 0.05, Floor: floor, Sample: sample, Quantile: s.q}
			if s.tail {
				m.Threshold = 0.10
			}
			if s.q == 1 {
				// A maximum is one request: no bootstrap can bound it.
				m.Sample, m.Quantile = "", 0
			}
			out = append(out, m)
		}
	}
	family("ttft", "ms", 1, "ttft")
	family("ttft_sched", "ms", 1, "ttft_sched")
	family("e2el", "ms", 1, "e2el")
	family("e2el_sched", "ms", 1, "e2el_sched")
	family("tpot", "ms", 0.2, "tpot")
	family("itl", "ms", 0.2, "itl")
	family("itl_tok", "ms/token", 0.2, "")
	family("send_lag", "ms", 1, "")
	one := func(name, unit string, b Better, threshold, floor float64) {
		out = append(out, Metric{Name: name, Unit: unit, Better: b, Threshold: threshold, Floor: floor})
	}
	one("first_call_ms", "ms", Lower, 0.10, 1)
	one("ntpot_ms", "ms/token", Lower, 0.05, 0.2)
	one("prefill_tok_s", "tok/s", Higher, 0.05, 1)
	one("decode_tok_s", "tok/s", Higher, 0.05, 1)
	one("output_tok_s", "tok/s", Higher, 0.05, 1)
	one("total_tok_s", "tok/s", Higher, 0.05, 1)
	one("req_s", "req/s", Higher, 0.05, 0.1)
	one("goodput", "req/s", Higher, 0.05, 0.1)
	one("goodput_ratio", "fraction", Higher, 0.05, 0.01)
	one("speedup_vs_c1", "ratio", Higher, 0.05, 0.01)
	one("batching_efficiency", "ratio", Higher, 0.05, 0.01)
	one("client_cpu_util", "cores", Lower, 0.10, 0.05)
	one("client_cpu_wait_ms", "ms", Lower, 0.10, 1)
	one("server_cpu_wait_ms", "ms", Lower, 0.10, 1)
	one("cost_usd", "USD", Lower, 0.05, 0.0001)
	one("tokens_per_dollar", "tokens/USD", Higher, 0.05, 1)
	// Telemetry: the GPU's power and energy, the server's own queue and
	// latency as it measured them.
	one("power_w_mean", "W", Lower, 0.05, 5)
	one("energy_j", "J", Lower, 0.05, 1)
	one("energy_j_per_token", "J", Lower, 0.05, 0.001)
	one("tokens_per_joule", "tok/J", Higher, 0.05, 0.01)
	one("server_waiting_peak", "requests", Lower, 0.10, 1)
	one("num_inflight_park_waits", "requests", Lower, 0.10, 1)
	one("server_preemptions", "count", Lower, 0.10, 1)
	one("server_ttft_mean_ms", "ms", Lower, 0.05, 1)
	one("server_itl_mean_ms", "ms", Lower, 0.05, 0.2)
	one("server_queue_mean_ms", "ms", Lower, 0.05, 1)
	// Conversations, SLO search, start-up and the client's stamp delay.
	one("ttft_turn1_p50_ms", "ms", Lower, 0.05, 1)
	one("ttft_later_turns_p50_ms", "ms", Lower, 0.05, 1)
	one("max_rate_within_slo", "req/s", Higher, 0.05, 0.1)
	one("max_concurrency_within_slo", "sessions", Higher, 0.05, 1)
	one("startup_s", "s", Lower, 0.10, 1)
	one("stamp_delay_p50_ms", "ms", Lower, 0.10, 0.05)
	one("stamp_delay_p99_ms", "ms", Lower, 0.10, 0.1)
	// Embeddings and media: input and vector throughput, the quality of
	// the vectors against references, and speech-to-text speed.
	one("input_tok_s", "tok/s", Higher, 0.05, 1)
	one("embeddings_s", "vectors/s", Higher, 0.05, 0.1)
	one("cosine_min", "cosine", Higher, 0.001, 0.0005)
	one("cosine_mean", "cosine", Higher, 0.001, 0.0005)
	one("real_time_factor", "ratio", Lower, 0.05, 0.001)
	one("audio_s_per_s", "s/s", Higher, 0.05, 0.1)
	// The seed's itl_p50_ms and itl_p99_ms, from the itl family, are the
	// same columns; the send_lag family's p99 is send_lag_p99_ms.
	for i := range out {
		out[i].Default = slices.Contains(defaults, out[i].Name)
	}
	return out
})

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
