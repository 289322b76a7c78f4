package sweep

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// sweepRun is one Run's state across its points: what it learnt of the
// server, its prompt vocabulary, its c=1 rows, and the error that stopped
// it.
type sweepRun struct {
	s       *Stage
	ctx     context.Context
	env     *pipeline.Env // Run's, emitting through the search's row log
	target  *pipeline.Outputs
	t       *loadgen.Target
	model   string
	points  []point
	dataset []string // nil: synthetic prompts
	prog    *progress

	// vocab sizes the prompts (nil: not calibrated yet, or calibration
	// failed, which calibNote then says).
	vocab     *loadgen.Vocab
	calibNote string
	// info is what the server said it is; discovered once it was asked
	// (again after every restart).
	info       loadgen.ServerInfo
	discovered bool
	probes     *probeSet
	c1         map[string]float64      // decode_tok_s at concurrency 1, per cell key and repeat
	refused    *refusedError           // the measured point's refused connection (judgeStop)
	lastRate   map[string]results.Cell // each cell's last ok rate row (noteSaturation)
	// stopErr ends the sweep: the rest of the points are skipped rows.
	stopErr error
	// repeats stops each point's repeats once precise (repeats_until,
	// precision.go; nil: every repeat is measured).
	repeats *repeatTracker
	// pending is the cell whose start the other shards of a sharded run
	// have not been told of yet: a shard arrives at every cell's start
	// (Env.CellStart), measuring it or not, so that cells go in lockstep
	// and no peer waits for a cell this shard skipped.
	pending string
}

// sweepCell is one point as Run measures it: its place in the sequence,
// its id, the row every measurement of it starts from, and where its rows
// go.
type sweepCell struct {
	idx  int
	p    point
	id   string
	base results.Cell
	emit func(results.Cell, results.Requests) error
}

// arriveSkipped tells the other shards this one reached the pending
// cell's start without measuring it.
func (r *sweepRun) arriveSkipped() {
	if r.pending == "" {
		return
	}
	if _, err := r.env.CellStart(r.ctx, r.pending); err != nil && r.stopErr == nil {
		r.stopErr = err
	}
	r.pending = ""
}

// cell measures the sequence's point i, or emits the row that says why it
// was not measured. Its error is one that ends the sweep at once (a row
// that could not be stored).
func (r *sweepRun) cell(i int, p point) error {
	r.arriveSkipped()
	id := cellID(r.env.Stage.Name, p)
	r.pending = id
	if r.env.CellDone(id) {
		if row, ok := earlierRow(r.env, r.env.Stage.Name, id); ok {
			r.repeats.judge(p, &row) // its repeat counts toward repeats_until
		}
		return nil // finished in the run being resumed
	}
	c := &sweepCell{idx: i, p: p, id: id, base: r.baseRow(p, id), emit: r.emitter(p)}
	if why := r.skipReason(p); why != "" {
		return c.emit(unmeasured(c.base, results.StatusSkipped, why), nil)
	}
	if err := r.restart(c); err != nil {
		r.stopErr = err
		return c.emit(unmeasured(c.base, results.StatusError, err.Error()), nil)
	}
	r.discover()
	r.describeServer(&c.base)
	// A cell that cannot fit the context is refused before any request
	// is sent: every request would come back HTTP 400 (or, on Ollama,
	// be silently truncated).
	if why := doesNotFit(p.cell, r.s.cfg.Endpoint, r.s.contextTurns(), r.info, r.env.Plan); why != "" {
		row := unmeasured(c.base, results.StatusError, why)
		applyCost(&row, r.target)
		if err := c.emit(row, nil); err != nil {
			return err
		}
		r.prog.line(fmt.Sprintf("%s %s: error %s", r.env.Stage.Name, p.label(), why))
		return nil
	}
	r.calibrate()
	row, err := r.measurePoint(c, 1)
	if err != nil {
		return err
	}
	// A row with a check the machine could explain, or that breached
	// its history, is measured once more while the server is up
	// (Env.Confirm); the second is the one judged. A search's probes
	// are not: each is chosen from the rows before it, and a second
	// measurement would change the search (their checks stand as
	// judged; the knee row is still checked against its history).
	if r.stopErr == nil && r.s.cfg.Search == nil && r.env.Confirm(row) {
		if _, err := r.measurePoint(c, 2); err != nil {
			return err
		}
	}
	return nil
}

// baseRow is the row every outcome of the point starts from: what was
// asked for, and the server as known so far.
func (r *sweepRun) baseRow(p point, id string) results.Cell {
	s := r.s
	base := results.Cell{
		Stage: r.env.Stage.Name, CellID: id, Model: r.model, Engine: r.target.Engine,
		Endpoint: s.cfg.Endpoint, ISL: int64(p.cell.ISL), OSL: int64(p.cell.OSL), Concurrency: int64(p.concurrency),
		Rate: p.rate, MaxInflight: int64(s.cfg.MaxInflight), EngineVersion: engineVersion(r.info, r.target), Repeat: int64(p.repeat),
		Batch: int64(p.v.batch), Images: int64(p.v.images), ImageResolution: p.v.res, AudioSeconds: p.v.audio,
		Shard: int64(s.shard), Shards: int64(s.shards), Reasoning: s.reasoningLabel(p),
	}
	if p.cell.ISLDist != nil {
		base.ISLDist = p.cell.ISLDist.Label()
	}
	if p.cell.OSLDist != nil {
		base.OSLDist = p.cell.OSLDist.Label()
	}
	if s.cfg.conversation() {
		base.Turns = results.Some(int64(s.maxTurns()))
		base.ThinkTimeMs = results.Some(ms(s.thinkTime))
	}
	s.agentBase(&base)
	if ms := s.mixOf(p.cell); len(ms) > 0 {
		base.Model = mixLabel(ms) // the pooled row; each model's row names its own
	}
	if p.rate > 0 {
		base.Arrival = s.cfg.Arrival
		if s.cfg.Arrival == loadgen.ArrivalGamma {
			base.Burstiness = s.cfg.Burstiness
		}
	}
	s.stampPoint(&base, p)
	return base
}

// emitter is where the point's rows go: with server variables, every row
// of the cell says which server it measured.
func (r *sweepRun) emitter(p point) func(results.Cell, results.Requests) error {
	env := r.env
	if len(p.cell.Server) == 0 {
		return env.Emit
	}
	note := "server: " + p.cell.serverVars(" ")
	return func(row results.Cell, reqs results.Requests) error {
		row.Notes = joinNotes(note, row.Notes)
		return env.Emit(row, reqs)
	}
}

// skipReason says why the point is skipped before the server is touched
// ("" when it is not): this shard has none of its load, or the sweep has
// stopped.
func (r *sweepRun) skipReason(p point) string {
	s := r.s
	if p.rate == 0 && !p.trace && loadgen.SplitCount(p.concurrency, s.shard, s.shards) == 0 {
		// Fewer sessions than shards: this shard has none of the
		// cell's; the others' rows hold it (benchrun merge).
		return fmt.Sprintf("shard %d/%d: no session of the cell's %d", s.shard, s.shards, p.concurrency)
	}
	if r.stopErr != nil {
		// Short: the full reason is on the row where the sweep
		// stopped (and in the stage's reason), not repeated on each.
		why := pipeline.OneLine(r.stopErr.Error())
		if rs := []rune(why); len(rs) > 160 {
			why = string(rs[:157]) + "…"
		}
		return "not run: " + why
	}
	return ""
}

// unmeasured is the point's row when it is not measured: its status and
// reason alone.
func unmeasured(base results.Cell, status, reason string) results.Cell {
	row := base
	row.StartedAt = time.Now().UTC()
	row.Status, row.Reason = status, reason
	return row
}

// restart restarts the server with the cell's variables when the target
// restarts per cell; the fresh server's start-up goes on the cell's rows.
func (r *sweepRun) restart(c *sweepCell) error {
	if r.target.Restart == nil {
		return nil
	}
	if err := r.target.Restart(r.ctx, c.p.cell.Server); err != nil {
		return fmt.Errorf("restarting the server before the cell %s: %w", c.p.label(), err)
	}
	if r.target.StartupS != nil {
		// The fresh server's start-up belongs to the cell measured on it.
		c.base.StartupS = r.target.StartupS()
	}
	return nil
}

// discover learns what the server is and how long a request may be
// (after every restart: a cell's server flags may change the context),
// and opens the telemetry probes on it.
func (r *sweepRun) discover() {
	if r.discovered && r.target.Restart == nil {
		return
	}
	r.info = loadgen.Discover(r.ctx, r.t, r.target.Engine)
	r.discovered = true
	// The probes follow the server: a restarted one is a new
	// process, maybe on other metrics.
	r.probes.close()
	engine := r.target.Engine
	if engine == "" || engine == engines.Custom.Name {
		engine = r.info.Engine
	}
	r.probes = r.s.openProbes(r.env, r.target, engine, r.t.Headers, r.t.APIKey)
}

// describeServer puts what the server said of itself on the row.
func (r *sweepRun) describeServer(base *results.Cell) {
	if (base.Engine == "" || base.Engine == engines.Custom.Name) && r.info.Engine != "" {
		// A launch without a preset says "custom"; the server said more.
		base.Engine = r.info.Engine
	}
	base.EngineVersion = engineVersion(r.info, r.target)
	limit := contextLimit(r.info, r.env.Plan)
	base.MaxModelLen = results.SomeIf(limit > 0, int64(limit)) // nil: unknown
}

// calibrate sizes prompts once, lazily (after any restart), unless
// prompts come from a dataset or calibration is off.
func (r *sweepRun) calibrate() {
	if r.vocab == nil && r.s.cfg.Endpoint == "transcriptions" {
		r.vocab = loadgen.AssumedVocab() // no prompts to size
	}
	if r.vocab == nil {
		r.vocab, r.calibNote = r.s.calibrate(r.ctx, r.t, r.dataset != nil, r.info)
	}
}

// measurePoint measures the point once and emits its row; the second time
// (a confirmation) as measurement 2.
func (r *sweepRun) measurePoint(c *sweepCell, measurement int64) (results.Cell, error) {
	row, reqs, samples := r.measureOnce(c, measurement)
	defer removeRows(reqs) // read by every consumer when emitted
	row.Measurement = measurement
	r.judgeStop(&row)
	r.compareWithC1(&row, c.p)
	r.noteSaturation(&row, c.p)
	r.repeats.judge(c.p, &row)
	applyCost(&row, r.target)
	if err := c.emit(row, reqs); err != nil {
		return row, err
	}
	if err := r.emitModelRows(c, row, reqs); err != nil {
		return row, err
	}
	if len(samples) > 0 && r.env.EmitSamples != nil {
		if err := r.env.EmitSamples(samples); err != nil {
			return row, err
		}
	}
	r.report(c.p, row, measurement)
	return row, nil
}

// measureOnce is the point's row from one measurement, or an error row
// when it cannot start: no vocabulary to size prompts with, or a peer
// shard gone.
func (r *sweepRun) measureOnce(c *sweepCell, measurement int64) (results.Cell, results.Requests, []results.Sample) {
	if r.vocab == nil {
		return unmeasured(c.base, results.StatusError, r.calibNote), nil, nil
	}
	lateNote, err := r.s.startCell(r.ctx, r.env, c.id, &r.pending)
	if err != nil {
		// A peer shard is gone: this cell can no longer start in
		// step with the others, nor can the rest.
		if r.stopErr == nil {
			r.stopErr = err
		}
		return unmeasured(c.base, results.StatusError, "not started: "+err.Error()), nil, nil
	}
	pv := r.prog.point(c.idx+1, pointsTotal(r.s, r.points), c.p.label())
	pv.slice = r.s.slice
	pv.watch(r.env.Live, r.env.Stage.Name, c.id)
	base := c.base
	base.Measurement = measurement // its own prompts (measurementKey)
	row, reqs, samples := r.measure(c.p, base, pv)
	if r.calibNote != "" {
		row.Notes = joinNotes(row.Notes, r.calibNote)
	}
	if lateNote != "" {
		row.Notes = joinNotes(row.Notes, lateNote)
	}
	if r.s.cfg.Calibrate != loadgen.CalibrateOff && r.dataset == nil {
		// Calibration was asked for: a prompt off by more than a
		// token is an error, also when calibration fell back.
		r.s.checkPromptLength(&row, reqs)
	}
	return row, reqs, samples
}

// judgeStop makes the row an error and stops the sweep when the run ended
// or the server died while the point was measured.
func (r *sweepRun) judgeStop(row *results.Cell) {
	if r.ctx.Err() != nil {
		r.stopErr = context.Cause(r.ctx)
		row.Status, row.Reason = results.StatusError, r.stopErr.Error()
	} else if died := serverDied(r.target, r.deathEvidence(*row)); died != nil {
		// The server died during this point: the point carries the
		// death as its reason (not its first broken request's), and
		// the rest are skipped.
		r.stopErr = died
		row.Status, row.Reason = results.StatusError, died.Error()
	} else if r.refused != nil {
		// Nothing listens on the server's port (a URL target benchrun
		// did not launch, or a launched one that closed it): every
		// later point would fail on refused connections; they are
		// skipped with the reason.
		r.stopErr = r.refused
		row.Status, row.Reason = results.StatusError, r.refused.Error()
	}
	r.refused = nil
}

// noteSaturation notes, on a rate ladder's row (no search: a search
// judges its probes itself), that the server is saturated at its rate,
// against the cell's measured point just below (the search's rule,
// saturation): a ladder run past what the server serves said nothing of
// it. Each cell's last ok rate row is kept for the next.
func (r *sweepRun) noteSaturation(row *results.Cell, p point) {
	if p.rate <= 0 || p.trace || r.s.cfg.Search != nil || row.Status != results.StatusOK {
		return
	}
	if r.lastRate == nil {
		r.lastRate = map[string]results.Cell{}
	}
	key := p.c1Key()
	if below, ok := r.lastRate[key]; ok && below.Rate < p.rate {
		if why := saturation(row, p.rate, &below, below.Rate, overRate, r.s.cfg.Iterations); why != "" {
			row.Notes = joinNotes(row.Notes, "saturated: "+why)
		}
	}
	r.lastRate[key] = *row
}

// deathEvidence is what the point saw of a server that may have died: a
// refused connection (nothing listens on its port: a launched server's
// death waits longest to be reaped), failed requests, or none.
func (r *sweepRun) deathEvidence(row results.Cell) deathEvidence {
	if r.refused != nil {
		return refusedConnections
	}
	return failuresOf(row)
}

// compareWithC1 keeps a c=1 row's decode rate and measures a closed-loop
// row's speedup against its cell's.
func (r *sweepRun) compareWithC1(row *results.Cell, p point) {
	if p.rate == 0 && !p.trace && p.concurrency == 1 && row.Status == results.StatusOK && row.DecodeTokS != nil {
		r.c1[p.c1Key()] = *row.DecodeTokS
	}
	// Without a measured c=1 row of the cell there is nothing to compare
	// with: speedup and batching efficiency stay nil, never 0.
	if v, ok := r.c1[p.c1Key()]; ok && p.rate == 0 && v > 0 && row.DecodeTokS != nil {
		row.SpeedupVsC1 = results.Some(*row.DecodeTokS / v)
		row.BatchingEfficiency = results.Some(*row.SpeedupVsC1 / float64(p.concurrency))
	}
}

// report prints the point's summary line to the log and the progress
// stream.
func (r *sweepRun) report(p point, row results.Cell, measurement int64) {
	env := r.env
	line := fmt.Sprintf("%s %s: %s ttft %s ms, itl p50 %s ms p99 %s ms, %s tok/s, %s req/s %s",
		env.Stage.Name, p.label(), row.Status, opt(row.TTFTMs, 1), opt(row.ITLP50Ms, 2), opt(row.ITLP99Ms, 2), opt(row.DecodeTokS, 0), opt(row.ReqS, 1), row.Reason)
	if measurement > 1 {
		line = strings.Replace(line, p.label()+":", p.label()+" (confirmation):", 1)
	}
	if env.Log != nil {
		fmt.Fprintln(env.Log, line)
	}
	r.prog.line(line)
}
