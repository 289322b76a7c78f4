package sweep

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

const sweepTools = `tools: [{type: "function", function: {name: "get_weather", parameters: {
		type: "object", properties: {city: {type: "string", minLength: 1}, days: {type: "integer", minimum: 1, maximum: 7}},
		required: ["city", "days"], additionalProperties: false}}}]`

// TestToolsSweep: a sweep that offers tools reads the simulator's tool
// calls as it planned them. At 10 % cut and 10 % schema-invalid over 500
// requests the cell's rates equal the ones the simulator's records give,
// exactly, and so read within ±3 points of 90 % and 80 %; every request
// is ok with one call; the structured-output rate is NULL (none asked).
func TestToolsSweep(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = time.Millisecond, 0
		c.Tools = sim.Tools{InvalidJSONRate: 0.1, SchemaInvalidRate: 0.1}
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat", %s,
		cells: [{isl: 16, osl: 64}], concurrency: [16], requests: 500, warmup: 0`, url, sweepTools), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 1 {
		t.Fatalf("%d cells", len(c.cells))
	}
	r := c.cells[0]
	planned := map[string]int{}
	for _, q := range c.reqs {
		rec, ok := srv.Record(q.ResponseID)
		if !ok {
			t.Fatalf("no simulator record of %q", q.ResponseID)
		}
		planned[rec.Planned]++ // the cell's requests only: not the calibration's probes
	}
	calls := float64(planned[sim.PlannedValid] + planned[sim.PlannedInvalidJSON] + planned[sim.PlannedSchemaInvalid])
	wantJSON := 100 * float64(planned[sim.PlannedValid]+planned[sim.PlannedSchemaInvalid]) / calls
	wantValid := 100 * float64(planned[sim.PlannedValid]) / calls
	if r.Status != results.StatusOK || r.Completed != 500 || v(r.ToolCallsMean) != 1 {
		t.Fatalf("status %s (%s), %d completed, %v calls per request; want ok, 500, 1", r.Status, r.Reason, r.Completed, v(r.ToolCallsMean))
	}
	if math.Abs(v(r.ToolArgsJSONPct)-wantJSON) > 1e-9 || math.Abs(v(r.ToolArgsValidPct)-wantValid) > 1e-9 {
		t.Errorf("args JSON %v %%, valid %v %%; the simulator planned %v and %v", v(r.ToolArgsJSONPct), v(r.ToolArgsValidPct), wantJSON, wantValid)
	}
	if math.Abs(v(r.ToolArgsJSONPct)-90) > 3 || math.Abs(v(r.ToolArgsValidPct)-80) > 3 {
		t.Errorf("args JSON %v %%, valid %v %%: want 90 ± 3 and 80 ± 3", v(r.ToolArgsJSONPct), v(r.ToolArgsValidPct))
	}
	if r.StructuredValidPct != nil || !strings.Contains(results.WhyNull(r, results.ColStructuredValidPct), "no structured output") {
		t.Errorf("structured_valid_pct %v (%q): want NULL, said why", r.StructuredValidPct, results.WhyNull(r, results.ColStructuredValidPct))
	}
	for _, q := range c.reqs {
		if q.Status != results.StatusOK || q.ToolCalls == nil || *q.ToolCalls != 1 || q.TTFOMs == nil {
			t.Fatalf("request %d: status %s, tool calls %v, ttfo %v: want ok with one call, timed", q.Seq, q.Status, q.ToolCalls, q.TTFOMs)
		}
	}
}

// TestStructuredSweep: a json_schema sweep reads 100 % valid exactly when
// the simulator answers every request valid, 0 % when it cuts every one
// short, and its tool columns are NULL; Ollama's native format is sent
// where response_format_as says.
func TestStructuredSweep(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		as   string
		want float64
	}{{0, "", 100}, {1, "", 0}, {0, `response_format_as: "format",`, 100}} {
		t.Run(fmt.Sprint(tc.rate, tc.as), func(t *testing.T) {
			_, url := startSim(t, func(c *sim.Config) {
				c.TTFT, c.ITL = time.Millisecond, 0
				c.Tools.FormatInvalidRate = tc.rate
			})
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat", %s
				response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: "object", properties: {name: {type: "string"}}, required: ["name"]}}},
				cells: [{isl: 16, osl: 32}], concurrency: [4], requests: 20, warmup: 0`, url, tc.as), "")
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			r := c.cells[0]
			if r.StructuredValidPct == nil || *r.StructuredValidPct != tc.want || r.ToolCallsMean != nil || r.ToolArgsValidPct != nil {
				t.Errorf("structured %v %%, tool calls %v, args %v: want %v %% and NULL tool columns", r.StructuredValidPct, r.ToolCallsMean, r.ToolArgsValidPct, tc.want)
			}
		})
	}
}

// TestToolsRefused: vet refuses, at the field, tools or a structured
// output on an endpoint that cannot carry them, a schema that does not
// compile, and a tool_choice naming a tool not offered.
func TestToolsRefused(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`kind: "sweep", target: "http://x", ` + sweepTools, `stages.sweep.tools: tools and structured output apply to endpoint "chat", "responses" or "messages" only, not "completions"`},
		{`kind: "sweep", target: "http://x", endpoint: "embeddings", response_format: {type: "json_object"}`, `stages.sweep.response_format: tools and structured output apply to endpoint "chat", "responses" or "messages" only, not "embeddings"`},
		{`kind: "sweep", target: "http://x", endpoint: "rerank", batch: [4], stream: false, ` + sweepTools, `stages.sweep.tools: tools and structured output apply to endpoint "chat", "responses" or "messages" only, not "rerank"`},
		{`kind: "sweep", target: "http://x", endpoint: "messages", response_format: {type: "json_object"}, response_format_as: "format"`, `stages.sweep.response_format_as: "format" is a chat request's field; endpoint "messages" carries response_format in its own shape`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: 12}}}`, `stages.sweep.response_format.json_schema.schema: response_format.json_schema.schema: not a valid JSON Schema`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", tools: [{type: "function", function: {name: "f", parameters: {type: "objekt"}}}]`, `stages.sweep.tools: tools[0] (f) parameters: not a valid JSON Schema`},
		{`kind: "sweep", target: "http://x", endpoint: "chat", ` + sweepTools + `, tool_choice: {type: "function", function: {name: "now"}}`, `stages.sweep.tool_choice: names "now", which tools does not offer`},
	} {
		st, p := loadStage(t, tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
			t.Errorf("%s: err = %v, want %q at its position", tc.cue, err, tc.want)
		}
	}
	for _, ep := range []string{"chat", "responses", "messages"} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x", endpoint: "`+ep+`", `+sweepTools+`, tool_choice: "required", response_format: {type: "json_object"}`, "")
		if err := st.Validate(check(t, p)); err != nil {
			t.Errorf("%s with tools: %v", ep, err)
		}
	}
}

// TestToolsDataset: a BFCL-style dataset sends each line's messages and
// tools; the simulator calls each line's first tool with arguments valid
// against it, so every request is ok with one call, 100 % valid exactly,
// checked against its own line's tools (a call checked against another
// line's would name a tool not offered); over chat, and over the
// Responses and Messages APIs, each line's tools in the API's shape.
func TestToolsDataset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.jsonl")
	lines := `{"question": [[{"role": "user", "content": "area of a triangle, base 10, height 5"}]], "function": [{"name": "calc_area", "parameters": {"type": "dict", "properties": {"base": {"type": "float"}, "height": {"type": "integer", "minimum": 1}}, "required": ["base", "height"]}}]}
{"messages": [{"role": "user", "content": "weather in Oslo for three days"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]}}}]}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 0 })
	for _, ep := range []string{"chat", "responses", "messages"} {
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: %q, dataset: {path: %q, format: "tools"},
			cells: [{isl: 16, osl: 32}], concurrency: [4], requests: 40, warmup: 0`, url, ep, path), "")
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		r := c.cells[0]
		if r.Status != results.StatusOK || r.Completed != 40 || v(r.ToolCallsMean) != 1 || v(r.ToolArgsValidPct) != 100 {
			t.Fatalf("%s: status %s (%s), %d completed, %v calls, %v %% valid; want ok, 40, 1, 100", ep, r.Status, r.Reason, r.Completed, v(r.ToolCallsMean), v(r.ToolArgsValidPct))
		}
		names := map[string]int{}
		for _, q := range c.reqs {
			rec, _ := srv.Record(q.ResponseID)
			names[rec.ToolName]++
		}
		if names["calc_area"] == 0 || names["get_weather"] == 0 || names["calc_area"]+names["get_weather"] != 40 {
			t.Errorf("%s: calls by tool %v: want both lines' tools called", ep, names)
		}
	}
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, dataset: {path: %q, format: "tools"}`, url, path), "")
	if err := st.Validate(check(t, p)); err == nil || !strings.Contains(err.Error(), `stages.sweep.dataset.format`) || !strings.Contains(err.Error(), `endpoint "chat", "responses" or "messages", not "completions"`) {
		t.Errorf("a tools dataset off chat: %v", err)
	}
}

// TestToolsSweepAPIs: the same plan's tools and response_format over the
// Responses and Messages APIs (sent in each API's shape) read the
// simulator's calls and structured answers as it planned them, exactly:
// a tool sweep at 10 % cut and 10 % schema-invalid, and a json_schema
// sweep at 10 % cut, each request ok and its answer timed.
func TestToolsSweepAPIs(t *testing.T) {
	for _, ep := range []string{"responses", "messages"} {
		t.Run(ep, func(t *testing.T) {
			srv, url := startSim(t, func(c *sim.Config) {
				c.TTFT, c.ITL = time.Millisecond, 0
				c.Tools = sim.Tools{InvalidJSONRate: 0.1, SchemaInvalidRate: 0.1, FormatInvalidRate: 0.1}
			})
			for _, constraint := range []string{sweepTools, `response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: "object", properties: {name: {type: "string"}}, required: ["name"]}}}`} {
				st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: %q, %s,
					cells: [{isl: 16, osl: 64}], concurrency: [16], requests: 200, warmup: 0`, url, ep, constraint), "")
				c, err := runStage(t, st, p)
				if err != nil {
					t.Fatal(err)
				}
				r := c.cells[0]
				planned := map[string]int{}
				for _, q := range c.reqs {
					rec, ok := srv.Record(q.ResponseID)
					if !ok {
						t.Fatalf("no simulator record of %q", q.ResponseID)
					}
					planned[rec.Planned]++
					if q.Status != results.StatusOK || q.TTFOMs == nil {
						t.Fatalf("request %d: status %s (%s), ttfo %v", q.Seq, q.Status, q.Error, q.TTFOMs)
					}
					// The call is the answer: its first token is the answer's.
					if called := constraint == sweepTools; called != (q.TTFTCMs != nil) || called && *q.TTFTCMs != *q.TTFOMs {
						t.Fatalf("request %d: ttftc %v, ttfo %v: want the same where the answer is a call, NULL where none came", q.Seq, q.TTFTCMs, *q.TTFOMs)
					}
				}
				n := float64(len(c.reqs))
				if r.Status != results.StatusOK || r.Completed != 200 {
					t.Fatalf("status %s (%s), %d completed", r.Status, r.Reason, r.Completed)
				}
				if constraint == sweepTools {
					wantValid := 100 * float64(planned[sim.PlannedValid]) / n
					wantJSON := 100 * float64(planned[sim.PlannedValid]+planned[sim.PlannedSchemaInvalid]) / n
					if r.TTFTCMs == nil || math.Abs(v(r.TTFTCMs)-v(r.TTFOMs)) > 1e-9 {
						t.Errorf("ttftc_ms %v, ttfo_ms %v: want the same", r.TTFTCMs, v(r.TTFOMs))
					}
					if v(r.ToolCallsMean) != 1 || math.Abs(v(r.ToolArgsJSONPct)-wantJSON) > 1e-9 || math.Abs(v(r.ToolArgsValidPct)-wantValid) > 1e-9 {
						t.Errorf("%v calls per request, args JSON %v %%, valid %v %%: the simulator planned 1, %v and %v", v(r.ToolCallsMean), v(r.ToolArgsJSONPct), v(r.ToolArgsValidPct), wantJSON, wantValid)
					}
					continue
				}
				if r.TTFTCMs != nil || !strings.Contains(results.WhyNull(r, results.ColTTFTCMs), "no tools") {
					t.Errorf("ttftc_ms %v (%q) without tools: want NULL, said why", r.TTFTCMs, results.WhyNull(r, results.ColTTFTCMs))
				}
				if want := 100 * float64(planned[sim.PlannedValid]) / n; math.Abs(v(r.StructuredValidPct)-want) > 1e-9 || r.ToolCallsMean != nil {
					t.Errorf("structured %v %%, tool calls %v: the simulator planned %v %% and no calls", v(r.StructuredValidPct), r.ToolCallsMean, want)
				}
			}
		})
	}
}
