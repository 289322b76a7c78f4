package client

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/schema"
)

// Reasoning is #Reasoning: the request's reasoning controls, sent as
// body fields (docs/PLANS.md, Reasoning). Each engine reads its own:
// reasoning_effort (OpenAI's; vLLM's gpt-oss, Ollama: low, medium, high
// or none), chat_template_kwargs (vLLM, SGLang and llama-server hand them
// to the chat template: {enable_thinking: false} turns Qwen3's thinking
// off) and think (Ollama's: true, false, or an effort); the Messages
// API's thinking budget (thinking: {type: "enabled", budget_tokens}).
type Reasoning struct {
	ReasoningEffort    string         `json:"reasoning_effort"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	Think              any            `json:"think"`
	ThinkingBudget     int            `json:"thinking_budget"`
}

// reasoningFields are the controls' plan names, in the order they are
// written.
var reasoningFields = []string{"reasoning_effort", "chat_template_kwargs", "think", "thinking_budget"}

// IsSet says some control is given.
func (r Reasoning) IsSet() bool {
	return r.ReasoningEffort != "" || r.ChatTemplateKwargs != nil || r.Think != nil || r.ThinkingBudget > 0
}

// Over is r with base's controls beneath it: a cell's or an axis point's
// controls over the stage's (a field r gives wins; chat_template_kwargs
// merge key by key).
func (r Reasoning) Over(base Reasoning) Reasoning {
	out := base
	if r.ReasoningEffort != "" {
		out.ReasoningEffort = r.ReasoningEffort
	}
	if r.Think != nil {
		out.Think = r.Think
	}
	if r.ThinkingBudget > 0 {
		out.ThinkingBudget = r.ThinkingBudget
	}
	if r.ChatTemplateKwargs != nil {
		kw := maps.Clone(base.ChatTemplateKwargs)
		if kw == nil {
			kw = map[string]any{}
		}
		maps.Copy(kw, r.ChatTemplateKwargs)
		out.ChatTemplateKwargs = kw
	}
	return out
}

// AddTo sets the controls given into body (a request's body fields).
func (r Reasoning) AddTo(body map[string]any) {
	if r.ReasoningEffort != "" {
		body["reasoning_effort"] = r.ReasoningEffort
	}
	if r.ChatTemplateKwargs != nil {
		body["chat_template_kwargs"] = r.ChatTemplateKwargs
	}
	if r.Think != nil {
		body["think"] = r.Think
	}
	if r.ThinkingBudget > 0 {
		body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": r.ThinkingBudget}
	}
}

// Label names the controls given, each as name=value (a kwarg's as
// key=value), in a fixed order: the rows' reasoning column and the
// sweep's reasoning axis's part of the cell id
// (reasoning_effort=low, enable_thinking=false); "" when none is given.
func (r Reasoning) Label(sep string) string {
	var parts []string
	if r.ReasoningEffort != "" {
		parts = append(parts, "reasoning_effort="+r.ReasoningEffort)
	}
	for _, k := range slices.Sorted(maps.Keys(r.ChatTemplateKwargs)) {
		parts = append(parts, k+"="+scalar(r.ChatTemplateKwargs[k]))
	}
	if r.Think != nil {
		parts = append(parts, "think="+scalar(r.Think))
	}
	if r.ThinkingBudget > 0 {
		parts = append(parts, fmt.Sprintf("thinking_budget=%d", r.ThinkingBudget))
	}
	return strings.Join(parts, sep)
}

// scalar writes a value as a label shows it: a string bare, anything
// else as JSON.
func scalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ReasoningEndpoints are the endpoints whose requests carry reasoning
// controls: chat, and the Responses API, which is sent reasoning_effort
// as its own reasoning: {effort} (loadgen's apis.go). A completion, an
// embedding or a transcription has no thinking to control, and the
// engines ignore or refuse the fields there; the Messages API sizes its
// thinking by budget_tokens, which a plan gives as thinking_budget, the
// one control of endpoint "messages" (ThinkingEndpoints).
var ReasoningEndpoints = []string{"chat", "responses"}

// ThinkingEndpoints are the endpoints whose requests carry
// thinking_budget: the Messages API's thinking {type: "enabled",
// budget_tokens}.
var ThinkingEndpoints = []string{"messages"}

// CheckReasoning refuses, at the field, a control given for an endpoint
// that cannot carry it. at is the path of the object holding the
// controls (nil: the stage itself; "cells", "2" a cell).
func (r Reasoning) CheckReasoning(spec *schema.Stage, endpoint string, at ...string) schema.Errors {
	if !r.IsSet() {
		return nil
	}
	var errs schema.Errors
	given := map[string]bool{"reasoning_effort": r.ReasoningEffort != "", "chat_template_kwargs": r.ChatTemplateKwargs != nil, "think": r.Think != nil, "thinking_budget": r.ThinkingBudget > 0}
	for _, f := range reasoningFields {
		eps := ReasoningEndpoints
		if f == "thinking_budget" {
			eps = ThinkingEndpoints
		}
		if !given[f] || slices.Contains(eps, endpoint) {
			continue
		}
		path := append(slices.Clone(at), f)
		errs = append(errs, schema.Error{Pos: spec.PosOf(path...), Msg: fmt.Sprintf("stages.%s.%s: a reasoning control applies to endpoint \"%s\" only, not %q: %s",
			spec.Name, strings.Join(path, "."), strings.Join(eps, `", "`), endpoint, whyNoControl(f, endpoint))})
	}
	return errs
}

// whyNoControl says why a control cannot go with a request of the
// endpoint.
func whyNoControl(field, endpoint string) string {
	switch {
	case endpoint == "messages":
		return "the Messages API sizes its thinking by thinking_budget alone"
	case field == "thinking_budget" && slices.Contains(ReasoningEndpoints, endpoint):
		return "a " + endpoint + " request sizes its thinking by reasoning_effort, chat_template_kwargs or think"
	}
	return "a " + endpoint + " request has no thinking to control"
}
