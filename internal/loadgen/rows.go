package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// RequestRows turns a cell's results into its raw request rows, in send
// order (seq is the index in rs): every stage that measures with the load
// generator (sweep, validate) stores its requests this way. A failed
// request has no ttft or e2el: nil, not 0.
func RequestRows(cell results.Cell, rs []Result) []results.Request {
	out := make([]results.Request, 0, len(rs))
	for i := range rs {
		out = append(out, RequestRow(cell, int64(i), &rs[i]))
	}
	return out
}

// RequestRow is one result's request row, seq its index in the cell's
// send order: a sweep builds each row the moment its request finishes
// and keeps no result (it folds in what its row's notes need).
func RequestRow(cell results.Cell, i int64, r *Result) results.Request {
	q := results.Request{
		Stage: cell.Stage, CellID: cell.CellID, Seq: i, ResponseID: r.ResponseID,
		SentAt: r.Sent.UTC(), SendLagMs: millis(r.SendLag()),
		InputTokens: int64(r.InputTokens), OutputTokens: int64(r.OutputTokens), Chunks: int64(len(r.Tokens)),
		Status: results.StatusOK, UsageReported: r.UsageReported, ConnRetries: int64(r.ConnRetries),
	}
	q.ISL, q.OSL = results.SomeIf(r.ISL > 0, int64(r.ISL)), results.SomeIf(r.OSL > 0, int64(r.OSL))
	q.Model = r.AskedModel
	if r.Turn > 0 {
		q.Session, q.Turn = results.Some(int64(r.Session)), results.Some(int64(r.Turn))
		q.HistoryTokens = results.SomeIf(r.HistoryKnown, int64(r.HistoryTokens))
	}
	if r.Step > 0 {
		q.Session, q.Step = results.Some(int64(r.Session)), results.Some(int64(r.Step))
		q.ToolMs = results.Some(millis(r.ToolTime))
	}
	if r.OK() && r.CachedReported {
		q.CachedTokens = results.Some(int64(r.CachedTokens))
	}
	if r.OK() {
		q.TTFTMs, q.E2ELMs = results.Some(millis(r.TTFT())), results.Some(millis(r.E2EL()))
		q.TTFTSchedMs, q.E2ELSchedMs = results.Some(*q.TTFTMs+q.SendLagMs), results.Some(*q.E2ELMs+q.SendLagMs)
		q.ChunkGapsMs = make([]float64, 0, max(len(r.Tokens)-1, 0))
		q.ChunkTokens = chunkTokens(r.Tokens)
		for k := range r.Tokens {
			if k > 0 {
				q.ChunkGapsMs = append(q.ChunkGapsMs, millis(r.Tokens[k].At.Sub(r.Tokens[k-1].At)))
			}
		}
		reasoningRow(&q, r)
		toolRow(&q, &r.Check)
		if len(r.StampDelays) > 0 {
			q.StampDelaysMs = make([]float64, len(r.StampDelays))
			for k, d := range r.StampDelays {
				q.StampDelaysMs[k] = millis(d)
			}
		}
	} else {
		q.Status, q.Error = results.StatusError, r.Err.Error()
	}
	return q
}

// reasoningRow sets a completed request's reasoning columns: the first
// answer and reasoning times, the split of its output (nil when a whole
// answer carried reasoning without a count) and whether it answered.
func reasoningRow(q *results.Request, r *Result) {
	if d, ok := r.TTFO(); ok {
		q.TTFOMs = results.Some(millis(d))
	}
	if d, ok := r.TTFR(); ok {
		q.TTFRMs = results.Some(millis(d))
	}
	if d, ok := r.TTFTC(); ok {
		q.TTFTCMs = results.Some(millis(d))
	}
	if d, ok := r.lastOf(EventReasoning); ok {
		q.ReasoningEndMs = results.Some(millis(d))
	}
	q.ReasoningSource = r.ReasoningSource
	switch r.ReasoningSource {
	case "":
		// An answer shape without reasoning (embeddings, transcriptions).
		q.ReasoningTokens, q.AnswerTokens = results.Some(int64(0)), results.Some(int64(r.OutputTokens))
	case ReasoningUnknown:
	default:
		q.ReasoningTokens, q.AnswerTokens = results.Some(int64(r.ReasoningTokens)), results.Some(int64(r.AnswerTokens))
	}
	q.Answered = results.Some(r.Answered())
}

// toolRow sets a completed request's tool-call and structured-output
// columns: the counts when it offered tools or made a call, the answer's
// check when it asked for structured output (NULL otherwise).
func toolRow(q *results.Request, c *ToolCheck) {
	if c.ToolsOffered || c.ToolCalls > 0 {
		q.ToolCalls = results.Some(int64(c.ToolCalls))
		q.ToolCallsJSON = results.Some(int64(c.ToolCallsJSON))
		q.ToolCallsValid = results.Some(int64(c.ToolCallsValid))
	}
	if c.FormatAsked {
		q.AnswerJSON, q.AnswerValid = results.Some(c.AnswerJSON), results.Some(c.AnswerValid)
	}
	q.AnswerInvalidReason = c.Invalid
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// chunkTokens is a row's chunk_tokens: the tokens each event carried.
// When every event carried one (most streams, one token an event), it is
// a view of a shared run of ones instead of 8 bytes an event the row
// holds until its cell ends (issue 50: 512 bytes of a request of 64
// tokens). Rows are never written in place, so the view is never changed;
// its capacity is its length, so an append copies.
func chunkTokens(events []TokenEvent) []int64 {
	allOne := true
	for k := range events {
		if events[k].Tokens != 1 {
			allOne = false
			break
		}
	}
	if allOne {
		return sharedOnes(len(events))
	}
	out := make([]int64, len(events))
	for k := range events {
		out[k] = int64(events[k].Tokens)
	}
	return out
}

// ones is the run of ones sharedOnes cuts from, grown (replaced by a
// longer one) when a stream has more events than it holds.
var ones atomic.Pointer[[]int64]

func sharedOnes(n int) []int64 {
	if p := ones.Load(); p != nil && len(*p) >= n {
		return (*p)[:n:n]
	}
	run := make([]int64, max(n, 4096))
	for k := range run {
		run[k] = 1
	}
	ones.Store(&run)
	return run[:n:n]
}
