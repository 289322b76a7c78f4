package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/jsonvalid"
)

// TestLoadToolCases: a tools dataset's lines in OpenAI's shape and in
// BFCL's ("dict" and "float" read as object and number) give each line's
// messages, tools and a compiled check keyed by its user message; a line
// whose schema does not compile is an error at its file and line.
func TestLoadToolCases(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bfcl.jsonl")
	lines := `{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "weather in Oslo?"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}

{"id": "simple_0", "question": [[{"role": "user", "content": "area of a triangle, base 10, height 5"}]], "function": [{"name": "calc_area", "description": "area", "parameters": {"type": "dict", "properties": {"base": {"type": "float"}, "height": {"type": "integer"}, "unit": {"type": "any"}}, "required": ["base", "height"]}}]}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	prompts, cases, err := LoadToolCases(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 2 || prompts[0] != "weather in Oslo?" || prompts[1] != "area of a triangle, base 10, height 5" {
		t.Fatalf("prompts %q", prompts)
	}
	oslo := cases[prompts[0]]
	if len(oslo.Messages) != 2 || oslo.Messages[0].Role != "system" || len(oslo.Tools) != 1 {
		t.Errorf("OpenAI line: %+v", oslo)
	}
	area := cases[prompts[1]]
	for _, tc := range []struct {
		args string
		want jsonvalid.Outcome
	}{
		{`{"base": 10.5, "height": 5}`, jsonvalid.Valid},
		{`{"base": 10.5, "height": 5, "unit": ["cm"]}`, jsonvalid.Valid},
		{`{"base": "ten", "height": 5}`, jsonvalid.Invalid},
		{`{"base": 10}`, jsonvalid.Invalid},
	} {
		if r := area.Check.Tools.CheckCall("calc_area", tc.args); r.Outcome != tc.want {
			t.Errorf("BFCL line: CheckCall(%s) = %v (%s), want %v", tc.args, r.Outcome, r.Reason, tc.want)
		}
	}
	req := area.Apply(Request{Prompt: prompts[1], Body: map[string]any{"ignore_eos": true}})
	if req.Body["tools"] == nil || req.Body["ignore_eos"] != true || req.Check != area.Check || len(req.Messages) != 1 {
		t.Errorf("applied request %+v", req)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	_ = os.WriteFile(bad, []byte(lines+`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 7}}}]}`+"\n"), 0o644)
	if _, _, err := LoadToolCases(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:4") || !strings.Contains(err.Error(), "not a valid JSON Schema") {
		t.Errorf("a bad schema on line 4: %v", err)
	}
}
