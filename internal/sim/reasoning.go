package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Reasoning is a thinking phase before the answer (chat only): the
// simulator's ground truth for the client's reasoning columns
// (docs/METRICS.md, Reasoning). Each request's first Tokens tokens (drawn
// per prompt in [Tokens, TokensMax] when TokensMax is larger) are
// reasoning, written under the persona's field name at ITL each (0: the
// answer's ITL), and the answer follows at the answer's ITL; max_tokens
// counts both, so a budget below the reasoning ends it thinking, with no
// answer and finish_reason "length".
type Reasoning struct {
	Tokens    int
	TokensMax int
	ITL       time.Duration
	// Field is the delta's and message's member the reasoning goes in:
	// "reasoning_content" or "reasoning"; "" is the persona's own.
	Field string
}

// Reasoning field names on the wire.
const (
	FieldReasoningContent = "reasoning_content"
	FieldReasoning        = "reasoning"
)

func (r Reasoning) checks() []fieldCheck {
	return []fieldCheck{
		{r.Tokens < 0 || r.TokensMax < 0 || r.ITL < 0, errors.New("reasoning-tokens, reasoning-tokens-max and reasoning-itl must not be negative")},
		{r.TokensMax > 0 && r.TokensMax < r.Tokens, errors.New("reasoning-tokens-max must not be below reasoning-tokens")},
		{r.Field != "" && r.Field != FieldReasoningContent && r.Field != FieldReasoning,
			fmt.Errorf("reasoning-field %q: want %s or %s", r.Field, FieldReasoningContent, FieldReasoning)},
	}
}

// reasoningControls are the request's reasoning controls the simulator
// reads: OpenAI's reasoning_effort, Ollama's think, and
// chat_template_kwargs.enable_thinking (Qwen3's template switch).
type reasoningControls struct {
	ReasoningEffort    *string         `json:"reasoning_effort"`
	Think              json.RawMessage `json:"think"`
	ChatTemplateKwargs map[string]any  `json:"chat_template_kwargs"`
	// budget is the Messages API's thinking.budget_tokens (0: none): the
	// thinking stops there, and the answer follows (apis.go).
	budget int
}

// reasoningLength is how many reasoning tokens a request plans: the
// configured length (drawn per prompt, so the same prompt always thinks
// as long), scaled by its effort: none, think false or enable_thinking
// false: 0; low: half; high: double; anything else: as configured; a
// thinking budget cuts it there.
func (s *Server) reasoningLength(c reasoningControls, promptHash uint64) int {
	n := s.effortLength(c, promptHash)
	if c.budget > 0 {
		n = min(n, c.budget)
	}
	return n
}

// effortLength is the planned thinking scaled by the request's effort.
func (s *Server) effortLength(c reasoningControls, promptHash uint64) int {
	r := s.cfg.Reasoning
	n := r.Tokens
	if r.TokensMax > r.Tokens {
		u := unitFloat(mix(s.seedHash ^ promptHash ^ 0x7e1a))
		n = r.Tokens + int(u*float64(r.TokensMax-r.Tokens+1))
		n = min(n, r.TokensMax)
	}
	if n == 0 {
		return 0
	}
	effort := ""
	if c.ReasoningEffort != nil {
		effort = strings.ToLower(*c.ReasoningEffort)
	}
	switch t := strings.TrimSpace(string(c.Think)); t {
	case "false":
		effort = "none"
	case `"low"`, `"medium"`, `"high"`:
		effort = strings.Trim(t, `"`)
	}
	if v, ok := c.ChatTemplateKwargs["enable_thinking"].(bool); ok && !v {
		effort = "none"
	}
	switch effort {
	case "none":
		return 0
	case "low", "minimal":
		return max(n/2, 1)
	case "high":
		return 2 * n
	}
	return n
}

// planReasoning sets p's thinking phase and its output length with it:
// the answer's length is drawn as without reasoning from the budget left
// after it; a budget the reasoning reaches ends in it ("length", no
// answer).
func (s *Server) planReasoning(p *genPlan, c reasoningControls, maxTokens, minTokens int, ignoreEOS bool) {
	if !thinks(p.endpoint) {
		p.target, p.finish = s.outputLength(p.promptHash, maxTokens, minTokens, ignoreEOS)
		return
	}
	p.reasoning = s.reasoningLength(c, p.promptHash)
	p.reasoningITL = s.cfg.Reasoning.ITL
	if p.reasoningITL == 0 {
		p.reasoningITL = p.itl
	}
	p.reasoningField = s.cfg.Reasoning.Field
	if p.reasoningField == "" {
		p.reasoningField = s.persona.reasoningField
	}
	if p.reasoning >= maxTokens {
		p.reasoning, p.target, p.finish = maxTokens, maxTokens, "length"
		return
	}
	answer, finish := s.outputLength(p.promptHash, maxTokens-p.reasoning, max(minTokens-p.reasoning, 0), ignoreEOS)
	p.target, p.finish = p.reasoning+answer, finish
}

// appendReasoningDelta opens a chat delta carrying reasoning under the
// plan's field name (Ollama sends an empty content beside it).
func (s *Server) appendReasoningDelta(b []byte, p genPlan) []byte {
	b = append(b, `{"index":0,"delta":{`...)
	if s.persona.reasoningEmptyContent {
		b = append(b, `"content":"",`...)
	}
	b = append(b, '"')
	b = append(b, p.reasoningField...)
	return append(b, `":"`...)
}

// reasoningUsage is the usage's completion_tokens_details member for a
// response that wrote sent tokens ("" where the persona's engine does not
// report reasoning tokens).
func (s *Server) reasoningUsage(p genPlan, sent int) string {
	if !s.persona.reasoningUsage || p.endpoint != epChat {
		return ""
	}
	return fmt.Sprintf(`,"completion_tokens_details":{"reasoning_tokens":%d}`, min(p.reasoning, sent))
}
