// Package sweep is the `sweep` stage: cells × a load ladder (closed-loop
// concurrency or open-loop request rates) over an OpenAI-compatible
// server, one point at a time, with warm-up passes. docs/METRICS.md
// defines every column it fills.
package sweep

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/turns"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage       = (*Stage)(nil)
	_ pipeline.Planner     = (*Stage)(nil)
	_ pipeline.ContextUser = (*Stage)(nil)
	_ pipeline.LoadShaper  = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:      "sweep",
	Doc:       "measure cells (isl:osl) × a concurrency or request-rate ladder: ttft, itl, tpot, throughput, goodput",
	Measuring: true,
	Schema:    schema.KindSchema{Def: "#Sweep", Source: client.WithSchema(schemaSource)},
	New:       New,
}

// Stage is a configured sweep.
type Stage struct {
	spec *schema.Stage
	cfg  Config
	// parsed durations
	duration, minDuration, rampDuration time.Duration
	slice                               time.Duration // the time slices' width (0: measure.AutoSlices)
	stallTimeout, requestTimeout        time.Duration
	firstTokenTimeout                   time.Duration
	thinkTime                           time.Duration
	// convs are a conversations dataset's human turns (nil: none).
	convs [][]string
	// refs are the dataset's reference vectors by text (embeddings).
	refs map[string][]float32
	// toolCases are a tools dataset's lines by prompt (nil: none): each
	// request sends its line's messages and tools, checked against them.
	toolCases map[string]*loadgen.ToolCase
	// agentGraph is the agent's session graph (agent.go; nil: none).
	agentGraph []loadgen.GraphSession
	// agentResults are its recorded tool results (nil: none).
	agentResults loadgen.ToolResults
	// shard of shards is this process's part of every cell's load
	// (--shard; 0 of 1 unsharded): set by Run from the Env.
	shard, shards int
	// trace is the dataset's trace when it is one (trace.go; Run).
	trace *loadgen.Trace
	// machine measures the machine's own lateness while Run runs
	// (machine.go; nil: telemetry.machine is off).
	machine *machineProbe
	// precision and repeatsUntil are `precision` and `repeats_until`
	// parsed (precision.go; nil: absent).
	precision    *precisionPlan
	repeatsUntil *repeatsPlan
}

// Validate checks the configuration against the plan without side effects.
func (s *Stage) Validate(c *pipeline.Check) error {
	p := c.Plan
	var errs schema.Errors
	bad := func(field []string, format string, args ...any) {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf(field...), Msg: fmt.Sprintf("stages.%s.%s: ", s.spec.Name, strings.Join(field, ".")) + fmt.Sprintf(format, args...)})
	}
	if len(s.cfg.Cells) == 0 {
		bad([]string{"cells"}, "no cells to measure")
	}
	if len(s.cfg.Concurrency) == 0 && len(s.cfg.Rates) == 0 {
		bad([]string{"concurrency"}, "empty ladder: give concurrency or rates")
	}
	if max := p.Model.MaxModelLen; max > 0 && !s.isTrace() {
		for i, c := range s.cfg.Cells {
			if c.maxISL()+c.maxOSL() > max {
				bad([]string{"cells", fmt.Sprint(i)}, "isl+osl = %d exceeds model.max_model_len %d%s", c.maxISL()+c.maxOSL(), max, upperNote(c))
			} else if n := s.cfg.Turns; n > 1 && s.synthetic() && n*(c.ISL+c.OSL) > max {
				bad([]string{"cells", fmt.Sprint(i)}, "turns × (isl+osl) = %d × %d exceeds model.max_model_len %d: the last turn's history would not fit", n, c.ISL+c.OSL, max)
			}
		}
	}
	parse := func(field, v string, into *time.Duration) {
		if v == "" {
			return
		}
		d, err := schema.ParseDuration(v)
		if err != nil {
			bad([]string{field}, "%v", err)
			return
		}
		*into = d
	}
	parse("duration", s.cfg.Duration, &s.duration)
	parse("min_duration", s.cfg.MinDuration, &s.minDuration)
	parse("slice", s.cfg.Slice, &s.slice)
	parse("request_timeout", s.cfg.RequestTimeout, &s.requestTimeout)
	parse("first_token_timeout", s.cfg.FirstTokenTimeout, &s.firstTokenTimeout)
	if s.cfg.Ramp != nil {
		parse("ramp", s.cfg.Ramp.Duration, &s.rampDuration)
		if len(s.cfg.Rates) == 0 && !s.searchesRate() && !s.isTrace() {
			bad([]string{"ramp"}, "a ramp needs an open loop: give rates")
		}
	}
	if s.cfg.SharedPrefix > 0 {
		for i, c := range s.cfg.Cells {
			if s.cfg.SharedPrefix >= c.minISL() {
				bad([]string{"cells", fmt.Sprint(i)}, "shared_prefix %d leaves no room in isl %d", s.cfg.SharedPrefix, c.minISL())
			}
		}
	}
	s.validateConversation(bad)
	s.validateAgent(bad)
	s.validateLengths(bad)
	s.validateHooks(c, bad)
	s.validateMix(bad)
	s.validateServerVars(c, bad)
	s.validateMedia(bad)
	s.validateLimits(bad)
	s.validateDuplicates(bad)
	s.validateTrace(bad)
	s.validateSearch(c, bad)
	s.validatePrecision(c != nil && c.Plan != nil && c.Plan.Shard != nil && c.Plan.Shard.Count > 1, bad)
	if s.cfg.Dataset != nil && s.cfg.Dataset.Path == "" {
		bad([]string{"dataset", "path"}, "empty path")
	}
	if s.cfg.Dataset != nil && s.cfg.Dataset.Format == loadgen.FormatTools && s.cfg.Endpoint != "chat" && s.cfg.Endpoint != "responses" && s.cfg.Endpoint != "messages" {
		bad([]string{"dataset", "format"}, "a tools dataset is sent as messages with tools: endpoint \"chat\", \"responses\" or \"messages\", not %q", s.cfg.Endpoint)
	}
	errs = append(errs, s.cfg.RequestConfig.Check(s.spec)...)
	errs = append(errs, s.validateReasoning()...)
	errs = append(errs, s.cfg.RequestConfig.CheckConstraints(s.spec, s.cfg.Endpoint)...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validateConversation checks the conversation fields: a conversation
// needs a text endpoint and no media, think_time a conversation.
func (s *Stage) validateConversation(bad func([]string, string, ...any)) {
	c := s.cfg
	if c.ThinkTime != "" {
		d, err := time.ParseDuration(c.ThinkTime)
		if err != nil || d < 0 {
			bad([]string{"think_time"}, "%q is not a duration (write it as \"2s\" or \"500ms\")", c.ThinkTime)
		}
		s.thinkTime = d
		if !c.conversation() {
			bad([]string{"think_time"}, "think_time is the pause between a conversation's turns: give turns (or a conversations dataset)")
		}
	}
	if !c.conversation() {
		return
	}
	field := []string{"turns"}
	if c.Turns == 0 {
		field = []string{"dataset", "format"}
	}
	if c.Endpoint != "completions" && c.Endpoint != "chat" && c.Endpoint != "responses" && c.Endpoint != "messages" {
		bad(field, "conversations need endpoint \"completions\", \"chat\", \"responses\" or \"messages\", not %q", c.Endpoint)
	}
	if len(c.Images) > 0 {
		bad(field, "conversations send text only: drop images")
	}
}

// synthetic reports whether prompts are generated (no dataset).
func (s *Stage) synthetic() bool { return s.cfg.Dataset == nil }

// validateServerVars checks the cells' server variables against the
// target: one that restarts per cell (pipeline.CellRestarter, a launch
// stage with restart: "per_cell") and whose cmd and env find every
// ${cell.KEY} they name in every cell.
func (s *Stage) validateServerVars(c *pipeline.Check, bad func([]string, string, ...any)) {
	peer, _ := c.Peer(s.cfg.Target)
	restarter, restarts := peer.(pipeline.CellRestarter)
	perCell := restarts && restarter.RestartsPerCell()
	var refs []string
	if perCell {
		refs = restarter.CellVars()
	}
	for i, cell := range s.cfg.Cells {
		at := []string{"cells", fmt.Sprint(i), "server"}
		if len(cell.Server) > 0 && !perCell {
			switch {
			case !restarts:
				bad(at, "server variables need a launch stage as the target (restarted with them before the cell), not %q", s.cfg.Target)
			default:
				bad(at, "server variables reach the server only through a restart before each cell: set restart: \"per_cell\" on stages.%s", s.cfg.Target)
			}
			continue
		}
		if !perCell {
			continue
		}
		for _, k := range refs {
			if _, ok := cell.Server[k]; !ok {
				if len(cell.Server) == 0 {
					at = at[:2]
				}
				bad(at, "the cell gives no server variable %s, which stages.%s uses as ${cell.%s}", k, s.cfg.Target, k)
			}
		}
	}
}

// LoadShape is the load the sweep applies (pipeline.LoadShaper): a
// warm-up in front of it matches it, and a launch stage restarted per
// cell starts with its first cell's server variables.
func (s *Stage) LoadShape() pipeline.LoadShape {
	cells := make([]pipeline.ShapeCell, len(s.cfg.Cells))
	for i, c := range s.cfg.Cells {
		cells[i] = pipeline.ShapeCell{ISL: c.ISL, OSL: c.OSL, Server: maps.Clone(c.Server)}
	}
	shape := pipeline.LoadShape{
		Endpoint:    s.cfg.Endpoint,
		Concurrency: slices.Clone(s.cfg.Concurrency),
		Rates:       slices.Clone(s.cfg.Rates),
		Arrival:     s.cfg.Arrival,
		Cells:       cells,
		Calibrate:   s.cfg.Calibrate,
		Seed:        s.cfg.Seed,
		Requests:    s.plannedRequests(),
	}
	s.searchShape(&shape)
	return shape
}

// plannedRequests is how many timed requests the smallest point sends
// when the plan fixes the count (requests, or its default: max(8, 2 × c)
// for a closed loop, 10 s of arrivals and at least 32 for an open one),
// all passes pooled; 0 when a duration decides.
func (s *Stage) plannedRequests() int {
	if s.precision != nil {
		return s.precisionPlanned() // at least what its targets need
	}
	if s.cfg.Duration != "" {
		return 0
	}
	n := s.cfg.Requests
	if n == 0 && len(s.cfg.Rates) > 0 {
		n = max(int(10*slices.Min(s.cfg.Rates)), 32)
	} else if n == 0 && len(s.cfg.Concurrency) > 0 {
		n = max(8, 2*slices.Min(s.cfg.Concurrency))
	}
	return max(n, s.cfg.MinRequests) * max(s.cfg.Iterations, 1)
}

// point is one cell at one ladder point.
type point struct {
	cell        Cell
	concurrency int     // closed loop
	rate        float64 // open loop (> 0)
	repeat      int     // 1..repeats when the sweep repeats; 0 when it does not
	v           variant // batch, images, audio (media.go)
	// model names a per-model row of a mix's point (mix.go; "": the
	// point's own row).
	model string
	// trace: the point replays the dataset's trace at timeScale (or, a
	// search probe, at the scale that makes its mean rate rate; trace.go).
	trace     bool
	timeScale float64
}

func (p point) label() string {
	if p.trace {
		return p.traceLabel()
	}
	shape := p.cell.shape()
	if p.v.audio > 0 {
		shape = audioLabel(p.v.audio)
	}
	l := fmt.Sprintf("%s c=%d", shape, p.concurrency)
	if p.rate > 0 {
		l = fmt.Sprintf("%s rate=%g/s", shape, p.rate)
	}
	l += p.v.label()
	if len(p.cell.Server) > 0 {
		l += " " + p.cell.serverVars(" ")
	}
	if r := p.pointReasoning().Label(" "); r != "" {
		l += " " + r
	}
	if p.repeat > 0 {
		l += fmt.Sprintf(" rep %d", p.repeat)
	}
	return l
}

// c1Key names the c=1 row a point's speedup is measured against: the same
// cell in the same repeat.
func (p point) c1Key() string {
	return fmt.Sprintf("%s%s%s%s#%d", p.cell.key(), p.v.idSuffix(), p.reasoningSuffix(), audioLabel(p.v.audio), p.repeat)
}

// cellID is deterministic, so --resume can recognise finished cells; a
// cell's server variables follow, sorted by key (sweep/128:128/c4/np=4),
// so cells that differ only in them stay apart.
func cellID(stage string, p point) string {
	if p.trace {
		return traceCellID(stage, p)
	}
	shape := p.cell.shape()
	if p.v.audio > 0 {
		shape = audioLabel(p.v.audio)
	}
	id := fmt.Sprintf("%s/%s/c%d", stage, shape, p.concurrency)
	if p.rate > 0 {
		id = fmt.Sprintf("%s/%s/r%g", stage, shape, p.rate)
	}
	id += p.v.idSuffix()
	if len(p.cell.Server) > 0 {
		id += "/" + p.cell.serverVars("/")
	}
	id += p.reasoningSuffix()
	id += p.mixSuffix()
	if p.repeat > 0 {
		id += fmt.Sprintf("/rep%d", p.repeat)
	}
	return id
}

func (s *Stage) points() []point {
	if s.cfg.Search != nil {
		return s.searchBounds()
	}
	if s.isTrace() {
		return s.tracePoints()
	}
	var ladder []point
	cells := s.cfg.Cells
	if s.cfg.Endpoint == "transcriptions" {
		cells = []Cell{{}} // the audio is the input; cells do not apply
	}
	for _, c := range cells {
		for _, v := range s.variants() {
			if len(s.cfg.Rates) > 0 {
				for _, r := range s.cfg.Rates {
					ladder = append(ladder, point{cell: c, rate: r, concurrency: s.cfg.MaxInflight, v: v})
				}
				continue
			}
			for _, conc := range s.cfg.Concurrency {
				ladder = append(ladder, point{cell: c, concurrency: conc, v: v})
			}
		}
	}
	if s.cfg.Repeats <= 1 {
		return ladder
	}
	// The whole ladder once per repeat, so that drift (a server warming,
	// a neighbour) spreads over every point instead of lining up with one.
	var pts []point
	for r := 1; r <= s.cfg.Repeats; r++ {
		for _, p := range ladder {
			p.repeat = r
			pts = append(pts, p)
		}
	}
	return pts
}

// Run measures every point in order. A point that fails becomes an error
// row and the sweep goes on; when the context ends (the server died, a
// timeout, Ctrl-C) the running point is an error row, the rest are
// skipped rows, and Run returns the cause.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	s.setDefaults()
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	model := env.ModelName(s.cfg.Model)
	s.shard, s.shards, _ = env.Shard()
	if err := s.refuseShardedSearch(env); err != nil {
		return nil, err
	}
	if err := s.refuseShardedPrecision(env); err != nil {
		return nil, err
	}
	points := s.points()
	t, err := s.newTarget(env.Stage.Name, target.URL, model, points)
	if err != nil {
		return nil, err
	}
	defer t.HTTP.CloseIdleConnections()
	if err := s.loadTrace(env); err != nil {
		return nil, err
	}
	if err := s.loadAgentGraph(env); err != nil {
		return nil, err
	}
	dataset, err := s.loadPrompts(env)
	if err != nil {
		return nil, err
	}
	refs, err := s.loadReferences(env)
	if err != nil {
		return nil, fmt.Errorf("stages.%s.dataset.vector: %w", env.Stage.Name, err)
	}
	s.refs = refs

	r := &sweepRun{
		s: s, ctx: ctx, target: target, t: t, model: model, points: points, dataset: dataset,
		prog: newProgress(env.Progress),
		c1:   map[string]float64{},
	}
	defer func() { r.probes.close() }()
	s.machine = s.startMachineProbe(env)
	defer s.machine.stop()
	// A search decides each probe from the rows before it (search.go).
	env, searched := s.withRowLog(env)
	r.env = env
	r.repeats = newRepeatTracker(s.repeatsUntil, s.cfg.Repeats)
	for i, p := range s.sequence(env, searched, points) {
		if r.repeats.done(p) {
			continue // its mean is known closely enough (repeats_until)
		}
		if err := r.cell(i, p); err != nil {
			return nil, err
		}
	}
	r.arriveSkipped()
	if err := searched.err; err != nil {
		return nil, err
	}
	if r.stopErr != nil {
		return nil, r.stopErr
	}
	return &pipeline.Outputs{}, nil
}

// newTarget is the server as the sweep's requests reach it (the plan's
// headers, body fields and API key: #Requests), with a connection pool
// sized for the largest load of points.
func (s *Stage) newTarget(stage, url, model string, points []point) (*loadgen.Target, error) {
	maxConns := s.cfg.MaxInflight
	for _, p := range points {
		maxConns = max(maxConns, p.concurrency, int(math.Min(p.rate, 4096)))
		if p.rate > 0 && s.cfg.MaxInflight == 0 {
			// An open loop keeps up to the client's in-flight limit
			// outstanding when the server falls behind: every connection
			// it opened goes back to the pool, instead of being closed
			// for a fresh dial (and a port in TIME_WAIT) per request.
			maxConns = max(maxConns, loadgen.InFlightLimit())
		}
	}
	t, err := s.cfg.NewTarget(stage, url, model, loadgen.Endpoint(s.cfg.Endpoint), s.cfg.Stream, maxConns)
	if err != nil {
		return nil, err
	}
	t.ContinuousUsage = s.cfg.ContinuousUsage
	t.Timeout = s.requestTimeout
	if s.cfg.Endpoint == "embeddings" {
		// Every vector of the sweep must have one length: the plan's,
		// else the first answer's.
		t.Dimension = loadgen.NewDimension(s.cfg.Dimensions)
		if _, set := t.ExtraBody["dimensions"]; !set && s.cfg.Dimensions > 0 {
			t.ExtraBody["dimensions"] = s.cfg.Dimensions // the plan's body fields win
		}
	}
	if s.cfg.Endpoint == "transcriptions" || s.cfg.Endpoint == "rerank" {
		t.Stream = false
	}
	return t, nil
}

// loadPrompts reads the dataset's prompts: nil when prompts are
// synthetic (or the dataset is a trace), empty when the dataset holds
// conversations (kept in s.convs), which are not calibrated either.
func (s *Stage) loadPrompts(env *pipeline.Env) ([]string, error) {
	d := s.cfg.Dataset
	if d == nil || s.isTrace() {
		return nil, nil
	}
	path := d.Path
	if !filepath.IsAbs(path) && env.Plan != nil && env.Plan.Path != "" {
		// Relative to the plan file, so a plan runs from any directory.
		path = filepath.Join(filepath.Dir(env.Plan.Path), path)
	}
	spec := loadgen.DatasetSpec{Path: path, Format: d.Format, Field: d.Field, Limit: d.Limit, Seed: uint64(s.cfg.Seed), Split: d.Split}
	var dataset []string
	var err error
	switch {
	case d.Format == loadgen.FormatConversations:
		s.convs, err = loadgen.LoadConversations(spec)
		dataset = []string{} // prompts from a dataset: not calibrated
	case d.Format == loadgen.FormatTools:
		dataset, s.toolCases, err = loadgen.LoadToolCases(path)
	default:
		dataset, err = loadgen.LoadDataset(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("stages.%s.dataset: %w", env.Stage.Name, err)
	}
	return dataset, nil
}

// startCell waits for the instant the cell starts on every shard
// (Env.CellStart; now when not sharded) and says in a note when this
// shard started it late. From there on, time is the monotonic clock's.
func (s *Stage) startCell(ctx context.Context, env *pipeline.Env, id string, pending *string) (string, error) {
	if *pending != id {
		return "", nil
	}
	*pending = ""
	at, err := env.CellStart(ctx, id)
	if err != nil || at.IsZero() {
		return "", err
	}
	late, err := waitUntil(ctx, at)
	if err != nil {
		return "", err
	}
	if late > 5*time.Millisecond { // more than a timer's slack
		return fmt.Sprintf("shard %d/%d started %.1f ms after the shards' common start instant", s.shard, s.shards, ms(late)), nil
	}
	return "", nil
}

// calibrate sizes prompts for the target. On failure with calibrate=auto
// it falls back to the assumed vocabulary and says so; an explicit method
// that fails makes every point an error (nil vocab, the reason).
func (s *Stage) calibrate(ctx context.Context, t *loadgen.Target, fromDataset bool, info loadgen.ServerInfo) (*loadgen.Vocab, string) {
	if fromDataset {
		return loadgen.AssumedVocab(), "prompts from the dataset (isl is the dataset's: see effective_isl)"
	}
	if s.cfg.Calibrate == loadgen.CalibrateOff {
		return loadgen.AssumedVocab(), "prompt length not calibrated (one token per word assumed; see effective_isl)"
	}
	v, err := loadgen.CalibrateCached(ctx, t, s.cfg.Calibrate, info)
	if err != nil {
		if s.cfg.Calibrate != loadgen.CalibrateAuto {
			return nil, err.Error()
		}
		return loadgen.AssumedVocab(), "prompt length not calibrated (" + err.Error() + "); see effective_isl"
	}
	return v, calibrationNote(v)
}

// load is the point's load for one pass.
func (s *Stage) load(p point, counters *loadgen.Counters, pass int) (loadgen.Load, int) {
	if p.trace {
		return s.traceLoad(p, counters, pass)
	}
	// A shard sends its share of the sessions, the rate and any request
	// counts (loadgen.SplitCount, Schedule.Split); durations stay whole.
	l := loadgen.Load{
		Concurrency: loadgen.SplitCount(p.concurrency, s.shard, s.shards),
		Requests:    loadgen.SplitCount(s.cfg.Requests, s.shard, s.shards),
		Duration:    s.duration,
		MinRequests: loadgen.SplitCount(s.cfg.MinRequests, s.shard, s.shards),
		MinDuration: s.minDuration,
		MaxInFlight: s.cfg.MaxInflight,
		Counters:    counters,
	}
	if s.precision != nil && pass >= s.cfg.Warmup {
		// A timed pass with a precision target: until the target is met
		// (Enough, precision.go), at most its budget; warm-ups keep the
		// default length below.
		l.Requests = loadgen.SplitCount(s.precision.maxRequests, s.shard, s.shards)
		l.Duration = s.precision.maxDuration
	}
	expected := l.Requests
	// A conversation's rate and sessions count sessions; its requests
	// count turns.
	perSession := 1.0
	if s.cfg.conversation() {
		perSession = s.meanTurns()
	}
	if p.rate > 0 {
		sch := &loadgen.Schedule{Rate: p.rate, Arrival: s.cfg.Arrival, Burstiness: s.cfg.Burstiness,
			Seed: uint64(s.cfg.Seed) ^ uint64(pass)<<48 ^ uint64(p.cell.ISL)<<24 ^ uint64(p.cell.OSL)}
		if s.cfg.Ramp != nil && s.rampDuration > 0 {
			sch.Ramp = loadgen.Ramp{Kind: s.cfg.Ramp.Kind, From: s.cfg.Ramp.From, Duration: s.rampDuration}
		}
		*sch = sch.Split(s.shard, s.shards)
		l.Schedule = sch
		if l.Requests == 0 && l.Duration == 0 {
			// 10 s of arrivals, at least 32 requests.
			arrivals := max(math.Ceil(32/perSession), math.Ceil(p.rate*10))
			l.Requests = loadgen.SplitCount(int(math.Ceil(arrivals*perSession)), s.shard, s.shards)
			expected = l.Requests
		}
		if expected == 0 {
			expected = int(math.Ceil(sch.Rate * l.Duration.Seconds() * perSession))
		}
	} else {
		l.MaxInFlight = 0
		if l.Requests == 0 && l.Duration == 0 {
			n := max(8, 2*p.concurrency)
			if s.cfg.conversation() {
				// Two sessions per slot.
				n = max(8, int(math.Ceil(2*float64(p.concurrency)*perSession)))
			}
			l.Requests = loadgen.SplitCount(n, s.shard, s.shards)
			expected = l.Requests
		}
	}
	expected = max(expected, l.MinRequests)
	return l, expected
}

// measure runs the warm-up passes, then the timed ones, and builds the row.
func (r *sweepRun) measure(p point, row results.Cell, pv *pointView) (results.Cell, results.Requests, []results.Sample) {
	s := r.s
	slo := measure.SLO(r.env.Plan.SLO)
	row.StartedAt = time.Now().UTC()
	t := s.bounded(r.t, p)
	ctx, stopSending := sendUntilDeath(r.ctx, r.target)
	defer stopSending(nil)
	pr := &pointRun{s: s, ctx: ctx, stopSending: stopSending, t: t, target: r.target, p: p, pv: pv, dir: r.env.Dir}
	pr.hooks = r.hooks(t, row.CellID)
	pr.src = s.promptSource(p, row.Stage, row.Measurement, r.vocab, r.dataset)
	pr.view = pr.src.Trace
	if why := s.traceFits(row, pr.view); why != "" {
		row.Status, row.Reason = results.StatusError, why
		return row, nil, nil
	}
	kit, err := s.newMediaKit(p, s.refs)
	if err != nil {
		row.Status, row.Reason = results.StatusError, err.Error()
		return row, nil, nil
	}
	pr.kit = kit
	pr.shapeRequests()

	pass, warmTTFT := pr.warmUp(&row)
	cpu := markCPU(r.target.PID)
	// Telemetry over the timed window only: the warm-up's load is not
	// the point's.
	probes := r.probes
	probes.begin(pr.ctx, row.CellID)
	if s.precision != nil {
		// Each measurement's own: a confirmation measures until precise
		// from nothing, as cold as the first.
		pr.meter = newPrecisionMeter(s.precision)
	}
	timed := pr.timedPasses(&row, pass)
	cpu.fill(&row, timed.window)
	if e := pr.refused.Load(); e != nil {
		r.refused = e
	}
	return pr.finish(row, timed, warmTTFT, probes, slo)
}

// finish builds the point's row from its timed passes, with the
// telemetry read over them: an error row when a pass could not run or the
// server died mid-point (its death is the reason).
func (pr *pointRun) finish(row results.Cell, timed passResult, warmTTFT []float64, probes *probeSet, slo measure.SLO) (results.Cell, results.Requests, []results.Sample) {
	s, ctx := pr.s, pr.ctx
	if pr.firstErr != nil {
		removeRows(timed.reqs)
		row.Status, row.Reason = results.StatusError, pr.firstErr.Error()
		return row, nil, probes.end(context.WithoutCancel(ctx), &row)
	}
	reqs := fillRow(&row, &pr.tally, timed.reqs, timed.window, timed.sends, warmTTFT, s.cfg, slo)
	if sp, ok := timed.reqs.(spooled); ok {
		reqs = spooled{reqs, sp.spool} // fillRow's view of them, still removable
	}
	s.fillPrecision(&row, reqs, reqs.Len(), ctx.Err() != nil, pr.meter)
	fillMedia(&row, &pr.tally.media, timed.window, s.refs != nil)
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		// The server died mid-point: its death is the reason.
		samples := probes.end(context.WithoutCancel(ctx), &row)
		turns.Fill(&row, reqs, turns.ExpectOf(row))
		row.Status, row.Reason = results.StatusError, c.Error()
		return row, reqs, samples
	}
	row.Notes = joinNotes(row.Notes, pr.tally.models.note())
	row.Notes = joinNotes(row.Notes, pr.hooks.note())
	s.judgeTrace(&row, pr.p, pr.view, &pr.tally.trace)
	// After the row is filled: energy per token reads its output tokens.
	samples := probes.end(ctx, &row)
	// After telemetry: the hit rate falls back on the server's counters.
	turns.Fill(&row, reqs, turns.ExpectOf(row))
	return row, reqs, samples
}

// conversation is a pass's conversation load: each session's turns from
// the prompt source, its rows' session ids unique within the cell (after
// the earlier timed passes' base sessions, interleaved across shards).
func (s *Stage) conversation(src *loadgen.PromptSource, pass, base, maxTokens int, body map[string]any, expect int) loadgen.Conversation {
	shard, shards := s.shard, max(s.shards, 1)
	return loadgen.Conversation{
		Turns:     s.maxTurns(),
		TurnsOf:   func(id int) int { return src.TurnsOf(pass, id) },
		User:      func(id, turn int) string { return src.Turn(pass, id, turn) },
		ID:        func(n int) int { return (base+n)*shards + shard },
		Think:     s.thinkTime,
		ThinkDist: s.cfg.ThinkTimeDist,
		Seed:      uint64(s.cfg.Seed) ^ uint64(pass)<<40,
		Request:   loadgen.Request{MaxTokens: maxTokens, Body: body, ExpectTokens: expect},
	}
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// warmSetSize is how many distinct prompts warm mode cycles through: one
// pass's worth, or 1024 when a pass is bounded by time alone.
func warmSetSize(expected int) int {
	if expected > 0 {
		return expected
	}
	return 1024
}

// waitUntil sleeps until t by the wall clock (--start-at names an
// instant, which only the wall clock knows) and says how late it woke:
// a shard started after t by more than the sleep's own slack was late.
func waitUntil(ctx context.Context, t time.Time) (time.Duration, error) {
	if d := time.Until(t); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
	return time.Since(t), nil
}
