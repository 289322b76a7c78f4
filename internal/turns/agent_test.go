package turns

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// agentRow is one step's request row: sent at ms after t0, its e2el,
// its calls, its tool time and cached tokens.
func agentRow(session, step int64, sentMs, e2el float64, calls int64, toolMs float64, cached int64, ok bool) results.Request {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := results.Request{Session: results.Some(session), Step: results.Some(step), SentAt: t0.Add(time.Duration(sentMs * float64(time.Millisecond))),
		Status: results.StatusOK, TTFTMs: results.Some(e2el / 2), E2ELMs: results.Some(e2el), ToolCalls: results.Some(calls),
		ToolMs: results.Some(toolMs), CachedTokens: results.Some(cached), InputTokens: 100 * step}
	if !ok {
		r.Status, r.TTFTMs, r.E2ELMs = results.StatusError, nil, nil
	}
	return r
}

// TestFillAgent: per session, a session with a failed step is left out
// of the per-session columns; one that ends still calling (the step
// limit) does not reach a final answer; a branched session's time to its
// final answer spans its branches (the later-ending branch before the
// join is not the last row); by position, step 1 against the later steps.
func TestFillAgent(t *testing.T) {
	reqs := []results.Request{
		// Session 0: three steps, a final answer at 10+50+20+50+20 = 150 ms.
		agentRow(0, 1, 0, 10, 1, 0, 0, true), agentRow(0, 2, 60, 20, 1, 50, 40, true), agentRow(0, 3, 130, 20, 0, 50, 80, true),
		// Session 1: the step limit, still calling.
		agentRow(1, 1, 0, 10, 1, 0, 0, true), agentRow(1, 2, 30, 10, 1, 20, 30, true),
		// Session 2: failed at step 2.
		agentRow(2, 1, 0, 10, 1, 0, 0, true), agentRow(2, 2, 40, 0, 0, 30, 0, false),
		// Session 3: a graph, two branches at step 2, the first ending last.
		agentRow(3, 1, 0, 10, 0, 0, 0, true), agentRow(3, 2, 20, 100, 0, 10, 20, true), agentRow(3, 2, 30, 10, 0, 20, 20, true),
	}
	row := results.Cell{MaxSteps: results.Some(int64(3))}
	Fill(&row, results.AsRequests(reqs), ExpectOf(row))
	if *row.AgentSessions != 4 || *row.StepsMean != 8.0/3 || *row.StepsMax != 3 || math.Abs(*row.FinalAnswerPct-200.0/3) > 1e-9 {
		t.Errorf("sessions %d, steps mean %v max %d, final %v %%", *row.AgentSessions, *row.StepsMean, *row.StepsMax, *row.FinalAnswerPct)
	}
	// Final answers: session 0 at 150 ms, session 3 at 120 ms (its first branch).
	if *row.FinalAnswerP50Ms != 135 || math.Abs(*row.ToolMsMean-(100+20+30)/3.0) > 1e-9 || math.Abs(*row.ModelMsMean-(50+20+120)/3.0) > 1e-9 {
		t.Errorf("final p50 %v, tool %v, model %v", *row.FinalAnswerP50Ms, *row.ToolMsMean, *row.ModelMsMean)
	}
	if *row.TTFTStep1P50Ms != 5 || *row.CachedTokensStep1Mean != 0 || math.Abs(*row.CachedTokensLaterStepsMean-(40+80+30+20+20)/5.0) > 1e-9 {
		t.Errorf("step 1 ttft %v, cached step 1 %v later %v", *row.TTFTStep1P50Ms, *row.CachedTokensStep1Mean, *row.CachedTokensLaterStepsMean)
	}
	if !strings.Contains(row.Notes, "agent: 4 sessions, 2.67 steps each (at most 3), 67% reached a final answer") {
		t.Errorf("notes %q", row.Notes)
	}
	by := ByStep(reqs)
	if len(by) != 3 || by[0].Requests != 4 || by[1].Requests != 4 || by[2].Requests != 1 || *by[2].CachedMean != 80 || by[1].HistoryMean != nil {
		t.Errorf("by step %+v", by)
	}
	cold := slices.Clone(reqs)
	for i := range cold {
		cold[i].CachedTokens = results.Some(int64(0))
	}
	coldRow := results.Cell{MaxSteps: results.Some(int64(3))}
	Fill(&coldRow, results.AsRequests(cold), ExpectOf(coldRow))
	if !strings.Contains(coldRow.Notes, "prefix cache did not engage: the 5 later agent steps (2 and on) had 0 of their") {
		t.Errorf("a cold cache's notes %q", coldRow.Notes)
	}
	plain := results.Cell{}
	Fill(&plain, results.AsRequests(reqs), ExpectNothing)
	if plain.AgentSessions != nil || plain.StepsMean != nil || strings.Contains(plain.Notes, "agent:") {
		t.Errorf("a cell that is not an agent cell got agent columns: %v %v %q", plain.AgentSessions, plain.StepsMean, plain.Notes)
	}
}
