package sweep

import (
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// The reasoning controls a sweep sends (docs/PLANS.md, Reasoning): the
// stage's (#Requests, in every request's body through the target), a
// cell's over them, and the `reasoning` axis's entry over the cell's,
// each axis entry a variant of its own, crossed with the others (batch,
// images, audio) as they are with the cells and the ladder.

// withReasoning crosses vs with the reasoning axis (vs unchanged when
// the plan gives none).
func (s *Stage) withReasoning(vs []variant) []variant {
	axis := s.cfg.ReasoningAxis
	if len(axis) == 0 {
		return vs
	}
	out := make([]variant, 0, len(vs)*len(axis))
	for _, v := range vs {
		for _, r := range axis {
			v.reasoning = r
			out = append(out, v)
		}
	}
	return out
}

// pointReasoning is what the point sends over the stage's controls: its
// axis entry over its cell's.
func (p point) pointReasoning() client.Reasoning { return p.v.reasoning.Over(p.cell.Reasoning) }

// reasoningLabel is the row's reasoning column: every control the
// point's requests carry, the stage's included ("" for none).
func (s *Stage) reasoningLabel(p point) string {
	return p.pointReasoning().Over(s.cfg.RequestConfig.Reasoning).Label(",")
}

// reasoningSuffix joins the cell id and the c=1 key: the point's own
// controls (the stage's are every point's), "" when none.
func (p point) reasoningSuffix() string {
	if l := p.pointReasoning().Label(","); l != "" {
		return "/" + l
	}
	return ""
}

// addReasoning puts the point's controls into its requests' body (over
// the stage's, which the target sends); nil stays nil when there are
// none, so a body still means force_osl's.
func (p point) addReasoning(body map[string]any) map[string]any {
	r := p.pointReasoning()
	if !r.IsSet() {
		return body
	}
	if body == nil {
		body = map[string]any{}
	}
	r.AddTo(body)
	return body
}

// validateReasoning refuses controls, wherever given, on an endpoint
// that cannot carry them.
func (s *Stage) validateReasoning() schema.Errors {
	ep := s.cfg.Endpoint
	errs := s.cfg.RequestConfig.Reasoning.CheckReasoning(s.spec, ep)
	for i, c := range s.cfg.Cells {
		errs = append(errs, c.Reasoning.CheckReasoning(s.spec, ep, "cells", fmt.Sprint(i))...)
	}
	for i, r := range s.cfg.ReasoningAxis {
		errs = append(errs, r.CheckReasoning(s.spec, ep, "reasoning", fmt.Sprint(i))...)
	}
	return errs
}

// anthropicMinBudget is the smallest thinking budget Anthropic's Messages
// API takes: it refuses budget_tokens under 1024, or not below
// max_tokens, with a 400 (every request of the cell would fail). A local
// server speaking the API may take less (llama-server reads any), so vet
// warns rather than refuses.
const anthropicMinBudget = 1024

var _ pipeline.Warner = (*Stage)(nil)

// Warnings are vet's warnings (pipeline.Warner): on endpoint "messages",
// a thinking budget Anthropic's API would refuse, where it is given, and
// a cell whose budget is not below its output bound (max_tokens is the
// cell's osl).
func (s *Stage) Warnings(*pipeline.Check) []schema.Error {
	if s.cfg.Endpoint != "messages" {
		return nil
	}
	var ws []schema.Error
	small := func(r client.Reasoning, at ...string) {
		if r.ThinkingBudget > 0 && r.ThinkingBudget < anthropicMinBudget {
			path := append(at, "thinking_budget")
			ws = append(ws, schema.Error{Pos: s.spec.PosOf(path...), Msg: fmt.Sprintf("stages.%s.%s: %d: Anthropic's Messages API refuses a thinking budget under %d (400); a local server may take it",
				s.spec.Name, strings.Join(path, "."), r.ThinkingBudget, anthropicMinBudget)})
		}
	}
	small(s.cfg.RequestConfig.Reasoning)
	for i, c := range s.cfg.Cells {
		small(c.Reasoning, "cells", fmt.Sprint(i))
	}
	for i, r := range s.cfg.ReasoningAxis {
		small(r, "reasoning", fmt.Sprint(i))
	}
	axis := s.cfg.ReasoningAxis
	if len(axis) == 0 {
		axis = []client.Reasoning{{}}
	}
	for i, c := range s.cfg.Cells {
		if c.OSL <= 0 || c.OSLDist != nil {
			continue
		}
		for _, r := range axis {
			if b := r.Over(c.Reasoning.Over(s.cfg.RequestConfig.Reasoning)).ThinkingBudget; b >= c.OSL {
				ws = append(ws, schema.Error{Pos: s.spec.PosOf("cells", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.cells.%d: thinking budget %d is not below the cell's osl %d (max_tokens): Anthropic's Messages API refuses it (400); a local server may take it",
					s.spec.Name, i, b, c.OSL)})
				break
			}
		}
	}
	return ws
}

// reasoningNote says, for a cell whose requests reasoned, where their
// reasoning counts came from (the server's usage, or the reasoning
// deltas counted) and how many answered nothing; "" when none reasoned.
func reasoningNote(reqs results.Requests) string {
	src := map[string]int{}
	reasoned, unanswered := 0, 0
	for r := range reqs.All() {
		if r.Answered == nil || r.TTFRMs == nil && (r.ReasoningTokens == nil || *r.ReasoningTokens == 0) {
			continue
		}
		reasoned++
		src[r.ReasoningSource]++
		if !*r.Answered {
			unanswered++
		}
	}
	if reasoned == 0 {
		return ""
	}
	var parts []string
	for _, s := range []struct{ key, say string }{
		{loadgen.ReasoningFromUsage, "from the usage's completion_tokens_details.reasoning_tokens"},
		{loadgen.ReasoningFromEvents, "counted from the reasoning deltas (the server reports no reasoning_tokens)"},
		{loadgen.ReasoningUnknown, "unknown (whole answers with reasoning and no count)"},
	} {
		if n := src[s.key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s for %d", s.say, n))
		}
	}
	note := fmt.Sprintf("%d completed requests reasoned; reasoning tokens %s", reasoned, strings.Join(parts, ", "))
	if unanswered > 0 {
		note += fmt.Sprintf("; %d produced no answer (their reasoning used up max_tokens: ok, unanswered)", unanswered)
	}
	return note
}
