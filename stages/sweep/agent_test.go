package sweep

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

const agentTools = `tools: [{type: "function", function: {name: "search", parameters: {
		type: "object", properties: {q: {type: "string"}}, required: ["q"]}}}]`

// TestAgentSweep: agent sessions against the simulator serving sessions of
// 1 to 6 steps, tools taking 50 ms. In counts the rows are the
// simulator's plan exactly: every session's steps are the steps its first
// message planned (sim.AgentSteps), each step is the step the simulator
// saw, every step but the last made one call and the last none, and the
// cell's steps_mean, final_answer_pct and agent_sessions are those of the
// plan. In time: each step's tool_ms is the 50 ms planned; the
// simulator's own clock, from a step's last token to the next step's
// arrival, sees the tool time plus the client's stated lateness
// (send_lag_ms) within 3 ms, and a session's time to its final answer
// within 3 ms a step of the simulator's span. The prefix cache serves
// more of each step's prompt than of the step before's. Closed loop and
// open loop (sessions per second) both.
func TestAgentSweep(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		sim.ApplyPersonality(c, sim.PersonaVLLM)
		c.TTFT, c.ITL, c.PromptCache, c.Engine.BlockSize = 5*time.Millisecond, time.Millisecond, true, 16
		c.Tools.AgentSteps = 6
	})
	for _, ladder := range []string{"concurrency: [4]", "rates: [8], arrival: \"constant\""} {
		t.Run(ladder, func(t *testing.T) {
			watch := machinetest.Start()
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat", %s
				agent: {max_steps: 6, tool_latency: "50ms", tool_result_tokens: 24}
				cells: [{isl: 48, osl: 8}], %s, requests: 40, warmup: 0
				telemetry: {gpu: "off", host: "off", metrics: "off"}`, url, agentTools, ladder), "")
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			checkAgentCell(t, srv, c.cells[0], c.reqs, watch)
		})
	}
}

func checkAgentCell(t *testing.T, srv *sim.Server, row results.Cell, reqs []results.Request, watch *machinetest.Watch) {
	t.Helper()
	sessions := map[int64][]results.Request{}
	for _, q := range reqs {
		if q.Status != results.StatusOK || q.Session == nil || q.Step == nil || q.ToolMs == nil {
			t.Fatalf("request %d: %s %q, session %v step %v tool %v", q.Seq, q.Status, q.Error, q.Session, q.Step, q.ToolMs)
		}
		sessions[*q.Session] = append(sessions[*q.Session], q)
	}
	var timing []string
	planned := 0
	worstGap, worstSpan := 0.0, 0.0
	for id, qs := range sessions {
		slices.SortFunc(qs, func(a, b results.Request) int { return int(*a.Step - *b.Step) })
		var recs []sim.RequestRecord
		lastCached := int64(-1)
		for k, q := range qs {
			rec, ok := srv.Record(q.ResponseID)
			if !ok {
				t.Fatalf("no simulator record of %q", q.ResponseID)
			}
			recs = append(recs, rec)
			if int(*q.Step) != k+1 || rec.AgentStep != k+1 || rec.AgentSteps != len(qs) {
				t.Fatalf("session %d: row %d is step %d; the simulator saw step %d of %d, the client sent %d", id, k, *q.Step, rec.AgentStep, rec.AgentSteps, len(qs))
			}
			wantCalls := int64(1)
			if k == len(qs)-1 {
				wantCalls = 0
			}
			if q.ToolCalls == nil || *q.ToolCalls != wantCalls {
				t.Fatalf("session %d step %d: %v tool calls, want %d", id, k+1, q.ToolCalls, wantCalls)
			}
			if q.CachedTokens == nil || k > 0 && *q.CachedTokens <= lastCached {
				t.Errorf("session %d step %d: cached tokens %v, not above step %d's %d", id, k+1, q.CachedTokens, k, lastCached)
			} else {
				lastCached = *q.CachedTokens
			}
			if k == 0 {
				if *q.ToolMs != 0 {
					t.Errorf("session %d step 1: tool_ms %v, want 0", id, *q.ToolMs)
				}
				continue
			}
			if *q.ToolMs != 50 {
				t.Errorf("session %d step %d: tool_ms %v, want the 50 planned", id, k+1, *q.ToolMs)
			}
			prev := recs[k-1]
			gap := ms(rec.Received.Sub(prev.Events[len(prev.Events)-1].Time))
			d := gap - (*q.ToolMs + q.SendLagMs)
			worstGap = max(worstGap, math.Abs(d))
			if d < -0.5 || d > 3 {
				timing = append(timing, fmt.Sprintf("session %d step %d: the simulator saw %.2f ms between the steps, the client %.2f ms of tools and %.2f ms of lateness", id, k+1, gap, *q.ToolMs, q.SendLagMs))
			}
		}
		planned += len(qs)
		first, last := qs[0], qs[len(qs)-1]
		client := ms(last.SentAt.Sub(first.SentAt)) + *last.E2ELMs
		lastRec := recs[len(recs)-1]
		server := ms(lastRec.Events[len(lastRec.Events)-1].Time.Sub(recs[0].Received))
		worstSpan = max(worstSpan, math.Abs(client-server))
		if math.Abs(client-server) > 3*float64(len(qs)) {
			timing = append(timing, fmt.Sprintf("session %d: time to final answer %.2f ms by the client, %.2f ms by the simulator", id, client, server))
		}
	}
	n := float64(len(sessions))
	if row.Status != results.StatusOK || v(row.AgentSessions) != int64(len(sessions)) || v(row.MaxSteps) != 6 || v(row.ToolLatencyMs) != 50 {
		t.Fatalf("%s %q: %v sessions (want %d), max steps %v, tool latency %v", row.Status, row.Reason, v(row.AgentSessions), len(sessions), v(row.MaxSteps), v(row.ToolLatencyMs))
	}
	if v(row.StepsMean) != float64(planned)/n || v(row.FinalAnswerPct) != 100 || math.Abs(v(row.ToolMsMean)-50*(float64(planned)-n)/n) > 1e-9 {
		t.Errorf("steps_mean %v (planned %v), final %v %%, tool_ms_mean %v (want %v)", v(row.StepsMean), float64(planned)/n, v(row.FinalAnswerPct), v(row.ToolMsMean), 50*(float64(planned)-n)/n)
	}
	if row.FinalAnswerP50Ms == nil || row.TTFTLaterStepsP50Ms == nil || v(row.CachedTokensLaterStepsMean) <= v(row.CachedTokensStep1Mean) || !strings.Contains(row.Notes, "agent: ") {
		t.Errorf("final p50 %v, later ttft %v, cached step 1 %v later %v; notes %s", row.FinalAnswerP50Ms, row.TTFTLaterStepsP50Ms, row.CachedTokensStep1Mean, row.CachedTokensLaterStepsMean, row.Notes)
	}
	defer func() {
		if len(timing) > 0 {
			t.Logf("%d timing mismatches, the first: %s", len(timing), timing[0])
			watch.Judge(t, "the agent sessions' times within the client's stated error")
			t.Errorf("%d timing mismatches beyond the client's stated error", len(timing))
		}
	}()
	t.Logf("%d sessions, %d steps, steps_mean %.2f, final_answer p50 %.1f ms, tool_ms_mean %.1f, model_ms_mean %.1f, cached step 1 %.1f, later %.1f; worst |simulator gap − (tool_ms + send_lag)| %.2f ms, worst |final answer, client − simulator| %.2f ms",
		len(sessions), planned, v(row.StepsMean), v(row.FinalAnswerP50Ms), v(row.ToolMsMean), v(row.ModelMsMean), v(row.CachedTokensStep1Mean), v(row.CachedTokensLaterStepsMean), worstGap, worstSpan)
}

// TestAgentRefused: vet refuses an agent load off chat, without tools,
// or beside turns, at the field.
func TestAgentRefused(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`kind: "sweep", target: "http://x", agent: {}`, `stages.sweep.agent: agent sessions send chat messages with tools: endpoint "chat", not "completions"`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", agent: {}`, `stages.sweep.agent: an agent session's steps follow its tool calls: give tools`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", turns: 2, agent: {}, ` + agentTools, `stages.sweep.turns: turns and agent are two kinds of session: give one`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", agent: {graph: "g.jsonl", tool_results: "r.jsonl"}`, `stages.sweep.agent.tool_results: a replayed graph plays no tools`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", agent: {time_scale: 2}, ` + agentTools, `stages.sweep.agent.time_scale: time_scale scales a replayed graph's delays: give graph`},
	} {
		st, p := loadStage(t, tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
			t.Errorf("%s: err = %v, want %q at its position", tc.cue, err, tc.want)
		}
	}
}

// graphFile is a recorded session whose plan step branches into two
// sub-agents (web after 50 ms, code after 80 ms) that join in the answer
// (10 ms after the later of them), and a one-step session.
const graphFile = `{"session": "research", "id": "plan", "at_ms": 0, "input_tokens": 96, "output_tokens": 12}
{"session": "research", "id": "web", "parents": ["plan"], "delay_ms": 50, "input_tokens": 160, "output_tokens": 8}
{"session": "research", "id": "code", "parents": ["plan"], "delay_ms": 80, "input_tokens": 150, "output_tokens": 8}
{"session": "research", "id": "answer", "parents": ["web", "code"], "delay_ms": 10, "input_tokens": 220, "output_tokens": 16}
{"session": "quick", "id": "only", "input_tokens": 64, "output_tokens": 4}
`

// TestAgentGraphReplay replays a session graph at twice its pace against
// the simulator: sessions alternate between the graph's two; every step
// is sent once, after its parents, asking for its recorded output; by the
// simulator's own clock each step arrived its scaled delay after the later
// of its parents' last tokens, plus the client's stated lateness
// (send_lag_ms), within 3 ms; the sub-agents and the join are served
// their parent's prefix from the cache; the cell's max_steps is the
// graph's depth.
func TestAgentGraphReplay(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		sim.ApplyPersonality(c, sim.PersonaVLLM)
		c.TTFT, c.ITL, c.PromptCache, c.Engine.BlockSize = 5*time.Millisecond, time.Millisecond, true, 16
	})
	path := filepath.Join(t.TempDir(), "graph.jsonl")
	if err := os.WriteFile(path, []byte(graphFile), 0o644); err != nil {
		t.Fatal(err)
	}
	watch := machinetest.Start()
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat"
		agent: {graph: %q, time_scale: 2}
		cells: [{isl: 96, osl: 12}], concurrency: [2], requests: 20, warmup: 0
		telemetry: {gpu: "off", host: "off", metrics: "off"}`, url, path), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	row := c.cells[0]
	if row.Status != results.StatusOK || v(row.MaxSteps) != 3 || math.Abs(v(row.ToolLatencyMs)-(50+80+10)/3.0/2) > 1e-9 {
		t.Fatalf("%s %q: max_steps %v, tool_latency_ms %v", row.Status, row.Reason, v(row.MaxSteps), v(row.ToolLatencyMs))
	}
	type step struct {
		q   results.Request
		rec sim.RequestRecord
	}
	sessions := map[int64]map[int64][]step{}
	for _, q := range c.reqs {
		rec, ok := srv.Record(q.ResponseID)
		if q.Status != results.StatusOK || !ok || q.Session == nil || q.Step == nil {
			t.Fatalf("request %d: %s %q, record %v, session %v step %v", q.Seq, q.Status, q.Error, ok, q.Session, q.Step)
		}
		if sessions[*q.Session] == nil {
			sessions[*q.Session] = map[int64][]step{}
		}
		sessions[*q.Session][*q.Step] = append(sessions[*q.Session][*q.Step], step{q, rec})
	}
	lastToken := func(s step) time.Time { return s.rec.Events[len(s.rec.Events)-1].Time }
	var timing []string
	checkGap := func(id int64, child step, parents ...step) {
		end := lastToken(parents[0])
		for _, p := range parents[1:] {
			if lastToken(p).After(end) {
				end = lastToken(p)
			}
		}
		gap := ms(child.rec.Received.Sub(end))
		if d := gap - (*child.q.ToolMs + child.q.SendLagMs); d < -0.5 || d > 3 {
			timing = append(timing, fmt.Sprintf("session %d: the simulator saw %.2f ms after the parents, the client %.2f ms of delay and %.2f ms of lateness", id, gap, *child.q.ToolMs, child.q.SendLagMs))
		}
	}
	for id, steps := range sessions {
		if id%2 == 1 {
			if len(steps) != 1 || len(steps[1]) != 1 || steps[1][0].q.OutputTokens != 4 || steps[1][0].q.InputTokens != 64 {
				t.Fatalf("session %d (quick): steps %v", id, steps)
			}
			continue
		}
		if len(steps) != 3 || len(steps[1]) != 1 || len(steps[2]) != 2 || len(steps[3]) != 1 {
			t.Fatalf("session %d (research): %d positions, %d/%d/%d steps", id, len(steps), len(steps[1]), len(steps[2]), len(steps[3]))
		}
		plan, answer := steps[1][0], steps[3][0]
		subs := steps[2]
		slices.SortFunc(subs, func(a, b step) int { return int(*a.q.ToolMs - *b.q.ToolMs) })
		web, code := subs[0], subs[1]
		if *web.q.ToolMs != 25 || *code.q.ToolMs != 40 || *answer.q.ToolMs != 5 || *plan.q.ToolMs != 0 {
			t.Errorf("session %d: tool_ms plan %v web %v code %v answer %v, want 0, 25, 40, 5", id, *plan.q.ToolMs, *web.q.ToolMs, *code.q.ToolMs, *answer.q.ToolMs)
		}
		if plan.q.OutputTokens != 12 || web.q.OutputTokens != 8 || code.q.OutputTokens != 8 || answer.q.OutputTokens != 16 || plan.q.InputTokens != 96 {
			t.Errorf("session %d: tokens plan %d:%d, web %d, code %d, answer %d", id, plan.q.InputTokens, plan.q.OutputTokens, web.q.OutputTokens, code.q.OutputTokens, answer.q.OutputTokens)
		}
		for _, s := range []step{web, code, answer} {
			if s.q.CachedTokens == nil || *s.q.CachedTokens == 0 {
				t.Errorf("session %d step %d: cached tokens %v: the parent's prefix was not served", id, *s.q.Step, s.q.CachedTokens)
			}
		}
		checkGap(id, web, plan)
		checkGap(id, code, plan)
		checkGap(id, answer, web, code)
	}
	if len(timing) > 0 {
		watch.Judge(t, "the replay's delays within the client's stated error")
		t.Errorf("%d timing mismatches, the first: %s", len(timing), timing[0])
	}
	t.Logf("%d sessions, steps_mean %.2f, final_answer p50 %.1f ms, tool_ms_mean %.1f, cached later %.1f", len(sessions), v(row.StepsMean), v(row.FinalAnswerP50Ms), v(row.ToolMsMean), v(row.CachedTokensLaterStepsMean))
}

// TestAgentGraphRefused: a bad graph file fails the stage at its file
// and line (the parser's cases are loadgen's TestParseAgentGraphRefused).
func TestAgentGraphRefused(t *testing.T) {
	_, url := startSim(t, nil)
	path := filepath.Join(t.TempDir(), "cycle.jsonl")
	bad := `{"id": "a", "parents": ["b"], "input_tokens": 8, "output_tokens": 4}` + "\n" + `{"id": "b", "parents": ["a"], "input_tokens": 8, "output_tokens": 4}` + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat", agent: {graph: %q}
		cells: [{isl: 16, osl: 4}], concurrency: [1], requests: 4, warmup: 0`, url, path), "")
	_, err := runStage(t, st, p)
	if err == nil || !strings.Contains(err.Error(), "stages.sweep.agent.graph: "+path+":1: step \"a\" is its own ancestor") {
		t.Fatalf("err = %v", err)
	}
}
