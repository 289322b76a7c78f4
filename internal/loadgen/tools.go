package loadgen

import (
	"bytes"

	"github.com/benchrun/benchrun/internal/jsonvalid"
)

// AnswerCheck is what a request's answer is checked against when the
// request constrains it (docs/METRICS.md, Tool calls and structured
// output): the tools it offered, each call's arguments checked against
// the parameters of the tool it names; and the response_format it asked
// for, the answer text checked against the schema. Compiled once per
// plan (jsonvalid), shared by every request of a cell.
type AnswerCheck struct {
	// Tools are the tools offered (nil: none, so calls are counted but
	// their arguments are only checked for JSON).
	Tools jsonvalid.Tools
	// Format is the structured-output constraint's schema (json_schema's
	// schema; json_object's is {"type": "object"}); nil: none asked for.
	Format *jsonvalid.Schema
}

// toolPiece is one element of a delta's (or a whole answer's message's)
// tool_calls: OpenAI's streamed shape sends a call's index, id and
// function name first and its arguments in pieces after; Ollama sends a
// whole call in one element. Name and Args are raw (still JSON-escaped)
// subslices of the event.
type toolPiece struct {
	Index   int // -1: the element has no index
	Name    []byte
	NameEsc bool
	Args    []byte
	ArgsEsc bool
	// ArgsJSON: the arguments came as a JSON value other than a string
	// (an object, as Ollama's native API sends them): Args is its text.
	ArgsJSON bool
}

// toolCalls reads a tool_calls value: each object element becomes a
// piece of info.ToolCalls. It reports whether the array has an element
// (null and [] carry no call).
func (c *chunkScan) toolCalls() (bool, error) {
	if c.s.peek() != '[' {
		return false, c.s.skip()
	}
	c.s.i++
	some := false
	err := c.s.array(func() error {
		some = true
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		p := toolPiece{Index: -1}
		err := c.s.object(func(k []byte) error { return c.toolMember(&p, k) })
		c.info.ToolCalls = append(c.info.ToolCalls, p)
		return err
	})
	return some, err
}

// toolMember reads a member of one tool_calls element.
func (c *chunkScan) toolMember(p *toolPiece, k []byte) error {
	switch string(k) {
	case "index":
		n, isNum, err := c.s.intIfNumber()
		p.Index = -1
		if isNum {
			p.Index = n
		}
		return err
	case "function":
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		return c.s.object(func(k []byte) error { return c.functionMember(p, k) })
	}
	return c.s.skip()
}

// functionMember reads a member of a tool call's function: its name
// and its arguments (a string of JSON text, or the JSON value itself).
func (c *chunkScan) functionMember(p *toolPiece, k []byte) error {
	switch string(k) {
	case "name":
		var err error
		p.Name, p.NameEsc, err = c.s.stringOrSkip()
		return err
	case "arguments":
		p.Args, p.ArgsEsc, p.ArgsJSON = nil, false, false
		switch c.s.peek() {
		case '"':
			var err error
			p.Args, p.ArgsEsc, err = c.s.str()
			return err
		case 'n':
			return c.s.skip() // null: no arguments in this piece
		}
		start := c.s.i
		err := c.s.skip()
		p.Args, p.ArgsJSON = c.s.b[start:c.s.i], true
		return err
	}
	return c.s.skip()
}

// toolCall is one call being read: its index, name and arguments joined
// from its pieces, kept only until the request ends and is checked.
type toolCall struct {
	index int
	name  string
	args  []byte
}

// answerAcc is what a constrained request keeps of its answer until it
// is checked: the calls' names and arguments, and the answer text when a
// structured output is to be checked. Only counts outlive the request.
type answerAcc struct {
	check *AnswerCheck
	calls []toolCall
	text  []byte
	bad   bool // an escape did not decode: the text is not what was sent
}

// addPieces joins a chunk's tool-call pieces into the calls: a piece
// naming a function starts a call; one that does not continues the call
// with its index, or the last call.
func (a *answerAcc) addPieces(ps []toolPiece) {
	for i := range ps {
		p := &ps[i]
		var call *toolCall
		if len(p.Name) == 0 {
			for j := len(a.calls) - 1; j >= 0; j-- {
				if p.Index < 0 || a.calls[j].index == p.Index {
					call = &a.calls[j]
					break
				}
			}
		}
		if call == nil {
			a.calls = append(a.calls, toolCall{index: p.Index, name: decodeRaw(p.Name, p.NameEsc)})
			call = &a.calls[len(a.calls)-1]
		}
		switch {
		case p.ArgsJSON:
			call.args = append(call.args, p.Args...)
		case p.ArgsEsc:
			s, err := unquoteJSON(p.Args)
			if err != nil {
				a.bad = true
			}
			call.args = append(call.args, s...)
		default:
			call.args = append(call.args, p.Args...)
		}
	}
}

// addText appends answer text (raw, escaped when esc) for the
// structured-output check.
func (a *answerAcc) addText(raw []byte, esc bool) {
	if a.check == nil || a.check.Format == nil || len(raw) == 0 {
		return
	}
	if !esc {
		a.text = append(a.text, raw...)
		return
	}
	s, err := unquoteJSON(raw)
	if err != nil {
		a.bad = true
	}
	a.text = append(a.text, s...)
}

func decodeRaw(raw []byte, esc bool) string {
	if !esc {
		return string(raw)
	}
	s, _ := unquoteJSON(raw)
	return s
}

// ToolCheck is a request's tool calls and structured output, checked
// (docs/METRICS.md, Tool calls and structured output).
type ToolCheck struct {
	// ToolsOffered: the request offered tools (its calls' arguments were
	// checked against their schemas). ToolCalls counts the calls that
	// arrived (offered or not); ToolCallsJSON those whose arguments are
	// one JSON value; ToolCallsValid those valid against the named
	// tool's parameters (a call naming a tool not offered is not).
	ToolsOffered   bool
	ToolCalls      int
	ToolCallsJSON  int
	ToolCallsValid int
	// FormatAsked: the request asked for structured output; AnswerJSON
	// says its answer text (content joined) is one JSON value,
	// AnswerValid that it is valid against the schema.
	FormatAsked bool
	AnswerJSON  bool
	AnswerValid bool
	// Invalid is why the first call or answer that failed its check
	// failed ("" when all passed).
	Invalid string
}

// finish checks what the request kept and drops it: the counts stay.
func (a *answerAcc) finish(res *Result) {
	if a == nil {
		return
	}
	tc := &res.Check
	if a.check != nil {
		tc.ToolsOffered = a.check.Tools != nil
		tc.FormatAsked = a.check.Format != nil
	}
	for _, c := range a.calls {
		tc.ToolCalls++
		var r jsonvalid.Result
		if a.check != nil && a.check.Tools != nil {
			r = a.check.Tools.CheckCall(c.name, string(c.args))
		} else {
			r = anyTools.CheckCall("", string(c.args))
		}
		if r.JSON() {
			tc.ToolCallsJSON++
		}
		if r.Outcome == jsonvalid.Valid {
			tc.ToolCallsValid++
		} else if tc.Invalid == "" {
			tc.Invalid = "tool call " + c.name + ": " + r.Reason
		}
	}
	if tc.FormatAsked && len(a.calls) > 0 && len(bytes.TrimSpace(a.text)) == 0 {
		// The answer is a call, with no text to hold to the format (a
		// server that forces a call through the format, as Ollama's
		// tool parser takes a JSON object the grammar made for one).
		tc.FormatAsked = false
	}
	if tc.FormatAsked {
		r := a.check.Format.Check(string(a.text))
		tc.AnswerJSON, tc.AnswerValid = r.JSON(), r.Outcome == jsonvalid.Valid
		if !tc.AnswerValid && tc.Invalid == "" {
			tc.Invalid = "answer: " + r.Reason
		}
	}
	if a.bad && tc.Invalid == "" {
		tc.Invalid = "an escape in the answer did not decode"
	}
	a.calls, a.text = nil, nil
}

// anyTools checks a call when no tools were offered: any JSON object is
// valid arguments (the name "" takes any).
var anyTools = jsonvalid.Tools{"": nil}

// newAnswerAcc is the accumulator of a request under check (nil without
// one: calls are still counted, so one is made at the first call).
func newAnswerAcc(c *AnswerCheck) *answerAcc {
	if c == nil {
		return nil
	}
	return &answerAcc{check: c}
}

// noteAnswer takes a chunk's tool-call pieces and answer text into the
// request's accumulator.
func (res *Result) noteAnswer(c *chunkInfo) {
	if len(c.ToolCalls) > 0 {
		if res.answers == nil {
			res.answers = &answerAcc{}
		}
		res.answers.addPieces(c.ToolCalls)
	}
	if res.answers != nil {
		res.answers.addText(c.Text, c.TextEscaped)
	}
}

// checkFor is the check a request's answer goes through: the request's
// own (a dataset line's tools), else the target's.
func (t *Target) checkFor(req Request) *AnswerCheck {
	if req.Check != nil {
		return req.Check
	}
	return t.Check
}

// offersTools says the request offers the model tools: its check names
// some, or its body (or the target's) carries a tools array.
func (t *Target) offersTools(req Request) bool {
	if c := t.checkFor(req); c != nil && len(c.Tools) > 0 {
		return true
	}
	_, inReq := req.Body["tools"]
	_, inTarget := t.ExtraBody["tools"]
	return inReq || inTarget
}

// sawKind says some token event was of kind k.
func (r *Result) sawKind(k EventKind) bool {
	for _, e := range r.Tokens {
		if e.Kind == k {
			return true
		}
	}
	return false
}
