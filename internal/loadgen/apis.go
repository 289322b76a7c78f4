package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/safetext"
)

// The Responses and Messages APIs and rerank (docs/METRICS.md, "Responses,
// Messages and rerank"): their bodies, their headers and their events,
// read onto the same chunkInfo a chat chunk gives, so that every column
// is read one way whatever the API.
const (
	// Responses is OpenAI's Responses API (POST /v1/responses): input,
	// max_output_tokens, typed SSE events (response.output_text.delta,
	// response.reasoning_text.delta, response.completed with its usage).
	Responses Endpoint = "responses"
	// Messages is Anthropic's Messages API (POST /v1/messages): messages,
	// max_tokens (required), content blocks of text, thinking and
	// tool_use streamed as content_block_start/delta/stop.
	Messages Endpoint = "messages"
	// Rerank is the rerank API vLLM, llama-server and TEI serve (POST
	// /v1/rerank): a query and documents, answered with each document's
	// relevance_score in one body.
	Rerank Endpoint = "rerank"
)

// chatShaped says the endpoint's prompt goes through the model's chat
// template (chat, and the Responses and Messages APIs, which servers
// render as a chat): a prompt's special tokens are the template's.
func (e Endpoint) chatShaped() bool { return e == Chat || e == Responses || e == Messages }

// AnthropicVersion is the anthropic-version header every Messages request
// carries: the API's one stable version, which Anthropic's API refuses
// requests without.
const AnthropicVersion = "2023-06-01"

// messagesDefaultMaxTokens is the max_tokens a Messages request without
// one sends: the API refuses a request without max_tokens, and a
// benchmark request that does not bound its output (an embeddings-like
// probe) still needs one.
const messagesDefaultMaxTokens = 4096

// setAPIHeaders adds the headers an API needs beyond the target's:
// Anthropic's version and its x-api-key beside the Authorization header
// (Anthropic's API reads x-api-key; servers that speak the API locally
// read either).
func (t *Target) setAPIHeaders(h http.Header) {
	if t.Endpoint != Messages {
		return
	}
	if h.Get("anthropic-version") == "" {
		h.Set("anthropic-version", AnthropicVersion)
	}
	if t.APIKey != "" && h.Get("x-api-key") == "" {
		h.Set("x-api-key", t.APIKey)
	}
}

// apiBody fills b (model set) with a Responses, Messages or rerank
// request's own fields; false for the other endpoints.
func (t *Target) apiBody(b map[string]any, req Request) bool {
	switch t.Endpoint {
	case Responses:
		if req.Messages != nil {
			b["input"] = req.Messages // EasyInputMessage: {role, content}
		} else {
			b["input"] = req.Prompt
		}
		if req.MaxTokens > 0 {
			b["max_output_tokens"] = req.MaxTokens
		}
		b["stream"] = t.Stream
	case Messages:
		msgs := req.Messages
		if msgs == nil {
			msgs = []Message{{Role: "user", Content: req.Prompt}}
		}
		// The Messages API has no system role in messages: a system
		// message goes in the top-level system field.
		var system []string
		kept := make([]Message, 0, len(msgs))
		for _, m := range msgs {
			if m.Role == "system" {
				system = append(system, m.Content)
				continue
			}
			kept = append(kept, m)
		}
		b["messages"] = kept
		if len(system) > 0 {
			b["system"] = strings.Join(system, "\n")
		}
		n := req.MaxTokens
		if n <= 0 {
			n = messagesDefaultMaxTokens
		}
		b["max_tokens"] = n
		b["stream"] = t.Stream
	case Rerank:
		b["query"] = req.Prompt
		b["documents"] = req.Inputs
		if req.TopN > 0 {
			b["top_n"] = req.TopN
		}
	default:
		return false
	}
	return true
}

// apiControls moves the plan's reasoning controls, given as chat's body
// fields, to the API's own: Responses' reasoning.effort for
// reasoning_effort; for Messages, reasoning_effort "none" is thinking
// {type: disabled} and any other effort is dropped (the API sizes
// thinking by budget_tokens, which a plan gives as thinking itself).
func (t *Target) apiControls(b map[string]any) {
	effort, ok := b["reasoning_effort"].(string)
	if !ok {
		return
	}
	switch t.Endpoint {
	case Responses:
		delete(b, "reasoning_effort")
		if _, set := b["reasoning"]; !set {
			b["reasoning"] = map[string]any{"effort": effort}
		}
	case Messages:
		delete(b, "reasoning_effort")
		if _, set := b["thinking"]; !set && effort == "none" {
			b["thinking"] = map[string]any{"type": "disabled"}
		}
	}
}

// scanFor is the event reader of an endpoint's stream.
func scanFor(ep Endpoint) func([]byte) (chunkInfo, error) {
	switch ep {
	case Responses:
		return scanResponsesEvent
	case Messages:
		return scanMessagesEvent
	}
	return scanChunk
}

// apiEvent is one Responses or Messages event's members that say what it
// carries, read without decoding (each a slice of the event's bytes).
type apiEvent struct {
	s                      scanner
	typ                    []byte
	delta, response, msg   []byte // raw values
	usage, block, errValue []byte
	item                   []byte // Responses' output item (raw)
	// index is Messages' content block index or Responses' output_index
	// (-1: none): which tool call a piece belongs to.
	index int
}

// raw reads the value at the scanner into *v (its bytes).
func (e *apiEvent) raw(v *[]byte) error {
	e.s.ws()
	start := e.s.i
	if err := e.s.skip(); err != nil {
		return err
	}
	*v = e.s.b[start:e.s.i]
	return nil
}

func (e *apiEvent) member(k []byte) error {
	switch string(k) {
	case "type":
		raw, _, err := e.s.stringOrSkip()
		e.typ = raw
		return err
	case "delta":
		return e.raw(&e.delta)
	case "response":
		return e.raw(&e.response)
	case "message":
		return e.raw(&e.msg)
	case "usage":
		return e.raw(&e.usage)
	case "content_block":
		return e.raw(&e.block)
	case "error":
		return e.raw(&e.errValue)
	case "item":
		return e.raw(&e.item)
	case "index", "output_index":
		n, isNum, err := e.s.intIfNumber()
		if isNum {
			e.index = n
		}
		return err
	}
	return e.s.skip()
}

// parseAPIEvent walks one event's top level.
func parseAPIEvent(data []byte) (apiEvent, error) {
	e := apiEvent{s: scanner{b: data}, index: -1}
	if !e.s.consume('{') {
		return e, e.s.fail()
	}
	if err := e.s.object(e.member); err != nil {
		return e, err
	}
	e.s.ws()
	if e.s.i != len(e.s.b) {
		return e, e.s.fail()
	}
	return e, nil
}

// stringValue is a raw value's string contents (nil: not a string).
func stringValue(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	s := scanner{b: raw}
	r, esc, err := s.str()
	if err != nil {
		return nil, false
	}
	return r, esc
}

// objectMembers walks a raw object value's members (nothing for any other
// value).
func objectMembers(raw []byte, member func(s *scanner, k []byte) error) error {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	s := scanner{b: raw, i: 1}
	return s.object(func(k []byte) error { return member(&s, k) })
}

// apiUsage reads a Responses or Messages usage object into c: input and
// output tokens, the cached share and, for Responses, the reasoning
// tokens. The Messages API counts cache reads and writes apart from
// input_tokens, so the prompt is their sum.
func apiUsage(raw []byte, c *chunkInfo) error {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	c.HasUsage = true
	var in, cacheRead, cacheWrite int
	sawInput := false
	err := objectMembers(raw, func(s *scanner, k []byte) error {
		var err error
		switch string(k) {
		case "input_tokens", "prompt_tokens":
			sawInput = true
			in, err = s.intOrNull()
		case "output_tokens", "completion_tokens":
			c.CompletionTokens, err = s.intOrNull()
		case "cache_read_input_tokens":
			var isNum bool
			cacheRead, isNum, err = s.intIfNumber()
			c.HasCached, c.CachedTokens = isNum, cacheRead
		case "cache_creation_input_tokens":
			cacheWrite, err = s.intOrNull()
		case "input_tokens_details":
			start := s.i
			if err = s.skip(); err == nil {
				err = objectMembers(s.b[start:s.i], func(s *scanner, k []byte) error {
					if string(k) != "cached_tokens" {
						return s.skip()
					}
					n, isNum, err := s.intIfNumber()
					c.HasCached, c.CachedTokens = isNum, n
					return err
				})
			}
		case "output_tokens_details":
			start := s.i
			if err = s.skip(); err == nil {
				err = objectMembers(s.b[start:s.i], func(s *scanner, k []byte) error {
					if string(k) != "reasoning_tokens" {
						return s.skip()
					}
					// 0 is no count: Ollama's Responses API sends
					// reasoning_tokens 0 whatever it thought (its
					// source leaves it to be wired), and 0 beside no
					// reasoning events is what the events count.
					n, isNum, err := s.intIfNumber()
					c.HasReasoningTokens, c.ReasoningTokens = isNum && n > 0, n
					return err
				})
			}
		default:
			err = s.skip()
		}
		return err
	})
	c.PromptTokens = in + cacheRead + cacheWrite
	// Messages' message_delta usage may carry output_tokens alone: the
	// input counted at message_start stands.
	c.KeepPrompt = !sawInput
	return err
}

// idAndModel reads an object's id and model into c.
func idAndModel(raw []byte, c *chunkInfo) error {
	return objectMembers(raw, func(s *scanner, k []byte) error {
		switch string(k) {
		case "id":
			r, esc, err := s.stringOrSkip()
			c.ID, c.IDEscaped = r, esc
			return err
		case "model":
			r, esc, err := s.stringOrSkip()
			c.Model, c.ModelEscaped = r, esc
			return err
		case "usage":
			start := s.i
			if err := s.skip(); err != nil {
				return err
			}
			return apiUsage(s.b[start:s.i], c)
		}
		return s.skip()
	})
}

// setText marks c as carrying a token of kind k, with its text when it
// is the answer's.
func (c *chunkInfo) setText(k EventKind, text []byte, esc bool) {
	c.HasText = true
	switch k {
	case EventReasoning:
		c.HasReasoning = true
	case EventToolCall:
		c.HasAnswer, c.HasToolCall = true, true
	default:
		c.HasAnswer = true
		c.Text, c.TextEscaped = text, esc
	}
}

// scanResponsesEvent reads a Responses API stream event: the deltas of
// output text (response.output_text.delta, a refusal's too), of reasoning
// (response.reasoning_text.delta; response.reasoning_summary_text.delta,
// which Ollama sends its thinking as) and of a function call's arguments
// are token events; response.created names the response and its model;
// response.completed and response.incomplete end it with its usage;
// response.failed and error are the server's errors.
func scanResponsesEvent(data []byte) (chunkInfo, error) {
	var c chunkInfo
	e, err := parseAPIEvent(data)
	if err != nil {
		return c, err
	}
	switch string(e.typ) {
	case "response.output_text.delta", "response.refusal.delta":
		if t, esc := stringValue(e.delta); len(t) > 0 {
			c.setText(EventAnswer, t, esc)
		}
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		if t, _ := stringValue(e.delta); len(t) > 0 {
			c.setText(EventReasoning, nil, false)
		}
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		if t, esc := stringValue(e.delta); len(t) > 0 {
			c.setText(EventToolCall, nil, false)
			c.ToolCalls = append(c.ToolCalls, toolPiece{Index: e.index, Args: t, ArgsEsc: esc})
		}
	case "response.output_item.added":
		err = callItem(e.item, e.index, &c)
	case "response.created", "response.in_progress":
		err = idAndModel(e.response, &c)
		c.HasUsage = false // the usage so far is no report
	case "response.completed", "response.incomplete":
		err = idAndModel(e.response, &c)
		c.HasFinish, c.Last = true, true
	case "response.failed", "error":
		c.HasError = true
	}
	return c, err
}

// scanMessagesEvent reads a Messages API stream event: message_start
// names the message and its model and carries the input tokens;
// content_block_delta's text_delta, thinking_delta and input_json_delta
// are token events (signature_delta is not: it seals a thinking block);
// a content_block_start that already carries text or thinking is one too;
// message_delta carries the output tokens and the stop_reason,
// message_stop ends the stream; error is the server's error.
func scanMessagesEvent(data []byte) (chunkInfo, error) {
	var c chunkInfo
	e, err := parseAPIEvent(data)
	if err != nil {
		return c, err
	}
	switch string(e.typ) {
	case "message_start":
		err = idAndModel(e.msg, &c)
	case "content_block_start":
		err = blockText(e.block, e.index, &c)
	case "content_block_delta":
		err = blockText(e.delta, e.index, &c)
	case "message_delta":
		err = apiUsage(e.usage, &c)
		stop := false
		err2 := objectMembers(e.delta, func(s *scanner, k []byte) error {
			if string(k) != "stop_reason" {
				return s.skip()
			}
			var err error
			stop, err = s.nonEmptyString()
			return err
		})
		c.HasFinish = stop
		if err == nil {
			err = err2
		}
	case "message_stop":
		c.HasFinish, c.Last = true, true
	case "error":
		c.HasError = true
	}
	return c, err
}

// blockText reads a content block or its delta (of the block at index):
// text or text_delta (answer), thinking or thinking_delta (reasoning),
// input_json_delta's partial_json (a piece of a tool call's input); a
// tool_use block starts a call (its name; docs/METRICS.md, Tool calls
// and structured output).
func blockText(raw []byte, index int, c *chunkInfo) error {
	var typ, text, thinking, partial, name, input []byte
	var textEsc, partialEsc, nameEsc bool
	err := objectMembers(raw, func(s *scanner, k []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, _, err = s.stringOrSkip()
		case "text":
			text, textEsc, err = s.stringOrSkip()
		case "thinking":
			thinking, _, err = s.stringOrSkip()
		case "partial_json":
			partial, partialEsc, err = s.stringOrSkip()
		case "name":
			name, nameEsc, err = s.stringOrSkip()
		case "input":
			start := s.i
			err = s.skip()
			input = s.b[start:s.i]
		default:
			err = s.skip()
		}
		return err
	})
	if string(typ) == "tool_use" || string(typ) == "server_tool_use" {
		c.ToolCalls = append(c.ToolCalls, startPiece(index, name, nameEsc, input))
		if len(c.ToolCalls[0].Args) > 0 {
			c.setText(EventToolCall, nil, false)
		}
		return err
	}
	switch string(typ) {
	case "text", "text_delta":
		if len(text) > 0 {
			c.setText(EventAnswer, text, textEsc)
		}
	case "thinking", "thinking_delta":
		if len(thinking) > 0 {
			c.setText(EventReasoning, nil, false)
		}
	case "input_json_delta":
		if len(partial) > 0 {
			c.setText(EventToolCall, nil, false)
			c.ToolCalls = append(c.ToolCalls, toolPiece{Index: index, Args: partial, ArgsEsc: partialEsc})
		}
	}
	return err
}

// apiErrorMessage is the server's message in a Responses or Messages
// error: Anthropic's {"type":"error","error":{"message"}}, OpenAI's
// {"type":"error","message"} event, or response.failed's
// {"response":{"error":{"message"}}}.
func apiErrorMessage(data []byte) string {
	var e struct {
		Response struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &e) == nil && e.Response.Error.Message != "" {
		if e.Response.Error.Code != "" {
			return errorMessage(fmt.Appendf(nil, `{"message":%q}`, e.Response.Error.Code+": "+e.Response.Error.Message))
		}
		return errorMessage(fmt.Appendf(nil, `{"message":%q}`, e.Response.Error.Message))
	}
	return errorMessage(data)
}

// apiAnswer is a whole (non-streamed) Responses or Messages answer,
// decoded: the answer is one body, read once, so decoding costs nothing
// that matters.
type apiAnswer struct {
	ID     string          `json:"id"`
	Model  string          `json:"model"`
	Type   string          `json:"type"`
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
	Usage  json.RawMessage `json:"usage"`
	// Responses: output items (message, reasoning, function_call).
	Output []struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Input     string `json:"input"` // a custom tool call's
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
	} `json:"output"`
	// Messages: content blocks (text, thinking, tool_use).
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
}

// parts says what a whole answer carried: its answer text, whether it
// reasoned, whether it called a tool.
func (a *apiAnswer) parts() (text string, reasoned, tool bool) {
	var b strings.Builder
	for _, o := range a.Output {
		switch o.Type {
		case "message":
			for _, c := range o.Content {
				if c.Type == "output_text" || c.Type == "refusal" {
					b.WriteString(c.Text)
				}
			}
		case "reasoning":
			for _, c := range o.Content {
				reasoned = reasoned || c.Text != ""
			}
			for _, s := range o.Summary {
				reasoned = reasoned || s.Text != ""
			}
		case "function_call", "custom_tool_call":
			tool = true
		}
	}
	for _, c := range a.Content {
		switch c.Type {
		case "text":
			b.WriteString(c.Text)
		case "thinking", "redacted_thinking":
			reasoned = true
		case "tool_use", "server_tool_use":
			tool = true
		}
	}
	return b.String(), reasoned, tool
}

// readWholeAPI reads a whole Responses or Messages answer read at at.
func (t *Target) readWholeAPI(b []byte, at time.Time, req Request, res *Result) error {
	var a apiAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("malformed response: %w (body %q)", err, truncate(b, 80))
	}
	if a.Type == "error" || len(a.Error) > 0 && string(a.Error) != "null" || a.Status == "failed" {
		return &StreamError{Message: apiErrorMessage(b)}
	}
	res.ResponseID, res.Model = safetext.String(a.ID), safetext.String(a.Model)
	var c chunkInfo
	if err := apiUsage(a.Usage, &c); err != nil {
		return fmt.Errorf("malformed usage in the response: %w", err)
	}
	if c.HasUsage {
		res.InputTokens, res.OutputTokens = c.PromptTokens, c.CompletionTokens
		res.UsageReported = true
		res.CachedTokens, res.CachedReported = c.CachedTokens, c.HasCached
		res.usageReasoning, res.usageReasoningSet = c.ReasoningTokens, c.HasReasoningTokens
	}
	text, reasoned, tool := a.parts()
	if req.KeepText {
		res.Text = text
	}
	answer := chunkInfo{ToolCalls: a.calls(), Text: []byte(text)}
	res.noteAnswer(&answer)
	kind := EventAnswer
	switch {
	case text == "" && tool:
		kind = EventToolCall
	case text == "" && reasoned:
		kind = EventReasoning
	}
	if text != "" || reasoned || tool {
		res.Tokens = append(res.Tokens, TokenEvent{At: at, Tokens: max(res.OutputTokens, 1), Kind: kind})
	}
	res.splitTokens(true, reasoned)
	return nil
}

// RerankError: a rerank answer that cannot be a real one (a result for
// no document, a document scored twice, a score that is not finite, or
// more results than asked).
type RerankError struct{ Detail string }

func (e *RerankError) Error() string { return "bad rerank answer: " + e.Detail }

// readRerank reads a rerank answer read at at: results[{index,
// relevance_score}] (vLLM, llama-server, TEI's /rerank answers a bare list
// of {index, score}), each document scored at most once.
func readRerank(b []byte, at time.Time, req Request, res *Result) error {
	type result struct {
		Index          *int     `json:"index"`
		RelevanceScore *float64 `json:"relevance_score"`
		Score          *float64 `json:"score"`
	}
	var body struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Results []result        `json:"results"`
		Usage   json.RawMessage `json:"usage"`
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &body.Results); err != nil {
			return fmt.Errorf("malformed rerank response: %w", err)
		}
	} else if err := json.Unmarshal(b, &body); err != nil {
		return fmt.Errorf("malformed rerank response: %w", err)
	}
	n := len(req.Inputs)
	want := n
	if req.TopN > 0 {
		want = min(n, req.TopN)
	}
	if len(body.Results) == 0 || len(body.Results) > n {
		return &RerankError{Detail: fmt.Sprintf("%d results for %d documents", len(body.Results), n)}
	}
	seen := make([]bool, n)
	for k, r := range body.Results {
		score := r.RelevanceScore
		if score == nil {
			score = r.Score
		}
		switch {
		case r.Index == nil || *r.Index < 0 || *r.Index >= n:
			return &RerankError{Detail: fmt.Sprintf("results[%d] names no document of 0..%d", k, n-1)}
		case seen[*r.Index]:
			return &RerankError{Detail: fmt.Sprintf("document %d scored twice", *r.Index)}
		case score == nil || math.IsNaN(*score) || math.IsInf(*score, 0):
			return &RerankError{Detail: fmt.Sprintf("results[%d] has no finite relevance_score", k)}
		}
		seen[*r.Index] = true
	}
	if len(body.Results) < want {
		return &RerankError{Detail: fmt.Sprintf("%d results, want %d (top_n %d of %d documents)", len(body.Results), want, req.TopN, n)}
	}
	res.ResponseID, res.Model = safetext.String(body.ID), safetext.String(body.Model)
	// vLLM's rerank usage is {total_tokens} (all of it input); others
	// say prompt_tokens.
	var u struct {
		Prompt *int `json:"prompt_tokens"`
		Total  *int `json:"total_tokens"`
	}
	if json.Unmarshal(body.Usage, &u) == nil {
		switch {
		case u.Prompt != nil:
			res.InputTokens, res.UsageReported = *u.Prompt, true
		case u.Total != nil:
			res.InputTokens, res.UsageReported = *u.Total, true
		}
	}
	// Every document was scored, whatever top_n returned.
	res.Documents = n
	res.Tokens = append(res.Tokens, TokenEvent{At: at, Tokens: 1})
	return nil
}
