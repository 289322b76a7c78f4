package sweep

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
)

// A pass folds each request's result in the moment it finishes and keeps
// no result (issue 50: a result held until its cell's end was 1.4 KB of
// the 3.1 KB a streamed request of 64 tokens held): the cell's request
// rows are what it keeps, and what the row's notes and the point's
// bookkeeping need of the results is tallied here.

// resultTally is what a point's row needs of its timed results beyond
// their request rows: the stamp and transport notes, where the token
// counts came from, the media figures, the models that answered and the
// prompts a trace replay got off its lengths.
type resultTally struct {
	stamps loadgen.StampTally
	sends  loadgen.SendTally
	tokens tokenTally
	media  mediaTally
	models modelTally
	trace  traceTally
}

// add folds in request i of a timed pass (i: its index in the pass).
func (t *resultTally) add(i int, r *loadgen.Result) {
	t.stamps.Add(r)
	t.sends.Add(r)
	t.tokens.add(r)
	t.media.add(r)
	t.models.add(r)
	t.trace.add(i, r)
}

// tallyResults folds rs in send order (tests, and a caller that holds
// its results); traceTally is left without a trace.
func tallyResults(rs []loadgen.Result, askedModel string) *resultTally {
	t := &resultTally{models: modelTally{asked: askedModel}}
	for i := range rs {
		t.add(i, &rs[i])
	}
	return t
}

// tokenTally is where the completed requests' token counts came from, and
// a conversation's first turns (their prompts and count).
type tokenTally struct {
	counted, estimated, continuous int
	firstIn                        float64
	firstN                         int
	// askedIn and askedOut sum the lengths drawn for the completed
	// requests (a cell drawing them; 0: none drawn), offIn counts those
	// whose prompt the server counted more than a token off its draw.
	askedIn, askedOut float64
	offIn             int
}

func (t *tokenTally) add(r *loadgen.Result) {
	if !r.OK() {
		return
	}
	switch {
	case !r.UsageReported:
		t.counted++
	case r.ContinuousUsage:
		t.continuous++
	case r.TokensEstimated:
		t.estimated++
	}
	if r.Turn == 1 || r.Step == 1 { // a conversation's first turns, an agent's first steps
		t.firstIn += float64(r.InputTokens)
		t.firstN++
	}
	t.askedIn += float64(r.ISL)
	t.askedOut += float64(r.OSL)
	if r.ISL > 0 && abs(r.InputTokens-r.ISL) > 1 {
		t.offIn++
	}
}

func abs(x int) int { return max(x, -x) }

// mediaTally is what embeddings, rerank and transcription points measure
// of their completed requests (fillMedia), and the hint a refused embed
// gives.
type mediaTally struct {
	in, vectors, audio, docs float64
	dim                      int
	cos, rtf                 []float64 // one per reference vector, one per audio request
	hint                     string
}

func (m *mediaTally) add(r *loadgen.Result) {
	if !r.OK() {
		if m.hint == "" {
			m.hint = embeddingsHint(r)
		}
		return
	}
	m.in += float64(r.InputTokens)
	m.vectors += float64(r.Vectors)
	m.docs += float64(r.Documents)
	if r.Dimensions > 0 {
		m.dim = r.Dimensions
	}
	m.cos = append(m.cos, r.Cosines...)
	if r.AudioSeconds > 0 {
		m.audio += r.AudioSeconds
		m.rtf = append(m.rtf, r.E2EL().Seconds()/r.AudioSeconds)
	}
}

// embeddingsHint says what to change when a server refuses to embed:
// llama-server answers 501 without --embeddings and 400 with --pooling
// none, and the fix is in its command line, not in the plan's sweep.
func embeddingsHint(r *loadgen.Result) string {
	var he *loadgen.HTTPError
	if !errors.As(r.Err, &he) {
		return ""
	}
	msg := strings.ToLower(he.Body)
	if (he.Status == 501 || he.Status == 400) && (strings.Contains(msg, "--embeddings") || strings.Contains(msg, "pooling")) {
		args := strings.Join(engines.LlamaServer.EmbeddingsArgs, " ")
		return fmt.Sprintf("the server does not embed as started: llama-server needs %s (a pooling mode other than none) on its command line", args)
	}
	return ""
}

// modelTally counts the answers that named another model than the one
// asked for (answeredModelNote).
type modelTally struct {
	asked    string // the target's model ("": nothing to check)
	other    string // the first other model named
	n, count int    // answers naming another model, results
}

func (m *modelTally) add(r *loadgen.Result) {
	m.count++
	if m.asked == "" {
		return
	}
	got, asked := r.Model, m.asked
	if r.AskedModel != "" {
		asked = r.AskedModel // a mix's request named its own
	}
	if got == "" || got == asked || got == asked+":latest" || got+":latest" == asked {
		return
	}
	if m.other == "" {
		m.other = got
	}
	m.n++
}

// note says when the server answered as another model than the one asked
// for ("" when every answer that named one named it): a server that lists
// the plan's model but serves a fallback would be measured as the plan's
// model. An alias is legitimate (Ollama's "name:latest" for "name" is not
// reported), so it is a note, not an error: the reader decides.
func (m *modelTally) note() string {
	if m.n == 0 {
		return ""
	}
	return fmt.Sprintf("the server answered %d of %d requests as model %q, not %q: an alias, or another model than the plan's", m.n, m.count, m.other, m.asked)
}

// traceTally checks a trace replay's prompts against the trace's input
// lengths as their answers come (judgeTrace): request i of a pass replays
// the trace's request i mod perPass.
type traceTally struct {
	view     *loadgen.Trace // nil: not a trace replay
	perPass  int
	off, all int
	first    string
}

func (t *traceTally) add(i int, r *loadgen.Result) {
	if t.view == nil || t.perPass == 0 {
		return
	}
	t.all++
	q := t.view.Requests[i%t.perPass]
	if !r.OK() || q.Prompt != "" || !r.UsageReported {
		return
	}
	if d := r.InputTokens - q.InputLength; d > 1 || d < -1 {
		if t.off == 0 {
			t.first = fmt.Sprintf("%s:%d: input_length %d, the server counted %d", filepath.Base(t.view.Path), q.Line, q.InputLength, r.InputTokens)
		}
		t.off++
	}
}

// passTally is what a pass's bookkeeping needs of its results: its
// window's end, its send span, whether its connections failed as a dead
// server's do, and the first request's latency.
type passTally struct {
	n                   int
	firstSent, lastSent time.Time
	lastFinished        time.Time
	firstCall           *float64 // the e2el of the request sent first (nil: it failed)
	failed, refused     bool     // a request failed before any answer; a connection was refused
	warmTTFT            []float64
}

// add folds in one result; keepTTFT keeps the completed ones' ttfts (a
// warm-up pass's, for the row's still-cold note).
func (p *passTally) add(r *loadgen.Result, keepTTFT bool) {
	if p.n == 0 || r.Sent.Before(p.firstSent) {
		p.firstSent = r.Sent
		p.firstCall = nil
		if r.OK() {
			p.firstCall = results.Some(ms(r.E2EL()))
		}
	}
	if p.n == 0 || r.Sent.After(p.lastSent) {
		p.lastSent = r.Sent
	}
	p.n++
	if r.Finished.After(p.lastFinished) {
		p.lastFinished = r.Finished
	}
	if r.Err != nil && r.StatusCode == 0 {
		p.failed = true
		p.refused = p.refused || errors.Is(r.Err, syscall.ECONNREFUSED)
	}
	if keepTTFT && r.OK() {
		p.warmTTFT = append(p.warmTTFT, ms(r.TTFT()))
	}
}

// window is the pass's window: from the schedule's origin (first send)
// to the last response; 0 when nothing came back.
func (p *passTally) window(start time.Time) time.Duration {
	if p.lastFinished.IsZero() {
		return 0
	}
	return p.lastFinished.Sub(start)
}

// span is the pass's sends: first to last.
func (p *passTally) span() sendSpan {
	if p.n < 2 {
		return sendSpan{}
	}
	return sendSpan{intervals: p.n - 1, span: p.lastSent.Sub(p.firstSent)}
}

// evidence is what the pass's failures say of the server's death.
func (p *passTally) evidence() deathEvidence {
	switch {
	case p.refused:
		return refusedConnections
	case p.failed:
		return failedRequests
	}
	return noFailures
}
