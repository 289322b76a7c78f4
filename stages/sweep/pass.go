package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// pointRun is one measurement of a point: what its passes send and what
// they found.
type pointRun struct {
	s *Stage
	// ctx ends, besides with the run, when the server is known dead
	// (stopSending: sendUntilDeath).
	ctx         context.Context
	stopSending context.CancelCauseFunc
	t           *loadgen.Target // bounded for the point (Stage.bounded)
	target      *pipeline.Outputs
	p           point
	pv          *pointView
	src         *loadgen.PromptSource
	view        *loadgen.Trace // the trace the point replays (nil: none)
	kit         *mediaKit
	// maxTokens and body go on every request; expect is the output a
	// forced one must reach (0: not forced).
	maxTokens int
	body      map[string]any
	expect    int

	mu       sync.Mutex // guards a pass's results as they arrive
	firstErr error      // the first error a pass's run returned
	// refused is set at the first connection the server refused: nothing
	// listens on its port now, and the point sends no more (a killed
	// Ollama was sent 330 more requests in 7.5 ms before its death was
	// known).
	refused     atomic.Pointer[refusedError]
	sessionBase int // sessions of the cell's earlier timed passes
	// hooks call the engine around each timed pass (hooks.go; nil: none).
	hooks *serverHooks
	// meter follows the timed pass's precision (precision.go; nil: the
	// sweep has no precision target).
	meter *precisionMeter
	// tally folds in the timed passes' results as they finish (tally.go).
	tally resultTally
	// spool takes the timed passes' request rows as they finish, to the
	// run directory (dir): a cell holds none of them (issue 50). seqBase
	// is the send-order index of the current pass's first request.
	dir     string
	spool   *rundir.RequestSpool
	seqBase int
}

// sendUntilDeath is ctx, ended also the moment the server is known dead:
// sending stops then, instead of going on into a closed port until the
// pipeline notices. The caller calls the stop function when done.
func sendUntilDeath(ctx context.Context, target *pipeline.Outputs) (context.Context, context.CancelCauseFunc) {
	ctx, stopSending := context.WithCancelCause(ctx)
	if target.Done != nil {
		go func() {
			select {
			case <-target.Done:
				stopSending(deathOf(target))
			case <-ctx.Done():
			}
		}()
	}
	return ctx, stopSending
}

// promptSource is where the point's prompts come from (built on demand,
// Prepare'd for the trace the point replays); each measurement of the
// point has its own, so every one is as cold as the first.
func (s *Stage) promptSource(p point, stage string, measurement int64, vocab *loadgen.Vocab, dataset []string) *loadgen.PromptSource {
	_, expected := s.load(p, nil, 0)
	src := &loadgen.PromptSource{
		ISL: p.cell.ISL, SharedPrefix: s.cfg.SharedPrefix, Warm: s.cfg.Prompts == "warm", WarmSet: warmSetSize(expected),
		Seed: uint64(s.cfg.Seed), CellKey: p.cell.promptKey(), Vocab: vocab, Dataset: dataset,
		ISLDist: p.cell.ISLDist, OSLDist: p.cell.OSLDist,
		PointKey: loadgen.PointKey(stage+"/"+p.cell.serverVars("/")+repeatKey(p)+measurementKey(measurement), p.concurrency, p.rate), Shard: s.shard,
	}
	if s.cfg.conversation() {
		src.Turns, src.Conversations = s.maxTurns(), s.convs
	}
	src.Trace = s.traceView(p)
	src.Prepare()
	return src
}

// shapeRequests sets what every request of the point asks for: its output
// bound, and with force_osl the body that forces the whole output.
func (pr *pointRun) shapeRequests() {
	t, p := pr.t, pr.p
	pr.maxTokens = p.cell.OSL
	oneBody := t.Endpoint == loadgen.Embeddings || t.Endpoint == loadgen.Transcriptions || t.Endpoint == loadgen.Rerank
	if pr.s.cfg.ForceOSL && !oneBody {
		pr.body = map[string]any{"ignore_eos": true, "min_tokens": p.cell.OSL}
		pr.expect = pr.maxTokens // forced: fewer tokens is a stream cut short
	}
	pr.body = p.addReasoning(pr.body)
	if oneBody {
		pr.maxTokens = 0
	}
}

// passResult is one pass's outcome: a timed pass's request rows in send
// order, its window (from the schedule's origin, the first send, to the
// last response), its sends, and what its results told (passTally; the
// results themselves are not kept).
type passResult struct {
	// reqs are the timed passes' request rows (timedPasses'; nil when none
	// was spooled), in the order they finished; each row's seq is its
	// request's place in the cell's send order.
	reqs   results.Requests
	sent   int // the pass's requests: its rows' seq run from seqBase to seqBase+sent-1
	window time.Duration
	sends  sendSpan
	tally  *passTally
}

// runPass sends one pass of the point's load.
func (pr *pointRun) runPass(pass int, timed bool) passResult {
	s, p := pr.s, pr.p
	counters := &loadgen.Counters{}
	l, expected := s.load(p, counters, pass)
	if timed && pr.meter != nil {
		l.Enough = &pr.meter.enough // the target met ends the pass
	}
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
	if !s.cfg.conversation() && s.cfg.Agent == nil {
		// A conversation builds each turn from the answer before it (an
		// agent each step).
		prompts = newPromptFeed(pr.src, pass, exact)
	}
	pt := &passTally{}
	sent := 0
	onResult := func(i int, r loadgen.Result) {
		var row results.Request
		if timed {
			// Its place in the cell's send order; stage and cell: fillRow.
			row = loadgen.RequestRow(results.Cell{}, int64(pr.seqBase+i), &r)
		}
		pr.mu.Lock()
		pt.add(&r, !timed)
		if timed {
			pr.tally.add(i, &r)
			pr.spool.Add(row)
			sent = max(sent, i+1)
		}
		pr.mu.Unlock()
		if r.Err != nil && errors.Is(r.Err, syscall.ECONNREFUSED) {
			pr.refuse(r.Err)
		}
		if timed {
			pr.meter.add(&row)
		}
	}
	pr.pv.pass(pass, timed, expected, counters, s.duration)
	var st loadgen.RunStats
	var err error
	if s.cfg.Agent != nil {
		st, err = loadgen.RunAgents(pr.ctx, pr.t, l, s.agent(pr.src, pass, pr.sessionBase, pr.maxTokens, pr.body, pr.expect), onResult)
		if timed {
			pr.sessionBase += st.Sessions
		}
	} else if prompts == nil {
		conv := s.conversation(pr.src, pass, pr.sessionBase, pr.maxTokens, pr.body, pr.expect)
		conv.ModelOf = s.newMix(p.cell).sessionModel(pr.src, pass)
		st, err = loadgen.RunSessions(pr.ctx, pr.t, l, conv, onResult)
		if timed {
			pr.sessionBase += st.Sessions
		}
	} else {
		kit, view, maxTokens, body, expect, src := pr.kit, pr.view, pr.maxTokens, pr.body, pr.expect, pr.src
		mix := s.newMix(p.cell)
		st, err = loadgen.Run(pr.ctx, pr.t, l, func(i int) loadgen.Request {
			req := kit.request(i, prompts.prompt, loadgen.Request{MaxTokens: maxTokens, Body: body, ExpectTokens: expect})
			if p.cell.drawn() {
				req = drawLengths(src, pass, i, req)
			}
			if mix != nil {
				req.Model = mix.draw(src, pass, i)
			}
			if c := s.toolCases[req.Prompt]; c != nil {
				req = c.Apply(req) // the line's messages and tools, checked against them
			}
			return s.traceRequest(p, view, i, req)
		}, onResult)
		prompts.stop()
	}
	pr.pv.endPass()
	if err != nil && pr.firstErr == nil {
		pr.firstErr = err
	}
	sp := pt.span()
	sp.held, sp.limit, sp.paced = st.Held, st.InFlightLimit, st.Paced
	return passResult{sent: sent, window: pt.window(st.Start), sends: sp, tally: pt}
}

// refusedError is the cause of a point stopped because the server
// refused a connection.
type refusedError struct {
	addr string
	err  error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("the server refused a connection: nothing listens on %s now (it died or closed its port); the point's remaining requests were not sent (%v)", e.addr, e.err)
}

func (e *refusedError) Unwrap() error { return e.err }

// refuse stops the point's sending at the first refused connection.
func (pr *pointRun) refuse(err error) {
	if pr.refused.CompareAndSwap(nil, &refusedError{addr: pr.t.BaseURL, err: err}) {
		pr.stopSending(pr.refused.Load())
	}
}

// awaitDeath waits for the server's verdict after a pass whose
// connections failed: it may have met a dead server whose exit is not
// reaped yet (its sockets close first), and the next pass should not send
// into a closed port.
func (pr *pointRun) awaitDeath(pt *passTally) {
	if pr.target.Done == nil || pr.ctx.Err() != nil {
		return
	}
	evidence := pt.evidence()
	if evidence == noFailures {
		return
	}
	if died := serverDied(pr.target, evidence); died != nil {
		pr.stopSending(died)
	}
}

// warmUp runs the warm-up passes. It returns how many ran and the last
// one's ttfts (for the row's still-cold note); the first request's
// latency goes on the row.
func (pr *pointRun) warmUp(row *results.Cell) (int, []float64) {
	var warmTTFT []float64
	pass := 0
	for ; pass < pr.s.cfg.Warmup && pr.ctx.Err() == nil; pass++ {
		pt := pr.runPass(pass, false).tally
		pr.awaitDeath(pt)
		if pass == 0 && pt.n > 0 {
			row.FirstCallMs = pt.firstCall
		}
		warmTTFT = pt.warmTTFT
	}
	return pass, warmTTFT
}

// timedPasses runs the timed passes, numbered on from the warm-up's
// first, and sums their windows and sends.
func (pr *pointRun) timedPasses(row *results.Cell, first int) (timed passResult) {
	pr.tally = resultTally{models: modelTally{asked: pr.t.Model}, trace: pr.s.traceTally(pr.p, pr.view)}
	// A new chunk of live rows every slice of a pass of a duration (as
	// its progress lines), every minute of one of a count.
	every := time.Minute
	if pr.s.duration > 0 {
		every = sliceEvery(pr.s.slice, pr.s.duration)
	}
	spool, err := rundir.NewRequestSpool(pr.dir, row.CellID, every)
	if err != nil {
		pr.firstErr = err
		return timed
	}
	pr.spool, pr.seqBase = spool, 0
	defer func() {
		reqs, err := spool.Finish()
		if err != nil {
			spool.Remove()
			if pr.firstErr == nil {
				pr.firstErr = err
			}
			return
		}
		timed.reqs = spooled{reqs, spool}
	}()
	for it := 0; it < pr.s.cfg.Iterations && pr.ctx.Err() == nil; it++ {
		if err := pr.hooks.before(pr.ctx); err != nil {
			pr.firstErr = err
			break
		}
		res := pr.runPass(first+it, true)
		pr.hooks.after(pr.ctx)
		pr.awaitDeath(res.tally)
		timed.sends.intervals += res.sends.intervals
		timed.sends.span += res.sends.span
		timed.sends.held += res.sends.held
		timed.sends.paced += res.sends.paced
		timed.sends.limit = max(timed.sends.limit, res.sends.limit)
		if pr.s.cfg.Warmup == 0 && it == 0 && res.tally.n > 0 {
			row.FirstCallMs = res.tally.firstCall
		}
		pr.seqBase += res.sent
		timed.window += res.window
	}
	return timed
}

// spooled are a cell's spooled request rows, which the sweep removes
// (removeRows) once every consumer has read them.
type spooled struct {
	results.Requests
	spool *rundir.RequestSpool
}

// removeRows deletes spooled rows' file; rows held in memory stay.
func removeRows(reqs results.Requests) {
	if s, ok := reqs.(spooled); ok {
		s.spool.Remove()
	}
}

// cpuMark is the CPU readings at the start of the timed passes: the
// client's CPU time, its and the server's time waiting for a CPU.
type cpuMark struct {
	cpu          time.Duration
	cpuOK        bool
	wait         time.Duration
	waitOK       bool
	serverWait   machine.TaskWaits
	serverWaitOK bool
	from         time.Time
	serverPID    int
}

// markCPU reads the CPU at the start of the timed passes.
func markCPU(serverPID int) cpuMark {
	m := cpuMark{serverPID: serverPID}
	m.cpu, m.cpuOK = processCPU()
	m.wait, m.waitOK = machine.CPUWait(0)
	if serverPID > 0 {
		m.serverWait, m.serverWaitOK = machine.ReadTaskWaits(serverTree(serverPID))
	}
	m.from = time.Now()
	return m
}

// serverTree is a launched server's processes: its pid is the guard's
// (procrun), which sleeps; the server and any workers it forked are below
// it. Reading the guard alone read 0 on every row while llama-server's
// threads had waited 201 and 928 ms for a CPU.
func serverTree(pid int) []int {
	return append([]int{pid}, procrun.Descendants(pid)...)
}

// fill puts the CPU used and waited for since the mark on the row, when
// the timed passes had a window.
func (m cpuMark) fill(row *results.Cell, window time.Duration) {
	if cpu1, ok := processCPU(); ok && m.cpuOK && window > 0 {
		// The client's own CPU over the timed passes, in cores: in a
		// closed loop send lag is 0 by definition, so this is what shows
		// a client that could not keep up. CPU and wall time are read over
		// the same span (the passes' windows leave out what surrounds
		// them, which the CPU reading does not), and a span too short to
		// say anything (every request refused at once) gives none.
		row.ClientCPUUtil = clientCPUUtil(cpu1-m.cpu, time.Since(m.from))
	}
	if wait1, ok := machine.CPUWait(0); ok && m.waitOK && window > 0 {
		row.ClientCPUWaitMs = results.Some(ms(max(wait1-m.wait, 0)))
	}
	if m.serverWaitOK && window > 0 {
		if wait1, ok := machine.ReadTaskWaits(serverTree(m.serverPID)); ok {
			row.ServerCPUWaitMs = results.Some(ms(wait1.WaitedSince(m.serverWait)))
		}
	}
}
