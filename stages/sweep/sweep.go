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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/turns"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
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
	Schema:    schema.KindSchema{Def: "#Sweep", Source: schemaSource},
	New:       New,
}

// Stage is a configured sweep.
type Stage struct {
	spec *schema.Stage
	cfg  Config
	// parsed durations
	duration, minDuration, rampDuration time.Duration
	stallTimeout, requestTimeout        time.Duration
	firstTokenTimeout                   time.Duration
	thinkTime                           time.Duration
	// convs are a conversations dataset's human turns (nil: none).
	convs [][]string
	// refs are the dataset's reference vectors by text (embeddings).
	refs map[string][]float32
	// shard of shards is this process's part of every cell's load
	// (--shard; 0 of 1 unsharded): set by Run from the Env.
	shard, shards int
	// trace is the dataset's trace when it is one (trace.go; Run).
	trace *loadgen.Trace
	// machine measures the machine's own lateness while Run runs
	// (machine.go; nil: telemetry.machine is off).
	machine *machineProbe
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
			if c.ISL+c.OSL > max {
				bad([]string{"cells", fmt.Sprint(i)}, "isl+osl = %d exceeds model.max_model_len %d", c.ISL+c.OSL, max)
			} else if n := s.cfg.Turns; n > 1 && s.synthetic() && n*(c.ISL+c.OSL) > max {
				bad([]string{"cells", fmt.Sprint(i)}, "turns × (isl+osl) = %d × %d exceeds model.max_model_len %d: the last turn's history would not fit", n, c.ISL+c.OSL, max)
			}
		}
	}
	parse := func(field, v string, into *time.Duration) {
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil && strings.Contains(err.Error(), "invalid duration") && durationShape.MatchString(v):
			// Well formed, but past what a duration can hold (about 290
			// years): too long, not "not positive".
			bad([]string{field}, "%q is longer than any run (a duration holds at most about 290 years); write a bound such as \"30s\" or \"2m\"", v)
			return
		case err != nil || d <= 0:
			bad([]string{field}, "%q is not a positive duration (write it as \"30s\" or \"2m\")", v)
			return
		}
		*into = d
	}
	parse("duration", s.cfg.Duration, &s.duration)
	parse("min_duration", s.cfg.MinDuration, &s.minDuration)
	parse("stall_timeout", s.cfg.StallTimeout, &s.stallTimeout)
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
			if s.cfg.SharedPrefix >= c.ISL {
				bad([]string{"cells", fmt.Sprint(i)}, "shared_prefix %d leaves no room in isl %d", s.cfg.SharedPrefix, c.ISL)
			}
		}
	}
	s.validateConversation(bad)
	s.validateServerVars(c, bad)
	s.validateMedia(bad)
	s.validateLimits(bad)
	s.validateDuplicates(bad)
	s.validateTrace(bad)
	s.validateSearch(c, bad)
	if s.cfg.Dataset != nil && s.cfg.Dataset.Path == "" {
		bad([]string{"dataset", "path"}, "empty path")
	}
	if s.cfg.APIKeyEnv != "" && strings.ContainsAny(s.cfg.APIKeyEnv, " =$") {
		bad([]string{"api_key_env"}, "%q should name an environment variable (OPENAI_API_KEY), not hold the key", s.cfg.APIKeyEnv)
	}
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
	if c.Endpoint != "completions" && c.Endpoint != "chat" {
		bad(field, "conversations need endpoint \"completions\" or \"chat\", not %q", c.Endpoint)
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
	}
	s.searchShape(&shape)
	return shape
}

// point is one cell at one ladder point.
type point struct {
	cell        Cell
	concurrency int     // closed loop
	rate        float64 // open loop (> 0)
	repeat      int     // 1..repeats when the sweep repeats; 0 when it does not
	v           variant // batch, images, audio (media.go)
	// trace: the point replays the dataset's trace at timeScale (or, a
	// search probe, at the scale that makes its mean rate rate; trace.go).
	trace     bool
	timeScale float64
}

func (p point) label() string {
	if p.trace {
		return p.traceLabel()
	}
	shape := fmt.Sprintf("%d:%d", p.cell.ISL, p.cell.OSL)
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
	if p.repeat > 0 {
		l += fmt.Sprintf(" rep %d", p.repeat)
	}
	return l
}

// c1Key names the c=1 row a point's speedup is measured against: the same
// cell in the same repeat.
func (p point) c1Key() string {
	return fmt.Sprintf("%s%s%s#%d", p.cell.key(), p.v.idSuffix(), audioLabel(p.v.audio), p.repeat)
}

// cellID is deterministic, so --resume can recognise finished cells; a
// cell's server variables follow, sorted by key (sweep/128:128/c4/np=4),
// so cells that differ only in them stay apart.
func cellID(stage string, p point) string {
	if p.trace {
		return traceCellID(stage, p)
	}
	shape := fmt.Sprintf("%d:%d", p.cell.ISL, p.cell.OSL)
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
	points := s.points()
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
	t := &loadgen.Target{
		BaseURL:         target.URL,
		Model:           model,
		Endpoint:        loadgen.Endpoint(s.cfg.Endpoint),
		Stream:          s.cfg.Stream,
		Headers:         map[string]string{},
		ExtraBody:       map[string]any{},
		HTTP:            loadgen.NewHTTPClient(maxConns),
		ContinuousUsage: s.cfg.ContinuousUsage,
		StallTimeout:    s.stallTimeout,
		Timeout:         s.requestTimeout,
	}
	if s.cfg.Endpoint == "embeddings" {
		// Every vector of the sweep must have one length: the plan's,
		// else the first answer's.
		t.Dimension = loadgen.NewDimension(s.cfg.Dimensions)
		if s.cfg.Dimensions > 0 {
			t.ExtraBody["dimensions"] = s.cfg.Dimensions
		}
	}
	if s.cfg.Endpoint == "transcriptions" {
		t.Stream = false
	}
	defer t.HTTP.CloseIdleConnections()
	headers, err := pipeline.ExpandHeaders(env.Stage.Name, s.cfg.Headers)
	if err != nil {
		return nil, err
	}
	t.Headers = headers
	for k, v := range s.cfg.Body {
		t.ExtraBody[k] = v
	}
	if s.cfg.APIKeyEnv != "" {
		t.APIKey = os.Getenv(s.cfg.APIKeyEnv)
		redact.Add(t.APIKey) // masked in everything benchrun writes
		if t.APIKey == "" {
			return nil, fmt.Errorf("stages.%s.api_key_env: the environment variable %s is empty or not set; export it before running", env.Stage.Name, s.cfg.APIKeyEnv)
		}
	}
	if err := s.loadTrace(env); err != nil {
		return nil, err
	}
	var dataset []string
	if d := s.cfg.Dataset; d != nil && !s.isTrace() {
		path := d.Path
		if !filepath.IsAbs(path) && env.Plan != nil && env.Plan.Path != "" {
			// Relative to the plan file, so a plan runs from any directory.
			path = filepath.Join(filepath.Dir(env.Plan.Path), path)
		}
		spec := loadgen.DatasetSpec{Path: path, Format: d.Format, Field: d.Field, Limit: d.Limit, Seed: uint64(s.cfg.Seed)}
		if d.Format == loadgen.FormatConversations {
			s.convs, err = loadgen.LoadConversations(spec)
			dataset = []string{} // prompts from a dataset: not calibrated
		} else {
			dataset, err = loadgen.LoadDataset(spec)
		}
		if err != nil {
			return nil, fmt.Errorf("stages.%s.dataset: %w", env.Stage.Name, err)
		}
	}
	refs, err := s.loadReferences(env)
	if err != nil {
		return nil, fmt.Errorf("stages.%s.dataset.vector: %w", env.Stage.Name, err)
	}
	s.refs = refs

	prog := newProgress(env.Progress)
	var vocab *loadgen.Vocab
	calibNote := ""
	var info loadgen.ServerInfo
	discovered := false
	c1 := map[string]float64{} // decode_tok_s at concurrency 1, per cell key and repeat
	var stopErr error
	var probes *probeSet
	defer func() { probes.close() }()
	s.machine = s.startMachineProbe(env)
	defer s.machine.stop()
	// pending is the cell whose start the other shards of a sharded run
	// have not been told of yet: a shard arrives at every cell's start
	// (Env.CellStart), measuring it or not, so that cells go in lockstep
	// and no peer waits for a cell this shard skipped.
	pending := ""
	arriveSkipped := func() {
		if pending == "" {
			return
		}
		if _, err := env.CellStart(ctx, pending); err != nil && stopErr == nil {
			stopErr = err
		}
		pending = ""
	}
	// A search decides each probe from the rows before it (search.go).
	env, searched := s.withRowLog(env)
	for i, p := range s.sequence(env, searched, points) {
		arriveSkipped()
		id := cellID(env.Stage.Name, p)
		pending = id
		if env.CellDone(id) {
			continue // finished in the run being resumed
		}
		base := results.Cell{
			Stage: env.Stage.Name, CellID: id, Model: model, Engine: target.Engine,
			Endpoint: s.cfg.Endpoint, ISL: int64(p.cell.ISL), OSL: int64(p.cell.OSL), Concurrency: int64(p.concurrency),
			Rate: p.rate, MaxInflight: int64(s.cfg.MaxInflight), EngineVersion: engineVersion(info, target), Repeat: int64(p.repeat),
			Batch: int64(p.v.batch), Images: int64(p.v.images), ImageResolution: p.v.res, AudioSeconds: p.v.audio,
			Shard: int64(s.shard), Shards: int64(s.shards),
		}
		if s.cfg.conversation() {
			base.Turns = results.Some(int64(s.maxTurns()))
			base.ThinkTimeMs = results.Some(ms(s.thinkTime))
		}
		if p.rate > 0 {
			base.Arrival = s.cfg.Arrival
			if s.cfg.Arrival == loadgen.ArrivalGamma {
				base.Burstiness = s.cfg.Burstiness
			}
		}
		s.stampPoint(&base, p)
		emit := env.Emit
		if len(p.cell.Server) > 0 {
			// Every row of the cell says which server it measured.
			note := "server: " + p.cell.serverVars(" ")
			emit = func(row results.Cell, reqs []results.Request) error {
				row.Notes = joinNotes(note, row.Notes)
				return env.Emit(row, reqs)
			}
		}
		if p.rate == 0 && !p.trace && loadgen.SplitCount(p.concurrency, s.shard, s.shards) == 0 {
			// Fewer sessions than shards: this shard has none of the
			// cell's; the others' rows hold it (benchrun merge).
			row := base
			row.StartedAt = time.Now().UTC()
			row.Status, row.Reason = results.StatusSkipped, fmt.Sprintf("shard %d/%d: no session of the cell's %d", s.shard, s.shards, p.concurrency)
			if err := emit(row, nil); err != nil {
				return nil, err
			}
			continue
		}
		if stopErr != nil {
			row := base
			row.StartedAt = time.Now().UTC()
			// Short: the full reason is on the row where the sweep
			// stopped (and in the stage's reason), not repeated on each.
			why := pipeline.OneLine(stopErr.Error())
			if r := []rune(why); len(r) > 160 {
				why = string(r[:157]) + "…"
			}
			row.Status, row.Reason = results.StatusSkipped, "not run: "+why
			if err := emit(row, nil); err != nil {
				return nil, err
			}
			continue
		}
		if target.Restart != nil {
			if err := target.Restart(ctx, p.cell.Server); err != nil {
				stopErr = fmt.Errorf("restarting the server before the cell %s: %w", p.label(), err)
				row := base
				row.StartedAt = time.Now().UTC()
				row.Status, row.Reason = results.StatusError, stopErr.Error()
				if err := emit(row, nil); err != nil {
					return nil, err
				}
				continue
			}
			if target.StartupS != nil {
				// The fresh server's start-up belongs to the cell measured on it.
				base.StartupS = target.StartupS()
			}
		}
		// Learn what the server is and how long a request may be (after
		// every restart: a cell's server flags may change the context).
		if !discovered || target.Restart != nil {
			info = loadgen.Discover(ctx, t, target.Engine)
			discovered = true
			// The probes follow the server: a restarted one is a new
			// process, maybe on other metrics.
			probes.close()
			engine := target.Engine
			if engine == "" || engine == "custom" {
				engine = info.Engine
			}
			probes = s.openProbes(env, target, engine, t.Headers, t.APIKey)
		}
		if (base.Engine == "" || base.Engine == "custom") && info.Engine != "" {
			// A launch without a preset says "custom"; the server said more.
			base.Engine = info.Engine
		}
		base.EngineVersion = engineVersion(info, target)
		limit := contextLimit(info, env.Plan)
		base.MaxModelLen = results.SomeIf(limit > 0, int64(limit)) // nil: unknown
		// A cell that cannot fit the context is refused before any request
		// is sent: every request would come back HTTP 400 (or, on Ollama,
		// be silently truncated).
		if why := doesNotFit(p.cell, s.cfg.Endpoint, s.contextTurns(), info, env.Plan); why != "" {
			row := base
			row.StartedAt = time.Now().UTC()
			row.Status, row.Reason = results.StatusError, why
			applyCost(&row, target)
			if err := emit(row, nil); err != nil {
				return nil, err
			}
			prog.line(fmt.Sprintf("%s %s: error %s", env.Stage.Name, p.label(), why))
			continue
		}
		// Calibrate once, lazily (after any restart), unless prompts come
		// from a dataset or calibration is off.
		if vocab == nil && s.cfg.Endpoint == "transcriptions" {
			vocab = loadgen.AssumedVocab() // no prompts to size
		}
		if vocab == nil {
			vocab, calibNote = s.calibrate(ctx, t, dataset != nil, info)
		}
		// measurePoint measures the point once and emits its row; the
		// second time (a confirmation) as measurement 2.
		measurePoint := func(measurement int64) (results.Cell, error) {
			var row results.Cell
			var reqs []results.Request
			var samples []results.Sample
			if vocab == nil {
				row = base
				row.StartedAt = time.Now().UTC()
				row.Status, row.Reason = results.StatusError, calibNote
			} else if lateNote, err := s.startCell(ctx, env, id, &pending); err != nil {
				// A peer shard is gone: this cell can no longer start in
				// step with the others, nor can the rest.
				row = base
				row.StartedAt = time.Now().UTC()
				row.Status, row.Reason = results.StatusError, "not started: "+err.Error()
				if stopErr == nil {
					stopErr = err
				}
			} else {
				row, reqs, samples = s.measure(ctx, t, target, p, base, vocab, dataset, env.Plan.SLO, prog.point(i+1, pointsTotal(s, points), p.label()), probes)
				if calibNote != "" {
					row.Notes = joinNotes(row.Notes, calibNote)
				}
				if lateNote != "" {
					row.Notes = joinNotes(row.Notes, lateNote)
				}
				if s.cfg.Calibrate != loadgen.CalibrateOff && dataset == nil {
					// Calibration was asked for: a prompt off by more than a
					// token is an error, also when calibration fell back.
					s.checkPromptLength(&row, reqs)
				}
			}
			row.Measurement = measurement
			if ctx.Err() != nil {
				stopErr = context.Cause(ctx)
				row.Status, row.Reason = results.StatusError, stopErr.Error()
			} else if died := serverDied(target, row.Failed > 0); died != nil {
				// The server died during this point: the point carries the
				// death as its reason (not its first broken request's), and
				// the rest are skipped.
				stopErr = died
				row.Status, row.Reason = results.StatusError, died.Error()
			}
			if p.rate == 0 && !p.trace && p.concurrency == 1 && row.Status == results.StatusOK && row.DecodeTokS != nil {
				c1[p.c1Key()] = *row.DecodeTokS
			}
			// Without a measured c=1 row of the cell there is nothing to compare
			// with: speedup and batching efficiency stay nil, never 0.
			if v, ok := c1[p.c1Key()]; ok && p.rate == 0 && v > 0 && row.DecodeTokS != nil {
				row.SpeedupVsC1 = results.Some(*row.DecodeTokS / v)
				row.BatchingEfficiency = results.Some(*row.SpeedupVsC1 / float64(p.concurrency))
			}
			applyCost(&row, target)
			if err := emit(row, reqs); err != nil {
				return row, err
			}
			if len(samples) > 0 && env.EmitSamples != nil {
				if err := env.EmitSamples(samples); err != nil {
					return row, err
				}
			}
			line := fmt.Sprintf("%s %s: %s ttft %s ms, itl p50 %s ms p99 %s ms, %s tok/s, %s req/s %s",
				env.Stage.Name, p.label(), row.Status, opt(row.TTFTMs, 1), opt(row.ITLP50Ms, 2), opt(row.ITLP99Ms, 2), opt(row.DecodeTokS, 0), opt(row.ReqS, 1), row.Reason)
			if measurement > 1 {
				line = strings.Replace(line, p.label()+":", p.label()+" (confirmation):", 1)
			}
			if env.Log != nil {
				fmt.Fprintln(env.Log, line)
			}
			prog.line(line)
			return row, nil
		}
		row, err := measurePoint(1)
		if err != nil {
			return nil, err
		}
		// A row with a check the machine could explain, or that breached
		// its history, is measured once more while the server is up
		// (Env.Confirm); the second is the one judged. A search's probes
		// are not: each is chosen from the rows before it, and a second
		// measurement would change the search (their checks stand as
		// judged; the knee row is still checked against its history).
		if stopErr == nil && s.cfg.Search == nil && env.Confirm(row) {
			if _, err := measurePoint(2); err != nil {
				return nil, err
			}
		}
	}
	arriveSkipped()
	if err := searched.err; err != nil {
		return nil, err
	}
	if stopErr != nil {
		return nil, stopErr
	}
	return &pipeline.Outputs{}, nil
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
			expected = int(math.Ceil(sch.Rate * s.duration.Seconds() * perSession))
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
func (s *Stage) measure(ctx context.Context, t *loadgen.Target, target *pipeline.Outputs, p point, row results.Cell, vocab *loadgen.Vocab, dataset []string, slo schema.SLO, pv *pointView, probes *probeSet) (results.Cell, []results.Request, []results.Sample) {
	row.StartedAt = time.Now().UTC()
	t = s.bounded(t, p)
	// Sending stops the moment the server is known dead, instead of
	// going on into a closed port until the pipeline notices.
	ctx, stopSending := context.WithCancelCause(ctx)
	defer stopSending(nil)
	if target.Done != nil {
		go func() {
			select {
			case <-target.Done:
				stopSending(deathOf(target))
			case <-ctx.Done():
			}
		}()
	}
	_, expected := s.load(p, nil, 0)
	src := &loadgen.PromptSource{
		ISL: p.cell.ISL, SharedPrefix: s.cfg.SharedPrefix, Warm: s.cfg.Prompts == "warm", WarmSet: warmSetSize(expected),
		Seed: uint64(s.cfg.Seed), CellKey: uint64(p.cell.ISL)<<32 | uint64(p.cell.OSL), Vocab: vocab, Dataset: dataset,
		PointKey: loadgen.PointKey(row.Stage+"/"+p.cell.serverVars("/")+repeatKey(p), p.concurrency, p.rate), Shard: s.shard,
	}
	if s.cfg.conversation() {
		src.Turns, src.Conversations = s.maxTurns(), s.convs
	}
	view := s.traceView(p)
	src.Trace = view
	src.Prepare()
	if why := s.traceFits(row, view); why != "" {
		row.Status, row.Reason = results.StatusError, why
		return row, nil, nil
	}
	kit, err := s.newMediaKit(p, s.refs)
	if err != nil {
		row.Status, row.Reason = results.StatusError, err.Error()
		return row, nil, nil
	}
	var body map[string]any
	if s.cfg.ForceOSL && t.Endpoint != loadgen.Embeddings && t.Endpoint != loadgen.Transcriptions {
		body = map[string]any{"ignore_eos": true, "min_tokens": p.cell.OSL}
	}
	maxTokens := p.cell.OSL
	expect := 0
	if body != nil {
		expect = maxTokens // forced: fewer tokens is a stream cut short
	}
	if t.Endpoint == loadgen.Embeddings || t.Endpoint == loadgen.Transcriptions {
		maxTokens = 0
	}
	var mu sync.Mutex
	var firstErr error
	sessionBase := 0 // sessions of the cell's earlier timed passes
	runPass := func(pass int, timed bool) ([]loadgen.Result, time.Duration, sendSpan) {
		counters := &loadgen.Counters{}
		l, expected := s.load(p, counters, pass)
		// Prompts are built a bounded window ahead of the sends (the first
		// window before the pass starts), so building them never delays a
		// scheduled send and nothing grows with the pass's requests
		// (BenchmarkPromptFeed).
		exact := 0
		if l.Duration == 0 && l.MinDuration == 0 {
			exact = expected // the pass sends exactly this many
		}
		if p.v.batch > 1 && exact > 0 {
			exact *= p.v.batch // each request takes batch prompts
		}
		var prompts *promptFeed
		if !s.cfg.conversation() {
			// A conversation builds each turn from the answer before it.
			prompts = newPromptFeed(src, pass, exact)
		}
		var sent []sentResult
		onResult := func(i int, r loadgen.Result) {
			mu.Lock()
			sent = append(sent, sentResult{i, r})
			mu.Unlock()
		}
		pv.pass(pass, timed, expected, counters, s.duration)
		var st loadgen.RunStats
		var err error
		if prompts == nil {
			st, err = loadgen.RunSessions(ctx, t, l, s.conversation(src, pass, sessionBase, maxTokens, body, expect), onResult)
			if timed {
				sessionBase += st.Sessions
			}
		} else {
			st, err = loadgen.Run(ctx, t, l, func(i int) loadgen.Request {
				return s.traceRequest(p, view, i, kit.request(i, prompts.prompt, loadgen.Request{MaxTokens: maxTokens, Body: body, ExpectTokens: expect}))
			}, onResult)
			prompts.stop()
		}
		pv.endPass()
		// Results arrive in completion order; request rows are in send
		// order (their seq is the request's index, docs/RESULTS.md).
		slices.SortFunc(sent, func(a, b sentResult) int { return a.i - b.i })
		rs := make([]loadgen.Result, len(sent))
		for k := range sent {
			rs[k] = sent[k].r
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		// The pass's window: from the schedule's origin (first send) to the
		// last response.
		var last time.Time
		for _, r := range rs {
			if r.Finished.After(last) {
				last = r.Finished
			}
		}
		window := time.Duration(0)
		if !last.IsZero() {
			window = last.Sub(st.Start)
		}
		sp := spanOf(rs)
		sp.held, sp.limit = st.Held, st.InFlightLimit
		return rs, window, sp
	}
	// A pass whose connections failed may have met a dead server whose
	// exit is not reaped yet (its sockets close first): the next pass
	// waits for the verdict instead of sending into a closed port.
	awaitDeath := func(rs []loadgen.Result) {
		if target.Done == nil || ctx.Err() != nil {
			return
		}
		for _, r := range rs {
			if r.Err != nil && r.StatusCode == 0 {
				if died := serverDied(target, true); died != nil {
					stopSending(died)
				}
				return
			}
		}
	}
	var warmTTFT []float64
	pass := 0
	for ; pass < s.cfg.Warmup && ctx.Err() == nil; pass++ {
		rs, _, _ := runPass(pass, false)
		awaitDeath(rs)
		if pass == 0 && len(rs) > 0 {
			row.FirstCallMs = firstCallMs(rs)
		}
		warmTTFT = warmTTFT[:0]
		for _, r := range rs {
			if r.OK() {
				warmTTFT = append(warmTTFT, ms(r.TTFT()))
			}
		}
	}
	var timed []loadgen.Result
	var window time.Duration
	var sends sendSpan
	cpu0, cpuOK := processCPU()
	wait0, waitOK := measure.CPUWait(0)
	serverWait0, serverWaitOK := time.Duration(0), false
	if target.PID > 0 {
		serverWait0, serverWaitOK = measure.CPUWait(target.PID)
	}
	cpuFrom := time.Now()
	// Telemetry over the timed window only: the warm-up's load is not
	// the point's.
	probes.begin(ctx, row.CellID)
	for it := 0; it < s.cfg.Iterations && ctx.Err() == nil; it++ {
		rs, w, sp := runPass(pass+it, true)
		awaitDeath(rs)
		sends.intervals += sp.intervals
		sends.span += sp.span
		sends.held += sp.held
		sends.limit = max(sends.limit, sp.limit)
		if s.cfg.Warmup == 0 && it == 0 && len(rs) > 0 {
			row.FirstCallMs = firstCallMs(rs)
		}
		timed = append(timed, rs...)
		window += w
	}
	if cpu1, ok := processCPU(); ok && cpuOK && window > 0 {
		// The client's own CPU over the timed passes, in cores: in a
		// closed loop send lag is 0 by definition, so this is what shows
		// a client that could not keep up. CPU and wall time are read over
		// the same span (the passes' windows leave out what surrounds
		// them, which the CPU reading does not), and a span too short to
		// say anything (every request refused at once) gives none.
		row.ClientCPUUtil = clientCPUUtil(cpu1-cpu0, time.Since(cpuFrom))
	}
	if wait1, ok := measure.CPUWait(0); ok && waitOK && window > 0 {
		row.ClientCPUWaitMs = results.Some(ms(max(wait1-wait0, 0)))
	}
	if serverWaitOK && window > 0 {
		if wait1, ok := measure.CPUWait(target.PID); ok {
			row.ServerCPUWaitMs = results.Some(ms(max(wait1-serverWait0, 0)))
		}
	}
	if firstErr != nil {
		row.Status, row.Reason = results.StatusError, firstErr.Error()
		return row, nil, probes.end(context.WithoutCancel(ctx), &row)
	}
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		// The server died mid-point: its death is the reason.
		reqs := fillRow(&row, timed, window, sends, warmTTFT, s.cfg, measure.SLO(slo))
		fillMedia(&row, timed, window, s.refs != nil)
		samples := probes.end(context.WithoutCancel(ctx), &row)
		turns.Fill(&row, reqs, turns.ExpectOf(row))
		row.Status, row.Reason = results.StatusError, c.Error()
		return row, reqs, samples
	}
	reqs := fillRow(&row, timed, window, sends, warmTTFT, s.cfg, measure.SLO(slo))
	fillMedia(&row, timed, window, s.refs != nil)
	row.Notes = joinNotes(row.Notes, answeredModelNote(t.Model, timed))
	s.judgeTrace(&row, p, view, timed)
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

// sentResult is a result with its request's index in the pass.
type sentResult struct {
	i int
	r loadgen.Result
}

// firstCallMs is the e2el of the request sent first, or nil when it
// failed: a failure's time is no latency (failed requests stay out of every
// latency figure).
func firstCallMs(rs []loadgen.Result) *float64 {
	if r := firstSent(rs); r.OK() {
		return results.Some(ms(r.E2EL()))
	}
	return nil // the first request failed: not measured
}

// firstSent is the result sent first.
func firstSent(rs []loadgen.Result) *loadgen.Result {
	best := &rs[0]
	for i := range rs {
		if rs[i].Sent.Before(best.Sent) {
			best = &rs[i]
		}
	}
	return best
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
