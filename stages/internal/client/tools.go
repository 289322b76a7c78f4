package client

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/jsonvalid"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/schema"
)

// Constraints is #Constraints: the tools a request offers and the
// structured output it asks for (docs/PLANS.md, Tool calls and structured
// output), sent with every request and checked in every answer.
type Constraints struct {
	Tools      []any `json:"tools"`
	ToolChoice any   `json:"tool_choice"`
	// ResponseFormat is OpenAI's {type: "json_object"} or {type:
	// "json_schema", json_schema: {name, schema, strict}}.
	ResponseFormat map[string]any `json:"response_format"`
	// ResponseFormatAs is the form the structured output goes on the
	// wire in: "response_format" (OpenAI's; the default), "format"
	// (Ollama's native: "json" or the schema), "guided_json" (vLLM's
	// older) or "structured_outputs" (vLLM's newer {json: schema}).
	ResponseFormatAs string `json:"response_format_as"`
}

// ConstraintEndpoints are the endpoints whose requests carry tools and
// structured output: chat, and the Responses and Messages APIs, which
// are sent them in their own shapes (loadgen's apitools.go: flat function
// tools and text.format; input_schema tools and output_config.format). A
// completion has no tool calls and the engines' completions take no
// response_format; an embedding, a rerank or a transcription has no
// answer text to constrain.
var ConstraintEndpoints = []string{"chat", "responses", "messages"}

// IsSet says tools or a structured output are given.
func (c Constraints) IsSet() bool { return c.Tools != nil || c.ResponseFormat != nil }

// Compile compiles the tools' parameters and the response format's
// schema: what every answer is checked against (nil when neither is
// given). errs are at the fields, for vet.
func (c Constraints) Compile(spec *schema.Stage) (*loadgen.AnswerCheck, schema.Errors) {
	if !c.IsSet() && c.ToolChoice == nil {
		return nil, nil
	}
	var errs schema.Errors
	bad := func(path []string, msg string) {
		errs = append(errs, schema.Error{Pos: spec.PosOf(path...), Msg: fmt.Sprintf("stages.%s.%s: %s", spec.Name, strings.Join(path, "."), msg)})
	}
	check := &loadgen.AnswerCheck{}
	if c.Tools != nil {
		b, _ := json.Marshal(c.Tools)
		ts, err := jsonvalid.CompileTools("tools", b)
		if err != nil {
			bad([]string{"tools"}, err.Error())
		}
		check.Tools = ts
		if name := forcedTool(c.ToolChoice); name != "" && ts != nil {
			if _, ok := ts[name]; !ok {
				bad([]string{"tool_choice"}, fmt.Sprintf("names %q, which tools does not offer", name))
			}
		}
	} else if c.ToolChoice != nil {
		bad([]string{"tool_choice"}, "tool_choice without tools")
	}
	if c.ResponseFormat != nil {
		s, path, err := formatSchema(c.ResponseFormat)
		if err != nil {
			bad(path, err.Error())
		}
		check.Format = s
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return check, nil
}

// forcedTool is the function tool_choice forces ("" for "auto",
// "required", "none" or none).
func forcedTool(choice any) string {
	m, _ := choice.(map[string]any)
	f, _ := m["function"].(map[string]any)
	name, _ := f["name"].(string)
	return name
}

// formatSchema compiles a response_format's schema (json_object: any
// JSON object), with the path of what failed.
func formatSchema(rf map[string]any) (*jsonvalid.Schema, []string, error) {
	switch rf["type"] {
	case "json_object":
		s, err := jsonvalid.Compile("response_format", []byte(`{"type": "object"}`))
		return s, []string{"response_format"}, err
	case "json_schema":
		js, _ := rf["json_schema"].(map[string]any)
		sc, ok := js["schema"]
		if !ok {
			return nil, []string{"response_format", "json_schema"}, fmt.Errorf("json_schema has no schema")
		}
		b, _ := json.Marshal(sc)
		s, err := jsonvalid.Compile("response_format.json_schema.schema", b)
		return s, []string{"response_format", "json_schema", "schema"}, err
	}
	return nil, []string{"response_format", "type"}, fmt.Errorf("type %v: want \"json_object\" or \"json_schema\"", rf["type"])
}

// CheckConstraints refuses, at the field, tools or a structured output
// given for an endpoint that cannot carry them, and compiles what is
// given so that a bad schema fails vet at its field.
func (c Constraints) CheckConstraints(spec *schema.Stage, endpoint string) schema.Errors {
	if !c.IsSet() && c.ToolChoice == nil {
		return nil
	}
	if !slices.Contains(ConstraintEndpoints, endpoint) {
		var errs schema.Errors
		for f, given := range map[string]bool{"tools": c.Tools != nil, "tool_choice": c.ToolChoice != nil, "response_format": c.ResponseFormat != nil} {
			if given {
				errs = append(errs, schema.Error{Pos: spec.PosOf(f), Msg: fmt.Sprintf("stages.%s.%s: tools and structured output apply to endpoint \"%s\" or %q only, not %q: a %s request has no tool calls or answer text to constrain",
					spec.Name, f, strings.Join(ConstraintEndpoints[:len(ConstraintEndpoints)-1], `", "`), ConstraintEndpoints[len(ConstraintEndpoints)-1], endpoint, endpoint)})
			}
		}
		slices.SortFunc(errs, func(a, b schema.Error) int { return strings.Compare(a.Msg, b.Msg) })
		return errs
	}
	_, errs := c.Compile(spec)
	if c.ResponseFormatAs != "" && c.ResponseFormatAs != "response_format" && endpoint != "chat" {
		// The engines' own forms are chat request fields; the APIs have
		// their own one (text.format, output_config.format).
		errs = append(errs, schema.Error{Pos: spec.PosOf("response_format_as"), Msg: fmt.Sprintf("stages.%s.response_format_as: %q is a chat request's field; endpoint %q carries response_format in its own shape: leave response_format_as out",
			spec.Name, c.ResponseFormatAs, endpoint)})
	}
	return errs
}

// AddTo sets the tools and the structured output into body (a request's
// body fields), the structured output in the form ResponseFormatAs names.
func (c Constraints) AddTo(body map[string]any) {
	if c.Tools != nil {
		body["tools"] = c.Tools
	}
	if c.ToolChoice != nil {
		body["tool_choice"] = c.ToolChoice
	}
	if c.ResponseFormat == nil {
		return
	}
	var sc any = map[string]any{"type": "object"}
	if js, ok := c.ResponseFormat["json_schema"].(map[string]any); ok && c.ResponseFormat["type"] == "json_schema" {
		sc = js["schema"]
	}
	switch c.ResponseFormatAs {
	case "format":
		if c.ResponseFormat["type"] == "json_object" {
			sc = "json"
		}
		body["format"] = sc
	case "guided_json":
		body["guided_json"] = sc
	case "structured_outputs":
		body["structured_outputs"] = map[string]any{"json": sc}
	default:
		body["response_format"] = c.ResponseFormat
	}
}
