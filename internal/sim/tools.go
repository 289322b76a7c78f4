package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Tools sets how the simulator answers a request that offers `tools` or
// asks for structured output (`response_format`, Ollama's `format`,
// vLLM's `guided_json` or `structured_outputs.json`): the ground truth for
// the client's tool-call and structured-output columns (docs/METRICS.md,
// Tool calls and structured output). A request offering tools is answered
// with one call of the first tool (or tool_choice's), its arguments made
// from the tool's parameters schema; a constrained answer is a JSON value
// made from the schema. Each request draws, from the seed and its
// sequence number, whether its call's arguments are cut short (not JSON,
// InvalidJSONRate) or JSON against the schema (SchemaInvalidRate), and
// whether a constrained answer is cut short (FormatInvalidRate); the
// records say what each request was planned to be (RequestRecord.Planned).
type Tools struct {
	InvalidJSONRate   float64
	SchemaInvalidRate float64
	FormatInvalidRate float64
	// AgentSteps, when positive, serves chat requests that offer tools
	// as the steps of agent sessions of 1 to AgentSteps steps (agent.go):
	// a call while the session has steps left, then a final answer.
	AgentSteps int
}

func (t Tools) checks() []fieldCheck {
	bad := func(r float64) bool { return r < 0 || r > 1 }
	return []fieldCheck{
		{bad(t.InvalidJSONRate) || bad(t.SchemaInvalidRate) || bad(t.FormatInvalidRate),
			errors.New("tool-invalid-json-rate, tool-schema-invalid-rate and format-invalid-rate must be in [0, 1]")},
		{t.InvalidJSONRate+t.SchemaInvalidRate > 1, errors.New("tool-invalid-json-rate + tool-schema-invalid-rate must not exceed 1")},
		{t.AgentSteps < 0 || t.AgentSteps > 1000, errors.New("agent-steps must be in [0, 1000]")},
	}
}

// What a request's constrained answer was planned to be
// (RequestRecord.Planned).
const (
	PlannedValid         = "valid"
	PlannedInvalidJSON   = "invalid_json"
	PlannedSchemaInvalid = "schema_invalid"
)

// constraintFields are the request members the simulator reads for
// tools and structured output.
type constraintFields struct {
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	// Ollama's format: "json" or a schema.
	Format json.RawMessage `json:"format"`
	// vLLM's guided_json (older) and structured_outputs.json (newer).
	GuidedJSON        json.RawMessage `json:"guided_json"`
	StructuredOutputs *struct {
		JSON json.RawMessage `json:"json"`
	} `json:"structured_outputs"`
}

// planned is a request's constrained answer: the text its answer tokens
// carry (a call's arguments, or the answer itself), spread over them.
type planned struct {
	tool    string // the called function ("" for a structured answer)
	text    string // the arguments or the answer, as planned
	tokens  int    // the answer tokens it takes
	outcome string // PlannedValid, ...
}

// toolSpec is one offered tool.
type toolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// planConstrained plans request seq's constrained answer, nil when it
// asks for none: a tool call when it offers tools (and tool_choice is not
// "none"), else a structured answer when it asks for one.
func (s *Server) planConstrained(c *constraintFields, endpoint string, seq uint64) (*planned, error) {
	u := unitFloat(mix(s.seedHash ^ seq*0x51ed27 ^ 0x7001))
	if (endpoint == epChat || isAPI(endpoint)) && len(c.Tools) > 0 && string(c.Tools) != "null" && string(c.Tools) != "[]" {
		var tools []toolSpec
		if err := json.Unmarshal(c.Tools, &tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		name, err := chosenTool(tools, c.ToolChoice)
		if err != nil || name != "" {
			var params json.RawMessage
			for _, t := range tools {
				if t.Function.Name == name {
					params = t.Function.Parameters
				}
			}
			p, perr := s.planText(params, u, s.cfg.Tools.InvalidJSONRate, s.cfg.Tools.SchemaInvalidRate)
			if p != nil {
				p.tool = name
			}
			return p, errors.Join(err, perr)
		}
	}
	schema, ok := formatSchema(c)
	if !ok || endpoint != epChat && endpoint != epCompletions && !isAPI(endpoint) {
		return nil, nil
	}
	return s.planText(schema, u, s.cfg.Tools.FormatInvalidRate, 0)
}

// chosenTool is the function a request's call names: tool_choice's, or
// the first tool's; "" when tool_choice is "none".
func chosenTool(tools []toolSpec, choice json.RawMessage) (string, error) {
	var mode string
	if json.Unmarshal(choice, &mode) == nil && mode == "none" {
		return "", nil
	}
	var forced struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(choice, &forced) == nil && forced.Function.Name != "" {
		if !slices.ContainsFunc(tools, func(t toolSpec) bool { return t.Function.Name == forced.Function.Name }) {
			return "", fmt.Errorf("tool_choice names %q, which tools does not offer", forced.Function.Name)
		}
		return forced.Function.Name, nil
	}
	if len(tools) == 0 || tools[0].Function.Name == "" {
		return "", errors.New("tools[0] has no function name")
	}
	return tools[0].Function.Name, nil
}

// formatSchema is the schema a structured answer must meet (json_object
// and Ollama's "json": any object), false when the request asks for none.
func formatSchema(c *constraintFields) (json.RawMessage, bool) {
	object := json.RawMessage(`{"type":"object"}`)
	switch {
	case c.ResponseFormat != nil && c.ResponseFormat.Type == "json_schema" && c.ResponseFormat.JSONSchema != nil:
		return c.ResponseFormat.JSONSchema.Schema, true
	case c.ResponseFormat != nil && c.ResponseFormat.Type == "json_object":
		return object, true
	case len(c.GuidedJSON) > 0 && string(c.GuidedJSON) != "null":
		return c.GuidedJSON, true
	case c.StructuredOutputs != nil && len(c.StructuredOutputs.JSON) > 0:
		return c.StructuredOutputs.JSON, true
	case string(c.Format) == `"json"`:
		return object, true
	case len(c.Format) > 0 && c.Format[0] == '{':
		return c.Format, true
	}
	return nil, false
}

// planText makes the JSON text a schema asks for and spoils it as u
// draws: below notJSON it is cut in half (not JSON), below notJSON +
// invalid it is JSON against the schema.
func (s *Server) planText(schema json.RawMessage, u, notJSON, invalid float64) (*planned, error) {
	var sc map[string]any
	if len(schema) > 0 && string(schema) != "null" {
		if err := json.Unmarshal(schema, &sc); err != nil {
			return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
		}
	}
	v := fromSchema(sc, 0)
	p := &planned{outcome: PlannedValid}
	switch {
	case u < notJSON:
		p.outcome = PlannedInvalidJSON
	case u < notJSON+invalid:
		p.outcome = PlannedSchemaInvalid
		v = spoil(sc, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	p.text = string(b)
	if p.outcome == PlannedInvalidJSON {
		p.text = p.text[:len(p.text)/2]
	}
	// About four bytes of JSON per token, as the engines' tokenizers
	// split it.
	p.tokens = max(1, (len(p.text)+3)/4)
	return p, nil
}

// spoil makes v invalid against sc while keeping it JSON: an object
// without its first required property, else a value of the wrong type.
func spoil(sc map[string]any, v any) any {
	if obj, ok := v.(map[string]any); ok {
		if req, _ := sc["required"].([]any); len(req) > 0 {
			if k, ok := req[0].(string); ok {
				delete(obj, k)
				return obj
			}
		}
	}
	if t, _ := sc["type"].(string); t == "array" {
		return map[string]any{"not": "an array"}
	}
	return []any{"not", "an object"}
}

// fromSchema is a value valid against the schema's common keywords
// (type, properties, required, enum, const, minimum, maximum,
// minLength, maxLength, items, minItems): what the simulator's "model"
// answers under a constraint. A schema it cannot read gets an empty
// object.
func fromSchema(sc map[string]any, depth int) any {
	if sc == nil || depth > 8 {
		return map[string]any{}
	}
	if c, ok := sc["const"]; ok {
		return c
	}
	if e, ok := sc["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	num := func(k string) (float64, bool) { f, ok := sc[k].(float64); return f, ok }
	t, _ := sc["type"].(string)
	if ts, ok := sc["type"].([]any); ok && len(ts) > 0 {
		t, _ = ts[0].(string)
	}
	switch t {
	case "string":
		n := 5
		if m, ok := num("minLength"); ok && int(m) > n {
			n = int(m)
		}
		if m, ok := num("maxLength"); ok && int(m) < n {
			n = int(m)
		}
		return strings.Repeat("a", n)
	case "integer", "number":
		v := 1.0
		if m, ok := num("minimum"); ok && m > v {
			v = m
		}
		if m, ok := num("maximum"); ok && m < v {
			v = m
		}
		if t == "integer" {
			return int64(v)
		}
		return v
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		n := 1
		if m, ok := num("minItems"); ok {
			n = int(m)
		}
		items, _ := sc["items"].(map[string]any)
		out := make([]any, n)
		for i := range out {
			out[i] = fromSchema(items, depth+1)
		}
		return out
	}
	obj := map[string]any{}
	props, _ := sc["properties"].(map[string]any)
	for k, p := range props {
		ps, _ := p.(map[string]any)
		obj[k] = fromSchema(ps, depth+1)
	}
	return obj
}

// appendPiece appends, JSON-escaped, the part of the planned text that
// answer tokens [from, to) carry: token k's share ends at byte
// k·len/tokens, so the whole text has gone out with the last planned
// token, and a cut before it (max_tokens) sends a prefix. Tokens past
// the planned ones (ignore_eos, min_tokens) carry a space each: JSON
// allows whitespace after the value, as a grammar-constrained engine
// writes it.
func (p *planned) appendPiece(b []byte, from, to int) []byte {
	q := strconv.AppendQuote(nil, p.sent(to)[len(p.sent(from)):])
	return append(b, q[1:len(q)-1]...) // strconv's escapes are JSON's for the ASCII written here
}

// sent is the text n answer tokens carried.
func (p *planned) sent(n int) string {
	if n <= p.tokens {
		return p.text[:n*len(p.text)/p.tokens]
	}
	return p.text + strings.Repeat(" ", n-p.tokens)
}

// apply fixes the plan's output to the constrained answer: its tokens
// after any reasoning (at least min_tokens' share; the whole budget with
// ignore_eos), cut at max_tokens ("length"), else ended with "tool_calls"
// for a call and "stop" for a structured answer.
func (c *planned) apply(p *genPlan, minTokens int, ignoreEOS bool) {
	budget := p.maxTokens - p.reasoning
	if budget <= 0 {
		return // the reasoning took the budget: no answer at all
	}
	n := c.tokens
	if ignoreEOS {
		n = budget
	}
	n = max(n, minTokens-p.reasoning)
	p.constrained = c
	if n > budget {
		p.target, p.finish = p.maxTokens, "length"
		return
	}
	p.target, p.finish = p.reasoning+n, "stop"
	if c.tool != "" {
		p.finish = "tool_calls"
	}
}

// appendToolDelta opens a chat delta carrying a tool call's answer
// tokens [from, to) (reasoning first, so from ≥ p.reasoning): the call's
// id, type and name with the first of them, then its arguments' pieces
// (OpenAI's streamed shape: vLLM, SGLang, llama-server); a persona that
// sends a whole call (Ollama) writes it all, with an empty content
// beside it, in the last event. The caller closes the delta.
func (s *Server) appendToolDelta(b []byte, p genPlan, from, to int) []byte {
	c := p.constrained
	b = append(b, `{"index":0,"delta":{`...)
	if s.persona.wholeToolCall {
		b = append(b, `"content":"",`...)
		from = p.reasoning
	}
	b = append(b, `"tool_calls":[{"index":0,`...)
	if from == p.reasoning {
		b = append(b, `"id":"call_`...)
		b = strconv.AppendUint(b, p.promptHash&0xffffffff, 16)
		b = append(b, `","type":"function","function":{"name":`...)
		b = strconv.AppendQuote(b, c.tool)
		b = append(b, `,"arguments":"`...)
	} else {
		b = append(b, `"function":{"arguments":"`...)
	}
	b = c.appendPiece(b, from-p.reasoning, to-p.reasoning)
	return append(b, `"}}]`...)
}

// constrainedMessage sets a whole answer's message to the constrained
// answer n answer tokens carried: a tool call (content null, as the
// engines send it beside a call), or the structured text.
func (s *Server) constrainedMessage(m map[string]any, c *planned, n int) {
	if c.tool == "" {
		m["content"] = c.sent(n)
		return
	}
	m["content"] = nil
	m["tool_calls"] = []any{map[string]any{
		"id": "call_1", "type": "function",
		"function": map[string]any{"name": c.tool, "arguments": c.sent(n)},
	}}
}
