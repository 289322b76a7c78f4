package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/internal/jsonvalid"
)

// FormatTools is a tool-calling dataset: one JSON object per line holding
// a conversation and the tools it offers, in OpenAI's shape
// ({"messages": [...], "tools": [{"type": "function", "function": {...}}]})
// or BFCL's ({"question": [[{"role": "user", "content": ...}]],
// "function": [{"name", "description", "parameters"}]}, its parameter
// types "dict", "float", "tuple" and "any" read as JSON Schema's object,
// number, array and any). Each request sends one line's messages and
// tools, and its calls are checked against that line's tools.
const FormatTools = "tools"

// ToolCase is one line of a tool-calling dataset: the messages sent, the
// tools offered (the request's "tools"), and the check of its calls.
type ToolCase struct {
	Messages []Message
	Tools    []any
	Check    *AnswerCheck
}

// toolLine is a line in either shape.
type toolLine struct {
	Messages []Message        `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	Question json.RawMessage  `json:"question"`
	Function []map[string]any `json:"function"`
}

// LoadToolCases reads a tool-calling dataset: the prompts (each line's
// last user message, the key its case is found by) and the cases by
// prompt. Each line's tools are compiled once here; a line whose schema
// does not compile is an error naming the file and line.
func LoadToolCases(path string) ([]string, map[string]*ToolCase, error) {
	f, err := openInput(path, "dataset")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	var prompts []string
	cases := map[string]*ToolCase{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		c, prompt, err := toolCase(b, fmt.Sprintf("dataset %s:%d", path, line))
		if err != nil {
			return nil, nil, err
		}
		if _, dup := cases[prompt]; !dup {
			prompts = append(prompts, prompt)
		}
		cases[prompt] = c
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	if len(prompts) == 0 {
		return nil, nil, fmt.Errorf("dataset %s: no lines found (format %s)", path, FormatTools)
	}
	return prompts, cases, nil
}

// toolCase reads one line (where names it in errors).
func toolCase(b []byte, where string) (*ToolCase, string, error) {
	var l toolLine
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, "", fmt.Errorf("%s: not a JSON object of messages and tools: %w", where, err)
	}
	c := &ToolCase{Messages: l.Messages}
	if len(l.Question) > 0 {
		// BFCL: a list of turns, each a list of messages; the first
		// turn is the request.
		var turns [][]Message
		if err := json.Unmarshal(l.Question, &turns); err != nil || len(turns) == 0 {
			var one []Message
			if err := json.Unmarshal(l.Question, &one); err != nil {
				return nil, "", fmt.Errorf("%s: question: want a list of turns of {role, content} messages", where)
			}
			turns = [][]Message{one}
		}
		c.Messages = turns[0]
	}
	for _, t := range l.Tools {
		c.Tools = append(c.Tools, t)
	}
	for _, fn := range l.Function {
		if p, ok := fn["parameters"].(map[string]any); ok {
			fn["parameters"] = bfclSchema(p)
		}
		c.Tools = append(c.Tools, map[string]any{"type": "function", "function": fn})
	}
	prompt := ""
	for _, m := range c.Messages {
		if m.Role == "user" {
			prompt = m.Content
		}
	}
	if strings.TrimSpace(prompt) == "" || len(c.Tools) == 0 {
		return nil, "", fmt.Errorf("%s: want a user message and at least one tool", where)
	}
	tb, _ := json.Marshal(c.Tools)
	ts, err := jsonvalid.CompileTools(where+" tools", tb)
	if err != nil {
		return nil, "", err
	}
	c.Check = &AnswerCheck{Tools: ts}
	return c, prompt, nil
}

// bfclSchema rewrites BFCL's parameter types as JSON Schema's, in place:
// "dict" is an object, "float" a number, "tuple" an array, "any" no
// type at all.
func bfclSchema(s map[string]any) map[string]any {
	switch s["type"] {
	case "dict":
		s["type"] = "object"
	case "float":
		s["type"] = "number"
	case "tuple":
		s["type"] = "array"
	case "any":
		delete(s, "type")
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if ps, ok := p.(map[string]any); ok {
				bfclSchema(ps)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		bfclSchema(items)
	}
	return s
}

// Apply sets the case's messages, tools and check on a request (its body
// copied, so the cell's shared body is not written).
func (c *ToolCase) Apply(req Request) Request {
	body := make(map[string]any, len(req.Body)+1)
	for k, v := range req.Body {
		body[k] = v
	}
	body["tools"] = c.Tools
	req.Body, req.Messages, req.Check = body, c.Messages, c.Check
	return req
}
