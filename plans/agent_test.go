package plans_test

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestAgentPlan runs plans/agent.cue against the simulator: every cell is
// ok (the graph replay's with four steps in three positions) and the tool-driven
// cells' sessions whole (every step of every session in the request
// rows, steps 1 to the session's last, at most 6), each session ending on
// a final answer (its last step made no call, every other step one), and
// the cached tokens of the later steps above the first steps'.
func TestAgentPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, reqs := runExampleTables(t, "agent.cue")
	if len(cells) != 4 {
		t.Fatalf("%d cells, want 4", len(cells))
	}
	for _, c := range cells {
		if c.Stage == "replay" {
			// Four steps in three positions (two sub-agents share one).
			if c.Status != results.StatusOK || c.MaxSteps == nil || *c.MaxSteps != 3 || c.StepsMax == nil || *c.StepsMax != 4 || c.AgentSessions == nil || *c.AgentSessions < 2 {
				t.Errorf("replay: %s %q, max_steps %v, steps max %v, sessions %v", c.Status, c.Reason, c.MaxSteps, c.StepsMax, c.AgentSessions)
			}
			continue
		}
		if c.Status != results.StatusOK || c.FinalAnswerPct == nil || *c.FinalAnswerPct != 100 || c.StepsMax == nil || *c.StepsMax > 6 ||
			c.CachedTokensLaterStepsMean == nil || c.CachedTokensStep1Mean == nil || *c.CachedTokensLaterStepsMean <= *c.CachedTokensStep1Mean {
			t.Errorf("%s: %s %q, final %v %%, steps max %v, cached step 1 %v later %v", c.CellID, c.Status, c.Reason, c.FinalAnswerPct, c.StepsMax, c.CachedTokensStep1Mean, c.CachedTokensLaterStepsMean)
		}
	}
	type key struct {
		cell    string
		session int64
	}
	steps := map[key][]results.Request{}
	for _, q := range reqs {
		if q.Session == nil || q.Step == nil {
			t.Fatalf("%s request %d: session %v step %v", q.CellID, q.Seq, q.Session, q.Step)
		}
		k := key{q.CellID, *q.Session}
		steps[k] = append(steps[k], q)
	}
	for k, qs := range steps {
		if strings.HasPrefix(k.cell, "replay/") {
			continue // a graph's branches share positions; the sweep's tests judge them
		}
		seen := map[int64]bool{}
		for _, q := range qs {
			seen[*q.Step] = true
			last := int(*q.Step) == len(qs)
			if q.ToolCalls == nil || (*q.ToolCalls == 0) != last {
				t.Errorf("%v step %d of %d: %v tool calls", k, *q.Step, len(qs), q.ToolCalls)
			}
		}
		for s := 1; s <= len(qs); s++ {
			if !seen[int64(s)] {
				t.Errorf("%v: steps %v, not 1..%d", k, seen, len(qs))
			}
		}
	}
}
