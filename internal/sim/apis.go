package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The Responses and Messages APIs and rerank: the same generation (the
// same plan, timing and reasoning phase as chat) written as OpenAI's
// Responses events and Anthropic's Messages events, and a reranker's
// scores, so the client's columns on each are checked against the same
// ground truth as chat's (docs/SIM.md).
const (
	epResponses = "responses"
	epMessages  = "messages"
	epRerank    = "rerank"
)

// isAPI says the endpoint is the Responses or Messages API (a chat
// generation under another API's shape).
func isAPI(ep string) bool { return ep == epResponses || ep == epMessages }

// thinks says the endpoint's requests have a reasoning phase.
func thinks(ep string) bool { return ep == epChat || isAPI(ep) }

// apiFields are genRequest's members of the Responses and Messages APIs
// (messages, max_tokens and stream are chat's own).
type apiFields struct {
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	System          json.RawMessage `json:"system"`
	Reasoning       *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	// Text is the Responses API's text.format, OutputConfig the Messages
	// API's output_config.format (apitools.go).
	Text         *apiFormat `json:"text"`
	OutputConfig *apiFormat `json:"output_config"`
}

// apiRoutes registers the APIs the persona's engine serves.
func (s *Server) apiRoutes() {
	m := s.mux
	for _, a := range s.persona.apis {
		switch a {
		case epResponses:
			m.HandleFunc("POST /v1/responses", s.gen(epResponses))
		case epMessages:
			m.HandleFunc("POST /v1/messages", s.gen(epMessages))
		case epRerank:
			m.HandleFunc("POST /v1/rerank", s.ready(s.handleRerank))
			m.HandleFunc("POST /rerank", s.ready(s.handleRerank))
		}
	}
}

// apiPrompt is the conversation a Responses or Messages request sends,
// rendered as chat renders its messages (so a prompt has the same length
// under each API), and the reasoning controls of the API's own form.
func apiPrompt(req *genRequest, endpoint string) (string, error) {
	var msgs []chatMessage
	switch endpoint {
	case epResponses:
		if req.Instructions != "" {
			msgs = append(msgs, chatMessage{Role: "system", Content: req.Instructions})
		}
		var text string
		if len(req.Input) == 0 || string(req.Input) == "null" {
			return "", errors.New("input is required")
		}
		if json.Unmarshal(req.Input, &text) == nil {
			msgs = append(msgs, chatMessage{Role: "user", Content: text})
			break
		}
		var items []json.RawMessage
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return "", errors.New("input must be a string or a list of items")
		}
		// Responses' content parts are input_text, not chat's text.
		for i := range items {
			items[i] = json.RawMessage(strings.ReplaceAll(string(items[i]), `"input_text"`, `"text"`))
		}
		m, err := parseMessages(items)
		if err != nil {
			return "", fmt.Errorf("input: %w", err)
		}
		msgs = append(msgs, m...)
	case epMessages:
		if sys := strings.TrimSpace(string(req.System)); sys != "" && sys != "null" {
			var text string
			if json.Unmarshal(req.System, &text) != nil {
				m, err := parseMessages([]json.RawMessage{json.RawMessage(`{"role":"system","content":` + sys + `}`)})
				if err != nil {
					return "", errors.New("system: want a string or text blocks")
				}
				text = m[0].Content
			}
			msgs = append(msgs, chatMessage{Role: "system", Content: text})
		}
		if req.Messages == nil {
			return "", errors.New("messages: Field required")
		}
		m, err := parseMessages(req.Messages)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, m...)
	}
	return renderChat(msgs), nil
}

// apiControls sets the chat reasoning controls an API's own form says:
// Responses' reasoning.effort; Messages' thinking {type: disabled} is
// effort none, and {type: enabled, budget_tokens: N} cuts the planned
// thinking at N tokens (reasoningLength); and reads the API's tools and
// output format onto chat's (apiConstraints).
func apiControls(req *genRequest, endpoint string) {
	apiConstraints(req, endpoint)
	if endpoint == epMessages && req.Thinking != nil && req.Thinking.Type == "enabled" {
		req.budget = req.Thinking.BudgetTokens
	}
	switch {
	case endpoint == epResponses && req.Reasoning != nil && req.Reasoning.Effort != "":
		e := req.Reasoning.Effort
		req.ReasoningEffort = &e
	case endpoint == epMessages && req.Thinking != nil && req.Thinking.Type == "disabled":
		e := "none"
		req.ReasoningEffort = &e
	}
}

// apiMaxTokens is an API request's output bound: Responses'
// max_output_tokens (absent: chat's default), Messages' required
// max_tokens.
func apiMaxTokens(req *genRequest, endpoint string, chatDefault int) (int, error) {
	switch endpoint {
	case epResponses:
		if req.MaxOutputTokens != nil {
			return *req.MaxOutputTokens, nil
		}
	case epMessages:
		if req.MaxTokens == nil {
			return 0, errors.New("max_tokens: Field required")
		}
		return *req.MaxTokens, nil
	}
	return chatDefault, nil
}

// writeAnthropicErr writes an error as Anthropic's API does:
// {"type":"error","error":{"type":...,"message":...}}.
func writeAnthropicErr(w http.ResponseWriter, e *apiErr) {
	typ := "api_error"
	switch e.status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529, http.StatusServiceUnavailable:
		typ = "overloaded_error"
	}
	writeJSON(w, e.status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.msg}})
}

// apiStream writes one generation as the Responses or Messages API's
// events. Token events go in the same write as chat's chunk would, so
// their times are the plan's; the events that open and close items and
// blocks ride along in the same writes.
type apiStream struct {
	ep       string
	id       string
	model    []byte // JSON
	seq      int    // Responses' sequence_number
	block    int    // the open block's index (-1: none)
	thinking bool   // the open block is reasoning
	// call is the open block's tool call (nil: text or reasoning), and
	// callSent the answer tokens of its arguments sent so far.
	call     *planned
	callSent int
	// summary: reasoning as response.reasoning_summary_text.delta
	// (Ollama's), not response.reasoning_text.delta (vLLM's).
	summary bool
	// bare: no output_index or sequence_number (llama-server's events).
	bare bool
}

func (s *Server) newAPIStream(id string, p genPlan) *apiStream {
	model, _ := json.Marshal(p.model)
	return &apiStream{ep: p.endpoint, id: id, model: model, block: -1, summary: s.persona.reasoningSummary, bare: s.persona.bareResponseEvents}
}

// event appends one SSE event with its name; body is the JSON object's
// members after "type" (without braces).
func (a *apiStream) event(b []byte, typ string, body string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, '"')
	if a.ep == epResponses && a.bare {
		body = dropOutputIndex(body)
	} else if a.ep == epResponses {
		b = append(b, `,"sequence_number":`...)
		b = strconv.AppendInt(b, int64(a.seq), 10)
		a.seq++
	}
	if body != "" {
		b = append(b, ',')
		b = append(b, body...)
	}
	return append(b, "}\n\n"...)
}

// start appends the stream's opening events.
func (a *apiStream) start(b []byte, s *Server, p genPlan) []byte {
	if a.ep == epResponses {
		r := a.responseObject(s, "in_progress", "null")
		b = a.event(b, "response.created", `"response":`+r)
		return a.event(b, "response.in_progress", `"response":`+r)
	}
	b = a.event(b, "message_start", fmt.Sprintf(`"message":{"id":"%s","type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":0}}`,
		a.id, a.model, len(p.promptIDs)))
	return a.event(b, "ping", "")
}

func (a *apiStream) responseObject(s *Server, status, usage string) string {
	return fmt.Sprintf(`{"id":"%s","object":"response","created_at":%d,"status":"%s","model":%s,"output":[],"error":null,"incomplete_details":null,"usage":%s}`,
		a.id, s.created, status, a.model, usage)
}

// open makes the block or output item of the kind (reasoning, a tool
// call or text) the next delta needs, closing the one before.
func (a *apiStream) open(b []byte, p genPlan, thinking bool) []byte {
	var call *planned
	if c := p.constrained; c != nil && c.tool != "" && !thinking {
		call = c
	}
	if a.block >= 0 && a.thinking == thinking && a.call == call {
		return b
	}
	b = a.close(b)
	a.block++
	a.thinking, a.call = thinking, call
	if call != nil {
		return a.callOpen(b, p)
	}
	idx := strconv.Itoa(a.block)
	if a.ep == epMessages {
		if thinking {
			return a.event(b, "content_block_start", `"index":`+idx+`,"content_block":{"type":"thinking","thinking":"","signature":""}`)
		}
		return a.event(b, "content_block_start", `"index":`+idx+`,"content_block":{"type":"text","text":""}`)
	}
	if thinking {
		return a.event(b, "response.output_item.added", `"output_index":`+idx+`,"item":{"id":"rs_`+a.id+`","type":"reasoning","summary":[],"content":[]}`)
	}
	b = a.event(b, "response.output_item.added", `"output_index":`+idx+`,"item":{"id":"msg_`+a.id+`","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	return a.event(b, "response.content_part.added", `"item_id":"msg_`+a.id+`","output_index":`+idx+`,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
}

// close ends the open block or item.
func (a *apiStream) close(b []byte) []byte {
	if a.block < 0 {
		return b
	}
	if a.call != nil {
		return a.callClose(b)
	}
	idx := strconv.Itoa(a.block)
	if a.ep == epMessages {
		if a.thinking {
			b = a.event(b, "content_block_delta", `"index":`+idx+`,"delta":{"type":"signature_delta","signature":"c2lt"}`)
		}
		return a.event(b, "content_block_stop", `"index":`+idx)
	}
	if a.thinking {
		return a.event(b, "response.output_item.done", `"output_index":`+idx+`,"item":{"id":"rs_`+a.id+`","type":"reasoning"}`)
	}
	b = a.event(b, "response.output_text.done", `"item_id":"msg_`+a.id+`","output_index":`+idx+`,"content_index":0`)
	return a.event(b, "response.output_item.done", `"output_index":`+idx+`,"item":{"id":"msg_`+a.id+`","type":"message","status":"completed"}`)
}

// delta appends the event carrying tokens from..from+n, all of one kind:
// reasoning, a tool call's arguments (a persona that sends a whole call
// holds them back to the last event, then sends them all), or the answer
// text (a structured answer's JSON, or words).
func (a *apiStream) delta(b []byte, s *Server, p genPlan, from, n int) []byte {
	thinking := from < p.reasoning
	c := p.constrained
	if c != nil && c.tool != "" && !thinking {
		if s.persona.wholeToolCall {
			if from+n < p.target {
				return b
			}
			from, n = p.reasoning, from+n-p.reasoning
		}
		b = a.open(b, p, false)
		return a.callDelta(b, c, from-p.reasoning, from+n-p.reasoning)
	}
	b = a.open(b, p, thinking)
	var words []byte
	if c != nil && !thinking {
		words = c.appendPiece(nil, from-p.reasoning, from+n-p.reasoning)
	} else {
		for k := from; k < from+n; k++ {
			words = append(words, ' ')
			words = append(words, s.word(p.promptHash, k)...)
		}
	}
	idx := strconv.Itoa(a.block)
	switch {
	case a.ep == epMessages && thinking:
		return a.event(b, "content_block_delta", `"index":`+idx+`,"delta":{"type":"thinking_delta","thinking":"`+string(words)+`"}`)
	case a.ep == epMessages:
		return a.event(b, "content_block_delta", `"index":`+idx+`,"delta":{"type":"text_delta","text":"`+string(words)+`"}`)
	case thinking && a.summary:
		return a.event(b, "response.reasoning_summary_text.delta", `"item_id":"rs_`+a.id+`","output_index":`+idx+`,"summary_index":0,"delta":"`+string(words)+`"`)
	case thinking:
		return a.event(b, "response.reasoning_text.delta", `"item_id":"rs_`+a.id+`","output_index":`+idx+`,"content_index":0,"delta":"`+string(words)+`"`)
	}
	return a.event(b, "response.output_text.delta", `"item_id":"msg_`+a.id+`","output_index":`+idx+`,"content_index":0,"delta":"`+string(words)+`","logprobs":[]`)
}

// content appends the token events for from..from+n, split where the
// reasoning ends (as chat's chunk is).
func (a *apiStream) content(b []byte, s *Server, p genPlan, from, n int) []byte {
	if from < p.reasoning && from+n > p.reasoning {
		k := p.reasoning - from
		b = a.delta(b, s, p, from, k)
		return a.delta(b, s, p, from+k, n-k)
	}
	return a.delta(b, s, p, from, n)
}

// end appends the closing events: the usage (sent tokens of which the
// first p.reasoning are reasoning; cached prompt tokens where the persona
// reports them, -1 not) and the stop reason.
func (a *apiStream) end(b []byte, s *Server, p genPlan, sent, cached int) []byte {
	b = a.close(b)
	reasoning := 0
	if s.persona.reasoningUsage {
		// Ollama's Responses usage says 0 whatever it thought.
		reasoning = min(p.reasoning, sent)
	}
	prompt := len(p.promptIDs)
	if a.ep == epMessages {
		stop := "end_turn"
		switch p.finish {
		case "length":
			stop = "max_tokens"
		case "tool_calls":
			stop = messagesToolStop
		}
		return a.event(a.event(b, "message_delta", fmt.Sprintf(`"delta":{"stop_reason":"%s","stop_sequence":null},"usage":{%s"output_tokens":%d}`, stop, messagesCache(prompt, cached), sent)), "message_stop", "")
	}
	usage := fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		prompt, max(cached, 0), sent, reasoning, prompt+sent)
	if p.finish == "length" {
		r := strings.Replace(a.responseObject(s, "incomplete", usage), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)
		return a.event(b, "response.incomplete", `"response":`+r)
	}
	return a.event(b, "response.completed", `"response":`+a.responseObject(s, "completed", usage))
}

// fail appends the API's error event: what a server whose generation
// failed mid-stream sends (Messages' error event, Responses'
// response.failed).
func (a *apiStream) fail(b []byte, s *Server) []byte {
	const msg = "the simulated engine failed mid-stream (fault stream-error)"
	if a.ep == epMessages {
		return a.event(b, "error", `"error":{"type":"overloaded_error","message":"`+msg+`"}`)
	}
	r := strings.Replace(a.responseObject(s, "failed", "null"), `"error":null`, `"error":{"code":"server_error","message":"`+msg+`"}`, 1)
	return a.event(b, "response.failed", `"response":`+r)
}

// apiWhole is a whole (non-streamed) Responses or Messages answer.
func (s *Server) apiWhole(id string, p genPlan, sent int, text, thought string, cached int) map[string]any {
	prompt := len(p.promptIDs)
	if p.endpoint == epMessages {
		var content []any
		if thought != "" {
			content = append(content, map[string]string{"type": "thinking", "thinking": thought, "signature": "c2lt"})
		}
		call := p.constrained != nil && p.constrained.tool != ""
		if text != "" && !call {
			content = append(content, map[string]string{"type": "text", "text": text})
		}
		if call {
			content = append(content, wholeCall(p.endpoint, id, p.constrained, max(sent-p.reasoning, 0)))
		}
		stop := "end_turn"
		switch p.finish {
		case "length":
			stop = "max_tokens"
		case "tool_calls":
			stop = messagesToolStop
		}
		usage := map[string]int{"input_tokens": prompt, "output_tokens": sent}
		if cached >= 0 {
			usage["input_tokens"], usage["cache_read_input_tokens"] = prompt-cached, cached
		}
		return map[string]any{"id": id, "type": "message", "role": "assistant", "model": p.model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage}
	}
	var output []any
	if thought != "" {
		output = append(output, map[string]any{"id": "rs_" + id, "type": "reasoning", "summary": []any{},
			"content": []any{map[string]string{"type": "reasoning_text", "text": thought}}})
	}
	if c := p.constrained; c != nil && c.tool != "" {
		output = append(output, wholeCall(p.endpoint, id, c, max(sent-p.reasoning, 0)))
	} else if text != "" {
		output = append(output, map[string]any{"id": "msg_" + id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
	}
	reasoning := 0
	if s.persona.reasoningUsage {
		reasoning = min(p.reasoning, sent)
	}
	status, incomplete := "completed", any(nil)
	if p.finish == "length" {
		status, incomplete = "incomplete", map[string]string{"reason": "max_output_tokens"}
	}
	return map[string]any{"id": id, "object": "response", "created_at": s.created, "status": status, "model": p.model,
		"output": output, "error": nil, "incomplete_details": incomplete,
		"usage": map[string]any{"input_tokens": prompt, "input_tokens_details": map[string]int{"cached_tokens": max(cached, 0)},
			"output_tokens": sent, "output_tokens_details": map[string]int{"reasoning_tokens": reasoning}, "total_tokens": prompt + sent}}
}

// messagesCache is the Messages API's final usage members for the prompt
// cache where the persona reports it (cached >= 0): Anthropic counts
// cache reads apart from input_tokens, and message_delta's usage carries
// both (cumulative, as message_start's did before the cache was known);
// "" where it does not.
func messagesCache(prompt, cached int) string {
	if cached < 0 {
		return ""
	}
	return fmt.Sprintf(`"input_tokens":%d,"cache_read_input_tokens":%d,`, prompt-cached, cached)
}

// dropOutputIndex takes an event body's "output_index" member out (with
// its comma), as llama-server writes its Responses events.
func dropOutputIndex(body string) string {
	const key = `"output_index":`
	i := strings.Index(body, key)
	if i < 0 {
		return body
	}
	j := i + len(key)
	for j < len(body) && body[j] >= '0' && body[j] <= '9' {
		j++
	}
	switch {
	case j < len(body) && body[j] == ',':
		j++
	case i > 0 && body[i-1] == ',':
		i--
	}
	return body[:i] + body[j:]
}
