package sweep

import (
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"

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

// reasoningNote says, for a cell whose requests reasoned, where their
// reasoning counts came from (the server's usage, or the reasoning
// deltas counted) and how many answered nothing; "" when none reasoned.
func reasoningNote(reqs []results.Request) string {
	src := map[string]int{}
	reasoned, unanswered := 0, 0
	for _, r := range reqs {
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
