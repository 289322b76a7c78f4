package jsonvalid

import (
	"encoding/json"
	"fmt"
)

// Tools are the tools a request offers, by function name, each with its
// parameters' schema (nil: the tool declares none, so any JSON object
// is valid arguments).
type Tools map[string]*Schema

// toolSpec is one entry of a Chat Completions request's `tools` array.
type toolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// CompileTools compiles the parameters of every function in a Chat
// Completions `tools` array (JSON text); what names it in errors.
func CompileTools(what string, tools []byte) (Tools, error) {
	var specs []toolSpec
	if err := json.Unmarshal(tools, &specs); err != nil {
		return nil, fmt.Errorf("%s: tools must be a JSON array of {type: \"function\", function: {name, parameters}}: %w", what, err)
	}
	out := Tools{}
	for i, sp := range specs {
		if sp.Type != "function" {
			return nil, fmt.Errorf("%s[%d]: type %q: only function tools carry arguments to check", what, i, sp.Type)
		}
		name := sp.Function.Name
		if name == "" {
			return nil, fmt.Errorf("%s[%d]: the function has no name", what, i)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s[%d]: function %q is offered twice", what, i, name)
		}
		if len(sp.Function.Parameters) == 0 || string(sp.Function.Parameters) == "null" {
			out[name] = nil
			continue
		}
		s, err := Compile(fmt.Sprintf("%s[%d] (%s) parameters", what, i, name), sp.Function.Parameters)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

// CheckCall checks one tool call: the arguments (the JSON text the
// server streamed, all deltas joined) against the parameters of the
// tool it names. A call naming a tool that was not offered is Invalid.
func (ts Tools) CheckCall(name, arguments string) Result {
	s, offered := ts[name]
	if !offered {
		return Result{Outcome: Invalid, Reason: fmt.Sprintf("the call names %q, which the request did not offer", name)}
	}
	v, ok := parse(arguments)
	if !ok {
		return Result{Outcome: NotJSON, Reason: "the arguments are not one JSON value"}
	}
	if _, isObject := v.(map[string]any); !isObject {
		return Result{Outcome: Invalid, Reason: "the arguments are not a JSON object"}
	}
	if s == nil {
		return Result{Outcome: Valid}
	}
	if err := s.s.Validate(v); err != nil {
		return Result{Outcome: Invalid, Reason: firstError(err)}
	}
	return Result{Outcome: Valid}
}
