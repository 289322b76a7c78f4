package sweep

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/benchrun/benchrun/pipeline"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
)

// AgentConfig is the sweep's `agent` (schema.cue; docs/PLANS.md, Agent
// sessions): sessions of steps driven by the answers' tool calls.
type AgentConfig struct {
	MaxSteps         int    `json:"max_steps"`
	ToolLatency      string `json:"tool_latency"`
	ToolLatencyDist  string `json:"tool_latency_dist"`
	ToolResultTokens int    `json:"tool_result_tokens"`
	// ToolResults is a file of recorded tool results
	// (loadgen.LoadToolResults) a call is answered with.
	ToolResults string `json:"tool_results"`
	// Graph is a session graph file to replay (loadgen.ParseAgentGraph)
	// in place of playing tools; TimeScale divides its delays.
	Graph     string  `json:"graph"`
	TimeScale float64 `json:"time_scale"`
}

// toolLatency is the agent's mean tool latency (0 when unset or bad:
// Validate reports a bad one).
func (a *AgentConfig) toolLatency() time.Duration {
	d, _ := time.ParseDuration(a.ToolLatency)
	return max(d, 0)
}

// validateAgent checks the agent fields: chat with tools offered (a
// session's steps are driven by its calls), and none of the other
// session shapes beside it.
func (s *Stage) validateAgent(bad func([]string, string, ...any)) {
	a := s.cfg.Agent
	if a == nil {
		return
	}
	if a.MaxSteps < 1 {
		bad([]string{"agent", "max_steps"}, "max_steps %d: a session has at least one step", a.MaxSteps)
	}
	if a.ToolLatency != "" {
		if d, err := time.ParseDuration(a.ToolLatency); err != nil || d < 0 {
			bad([]string{"agent", "tool_latency"}, "%q is not a duration of 0 or more (write it as \"50ms\" or \"2s\")", a.ToolLatency)
		}
	}
	switch a.ToolLatencyDist {
	case "", loadgen.ThinkFixed, loadgen.ThinkExponential:
	default:
		bad([]string{"agent", "tool_latency_dist"}, "%q: want \"fixed\" or \"exponential\"", a.ToolLatencyDist)
	}
	switch {
	case s.cfg.Endpoint != string(loadgen.Chat):
		bad([]string{"agent"}, "agent sessions send chat messages with tools: endpoint \"chat\", not %q", s.cfg.Endpoint)
	case a.Graph != "" && a.ToolResults != "":
		bad([]string{"agent", "tool_results"}, "a replayed graph plays no tools: tool_results goes with tools, not graph")
	case a.Graph != "":
		// A replayed graph's steps follow the recording, not calls.
	case a.TimeScale != 0:
		bad([]string{"agent", "time_scale"}, "time_scale scales a replayed graph's delays: give graph")
	case len(s.cfg.Tools) == 0:
		bad([]string{"agent"}, "an agent session's steps follow its tool calls: give tools")
	}
	if s.cfg.Turns > 0 {
		bad([]string{"turns"}, "turns and agent are two kinds of session: give one")
	}
	if s.cfg.Dataset != nil {
		bad([]string{"dataset"}, "an agent load's first messages are synthetic prompts of isl tokens: drop the dataset")
	}
}

// agent is pass's agent load: session n's first message is the prompt
// source's first turn of its session id (ids interleave passes and shards
// as a conversation's do).
func (s *Stage) agent(src *loadgen.PromptSource, pass, base, maxTokens int, body map[string]any, expect int) loadgen.Agent {
	shard, shards := s.shard, max(s.shards, 1)
	a := s.cfg.Agent
	return loadgen.Agent{
		MaxSteps:         a.MaxSteps,
		User:             func(id int) string { return src.Turn(pass, id, 1) },
		ID:               func(n int) int { return (base+n)*shards + shard },
		ToolLatency:      a.toolLatency(),
		ToolLatencyDist:  a.ToolLatencyDist,
		ToolResultTokens: a.ToolResultTokens,
		Vocab:            src.Vocab,
		Results:          s.agentResults,
		Graph:            s.agentGraph,
		TimeScale:        a.TimeScale,
		Seed:             uint64(s.cfg.Seed) ^ uint64(pass)<<40 ^ 0xa6e7,
		Request:          loadgen.Request{MaxTokens: maxTokens, Body: body, ExpectTokens: expect},
	}
}

// agentBase stamps an agent cell's plan on its rows: a replayed graph's
// deepest step position and its steps' mean delay after their parents
// (scaled), else the plan's step limit and tool latency.
func (s *Stage) agentBase(base *results.Cell) {
	a := s.cfg.Agent
	switch {
	case a == nil:
	case s.agentGraph != nil:
		depth, delay, n := 0, 0.0, 0
		for _, g := range s.agentGraph {
			depth = max(depth, g.MaxDepth())
			for _, st := range g.Steps {
				if len(st.Parents) > 0 {
					delay += st.DelayMs
					n++
				}
			}
		}
		scale := a.TimeScale
		if scale <= 0 {
			scale = 1
		}
		base.MaxSteps = results.Some(int64(depth))
		base.ToolLatencyMs = results.Some(delay / float64(max(n, 1)) / scale)
	default:
		base.MaxSteps = results.Some(int64(a.MaxSteps))
		base.ToolLatencyMs = results.Some(ms(a.toolLatency()))
	}
}

// loadAgentGraph reads the agent's session graph and recorded tool
// results (relative to the plan file), refused at their file and line
// when they are bad.
func (s *Stage) loadAgentGraph(env *pipeline.Env) error {
	a := s.cfg.Agent
	if a == nil {
		return nil
	}
	rel := func(path string) string {
		if !filepath.IsAbs(path) && env.Plan != nil && env.Plan.Path != "" {
			return filepath.Join(filepath.Dir(env.Plan.Path), path)
		}
		return path
	}
	if a.Graph != "" {
		g, err := loadgen.LoadAgentGraph(rel(a.Graph))
		if err != nil {
			return fmt.Errorf("stages.%s.agent.graph: %w", env.Stage.Name, err)
		}
		s.agentGraph = g
	}
	if a.ToolResults != "" {
		rs, err := loadgen.LoadToolResults(rel(a.ToolResults))
		if err != nil {
			return fmt.Errorf("stages.%s.agent.tool_results: %w", env.Stage.Name, err)
		}
		s.agentResults = rs
	}
	return nil
}
