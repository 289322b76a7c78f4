package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/schema"
)

// TestConstraintsWireForms: response_format goes on the wire in the form
// response_format_as names, the schema the same in each; tools and
// tool_choice as given.
func TestConstraintsWireForms(t *testing.T) {
	sc := map[string]any{"type": "object", "required": []any{"name"}}
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "p", "schema": sc}}
	for _, tc := range []struct{ as, want string }{
		{"", `{"response_format":{"json_schema":{"name":"p","schema":{"required":["name"],"type":"object"}},"type":"json_schema"}}`},
		{"format", `{"format":{"required":["name"],"type":"object"}}`},
		{"guided_json", `{"guided_json":{"required":["name"],"type":"object"}}`},
		{"structured_outputs", `{"structured_outputs":{"json":{"required":["name"],"type":"object"}}}`},
	} {
		body := map[string]any{}
		Constraints{ResponseFormat: rf, ResponseFormatAs: tc.as}.AddTo(body)
		if b, _ := json.Marshal(body); string(b) != tc.want {
			t.Errorf("as %q: %s, want %s", tc.as, b, tc.want)
		}
	}
	body := map[string]any{}
	Constraints{ResponseFormat: map[string]any{"type": "json_object"}, ResponseFormatAs: "format"}.AddTo(body)
	if body["format"] != "json" {
		t.Errorf("json_object as Ollama's format: %v, want \"json\"", body["format"])
	}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}
	body = map[string]any{}
	c := Constraints{Tools: tools, ToolChoice: "required"}
	c.AddTo(body)
	check, errs := c.Compile(&schema.Stage{Name: "s"})
	if len(errs) > 0 || check == nil || check.Tools == nil || check.Format != nil || body["tool_choice"] != "required" || body["tools"] == nil {
		t.Errorf("tools: body %v, check %+v, errs %v", body, check, errs)
	}
	if errs := (Constraints{ToolChoice: "auto"}).CheckConstraints(&schema.Stage{Name: "s"}, "chat"); len(errs) != 1 || !strings.Contains(errs[0].Msg, "tool_choice without tools") {
		t.Errorf("tool_choice without tools: %v", errs)
	}
}
