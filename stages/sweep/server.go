package sweep

import (
	"errors"
	"fmt"
	"github.com/benchrun/benchrun/internal/procrun"
	"math"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// engineVersion is the version for the rows: the server's own answer,
// else what the launch stage learned from the command, else "unknown".
func engineVersion(info loadgen.ServerInfo, target *pipeline.Outputs) string {
	if info.Version != "" {
		return info.Version
	}
	if target.EngineVersion != "" {
		return target.EngineVersion
	}
	return "unknown"
}

// contextLimit is the context one request may use: what the server said,
// else the plan's model.max_model_len (0: unknown; the row's max_model_len
// is then null).
func contextLimit(info loadgen.ServerInfo, plan *schema.Plan) int {
	if info.MaxModelLen > 0 {
		return info.MaxModelLen
	}
	if plan != nil {
		return plan.Model.MaxModelLen
	}
	return 0
}

// doesNotFit says why a cell cannot run on this server ("" when it can or
// nobody knows): its prompt and output do not fit one request's context.
func doesNotFit(c Cell, endpoint string, turns int, info loadgen.ServerInfo, plan *schema.Plan) string {
	limit := contextLimit(info, plan)
	if limit <= 0 {
		return ""
	}
	need := c.contextNeed(endpoint)
	what := "isl+osl"
	if turns > 1 {
		// The last turn carries every earlier turn's prompt and answer.
		need *= turns
		what = fmt.Sprintf("turns × (isl+osl) = %d ×", turns)
		if need > limit {
			return fmt.Sprintf("%s %d = %d does not fit the server's context of %d tokens per request (%s): the last turn's history would not fit; not sent", what, c.contextNeed(endpoint), need, limit, contextFrom(info))
		}
		return ""
	}
	if need <= limit {
		return ""
	}
	return fmt.Sprintf("%s = %d does not fit the server's context of %d tokens per request (%s); not sent", what, need, limit, contextFrom(info))
}

// contextFrom says where the context limit came from.
func contextFrom(info loadgen.ServerInfo) string {
	if info.MaxModelLen <= 0 {
		return "model.max_model_len in the plan"
	}
	return info.ContextFrom
}

// contextTurns is how many turns' prompts and answers the last request of
// a session holds, for the context check: turns with synthetic prompts,
// else 1 (a dataset's lengths are its own).
func (s *Stage) contextTurns() int {
	if s.cfg.Turns > 1 && s.synthetic() {
		return s.cfg.Turns
	}
	return 1
}

// maxTurns is the most turns a session sends: turns, or the longest
// conversation of the dataset (at most turns when both are given).
func (s *Stage) maxTurns() int {
	if len(s.convs) == 0 {
		return max(s.cfg.Turns, 1)
	}
	n := 0
	for _, c := range s.convs {
		n = max(n, len(c))
	}
	if s.cfg.Turns > 0 {
		n = min(n, s.cfg.Turns)
	}
	return n
}

// meanTurns is the turns a session sends on average (the pass's default
// request count).
func (s *Stage) meanTurns() float64 {
	if len(s.convs) == 0 {
		return float64(max(s.cfg.Turns, 1))
	}
	sum := 0
	for _, c := range s.convs {
		sum += min(len(c), s.maxTurns())
	}
	return float64(sum) / float64(len(s.convs))
}

// deathEvidence is what a point saw that may mean its server died.
type deathEvidence int

const (
	noFailures deathEvidence = iota
	// failedRequests: some requests failed, for any reason.
	failedRequests
	// refusedConnections: the server's port refused a connection. A
	// local server that closed its listener is dying even while a child
	// of its (a model runner) lives on in its process group.
	refusedConnections
)

// failuresOf is what a measured row says of its server: failed requests,
// or none. (A pass that met refused connections waited for the verdict
// already: awaitDeath.)
func failuresOf(row results.Cell) deathEvidence {
	if row.Failed > 0 {
		return failedRequests
	}
	return noFailures
}

// serverDied reports the target's death. When the point had failures the
// death may not be reaped yet (the sockets close before the exit status
// is known), so it waits for it: as long as reaping takes when a local
// server's processes are gone or its port refused connections, a little
// when it cannot tell.
func serverDied(target *pipeline.Outputs, evidence deathEvidence) error {
	if target.Done == nil {
		return nil
	}
	select {
	case <-target.Done:
		return deathOf(target)
	default:
	}
	if evidence == noFailures {
		return nil
	}
	// A local server's process group tells at once: alive, nothing to wait
	// for (unless its port refused connections); gone, its death is
	// certain and only waits to be reaped, which on a busy machine may take
	// a while.
	wait := 500 * time.Millisecond
	if target.PID > 0 {
		if gone, known := procrun.GroupGone(target.PID); known {
			if !gone && evidence != refusedConnections {
				return nil
			}
			wait = 10 * time.Second
		}
	}
	select {
	case <-target.Done:
		return deathOf(target)
	case <-time.After(wait):
		return nil
	}
}

// errServerDied is the cause of a point stopped by the server's death.
var errServerDied = errors.New("server died")

func deathOf(target *pipeline.Outputs) error {
	reason := "exited"
	if target.DoneReason != nil {
		reason = target.DoneReason()
	}
	return fmt.Errorf("%w: %s", errServerDied, reason)
}

// checkPromptLength turns a cell whose prompts did not come out at isl
// (within a token) into an error: the cell is not the shape asked for, and
// saying so only in the notes let 375-token prompts pass as "128".
func (s *Stage) checkPromptLength(row *results.Cell, reqs results.Requests) {
	isl := promptISL(*row, reqs)
	if s.agentGraph != nil {
		return // each step has its recorded length, not the cell's isl
	}
	if row.Status != results.StatusOK || isl == nil || row.ISL <= 0 || row.Endpoint == "embeddings" || row.Endpoint == "rerank" || row.Images > 0 {
		// Embeddings: per input (fillMedia); images: media tokens on top.
		return
	}
	if row.ISLDist != "" {
		checkDrawnPrompts(row, reqs)
		return
	}
	if d := math.Abs(*isl - float64(row.ISL)); d > 1 {
		what := "prompts"
		if row.Turns != nil {
			what = "first turns"
		}
		if row.MaxSteps != nil {
			what = "first steps"
		}
		row.Status = results.StatusError
		row.Reason = fmt.Sprintf("%s came out at %.1f tokens for isl %d (off by %.1f): the calibration did not hold for this server", what, *isl, row.ISL, d)
	}
}

// promptISL is the mean prompt the calibration sized: effective_isl, or
// in a conversation the first turns' (later turns add the history), in
// an agent cell the first steps'.
func promptISL(row results.Cell, reqs results.Requests) *float64 {
	if row.Turns == nil && row.MaxSteps == nil || reqs == nil {
		return row.EffectiveISL
	}
	sum, n := 0.0, 0
	for r := range reqs.All() {
		first := r.Turn != nil && *r.Turn == 1 || r.Step != nil && *r.Step == 1
		if first && r.Status == results.StatusOK {
			sum += float64(r.InputTokens)
			n++
		}
	}
	return results.SomeIf(n > 0, sum/float64(max(n, 1)))
}

func calibrationNote(v *loadgen.Vocab) string {
	note := fmt.Sprintf("prompt length calibrated by %s (%d single-token and %d multi-token words, %d tokens of overhead, %d requests)", v.Method, len(v.Words), len(v.Multi), v.Overhead, v.Requests)
	if v.Fallback != "" {
		note += ": " + v.Fallback
	}
	return note
}

// sendSpan is the send window of timed passes: intervals between
// consecutive sends and the time they spanned.
type sendSpan struct {
	intervals int
	span      time.Duration
	// held requests waited for the client's own in-flight limit (limit,
	// loadgen.InFlightLimit) before they were sent.
	held, limit int
	// paced requests of short requests waited for one in flight to end:
	// in flight was at what the server had been turning over
	// (loadgen.RunStats.Paced).
	paced int
}

// ContextWarnings implements pipeline.ContextUser: the cells whose prompt
// and output cannot fit contextLength (the model file's own context).
func (s *Stage) ContextWarnings(p *schema.Plan, contextLength int, source string) []schema.Error {
	if s.isTrace() {
		return nil // the cells are not measured; the trace's lengths are checked when it is read
	}
	var ws []schema.Error
	for i, c := range s.cfg.Cells {
		need := c.contextNeed(s.cfg.Endpoint) * s.contextTurns()
		if need > contextLength {
			ws = append(ws, schema.Error{Pos: s.spec.PosOf("cells", fmt.Sprint(i)),
				Msg: fmt.Sprintf("stages.%s.cells.%d: isl+osl = %d cannot fit %s (%d tokens); the cell will be refused before any request unless the server extends the context", s.spec.Name, i, need, source, contextLength)})
		}
	}
	return ws
}

// perTokenBound is the slowest output a default request bound allows: an
// engine slower than one token a second for a whole output is not serving.
const perTokenBound = time.Second

// bounded gives the point's requests their limits: the first-token
// timeout (default: the stall timeout) and a whole-request bound (default:
// first-token timeout + osl × perTokenBound), so that no request can run
// forever on a server that sends keep-alive comments and no token.
func (s *Stage) bounded(t *loadgen.Target, p point) *loadgen.Target {
	b := *t
	b.FirstTokenTimeout = s.firstTokenTimeout
	if b.FirstTokenTimeout == 0 {
		b.FirstTokenTimeout = s.stallTimeout
	}
	if b.Timeout == 0 && b.FirstTokenTimeout > 0 {
		b.Timeout = b.FirstTokenTimeout + time.Duration(max(p.cell.maxOSL(), s.traceMaxOutput(p), 1))*perTokenBound
	}
	return &b
}

// contextNeed is the context a request of the cell uses: prompt and output
// (an embedding has no output).
func (c Cell) contextNeed(endpoint string) int {
	switch endpoint {
	case "embeddings":
		return c.ISL
	case "rerank":
		return 2 * c.ISL // a query and a document, scored as one sequence
	}
	return c.maxISL() + c.maxOSL()
}
