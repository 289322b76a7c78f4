// Package regress decides whether measurements got worse: a run's cells
// against the history of earlier runs (CheckHistory, the nightly gate),
// two sets of runs against each other from their request rows
// (CompareRuns, `benchrun compare`), and where a series of runs changed
// (ChangePoints, `benchrun history`).
//
// Everything here is pure: rows in, verdicts out. Reading run
// directories goes through internal/rundir (Load, LoadHistory); nothing
// here writes.
//
// The rules, the same in every mode (docs/RESULTS.md, "Comparing runs and
// regressions"):
//
//   - Only like is compared with like: cells match on their Key (plan,
//     stage, cell id, endpoint, model digest, engine and version,
//     hardware, metadata).
//   - Only valid measurements count: history runs that did not end ok,
//     cells that are not ok, and cells whose client could not keep its
//     schedule (send lag over the sweep's threshold, an open loop that
//     sent short of its rate) are excluded and counted by reason; a NULL
//     metric is skipped, never read as 0.
//   - A change is a regression only when it is both statistically clear
//     (outside a prediction interval of the history, or a confidence
//     interval of the ratio that excludes 1, after the family's
//     multiple-comparison correction) and large: over the metric's
//     relative threshold and its absolute floor.
//   - Too little data says so (`insufficient data`, `unknown` with how
//     much more would decide), never a silent pass.
package regress

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// Outcome is a verdict's conclusion.
type Outcome string

const (
	// Regressed: the change is clear and larger than the metric's
	// threshold and floor, the bad way.
	Regressed Outcome = "regressed"
	// Improved: the same, the good way.
	Improved Outcome = "improved"
	// Same: history: the new value is inside the prediction interval, or
	// its change is under the threshold or floor; two runs: the ratio's
	// interval lies within ± the threshold (an equivalence test).
	Same Outcome = "same"
	// Unknown: two runs could not decide (the interval straddles the
	// threshold, or one number per run cannot decide throughput);
	// Verdict.Reason says why, and MoreRequests or MoreRuns how much more
	// would likely decide it.
	Unknown Outcome = "unknown"
	// Insufficient: fewer usable history runs than Options.MinRuns.
	Insufficient Outcome = "insufficient data"
	// Inconclusive: the value left the history's interval, but the
	// machine ran threads later during the cell than during the history's
	// runs, by enough to explain it (machine.Allowance); Reason says how,
	// in numbers. Never a pass, never a regression.
	Inconclusive Outcome = "inconclusive"
)

// Decided says whether the outcome is a conclusion (regressed, improved
// or same) rather than a lack of one.
func (o Outcome) Decided() bool { return o == Regressed || o == Improved || o == Same }

// Methods a verdict was reached by.
const (
	MethodHistory   = "prediction interval"         // new value vs the last N runs (t, n−1, log scale)
	MethodBootstrap = "block bootstrap"             // ratio of quantiles from request rows
	MethodWelch     = "welch"                       // per-run values, several runs a side
	MethodNone      = "one number per run"          // throughput of single runs: undecidable
	MethodTooFew    = "too few samples"             // requests or runs too few to test
	MethodLinear    = "prediction interval, linear" // history with a value ≤ 0 (no log)
)

// Verdict is one metric of one cell, judged.
type Verdict struct {
	Key Key `json:"key"`
	// CellID names the cell: between runs the point's id (PointID: the
	// Key's cell id, without a repeat's /repN); against history the id
	// of the current run's first usable row of the point, so that a
	// caller can find that row (with repeats, .../rep1).
	CellID string `json:"cell_id"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better Better `json:"better"`
	// Method says how it was judged (Method* constants).
	Method  string  `json:"method"`
	Outcome Outcome `json:"outcome"`
	// Old is the reference: the history's center (the geometric mean of
	// the last N values) or the old side's statistic; New the value
	// judged. Change is New/Old − 1.
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
	// Low and High bound the interval the verdict rests on, at Level:
	// against history, the prediction interval of a new value (in the
	// metric's unit: each side one-sided at Options.Confidence); between
	// runs, the confidence interval of the ratio New/Old.
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
	// Ratio says whether Low and High bound the ratio New/Old (between
	// runs) rather than the value (history).
	Ratio bool `json:"ratio"`
	// P is the p-value the verdict was gated on (history: one-sided, of
	// the prediction interval's t; between runs: two-sided, of the
	// bootstrap or Welch interval), PAdjusted the same after the report's
	// Correction. NaN where no test was possible.
	P         float64 `json:"p"`
	PAdjusted float64 `json:"p_adjusted"`
	// MWU is the two-sided Mann–Whitney U p-value of the raw request
	// samples (between runs; NaN otherwise): shown, benchstat-style, not
	// gated on (with thousands of requests it flags trivial shifts, and it
	// assumes independent requests).
	MWU float64 `json:"mwu_p"`
	// Margin is the smallest change that counts for this cell: the
	// metric's threshold, or its floor relative to Old where that is
	// larger.
	Margin float64 `json:"margin"`
	// N and NNew count what each side held: history runs used (N) and
	// the current run's repeats of the point averaged (NNew, 1 without
	// repeats); between runs, the samples of each side (requests, or
	// runs × repeats for a per-cell metric).
	N    int `json:"n"`
	NNew int `json:"n_new"`
	// Runs are the runs compared against (history or the old side).
	Runs []string `json:"runs"`
	// Excluded counts what was left out, by reason (Reason* constants):
	// history runs that did not end ok, cells not ok or client-bound, and
	// values not measured.
	Excluded map[string]int `json:"excluded,omitempty"`
	// Reason says in words why the outcome is what it is when that is not
	// plain (unknown, insufficient data, a clear change under the
	// threshold).
	Reason string `json:"reason,omitempty"`
	// MoreRequests (between runs, request-level metrics) is about how many
	// more requests per side would likely decide an unknown; MoreRuns the
	// same in runs per side. 0 when not estimated.
	MoreRequests int `json:"more_requests,omitempty"`
	MoreRuns     int `json:"more_runs,omitempty"`
	// tail holds, between runs, each side's 95 % bounds of a tail
	// percentile (p90 and up): a change counts only when they do not
	// overlap (tails.go).
	tail *[2]stats.QuantileBound
	// Late is how much later, in ms (p99), the machine ran an event
	// loop's tasks during the judged cell than during the history's runs
	// (their median), or, between runs, during one side's cell than the
	// other's: what the verdict allowed the machine (0: no later, or not
	// measured).
	Late float64 `json:"machine_late_ms,omitempty"`
	// LevelChange, against history, is the change of level the interval
	// was learned after: the history's last change point, when enough runs
	// followed it (nil: none).
	LevelChange *LevelChange `json:"level_change,omitempty"`
	// PendingLevel is a change of level the history shows that is too
	// recent to be the baseline yet (Runs of Needs runs show it).
	PendingLevel *LevelChange `json:"pending_level_change,omitempty"`
}

// LevelChange is where a cell's history changed level (a change point):
// the run the new level began with and the change from the level before.
type LevelChange struct {
	Run    string  `json:"run"`
	Change float64 `json:"change"`
	// Runs and Needs (a pending change only): how many runs show the
	// new level, and how many it needs to be the baseline.
	Runs  int `json:"runs,omitempty"`
	Needs int `json:"needs,omitempty"`
}

// marked is the key of a cell's metric in Run.Regressed.
func marked(cellID, metric string) string { return cellID + "\x00" + metric }

// MarshalJSON writes the verdict with NaN (no value) as null, which JSON
// has no number for.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	return json.Marshal(struct {
		plain
		Old       *float64 `json:"old"`
		New       *float64 `json:"new"`
		Change    *float64 `json:"change"`
		Low       *float64 `json:"low"`
		High      *float64 `json:"high"`
		P         *float64 `json:"p"`
		PAdjusted *float64 `json:"p_adjusted"`
		MWU       *float64 `json:"mwu_p"`
		Margin    *float64 `json:"margin"`
	}{plain(v), jsonNum(v.Old), jsonNum(v.New), jsonNum(v.Change), jsonNum(v.Low), jsonNum(v.High),
		jsonNum(v.P), jsonNum(v.PAdjusted), jsonNum(v.MWU), jsonNum(v.Margin)})
}

func jsonNum(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// String is the verdict in one line: "ttft_p99_ms of sweep/64:32/c1
// regressed: 20.9 → 26.1 ms (+24.9%), ...".
func (v Verdict) String() string {
	s := fmt.Sprintf("%s of %s %s", v.Metric, v.CellID, v.Outcome)
	if !math.IsNaN(v.Old) && !math.IsNaN(v.New) {
		s += fmt.Sprintf(": %.4g → %.4g %s", v.Old, v.New, v.Unit)
		if !math.IsNaN(v.Change) {
			s += fmt.Sprintf(" (%+.1f%%)", 100*v.Change)
		}
	}
	switch {
	case v.Method == MethodHistory || v.Method == MethodLinear:
		if !math.IsNaN(v.Low) {
			s += fmt.Sprintf(", prediction interval [%.4g, %.4g] of %d runs", v.Low, v.High, v.N)
		}
	case v.Ratio && !math.IsNaN(v.Low):
		s += fmt.Sprintf(", %.0f%% interval of new/old [%.3f, %.3f]", 100*v.Level, v.Low, v.High)
	}
	if v.Reason != "" {
		s += "; " + v.Reason
	}
	return s
}

// Summary is benchstat's geomean line for one metric: the geometric
// means of the old and new values across the cells that have both, and
// the change between them (the typical change of a cell).
type Summary struct {
	Metric string  `json:"metric"`
	Cells  int     `json:"cells"`
	Old    float64 `json:"geomean_old"`
	New    float64 `json:"geomean_new"`
	Change float64 `json:"change"`
}

// Unmatched is a cell present on one side only, with the nearest cell of
// the other side and what differs from it (nil when that side is empty).
type Unmatched struct {
	Key     Key         `json:"key"`
	Nearest *Key        `json:"nearest,omitempty"`
	Diffs   []FieldDiff `json:"diffs,omitempty"`
}

// Skip is a cell of the judged side that was not judged, or a metric of it
// that was not measured.
type Skip struct {
	Key    Key    `json:"key"`
	Metric string `json:"metric,omitempty"`
	Reason string `json:"reason"`
}

// Report is the outcome of one check: every verdict, the family's
// correction, the geometric means, and what could not be compared.
type Report struct {
	// Correction is the multiple-comparison adjustment applied to the
	// verdicts' p-values; Alpha the level adjusted p-values were held to;
	// Comparisons the number of p-values in the family.
	Correction  Correction `json:"correction"`
	Alpha       float64    `json:"alpha"`
	Comparisons int        `json:"comparisons"`
	Verdicts    []Verdict  `json:"verdicts"`
	Summaries   []Summary  `json:"summaries"`
	// OnlyOld and OnlyNew are the cells present on one side only; NoMatch
	// says why when no cell matches at all ("no cell matches:
	// engine_version differs (b6500 vs b6600)").
	OnlyOld []Unmatched `json:"only_old,omitempty"`
	OnlyNew []Unmatched `json:"only_new,omitempty"`
	NoMatch string      `json:"no_match,omitempty"`
	// Skipped lists the judged side's cells (and metrics) not judged.
	Skipped []Skip `json:"skipped,omitempty"`
	// Excluded totals what was left out, by reason.
	Excluded map[string]int `json:"excluded,omitempty"`
	// RunsOld and RunsNew are the run ids of each side (RunsOld: the
	// history's runs).
	RunsOld []string `json:"runs_old"`
	RunsNew []string `json:"runs_new"`
}

// Count is the number of verdicts with outcome o.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Outcome == o {
			n++
		}
	}
	return n
}

// Regressions are the verdicts that regressed.
func (r *Report) Regressions() []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Outcome == Regressed {
			out = append(out, v)
		}
	}
	return out
}

// Run is one run's rows as the checks read them.
type Run struct {
	ID        string
	Dir       string
	StartedAt time.Time
	// Status is the run's status as rundir says it (ok, failed,
	// interrupted, crashed, incomplete, running); history runs that are
	// not ok are excluded, but for those that failed their checks only.
	Status string
	// FailedChecks: the run measured everything and failed only its own
	// checks (status failed, exit code 1, or 5 for inconclusive ones): its
	// rows are measurements and stay in the history. Regressed marks the
	// metrics its baseline check called regressed, by cell id and metric
	// ("sweep/64:32/c1\x00ttft_p50_ms"): a value marked so is left out of
	// the interval a later run is judged against, unless a change of level
	// begins at or before it (CheckHistory).
	FailedChecks bool
	Regressed    map[string]bool
	// Inconclusive marks, the same way, the metrics its baseline check
	// could not judge because the machine's lateness explained their
	// change: such a value measured the machine as much as the server,
	// and is left out of the interval like a regressed one.
	Inconclusive map[string]bool
	// Cells are the current rows (the latest rule of docs/RESULTS.md).
	Cells []results.Cell
	// Requests holds, by cell id, the requests of each cell's current
	// row (read from the run directory a cell at a time when asked, never
	// held); nil when they were not loaded.
	Requests map[string]results.Requests
	// SendLagThresholdMs is each stage's send_lag_threshold_ms from the
	// run's plan.json (nil when unknown: the rows' notes then say which
	// cells were client-bound).
	SendLagThresholdMs map[string]float64
}

// Options tune the checks; the zero value is the defaults.
type Options struct {
	// Metrics are checked; nil means DefaultMetrics().
	Metrics []Metric
	// LastN bounds the history: the last N usable runs of each cell and
	// metric (default 20).
	LastN int
	// MinRuns is the fewest usable history runs a verdict needs (default
	// 5); fewer give `insufficient data`.
	MinRuns int
	// Confidence is the one-sided level of the history's prediction
	// interval (default 0.99: a new value from the same distribution falls
	// past the bad-side limit 1% of the time).
	Confidence float64
	// Alpha is the two-sided level of the interval between runs (default
	// 0.05: 95% intervals).
	Alpha float64
	// Correction adjusts the family's p-values (default BenjaminiHochberg).
	Correction Correction
	// Resamples is the number of bootstrap resamples (default 1000).
	Resamples int
	// Seed makes the bootstrap reproducible (the same rows give the same
	// intervals).
	Seed uint64
	// SendLagThresholdMs, when > 0, replaces every run's own threshold for
	// client-bound cells.
	SendLagThresholdMs float64
	// RateShortfall is how far an open-loop cell's achieved send rate may
	// fall short of its target rate (default 0.05).
	RateShortfall float64
	// MinRequests is the fewest ok requests a side needs for the
	// request-level bootstrap (default 5).
	MinRequests int
	// Ignore names parts of the cell key that may differ between the
	// cells compared (Key.Without): "engine_version" compares two engine
	// versions, a metadata key two variants.
	Ignore []string
}

// keyOf is the cell's key less the parts o ignores.
func (o Options) keyOf(c *results.Cell) Key {
	k := KeyOf(*c)
	if len(o.Ignore) > 0 {
		k = k.Without(o.Ignore...)
	}
	return k
}

func (o Options) withDefaults() Options {
	if o.Metrics == nil {
		o.Metrics = DefaultMetrics()
	}
	if o.LastN <= 0 {
		o.LastN = 20
	}
	if o.MinRuns <= 0 {
		o.MinRuns = 5
	}
	if o.MinRuns < 2 {
		o.MinRuns = 2 // a prediction interval needs a spread
	}
	if !(o.Confidence > 0.5 && o.Confidence < 1) {
		o.Confidence = 0.99
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		o.Alpha = 0.05
	}
	if o.Correction == "" {
		o.Correction = BenjaminiHochberg
	}
	if o.Resamples <= 0 {
		o.Resamples = 1000
	}
	if o.RateShortfall <= 0 {
		o.RateShortfall = 0.05
	}
	if o.MinRequests <= 0 {
		o.MinRequests = 5
	}
	return o
}

// margin is the smallest relative change that counts for metric m at
// reference value old: its threshold, or its floor relative to old.
func margin(m Metric, old float64) float64 {
	r := m.Threshold
	if old != 0 && m.Floor > 0 {
		r = math.Max(r, m.Floor/math.Abs(old))
	}
	return r
}

// summaries computes the geometric-mean line of each metric.
func summaries(metrics []Metric, vs []Verdict) []Summary {
	var out []Summary
	for _, m := range metrics {
		var olds, news []float64
		for _, v := range vs {
			if v.Metric == m.Name && v.Old > 0 && v.New > 0 && !math.IsInf(v.Old, 0) && !math.IsInf(v.New, 0) {
				olds, news = append(olds, v.Old), append(news, v.New)
			}
		}
		if len(olds) == 0 {
			continue
		}
		s := Summary{Metric: m.Name, Cells: len(olds), Old: GeoMean(olds), New: GeoMean(news)}
		s.Change = s.New/s.Old - 1
		out = append(out, s)
	}
	return out
}
