package sweep

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// SLO search (`search: {slo, over, lo, hi, precision}`): the highest load
// that meets a latency objective, found from measured points. Each probe
// is a normal point of the sweep (its own row, search "probe", under the
// cell id its load gives it), so nothing the search decides is hidden: the
// load doubles from lo while the probes meet the SLO, then the bracket
// between the highest probe that met it and the lowest that did not is
// bisected until it is within precision. A probe that is clearly saturated
// (throughput flat while latency climbs, or the server's waiting queue
// holding a large part of the probe's requests) counts as beyond the knee
// whatever its latency says: a longer run at that load would break the
// SLO. The knee is a row of its own (search "knee"): a copy of the
// highest passing probe's measurement with max_rate_within_slo or
// max_concurrency_within_slo, or, when no probe met the SLO, an error row
// that says so. docs/METRICS.md, "SLO search".

// The search column's values.
const (
	searchProbe = "probe"
	searchKnee  = "knee"
)

// Search dimensions.
const (
	overRate        = "rate"
	overConcurrency = "concurrency"
)

// Saturation thresholds (docs/METRICS.md, SLO search).
const (
	// satMinRatio: throughput is compared across a load step of at least
	// this factor (a doubling climbs by 2; fine bisection steps are within
	// the measurement's noise).
	satMinRatio = 1.5
	// satRise: throughput rising by less than this fraction of the load's
	// relative rise is flat (5% across a doubling).
	satRise = 0.05
	// satLatency: ... while e2el p99 climbs by more than this fraction.
	satLatency = 0.10
	// satQueue: an open loop's server waiting queue peaking at this
	// fraction of the probe's requests (per pass) means it fell behind
	// all along.
	satQueue = 0.25
	// satServed: an open loop that completed less than this fraction of
	// the rate it offered (req_s over sent_req_s), while e2el p99 climbs,
	// is falling behind (what the drain at a pass's end leaves of a
	// throughput that has gone flat).
	satServed = 0.75
)

// SearchConfig is the stage's `search`.
type SearchConfig struct {
	SLO       map[string]float64 `json:"slo"`
	Over      string             `json:"over"`
	Lo        float64            `json:"lo"`
	Hi        float64            `json:"hi"`
	Precision float64            `json:"precision"`
}

func (c *SearchConfig) precision() float64 {
	if c.Precision > 0 {
		return c.Precision
	}
	return 1
}

// sloString writes the objectives sorted: "tpot_p99_ms <= 50, ttft_p99_ms <= 500".
func (c *SearchConfig) sloString() string {
	var parts []string
	for _, k := range sortedKeys(c.SLO) {
		parts = append(parts, fmt.Sprintf("%s <= %g", k, c.SLO[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// column is the row's value of a nullable float column, by its expr name
// (nil: NULL or no such column).
func column(row *results.Cell, name string) *float64 {
	c, ok := results.LookupExpr(name)
	if !ok {
		return nil
	}
	return c.Float(row)
}

// sloColumn says whether an objective may bound column name: a latency
// statistic the catalogue marks so (results.Column.SLO).
func sloColumn(name string) bool {
	c, ok := results.LookupExpr(name)
	return ok && c.IsMetric() && c.SLO
}

// searchesRate reports whether the sweep searches over the open-loop rate.
func (s *Stage) searchesRate() bool { return s.cfg.Search != nil && s.cfg.Search.Over == overRate }

// validateSearch refuses a search that cannot run, and the combinations
// that make no sense with it.
func (s *Stage) validateSearch(c *pipeline.Check, bad func([]string, string, ...any)) {
	sc := s.cfg.Search
	if sc == nil {
		return
	}
	at := func(f ...string) []string { return append([]string{"search"}, f...) }
	if len(sc.SLO) == 0 {
		bad(at("slo"), "no objective: give at least one bound on a latency column, as {ttft_p99_ms: 500, tpot_p99_ms: 50}")
	}
	for _, k := range sortedKeys(sc.SLO) {
		if !sloColumn(k) {
			bad(at("slo", k), "%q is not a latency column of the rows: an objective bounds ttft, ttft_sched, tpot, itl, itl_tok, e2el or e2el_sched as _p50_ms, _p90_ms, _p95_ms, _p99_ms, _max_ms or the mean _ms (ttft_p99_ms), or ntpot_ms", k)
		}
	}
	whole := func(f string, v float64) bool {
		if v != math.Trunc(v) {
			bad(at(f), "%g: a search over concurrency probes whole sessions", v)
			return false
		}
		return true
	}
	switch sc.Over {
	case overRate:
		if len(s.cfg.Rates) > 0 {
			bad([]string{"rates"}, "a search over rate chooses the rates it probes: drop rates (search.lo and search.hi bound them)")
		}
		if sc.Hi > MaxRate {
			bad(at("hi"), "%g requests/s: at most %g/s (one process schedules every send)", sc.Hi, MaxRate)
		}
	case overConcurrency:
		if s.isTrace() {
			bad(at("over"), "a trace replay is an open loop on the trace's own timing: search over rate (each probe scales the trace to its rate)")
		}
		if len(s.cfg.Rates) > 0 {
			bad([]string{"rates"}, "rates make every point an open loop, and a search over concurrency measures closed loops: drop rates")
		}
		whole("lo", sc.Lo)
		whole("hi", sc.Hi)
		if sc.Precision > 0 {
			whole("precision", sc.Precision)
		}
		if sc.Hi > MaxConcurrency {
			bad(at("hi"), "%g sessions: at most %d per point (each session is a goroutine and a connection on this machine)", sc.Hi, MaxConcurrency)
		}
	}
	if sc.Lo >= sc.Hi {
		bad(at("hi"), "%g is not above lo %g: the search needs a range", sc.Hi, sc.Lo)
	}
	if c != nil && c.Plan != nil && c.Plan.Shard != nil && c.Plan.Shard.Count > 1 {
		bad(at(), "the plan's shard block splits every cell over %d processes, but a search chooses each probe from the last probe's row, which a shard measures only a part of: the shards would probe different loads. Run the search unsharded", c.Plan.Shard.Count)
	}
}

// refuseShardedSearch: each probe is chosen from the one before, which a
// shard sees only its part of, so shards would search apart.
func (s *Stage) refuseShardedSearch(env *pipeline.Env) error {
	if s.cfg.Search == nil || s.shards <= 1 {
		return nil
	}
	return fmt.Errorf("stages.%s.search: a search chooses each probe from the last probe's row, which a shard (--shard %d/%d) measures only a part of: the shards would probe different loads. Run the search unsharded", env.Stage.Name, s.shard, s.shards)
}

// searchTarget is one search: a cell and variant (or the trace) in one
// repeat.
type searchTarget struct {
	cell   Cell
	v      variant
	repeat int
	trace  bool
}

// label names the target for people: "128:128", "trace", with its
// variant, server variables and repeat.
func (t searchTarget) label() string {
	if t.trace {
		l := "trace"
		if t.repeat > 0 {
			l += fmt.Sprintf(" rep %d", t.repeat)
		}
		return l
	}
	l := point{cell: t.cell, v: t.v, repeat: t.repeat}.label()
	return strings.Replace(l, " c=0", "", 1)
}

func (s *Stage) searchTargets() []searchTarget {
	var base []searchTarget
	if s.isTrace() {
		base = []searchTarget{{trace: true}}
	} else {
		cells := s.cfg.Cells
		if s.cfg.Endpoint == "transcriptions" {
			cells = []Cell{{}}
		}
		for _, c := range cells {
			for _, v := range s.variants() {
				base = append(base, searchTarget{cell: c, v: v})
			}
		}
	}
	if s.cfg.Repeats <= 1 {
		return base
	}
	// A repeat is a whole search (its knee a sample of the knee).
	var out []searchTarget
	for _, t := range base {
		for r := 1; r <= s.cfg.Repeats; r++ {
			t.repeat = r
			out = append(out, t)
		}
	}
	return out
}

// probe is the target's point at a load.
func (s *Stage) probe(t searchTarget, load float64) point {
	p := point{cell: t.cell, v: t.v, repeat: t.repeat, trace: t.trace}
	if s.cfg.Search.Over == overRate {
		p.rate, p.concurrency = load, s.cfg.MaxInflight
	} else {
		p.concurrency = int(load)
	}
	return p
}

// kneeID is the knee row's cell id: the probes' with "knee" for the load
// (sweep/128:128/knee, sweep/trace/knee, .../knee/rep2).
func kneeID(stage string, t searchTarget) string {
	if t.trace {
		id := stage + "/trace/knee"
		if t.repeat > 0 {
			id += fmt.Sprintf("/rep%d", t.repeat)
		}
		return id
	}
	// The load segment of a closed-loop id with no load is "/c0".
	id := cellID(stage, point{cell: t.cell, v: t.v, repeat: t.repeat})
	return strings.Replace(id, "/c0", "/knee", 1)
}

// searchBounds are the loads a search climbs through, lo to hi
// (points(): what the limits, the connection pool and the progress view
// are sized for; bisection probes lie between them).
func (s *Stage) searchBounds() []point {
	var out []point
	for _, t := range s.searchTargets() {
		for _, x := range s.cfg.Search.climb() {
			out = append(out, s.probe(t, x))
		}
	}
	return out
}

// searchShape: a warm-up stage in front of a search matches its first
// probe.
func (s *Stage) searchShape(shape *pipeline.LoadShape) {
	sc := s.cfg.Search
	if sc == nil {
		return
	}
	if sc.Over == overRate {
		shape.Rates, shape.Concurrency = []float64{sc.Lo}, nil
		return
	}
	shape.Rates, shape.Concurrency = nil, []int{int(sc.Lo)}
}

// climb is the loads the search probes while they meet the SLO: lo,
// doubling, then hi.
func (c *SearchConfig) climb() []float64 {
	var out []float64
	for x := c.Lo; ; x *= 2 {
		if x >= c.Hi || len(out) >= 64 {
			return append(out, c.Hi)
		}
		out = append(out, x)
	}
}

// planSearch lists one step per search (its id the knee's), estimated for
// the most probes it can take: every climbing load and a bisection of
// the top bracket [hi/2, hi] to precision.
func (s *Stage) planSearch() []pipeline.PlannedStep {
	sc := s.cfg.Search
	loads := sc.climb()
	bisect := 0
	for w := sc.Hi - sc.Hi/2; w > sc.precision() && bisect < 64; w /= 2 {
		bisect++
	}
	est := slices.Clone(loads)
	for range bisect {
		est = append(est, 0.75*sc.Hi)
	}
	// The ladder's own estimate of each probe (plan.go), one search at a
	// time.
	var out []pipeline.PlannedStep
	for _, t := range s.searchTargets() {
		cp := *s
		cp.cfg.Search, cp.cfg.Repeats, cp.cfg.Rates, cp.cfg.Concurrency = nil, 1, nil, nil
		cp.cfg.Cells = []Cell{t.cell}
		for _, x := range est {
			if sc.Over == overRate {
				cp.cfg.Rates = append(cp.cfg.Rates, x)
			} else {
				cp.cfg.Concurrency = append(cp.cfg.Concurrency, max(int(x), 1))
			}
		}
		step := pipeline.PlannedStep{ID: kneeID(s.spec.Name, t)}
		ids := map[string]bool{}
		for _, x := range est {
			u := t
			u.repeat = 0
			ids[cellID(s.spec.Name, s.probe(u, x))] = true
		}
		for _, ps := range cp.Plan() {
			if ids[ps.ID] { // this target's variant
				step.Requests += ps.Requests
				step.Estimate += ps.Estimate
			}
		}
		step.Label = fmt.Sprintf("%s search %s %g..%g (%d-%d probes)", t.label(), sc.Over, sc.Lo, sc.Hi, min(2, len(loads)), len(loads)+bisect)
		out = append(out, step)
	}
	return out
}

// rowLog is what Run's loop shares with the search: the emitted probe
// rows, judged as they are emitted (so their notes say the verdict), and
// a failure to store the knee row.
type rowLog struct {
	mu      sync.Mutex
	cur     *search
	curID   string
	curLoad float64
	judged  map[string]probeResult
	err     error
}

// withRowLog returns the env Run emits through: with a search, one whose
// Emit judges each probe row on its way out.
func (s *Stage) withRowLog(env *pipeline.Env) (*pipeline.Env, *rowLog) {
	log := &rowLog{judged: map[string]probeResult{}}
	if s.cfg.Search == nil {
		return env, log
	}
	e := *env
	emit := env.Emit
	e.Emit = func(row results.Cell, reqs results.Requests) error {
		log.mu.Lock()
		if log.cur != nil && row.CellID == log.curID {
			log.judged[row.CellID] = log.cur.judge(&row, log.curLoad)
		}
		log.mu.Unlock()
		return emit(row, reqs)
	}
	return &e, log
}

// sequence is the points Run measures, in order: the ladder, or each
// search's probes, every one chosen from the rows before it, with the
// knee row emitted when a search ends.
func (s *Stage) sequence(env *pipeline.Env, log *rowLog, ladder []point) iter.Seq2[int, point] {
	return func(yield func(int, point) bool) {
		if s.cfg.Search == nil {
			for i, p := range ladder {
				if !yield(i, p) {
					return
				}
			}
			return
		}
		stage := env.Stage.Name
		i := 0
		for _, t := range s.searchTargets() {
			kid := kneeID(stage, t)
			if env.CellDone(kid) {
				continue // the whole search finished in the run being resumed
			}
			sr := &search{cfg: s.cfg.Search, s: s, t: t, started: time.Now().UTC()}
			for {
				load, ok := sr.next()
				if !ok {
					break
				}
				p := s.probe(t, load)
				id := cellID(stage, p)
				log.mu.Lock()
				log.cur, log.curID, log.curLoad = sr, id, load
				log.mu.Unlock()
				if !yield(i, p) {
					return
				}
				i++
				log.mu.Lock()
				_, judged := log.judged[id]
				log.cur = nil
				log.mu.Unlock()
				if !judged {
					// Not emitted: finished in the run being resumed, whose
					// row this run kept.
					row, found := earlierRow(env, stage, id)
					if !found {
						sr.aborted = "probe " + id + " was not measured"
						break
					}
					sr.judge(&row, load)
				}
			}
			if err := env.Emit(sr.knee(stage, kid), nil); err != nil {
				log.err = err
				return
			}
		}
	}
}

// earlierRow is the current row of a cell emitted earlier in the run (a
// resumed run's attempts included).
func earlierRow(env *pipeline.Env, stage, id string) (results.Cell, bool) {
	for _, r := range env.StageRows(stage) {
		if r.CellID == id {
			return r, true
		}
	}
	return results.Cell{}, false
}

// search is one search's state.
type search struct {
	cfg     *SearchConfig
	s       *Stage
	t       searchTarget
	started time.Time
	probes  []probeResult // in the order measured
	// pass is the highest load that met the SLO, fail the lowest that did
	// not (0: none yet).
	pass, fail float64
	aborted    string
}

// probeResult is one probe's verdict.
type probeResult struct {
	load  float64
	row   results.Cell
	meets bool
	why   string // what broke, or "" when it met the SLO
}

// next is the next load to probe; false when the search is over.
func (sr *search) next() (float64, bool) {
	c := sr.cfg
	switch {
	case sr.aborted != "":
		return 0, false
	case len(sr.probes) == 0:
		return c.Lo, true
	case sr.pass == 0:
		return 0, false // lo broke the SLO
	case sr.fail == 0:
		if sr.pass >= c.Hi {
			return 0, false
		}
		return min(2*sr.pass, c.Hi), true
	}
	if sr.fail-sr.pass <= c.precision() {
		return 0, false
	}
	mid := sr.mid()
	if mid <= sr.pass || mid >= sr.fail {
		return 0, false
	}
	return mid, true
}

// mid is the bracket's middle: a whole number of sessions, or a rate on a
// decimal grid finer than the precision (so the probes' cell ids stay
// short: r12.4, not r12.399999999999999).
func (sr *search) mid() float64 {
	m := (sr.pass + sr.fail) / 2
	if sr.cfg.Over == overConcurrency {
		return math.Floor(m)
	}
	dec := max(0, -int(math.Floor(math.Log10(sr.cfg.precision()/2))))
	r, _ := strconv.ParseFloat(strconv.FormatFloat(m, 'f', dec, 64), 64)
	return r
}

// judge gives a probe its verdict, says it in the row's notes and moves
// the bracket.
func (sr *search) judge(row *results.Cell, load float64) probeResult {
	pr := probeResult{load: load}
	var broke []string
	switch row.Status {
	case results.StatusOK:
		for _, k := range sortedKeys(sr.cfg.SLO) {
			limit := sr.cfg.SLO[k]
			switch v := column(row, k); {
			case v == nil:
				broke = append(broke, k+" not measured")
			case *v > limit:
				broke = append(broke, fmt.Sprintf("%s %.4g > %g", k, *v, limit))
			}
		}
	case results.StatusSkipped:
		sr.aborted = row.Reason
		broke = append(broke, "not measured: "+row.Reason)
	default:
		broke = append(broke, "status "+row.Status+": "+row.Reason)
	}
	sat := ""
	if row.Status == results.StatusOK {
		sat = sr.saturated(row, load)
	}
	pr.meets = len(broke) == 0 && sat == ""
	var note string
	switch {
	case pr.meets:
		var held []string
		for _, k := range sortedKeys(sr.cfg.SLO) {
			held = append(held, fmt.Sprintf("%s %.4g <= %g", k, *column(row, k), sr.cfg.SLO[k]))
		}
		note = "search: meets the SLO (" + strings.Join(held, ", ") + ")"
	case len(broke) > 0:
		pr.why = strings.Join(broke, ", ")
		note = "search: breaks the SLO (" + pr.why + ")"
		if sat != "" {
			pr.why += "; saturated: " + sat
			note += "; saturated: " + sat
		}
	default:
		pr.why = "saturated: " + sat
		note = "search: saturated, so past the knee whatever its latency (" + sat + ")"
	}
	row.Notes = joinNotes(row.Notes, note)
	pr.row = *row
	if sr.aborted == "" {
		switch {
		case pr.meets && load > sr.pass:
			sr.pass = load
		case !pr.meets && (sr.fail == 0 || load < sr.fail):
			sr.fail = load
		}
	}
	sr.probes = append(sr.probes, pr)
	return pr
}

// saturated says why the probe is clearly saturated ("" when it is not),
// against the measured probe just below its load.
func (sr *search) saturated(row *results.Cell, load float64) string {
	var q *probeResult
	for i := range sr.probes {
		p := &sr.probes[i]
		if p.load < load && p.row.Status == results.StatusOK && (q == nil || p.load > q.load) {
			q = p
		}
	}
	var below *results.Cell
	var belowLoad float64
	if q != nil {
		below, belowLoad = &q.row, q.load
	}
	return saturation(row, load, below, belowLoad, sr.cfg.Over, sr.s.cfg.Iterations)
}

// saturation says why a point at load is clearly saturated ("" when it is
// not), against the point just below it (below at belowLoad; nil: none
// measured) of the same cell, over rate or concurrency: the rule an SLO
// search decides its knee by, and a plain rate ladder's note.
func saturation(row *results.Cell, load float64, below *results.Cell, belowLoad float64, over string, iterations int) string {
	unit := "req/s"
	if over == overConcurrency {
		unit = "sessions"
	}
	var why []string
	if below != nil && load/belowLoad >= satMinRatio && row.ReqS != nil && below.ReqS != nil && *below.ReqS > 0 &&
		row.E2ELP99Ms != nil && below.E2ELP99Ms != nil {
		ratio := load / belowLoad
		rise := *row.ReqS / *below.ReqS - 1
		// Judged on what the machine allowed: with the probe's own
		// lateness taken out (its true throughput up to that much higher,
		// its tail that much lower), a step the machine's lateness could
		// have flattened is not called saturated (a fixed 6 ms server read
		// 152 then 94 req/s beside busy neighbours).
		late := machine.Late(row)
		bestRise := (*row.ReqS+machine.StarvedBound(results.ColReqS, row, late).Up) / *below.ReqS - 1
		bestClimb := (*row.E2ELP99Ms-min(machine.StarvedBound(results.ColE2ELP99Ms, row, late).Down, *row.E2ELP99Ms)) / *below.E2ELP99Ms - 1
		if bestRise < satRise*(ratio-1) && bestClimb > satLatency {
			why = append(why, fmt.Sprintf("throughput flat: req_s %.4g at %g %s vs %.4g at %g (%+.1f%% for %.2g× the load) while e2el_p99_ms rose %.4g → %.4g",
				*row.ReqS, load, unit, *below.ReqS, belowLoad, 100*rise, ratio, *below.E2ELP99Ms, *row.E2ELP99Ms))
		}
	}
	if over == overRate && below != nil && row.ReqS != nil && row.SentReqS != nil && *row.SentReqS > 0 &&
		row.E2ELP99Ms != nil && below.E2ELP99Ms != nil && *row.E2ELP99Ms > (1+satLatency)*(*below.E2ELP99Ms) {
		if served := *row.ReqS / *row.SentReqS; served < satServed {
			why = append(why, fmt.Sprintf("served %.4g req/s of the %.4g offered (%.0f%%) while e2el_p99_ms rose %.4g → %.4g",
				*row.ReqS, *row.SentReqS, 100*served, *below.E2ELP99Ms, *row.E2ELP99Ms))
		}
	}
	// The queue of an open loop past capacity grows with every arrival;
	// a closed loop's is bounded by its sessions (and holds all of them
	// for a moment whenever they send at once, as at the start), so only
	// its throughput says it is saturated.
	if w := row.ServerWaitingPeak; w != nil && over == overRate {
		perPass := float64(row.Requests) / float64(max(iterations, 1))
		grew := below == nil || below.ServerWaitingPeak == nil || *w > *below.ServerWaitingPeak
		if perPass > 0 && *w >= satQueue*perPass && grew {
			was := ""
			if below != nil && below.ServerWaitingPeak != nil {
				was = fmt.Sprintf(", %g at %g %s", *below.ServerWaitingPeak, belowLoad, unit)
			}
			why = append(why, fmt.Sprintf("the server's waiting queue grew to %g of the probe's %.0f requests%s: it falls behind without bound", *w, perPass, was))
		}
	}
	return strings.Join(why, "; ")
}

// knee is the search's knee row.
func (sr *search) knee(stage, id string) results.Cell {
	c := sr.cfg
	unit, what := "req/s", "rate"
	if c.Over == overConcurrency {
		unit, what = "sessions", "concurrency"
	}
	summary := fmt.Sprintf("SLO search over %s %g..%g %s to %g (%s): %d probes", what, c.Lo, c.Hi, unit, c.precision(), c.sloString(), len(sr.probes))
	var best *probeResult
	for i := range sr.probes {
		p := &sr.probes[i]
		if p.meets && (best == nil || p.load > best.load) {
			best = p
		}
	}
	var broke *probeResult // the lowest load that did not meet it
	for i := range sr.probes {
		p := &sr.probes[i]
		if !p.meets && p.row.Status != results.StatusSkipped && (broke == nil || p.load < broke.load) {
			broke = p
		}
	}
	if sr.aborted != "" || best == nil {
		row := sr.identity(stage, id)
		switch {
		case sr.aborted != "":
			row.Status, row.Reason = results.StatusSkipped, "the search did not finish: "+sr.aborted
		case broke != nil:
			row.Status = results.StatusError
			row.Reason = fmt.Sprintf("no probed %s met the SLO: the lowest, %g %s, did not (%s)", what, broke.load, unit, broke.why)
		default:
			row.Status, row.Reason = results.StatusError, "no probe was measured"
		}
		row.Notes = joinNotes(summary, row.Notes)
		return row
	}
	row := best.row
	row.CellID, row.Search, row.Measurement = id, searchKnee, 1
	if c.Over == overRate {
		row.MaxRateWithinSLO = results.Some(best.load)
	} else {
		row.MaxConcurrencyWithinSLO = results.Some(best.load)
	}
	knee := fmt.Sprintf("the knee: %g %s met it", best.load, unit)
	switch {
	case broke != nil:
		knee += fmt.Sprintf(", %g %s did not (%s)", broke.load, unit, broke.why)
	default:
		knee += fmt.Sprintf(", and so did every probe up to hi: the knee is at or above %g %s (raise search.hi)", c.Hi, unit)
	}
	row.Notes = joinNotes(summary+"; "+knee+"; the row repeats probe "+best.row.CellID+"'s measurement", best.row.Notes)
	return row
}

// identity is a knee row without a measurement: what the search's rows
// say about themselves.
func (sr *search) identity(stage, id string) results.Cell {
	s := sr.s
	row := results.Cell{Stage: stage, CellID: id, Endpoint: s.cfg.Endpoint, ISL: int64(sr.t.cell.ISL), OSL: int64(sr.t.cell.OSL),
		MaxInflight: int64(s.cfg.MaxInflight), Repeat: int64(sr.t.repeat), Batch: int64(sr.t.v.batch), Images: int64(sr.t.v.images),
		ImageResolution: sr.t.v.res, AudioSeconds: sr.t.v.audio, Shard: int64(s.shard), Shards: int64(s.shards),
		Search: searchKnee, StartedAt: sr.started, Measurement: 1,
		Reasoning: s.reasoningLabel(point{cell: sr.t.cell, v: sr.t.v})}
	if len(sr.probes) > 0 {
		p := sr.probes[0].row
		row.Model, row.Engine, row.EngineVersion, row.MaxModelLen = p.Model, p.Engine, p.EngineVersion, p.MaxModelLen
		row.Arrival, row.Burstiness = p.Arrival, p.Burstiness
	}
	if len(sr.t.cell.Server) > 0 {
		row.Notes = "server: " + sr.t.cell.serverVars(" ")
	}
	return row
}
