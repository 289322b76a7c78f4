package turns

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// fillAgent sets an agent cell's per-session and per-step-position
// columns from its request rows (docs/METRICS.md, Agent sessions): rows
// with a session and a step. A session counts as completed when every
// step it sent completed; it reached a final answer when its last step
// made no tool call. By step position the columns follow the turns'
// pattern (the first step against the later ones); the request rows'
// `step` gives every position.
func fillAgent(row *results.Cell, reqs []results.Request) {
	row.AgentSessions, row.StepsMean, row.StepsMax, row.FinalAnswerPct = nil, nil, nil, nil
	row.FinalAnswerP50Ms, row.FinalAnswerP99Ms, row.ToolMsMean, row.ModelMsMean = nil, nil, nil, nil
	row.TTFTStep1P50Ms, row.TTFTLaterStepsP50Ms = nil, nil
	row.CachedTokensStep1Mean, row.CachedTokensLaterStepsMean = nil, nil
	sessions := map[int64][]*results.Request{}
	var firstTTFT, laterTTFT, firstCached, laterCached []float64
	for i := range reqs {
		r := &reqs[i]
		if r.Session == nil || r.Step == nil {
			continue
		}
		sessions[*r.Session] = append(sessions[*r.Session], r)
		if r.Status != results.StatusOK || r.TTFTMs == nil {
			continue
		}
		ttft, cached := &laterTTFT, &laterCached
		if *r.Step == 1 {
			ttft, cached = &firstTTFT, &firstCached
		}
		*ttft = append(*ttft, *r.TTFTMs)
		if r.CachedTokens != nil {
			*cached = append(*cached, float64(*r.CachedTokens))
		}
	}
	row.AgentSessions = results.Some(int64(len(sessions)))
	row.TTFTStep1P50Ms, row.TTFTLaterStepsP50Ms = p50(firstTTFT), p50(laterTTFT)
	row.CachedTokensStep1Mean, row.CachedTokensLaterStepsMean = mean(firstCached), mean(laterCached)

	var steps, final, tool, model []float64
	for _, s := range sessions {
		sum, ok := summarizeSession(s)
		if !ok {
			continue
		}
		steps = append(steps, float64(sum.steps))
		tool = append(tool, sum.toolMs)
		model = append(model, sum.modelMs)
		if sum.final {
			final = append(final, sum.finalMs)
		}
	}
	if len(steps) == 0 {
		return
	}
	st := stats.Summarize(steps)
	row.StepsMean, row.StepsMax = results.Some(st.Mean), results.Some(int64(st.Max))
	row.FinalAnswerPct = results.Some(100 * float64(len(final)) / float64(len(steps)))
	row.ToolMsMean, row.ModelMsMean = mean(tool), mean(model)
	if len(final) > 0 {
		f := stats.Summarize(final)
		row.FinalAnswerP50Ms, row.FinalAnswerP99Ms = results.Some(f.P50), results.Some(f.P99)
	}
}

// sessionSummary is one completed agent session, from its request rows.
type sessionSummary struct {
	steps   int
	final   bool    // its last step made no tool call
	finalMs float64 // first step's send to the last step's last token
	toolMs  float64 // Σ tool_ms
	modelMs float64 // Σ e2el_ms
}

// summarizeSession reads one session's rows; false when a step failed
// (or a row lacks its times: such a session has no end to measure).
func summarizeSession(rows []*results.Request) (sessionSummary, bool) {
	slices.SortFunc(rows, func(a, b *results.Request) int { return cmp.Compare(*a.Step, *b.Step) })
	var s sessionSummary
	for _, r := range rows {
		if r.Status != results.StatusOK || r.E2ELMs == nil {
			return s, false
		}
		s.steps++
		s.modelMs += *r.E2ELMs
		if r.ToolMs != nil {
			s.toolMs += *r.ToolMs
		}
	}
	// The session's span: its first send to the last token of the step
	// that ended last (a replayed graph's branches end in any order).
	first, last := rows[0].SentAt, rows[len(rows)-1]
	end := 0.0
	for _, r := range rows {
		first = minTime(first, r.SentAt)
	}
	for _, r := range rows {
		end = max(end, float64(r.SentAt.Sub(first))/float64(time.Millisecond)+*r.E2ELMs)
	}
	s.final = last.ToolCalls == nil || *last.ToolCalls == 0
	s.finalMs = end
	return s, true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	return results.Some(stats.Summarize(xs).Mean)
}

// agentNote says how the cell's sessions ended, beside its columns.
func agentNote(row *results.Cell) string {
	if row.AgentSessions == nil || row.StepsMean == nil {
		return ""
	}
	return fmt.Sprintf("agent: %d sessions, %.2f steps each (at most %d), %.0f%% reached a final answer", *row.AgentSessions, *row.StepsMean, *row.StepsMax, *row.FinalAnswerPct)
}
