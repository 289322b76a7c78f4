package loadgen

import (
	"bytes"
	"encoding/json"
)

// Tool calls and structured output over the Responses and Messages APIs
// (docs/METRICS.md, Tool calls and structured output): the plan gives
// tools, tool_choice and response_format in Chat Completions' shape,
// which every stage compiles and checks one way; the request carries
// them in the API's own shape, and the API's call events are read onto
// the same tool-call pieces a chat delta gives.

// apiConstraints moves tools, tool_choice and response_format, given in
// Chat Completions' shape, to the API's own: the Responses API's flat
// function tools ({type, name, parameters}), its {type: "function",
// name} choice and text.format; the Messages API's {name, input_schema}
// tools, its {type: auto|any|none|tool} choice and output_config.format
// (json_schema only: json_object is the schema {"type": "object"}). A
// value already in the API's shape passes as it is. b's values may be
// shared by every request (the target's body): new ones replace them,
// none is changed in place.
func (t *Target) apiConstraints(b map[string]any) {
	if tools := anyList(b["tools"]); tools != nil {
		out := make([]any, len(tools))
		for i, tool := range tools {
			out[i] = t.apiTool(tool)
		}
		b["tools"] = out
	}
	if choice, ok := b["tool_choice"]; ok {
		b["tool_choice"] = t.apiToolChoice(choice)
	}
	rf, ok := b["response_format"].(map[string]any)
	if !ok {
		return
	}
	delete(b, "response_format")
	schema := any(map[string]any{"type": "object"})
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] == "json_schema" && js != nil {
		schema = js["schema"]
	}
	switch t.Endpoint {
	case Responses:
		format := map[string]any{"type": rf["type"]}
		if rf["type"] == "json_schema" {
			format["name"], format["schema"] = "answer", schema
			for _, k := range []string{"name", "strict", "description"} {
				if v, ok := js[k]; ok {
					format[k] = v
				}
			}
		}
		if _, set := b["text"]; !set {
			b["text"] = map[string]any{"format": format}
		}
	case Messages:
		if _, set := b["output_config"]; !set {
			b["output_config"] = map[string]any{"format": map[string]any{"type": "json_schema", "schema": schema}}
		}
	}
}

// anyList is a list value as []any (a dataset's tools are a
// []map[string]any); nil for anything else.
func anyList(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []map[string]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out
	case json.RawMessage:
		var out []any
		if json.Unmarshal(l, &out) == nil {
			return out
		}
	}
	return nil
}

// apiTool is one Chat Completions tool ({type: "function", function:
// {name, description, parameters, strict}}) in the API's shape.
func (t *Target) apiTool(tool any) any {
	m, _ := tool.(map[string]any)
	fn, ok := m["function"].(map[string]any)
	if !ok {
		return tool // already the API's shape
	}
	params, hasParams := fn["parameters"]
	switch t.Endpoint {
	case Responses:
		out := map[string]any{"type": "function", "name": fn["name"]}
		for _, k := range []string{"description", "parameters", "strict"} {
			if v, ok := fn[k]; ok {
				out[k] = v
			}
		}
		return out
	case Messages:
		out := map[string]any{"name": fn["name"]}
		if d, ok := fn["description"]; ok {
			out["description"] = d
		}
		if !hasParams || params == nil {
			// input_schema is required; a function without parameters
			// takes any object.
			params = map[string]any{"type": "object"}
		}
		out["input_schema"] = params
		return out
	}
	return tool
}

// apiToolChoice is a Chat Completions tool_choice ("auto", "required",
// "none" or {type: "function", function: {name}}) in the API's shape.
func (t *Target) apiToolChoice(choice any) any {
	name := forcedName(choice)
	mode, _ := choice.(string)
	switch t.Endpoint {
	case Responses:
		if name != "" {
			return map[string]any{"type": "function", "name": name}
		}
	case Messages:
		switch {
		case name != "":
			return map[string]any{"type": "tool", "name": name}
		case mode == "required":
			return map[string]any{"type": "any"}
		case mode == "auto" || mode == "none":
			return map[string]any{"type": mode}
		}
	}
	return choice
}

// forcedName is the function a chat tool_choice forces ("" for none),
// whatever Go value holds it (a plan's is decoded JSON; a library
// caller's may be typed).
func forcedName(choice any) string {
	if _, mode := choice.(string); mode || choice == nil {
		return ""
	}
	b, err := json.Marshal(choice)
	if err != nil {
		return ""
	}
	var c struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(b, &c)
	return c.Function.Name
}

// startPiece is the piece that opens a call in the Messages API (a
// tool_use block) or the Responses API (a function_call item): its name,
// and its input or arguments when the opening already carries them (a
// non-empty object; Anthropic's and Ollama's open with input {} and send
// the input as deltas after; a string is the arguments' text).
func startPiece(index int, name []byte, nameEsc bool, input []byte) toolPiece {
	p := toolPiece{Index: index, Name: name, NameEsc: nameEsc}
	input = bytes.TrimSpace(input)
	switch {
	case len(input) > 0 && input[0] == '"':
		p.Args, p.ArgsEsc = stringValue(input)
	case len(input) > 0 && input[0] == '{' && len(bytes.TrimSpace(input[1:len(input)-1])) > 0:
		p.Args, p.ArgsJSON = input, true
	}
	return p
}

// callItem reads a Responses output item as it is added: a
// function_call (or custom_tool_call) starts a call, its name, and its
// arguments when the item already carries them (a server that sends the
// whole call at once may).
func callItem(raw []byte, index int, c *chunkInfo) error {
	var typ, name, args []byte
	var nameEsc, argsEsc bool
	err := objectMembers(raw, func(s *scanner, k []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, _, err = s.stringOrSkip()
		case "name":
			name, nameEsc, err = s.stringOrSkip()
		case "arguments", "input":
			args, argsEsc, err = s.stringOrSkip()
		default:
			err = s.skip()
		}
		return err
	})
	if string(typ) != "function_call" && string(typ) != "custom_tool_call" {
		return err
	}
	c.ToolCalls = append(c.ToolCalls, toolPiece{Index: index, Name: name, NameEsc: nameEsc, Args: args, ArgsEsc: argsEsc})
	if len(args) > 0 {
		c.setText(EventToolCall, nil, false)
	}
	return err
}

// calls are a whole Responses or Messages answer's tool calls as pieces,
// one whole call each: a function_call's arguments text, a tool_use's
// input object.
func (a *apiAnswer) calls() []toolPiece {
	var ps []toolPiece
	for i, o := range a.Output {
		switch o.Type {
		case "function_call":
			ps = append(ps, toolPiece{Index: i, Name: []byte(o.Name), Args: []byte(o.Arguments)})
		case "custom_tool_call":
			ps = append(ps, toolPiece{Index: i, Name: []byte(o.Name), Args: []byte(o.Input)})
		}
	}
	for i, c := range a.Content {
		if c.Type == "tool_use" || c.Type == "server_tool_use" {
			p := startPiece(i, []byte(c.Name), false, c.Input)
			if p.ArgsEsc {
				// A string input, decoded as the arguments' text.
				p.Args, p.ArgsEsc = []byte(decodeRaw(p.Args, true)), false
			}
			if len(p.Args) == 0 && len(c.Input) > 0 {
				p.Args, p.ArgsJSON = c.Input, true // {}: no arguments
			}
			ps = append(ps, p)
		}
	}
	return ps
}
