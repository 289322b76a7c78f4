package sweep

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/internal/suggest"
	"github.com/benchrun/benchrun/pipeline"
)

// Measure until precise (docs/METRICS.md, "Measure until precise"): a
// timed pass with `precision` sends until every metric it names is known
// within its target (the confidence interval's half-width relative to the
// estimate), or its budget ends; a sweep with `repeats_until` repeats each
// point until the mean over its repeats is known that closely, or
// `repeats` ends.

// Stop reasons: the row's stop_reason.
const (
	stopTargetMet      = "target met"
	stopBudgetRequests = "budget: requests"
	stopBudgetTime     = "budget: time"
)

// defaultConfidence is a target's confidence when the plan gives none,
// and defaultMinRepeats the repeats measured before repeats_until judges.
const (
	defaultConfidence = 0.95
	defaultMinRepeats = 3
)

// precisionTarget is one metric a target names, with the largest relative
// half-width of its interval allowed.
type precisionTarget struct {
	col    results.Column
	within float64 // percent of the estimate
}

// precisionPlan is the sweep's `precision`, parsed.
type precisionPlan struct {
	targets     []precisionTarget // by metric name
	conf        float64
	maxRequests int
	maxDuration time.Duration
}

// repeatsPlan is the sweep's `repeats_until`, parsed.
type repeatsPlan struct {
	targets []precisionTarget
	conf    float64
	min     int
}

// fieldProblem is what is wrong with one field, placed by Validate.
type fieldProblem struct {
	field []string
	msg   string
}

// parsePrecision parses `precision` and `repeats_until` (nil when absent)
// and says what is wrong with them.
func (c *Config) parsePrecision() (*precisionPlan, *repeatsPlan, []fieldProblem) {
	var probs []fieldProblem
	var pp *precisionPlan
	var rp *repeatsPlan
	if pc := c.Precision; pc != nil {
		pp = &precisionPlan{conf: confidenceOr(pc.Confidence), maxRequests: pc.MaxRequests}
		pp.targets, probs = parseTargets("precision", pc.Within, perRequestMetric, probs)
		if pc.MaxDuration != "" {
			d, err := time.ParseDuration(pc.MaxDuration)
			if err != nil || d <= 0 {
				probs = append(probs, fieldProblem{[]string{"precision", "max_duration"}, fmt.Sprintf("%q is not a positive duration (write it as \"2m\" or \"30s\")", pc.MaxDuration)})
			}
			pp.maxDuration = d
		}
	}
	if rc := c.RepeatsUntil; rc != nil {
		rp = &repeatsPlan{conf: confidenceOr(rc.Confidence), min: rc.MinRepeats}
		if rp.min == 0 {
			rp.min = defaultMinRepeats
		}
		rp.targets, probs = parseTargets("repeats_until", rc.Within, rowMetric, probs)
	}
	return pp, rp, probs
}

func confidenceOr(c float64) float64 {
	if c == 0 {
		return defaultConfidence
	}
	return c
}

// parseTargets parses a `within` map, each metric checked by fits ("" when
// it may be targeted), in the metrics' name order.
func parseTargets(field string, within map[string]string, fits func(results.Column) string, probs []fieldProblem) ([]precisionTarget, []fieldProblem) {
	if len(within) == 0 {
		probs = append(probs, fieldProblem{[]string{field, "within"}, "no metric: name at least one, as {ttft_p99_ms: \"5%\"}"})
	}
	var out []precisionTarget
	for _, name := range slices.Sorted(maps.Keys(within)) {
		at := []string{field, "within", name}
		col, ok := results.Lookup(name)
		if !ok {
			msg := fmt.Sprintf("no column %q in the cells table", name)
			if s := suggest.Closest(name, results.ColumnNames()); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			probs = append(probs, fieldProblem{at, msg})
			continue
		}
		if why := fits(col); why != "" {
			probs = append(probs, fieldProblem{at, why})
			continue
		}
		pct, err := parsePercent(within[name])
		if err != nil {
			probs = append(probs, fieldProblem{at, err.Error()})
			continue
		}
		out = append(out, precisionTarget{col: col, within: pct})
	}
	return out, probs
}

// parsePercent reads "5%" as 5.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "%") || v <= 0 || v >= 100 {
		return 0, fmt.Errorf("%q: want a percentage above 0 and below 100, as \"5%%\"", s)
	}
	return v, nil
}

// perRequestMetric says why a column cannot take a cell's precision
// target ("" when it can): the target bounds a percentile or mean of one
// value per request, which the bound's rule (independent draws) fits.
func perRequestMetric(c results.Column) string {
	switch {
	case c.Sample == "itl":
		return fmt.Sprintf("%s pools every request's chunk gaps, which are not independent draws (one slow request gives many slow gaps), so an order-statistic bound on them would claim more than it holds: target tpot_p99_ms or e2el_p99_ms (one value per request) instead", c.Name)
	case c.Sample == "" || !c.IsMetric():
		return fmt.Sprintf("%s is not a percentile or mean of one value per request (ttft, ttft_sched, e2el, e2el_sched, tpot, ttfo): a precision target bounds one of those; a whole-cell number such as output_tok_s is made precise across repeats (repeats_until)", c.Name)
	case c.Quantile >= 1:
		return fmt.Sprintf("%s is the sample's maximum, which no number of requests bounds from above: target a percentile (%s)", c.Name, strings.Replace(c.Name, "_max_", "_p99_", 1))
	}
	return ""
}

// rowMetric says why a column cannot take a repeats target: any metric of
// the row can, since each repeat is one value of it.
func rowMetric(c results.Column) string {
	if !c.IsMetric() {
		return fmt.Sprintf("%s is not a metric (a nullable number) of the rows", c.Name)
	}
	return ""
}

// validatePrecision checks `precision` and `repeats_until` against the
// rest of the stage: a precision pass's length is its own, so it takes
// neither requests, duration nor iterations, and a trace, a search or
// shards cannot take it.
func (s *Stage) validatePrecision(sharded bool, bad func([]string, string, ...any)) {
	var probs []fieldProblem
	s.precision, s.repeatsUntil, probs = s.cfg.parsePrecision()
	for _, p := range probs {
		bad(p.field, "%s", p.msg)
	}
	c := s.cfg
	if pc := c.Precision; pc != nil {
		at := []string{"precision"}
		if pc.MaxRequests > MaxRequests {
			bad([]string{"precision", "max_requests"}, "%d requests per pass: at most %d", pc.MaxRequests, MaxRequests)
		}
		if d := s.precision.maxDuration; d > MaxPassDuration {
			bad([]string{"precision", "max_duration"}, "%q per pass: at most %q", pc.MaxDuration, "24h")
		}
		if pc.MaxRequests == 0 && pc.MaxDuration == "" {
			bad(at, "no budget: give max_requests, max_duration or both, so a target the server cannot reach still ends the cell")
		}
		if c.Requests > 0 || c.Duration != "" {
			bad(at, "precision sets each timed pass's length (until the target is met, at most its budget): drop requests and duration (max_requests and max_duration are the budget; min_requests and min_duration still set a floor)")
		}
		if c.Iterations > 1 {
			bad([]string{"iterations"}, "precision makes one timed pass as long as it needs: drop iterations (repeats measure a point again independently)")
		}
		if pc.MaxRequests > 0 && c.MinRequests > pc.MaxRequests {
			bad([]string{"min_requests"}, "%d is above precision.max_requests %d", c.MinRequests, pc.MaxRequests)
		}
		if s.isTrace() {
			bad(at, "a trace replay sends its trace's requests on their own timing: a precision target cannot lengthen it")
		}
		if c.Search != nil {
			bad(at, "an SLO search chooses each probe's load from the one before: a precision target is not for its probes")
		}
	}
	if rc := c.RepeatsUntil; rc != nil {
		at := []string{"repeats_until"}
		if c.Repeats < 2 {
			bad(at, "repeats_until stops a point's repeats early: give repeats (the most to measure), at least 2")
		} else if m := s.repeatsUntil.min; m > c.Repeats {
			bad([]string{"repeats_until", "min_repeats"}, "%d is above repeats %d", m, c.Repeats)
		}
		if c.Search != nil {
			bad(at, "an SLO search measures each probe once: repeats_until is for a ladder's repeats")
		}
		if m := s.repeatsUntil.min; rc.MinRepeats != 0 && m < 2 {
			bad([]string{"repeats_until", "min_repeats"}, "%d: one repeat has no spread to tell; at least 2", m)
		}
	}
	if sharded && (c.Precision != nil || c.RepeatsUntil != nil) {
		bad([]string{"precision"}, "the plan's shard block splits every cell over processes, each of which would stop on its own part's precision: run a precision target unsharded")
	}
}

// precisionPlanned is the fewest timed requests a precision pass sends
// before its targets can be met (each one bounded at all), or its request
// budget when that is fewer: what a check of the plan can count on.
func (s *Stage) precisionPlanned() int {
	n := s.cfg.MinRequests
	for _, t := range s.precision.targets {
		n = max(n, fewestFor(t, s.precision.conf))
	}
	if m := s.precision.maxRequests; m > 0 {
		n = min(n, m)
	}
	return n
}

// precisionOf is target t's precision over its family's sorted values:
// the half-width of its conf interval relative to the estimate, percent
// (the larger side, for a percentile's bound is not symmetric); false when
// the interval does not exist yet (too few values) or the estimate is 0.
func precisionOf(sorted []float64, t precisionTarget, conf float64) (float64, bool) {
	if t.col.Quantile == 0 { // the mean
		iv := stats.MeanCIAt(sorted, conf)
		return iv.HalfWidthPct, !math.IsNaN(iv.HalfWidthPct) && iv.Mean > 0
	}
	p := t.col.Quantile * 100
	b := stats.SortedQuantileBound(sorted, p, conf)
	est := stats.SortedPercentile(sorted, p)
	if !b.Bounded() || !(est > 0) {
		return 0, false
	}
	return 100 * max(b.Hi-est, est-b.Lo) / est, true
}

// fewestFor is the fewest values at which t's interval can exist.
func fewestFor(t precisionTarget, conf float64) int {
	if t.col.Quantile == 0 {
		return 2
	}
	return stats.SamplesToBound(t.col.Quantile*100, conf)
}

// precisionMeter follows a timed pass's precision as its requests finish:
// it keeps each targeted family's values sorted, merging the values that
// arrived since the last check into them (no re-sort of the whole), and
// checks at every 5 % more requests (the number of looks grows with the
// logarithm of the pass, which keeps both the work and the optional
// stopping's cost to the coverage small). When every target is met it
// sets enough, which ends the pass's sending (loadgen.Load.Enough).
type precisionMeter struct {
	plan   *precisionPlan
	enough atomic.Bool

	mu    sync.Mutex
	fams  map[string]*growingSample
	n     int // completed requests
	next  int // the completed count of the next check
	metAt int // the completed count at which every target was met (0: not met)
}

// growingSample is one family's values: sorted, those that arrived since
// (pending), and the spare buffer the next merge writes into.
type growingSample struct {
	sorted, pending, spare []float64
}

func newPrecisionMeter(plan *precisionPlan) *precisionMeter {
	m := &precisionMeter{plan: plan, fams: map[string]*growingSample{}}
	for _, t := range plan.targets {
		m.fams[t.col.Sample] = &growingSample{}
		m.next = max(m.next, fewestFor(t, plan.conf))
	}
	return m
}

// add takes one finished request of the timed pass as its row is stored
// (so the meter reads what a reader of the requests table reads); it is
// safe to call from the load's goroutines.
func (m *precisionMeter) add(row *results.Request) {
	if m == nil {
		return
	}
	if _, ok := measure.SampleOf(row); !ok {
		return // a failed request is in no latency
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for fam, g := range m.fams {
		g.pending = measure.AppendFamily(g.pending, row, fam)
	}
	m.n++
	if m.n < m.next || m.metAt > 0 {
		return
	}
	m.next = m.n + max(8, m.n/20)
	if m.met() {
		m.metAt = m.n
		m.enough.Store(true)
	}
}

// met reports whether every target is met by the values so far.
func (m *precisionMeter) met() bool {
	for _, t := range m.plan.targets {
		pct, ok := precisionOf(m.fams[t.col.Sample].merged(), t, m.plan.conf)
		if !ok || pct > t.within {
			return false
		}
	}
	return true
}

// merged is the family's values, sorted, the pending ones merged in.
func (g *growingSample) merged() []float64 {
	if len(g.pending) == 0 {
		return g.sorted
	}
	slices.Sort(g.pending)
	out := g.spare[:0]
	a, b := g.sorted, g.pending
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(append(out, a...), b...)
	g.spare, g.sorted, g.pending = g.sorted, out, g.pending[:0]
	return g.sorted
}

// metAtCount is the completed count at which every target was met (0:
// never).
func (m *precisionMeter) metAtCount() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.metAt
}

// fillPrecision puts the pass's precision on its row, from the request
// rows the requests table stores (so a reader recomputes it from them):
// the target furthest from being met (precision_metric), its precision
// and target, the confidence, why the pass stopped, and a note with every
// target's precision.
func (s *Stage) fillPrecision(row *results.Cell, reqs results.Requests, sent int, interrupted bool, meter *precisionMeter) {
	plan := s.precision
	if plan == nil || meter == nil || len(plan.targets) == 0 {
		return
	}
	fams := map[string][]float64{}
	for _, t := range plan.targets {
		fams[t.col.Sample] = nil
	}
	for r := range reqs.All() {
		if _, ok := measure.SampleOf(r); !ok {
			continue
		}
		for fam := range fams {
			fams[fam] = measure.AppendFamily(fams[fam], r, fam)
		}
	}
	var notes []string
	worst, worstRatio := -1, math.Inf(-1)
	var worstPct *float64
	for i, t := range plan.targets {
		vals := fams[t.col.Sample]
		slices.Sort(vals)
		pct, ok := precisionOf(vals, t, plan.conf)
		ratio := math.Inf(1)
		if ok {
			ratio = pct / t.within
			notes = append(notes, fmt.Sprintf("%s ±%.2f %% (target %g %%) from %d values", t.col.Name, pct, t.within, len(vals)))
		} else {
			notes = append(notes, fmt.Sprintf("%s not bounded from %d values (%s)", t.col.Name, len(vals), fewestNote(t, plan.conf)))
		}
		if ratio > worstRatio {
			worst, worstRatio = i, ratio
			worstPct = results.SomeIf(ok, pct)
		}
	}
	t := plan.targets[worst]
	row.PrecisionMetric = t.col.Name
	row.PrecisionReachedPct = worstPct
	row.PrecisionTargetPct = results.Some(t.within)
	row.PrecisionConfidence = results.Some(plan.conf)
	row.StopReason = stopReason(plan, meter.metAtCount() > 0, sent, interrupted)
	head := "precision at " + strconv.FormatFloat(plan.conf*100, 'g', -1, 64) + " %: "
	switch row.StopReason {
	case stopTargetMet:
		head = fmt.Sprintf("target met at %d requests; %s", meter.metAtCount(), head)
		if worstRatio > 1 {
			// The requests in flight when the target was met finished
			// after it and joined the row: the stored bound is the whole
			// sample's, which they widened.
			head = fmt.Sprintf("target met at %d requests, but the %d in flight then, which the row counts too, widened %s's bound past its target; %s",
				meter.metAtCount(), max(reqs.Len()-meter.metAtCount(), 0), t.col.Name, head)
		}
	case stopBudgetRequests:
		head = fmt.Sprintf("budget: requests (%d sent) before the target; %s", sent, head)
	case stopBudgetTime:
		head = fmt.Sprintf("budget: time (%s) before the target; %s", plan.maxDuration, head)
	}
	row.Notes = joinNotes(row.Notes, head+strings.Join(notes, ", "))
}

// fewestNote says how many values t's interval needs.
func fewestNote(t precisionTarget, conf float64) string {
	if t.col.Quantile == 0 {
		return "a mean's interval needs 2"
	}
	return fmt.Sprintf("a p%g's needs at least %d at %g %%", t.col.Quantile*100, fewestFor(t, conf), conf*100)
}

// stopReason says why a precision pass stopped: its target met, else the
// budget that ended it ("" when the run or the server ended it, which the
// row's status says).
func stopReason(plan *precisionPlan, met bool, sent int, interrupted bool) string {
	switch {
	case met:
		return stopTargetMet
	case interrupted:
		return ""
	case plan.maxRequests > 0 && sent >= plan.maxRequests:
		return stopBudgetRequests
	case plan.maxDuration > 0:
		// Neither met nor all the requests sent: the time ran out (an
		// open loop's last arrival falls before the end of its time, so
		// its window can be a little shorter than the budget).
		return stopBudgetTime
	}
	return ""
}

// refuseShardedPrecision: a shard sees only its part of a cell, so each
// would stop on its own part's precision.
func (s *Stage) refuseShardedPrecision(env *pipeline.Env) error {
	if s.precision == nil && s.repeatsUntil == nil || s.shards <= 1 {
		return nil
	}
	return fmt.Errorf("stages.%s.precision: a shard (--shard %d/%d) sees only its part of each cell and would stop on its own part's precision: run a precision target unsharded", env.Stage.Name, s.shard, s.shards)
}

// repeatTracker follows each point's repeats under `repeats_until`: the
// targeted metrics' values per repeat (the latest measurement's, so a
// confirmation replaces the first), and the points whose mean is known
// closely enough to be measured no more.
type repeatTracker struct {
	plan    *repeatsPlan
	most    int                          // repeats
	values  map[string]map[int][]float64 // point → repeat → per target (NaN: not measured)
	settled map[string]bool
}

func newRepeatTracker(plan *repeatsPlan, most int) *repeatTracker {
	if plan == nil {
		return nil
	}
	return &repeatTracker{plan: plan, most: most, values: map[string]map[int][]float64{}, settled: map[string]bool{}}
}

// repeatsKey names a point across its repeats: its cell id without the
// repeat.
func repeatsKey(p point) string {
	p.repeat = 0
	return cellID("", p)
}

// done reports whether p's repeats stopped before it: it is not measured.
func (t *repeatTracker) done(p point) bool {
	return t != nil && p.repeat > 0 && t.settled[repeatsKey(p)]
}

// judge takes p's row (an ok row's targeted values) and says on it when
// the point's repeats stop: every target's mean known within its target
// after at least min_repeats, or the last repeat measured without.
func (t *repeatTracker) judge(p point, row *results.Cell) {
	if t == nil || p.repeat == 0 {
		return
	}
	key := repeatsKey(p)
	if t.values[key] == nil {
		t.values[key] = map[int][]float64{}
	}
	vals := make([]float64, len(t.plan.targets))
	for i, tg := range t.plan.targets {
		vals[i] = math.NaN()
		if v := tg.col.Float(row); v != nil && row.Status == results.StatusOK {
			vals[i] = *v
		}
	}
	t.values[key][p.repeat] = vals
	met, notes := t.met(key)
	t.settled[key] = met
	switch {
	case met:
		row.Notes = joinNotes(row.Notes, fmt.Sprintf("repeats: no more after repeat %d of at most %d, every mean known closely enough at %g %%: %s", p.repeat, t.most, t.plan.conf*100, notes))
	case p.repeat >= t.most:
		row.Notes = joinNotes(row.Notes, fmt.Sprintf("repeats: all %d measured without every mean known closely enough at %g %%: %s", t.most, t.plan.conf*100, notes))
	}
}

// met reports whether every target's mean over the point's repeats is
// known within its target, with each target's precision in words.
func (t *repeatTracker) met(key string) (bool, string) {
	reps := t.values[key]
	met := true
	var notes []string
	for i, tg := range t.plan.targets {
		var xs []float64
		for _, vals := range reps {
			if !math.IsNaN(vals[i]) {
				xs = append(xs, vals[i])
			}
		}
		iv := stats.MeanCIAt(xs, t.plan.conf)
		if len(xs) < t.plan.min || math.IsNaN(iv.HalfWidthPct) || iv.HalfWidthPct > tg.within {
			met = false
		}
		if math.IsNaN(iv.HalfWidthPct) {
			notes = append(notes, fmt.Sprintf("%s not bounded from %d repeats", tg.col.Name, len(xs)))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s mean %.4g ±%.2f %% (target %g %%) over %d repeats", tg.col.Name, iv.Mean, iv.HalfWidthPct, tg.within, len(xs)))
	}
	return met, strings.Join(notes, ", ")
}
