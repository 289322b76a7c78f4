package regress

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// Reasons a run, a cell or a value is left out of a check, as the
// Excluded counts name them. A history run that did not end ok counts as
// "run " + its status ("run failed", "run interrupted", "run crashed").
const (
	ReasonCellError   = "cell error"      // the cell row's status is error
	ReasonCellSkipped = "cell skipped"    // the cell row's status is skipped
	ReasonSendLag     = "client send lag" // send_lag_p99_ms over the sweep's threshold: the client could not keep its schedule
	ReasonSentRate    = "sent rate short" // an open loop sent short of its target rate
	ReasonNull        = "not measured"    // the metric is NULL in that row
)

// runReason is the exclusion reason of a history run, "" for a run whose
// rows are measurements: one that ended ok, or that measured everything
// and failed only its own checks (Run.FailedChecks). Leaving those out
// would be a ratchet: the nights a server regressed would vanish from its
// history, the interval would never widen, and a lasting change would
// read as a regression forever.
func runReason(r *Run) string {
	if r.Status == "ok" || r.FailedChecks {
		return ""
	}
	status := r.Status
	if status == "" {
		status = "unknown"
	}
	return "run " + status
}

// clientBoundNote is how the sweep's notes flag a cell whose send lag
// p99 exceeded its send_lag_threshold_ms (stages/sweep: "client-bound:
// send_lag p99 X ms exceeds Y ms, ...").
const clientBoundNote = "client-bound: send_lag p99"

// Exclusion says why a cell row cannot be compared, "" when it can: its
// status is not ok, or its client could not keep up. The send-lag
// threshold is o.SendLagThresholdMs when set, else the stage's own from
// the run's plan.json (run may be nil), else the row's notes decide (the
// sweep notes a cell over its threshold). An open-loop cell is excluded
// when its achieved send rate (sent_req_s) falls short of its target rate
// by more than o.RateShortfall (5%), or, for random arrivals, by more
// than three standard deviations of the schedule's own randomness where
// that is larger: n Poisson gaps have a relative spread of 1/sqrt(n)
// (1/sqrt(b·n) for gamma arrivals of burstiness b), so 100 requests at a
// Poisson rate land 10% short one time in six without any fault of the
// client.
func Exclusion(c *results.Cell, run *Run, o Options) string {
	switch c.Status {
	case results.StatusOK:
	case results.StatusSkipped:
		return ReasonCellSkipped
	default:
		return ReasonCellError
	}
	threshold := o.SendLagThresholdMs
	if threshold <= 0 && run != nil {
		threshold = run.SendLagThresholdMs[c.Stage]
	}
	switch {
	case threshold > 0:
		if c.SendLagP99 != nil && *c.SendLagP99 > threshold {
			return ReasonSendLag
		}
	case strings.Contains(c.Notes, clientBoundNote):
		return ReasonSendLag
	}
	if c.Rate > 0 && c.SentReqS != nil {
		short := o.RateShortfall
		if o.RateShortfall <= 0 {
			short = 0.05
		}
		if c.Arrival != "constant" && c.Requests > 2 {
			b := c.Burstiness
			if b <= 0 {
				b = 1
			}
			short = math.Max(short, 3/math.Sqrt(b*float64(c.Requests-1)))
		}
		if *c.SentReqS < (1-short)*c.Rate {
			return ReasonSentRate
		}
	}
	return ""
}

// SendLagThresholds reads each stage's send_lag_threshold_ms from a
// run's plan.json (the plan as resolved, defaults filled in); nil when
// the file says none.
func SendLagThresholds(planJSON []byte) map[string]float64 {
	if len(planJSON) == 0 {
		return nil
	}
	var plan struct {
		Stages map[string]struct {
			SendLag *float64 `json:"send_lag_threshold_ms"`
		} `json:"stages"`
	}
	if json.Unmarshal(planJSON, &plan) != nil {
		return nil
	}
	var out map[string]float64
	for name, s := range plan.Stages {
		if s.SendLag != nil && *s.SendLag > 0 {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = *s.SendLag
		}
	}
	return out
}

// count adds one to m[reason], making m when needed.
func count(m *map[string]int, reason string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[reason]++
}

// merge adds the counts of b to *a.
func merge(a *map[string]int, b map[string]int) {
	for k, n := range b {
		if *a == nil {
			*a = map[string]int{}
		}
		(*a)[k] += n
	}
}

// DescribeExcluded writes counts as "2 run failed, 1 client send lag",
// reasons sorted; "" for none.
func DescribeExcluded(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}
