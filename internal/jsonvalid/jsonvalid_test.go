package jsonvalid

import (
	"strings"
	"testing"
)

const weather = `{
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 1},
    "days": {"type": "integer", "minimum": 1, "maximum": 7}
  },
  "required": ["city"],
  "additionalProperties": false
}`

func TestSchemaCheck(t *testing.T) {
	s, err := Compile("response_format.json_schema", []byte(weather))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		want       Outcome
		reason     string // a part of the reason
	}{
		{"valid", `{"city": "Oslo", "days": 3}`, Valid, ""},
		{"valid with whitespace around", "\n  {\"city\": \"Oslo\"}\t\n", Valid, ""},
		{"missing required", `{"days": 3}`, Invalid, "city"},
		{"wrong type", `{"city": "Oslo", "days": "3"}`, Invalid, "/days"},
		{"integer out of range", `{"city": "Oslo", "days": 9}`, Invalid, "/days"},
		{"a float is not an integer", `{"city": "Oslo", "days": 2.5}`, Invalid, "/days"},
		{"extra property", `{"city": "Oslo", "when": "now"}`, Invalid, "when"},
		{"whitespace only (a grammar's empty answer)", "  \n\n  ", NotJSON, "whitespace"},
		{"empty", "", NotJSON, "empty"},
		{"cut short by max_tokens", `{"city": "Os`, NotJSON, "not one JSON value"},
		{"prose after the object", `{"city": "Oslo"} hope this helps`, NotJSON, ""},
		{"two values", `{"city": "Oslo"} {"city": "Rome"}`, NotJSON, ""},
		{"not an object", `["Oslo"]`, Invalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Check(tc.text)
			if r.Outcome != tc.want {
				t.Fatalf("Check(%q) = %v (%s), want %v", tc.text, r.Outcome, r.Reason, tc.want)
			}
			if tc.want == Valid && r.Reason != "" {
				t.Errorf("a valid answer has a reason: %q", r.Reason)
			}
			if tc.want != Valid && (r.Reason == "" || !strings.Contains(r.Reason, tc.reason)) {
				t.Errorf("reason %q does not say %q", r.Reason, tc.reason)
			}
			if r.JSON() != (tc.want != NotJSON) {
				t.Errorf("JSON() = %v for %v", r.JSON(), r.Outcome)
			}
		})
	}
}

func TestCompileRefusals(t *testing.T) {
	for _, tc := range []struct{ name, schema, says string }{
		{"not JSON", `{"type": `, "not JSON"},
		{"not a schema", `{"type": 12}`, "not a valid JSON Schema"},
		{"a reference to a URL is never fetched", `{"$ref": "https://example.com/s.json"}`, "only to itself"},
		{"a reference to a file is never read", `{"$ref": "file:///etc/passwd"}`, "only to itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("the plan's schema", []byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "the plan's schema") {
				t.Fatalf("Compile(%s) = %v, want an error naming the schema and saying %q", tc.schema, err, tc.says)
			}
		})
	}
	// A reference inside the schema itself resolves.
	s, err := Compile("self", []byte(`{"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Check(`{"n": "x"}`); r.Outcome != Invalid {
		t.Errorf("a local $ref was not applied: %v", r.Outcome)
	}
}

const tools = `[
  {"type": "function", "function": {"name": "get_weather", "parameters": ` + weather + `}},
  {"type": "function", "function": {"name": "now"}}
]`

func TestCheckCall(t *testing.T) {
	ts, err := CompileTools("tools", []byte(tools))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, args string
		want             Outcome
	}{
		{"valid", "get_weather", `{"city": "Oslo"}`, Valid},
		{"schema-invalid", "get_weather", `{"city": ""}`, Invalid},
		{"invalid JSON", "get_weather", `{"city": "Oslo"`, NotJSON},
		{"not an object", "get_weather", `"Oslo"`, Invalid},
		{"a tool not offered", "get_time", `{}`, Invalid},
		{"a tool without parameters takes any object", "now", `{"tz": "UTC"}`, Valid},
		{"empty arguments", "now", ``, NotJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := ts.CheckCall(tc.tool, tc.args); r.Outcome != tc.want {
				t.Errorf("CheckCall(%s, %q) = %v (%s), want %v", tc.tool, tc.args, r.Outcome, r.Reason, tc.want)
			}
		})
	}
}

func TestCompileToolsRefusals(t *testing.T) {
	for _, tc := range []struct{ name, tools, says string }{
		{"not an array", `{"type": "function"}`, "JSON array"},
		{"not a function", `[{"type": "code_interpreter"}]`, "only function tools"},
		{"no name", `[{"type": "function", "function": {}}]`, "no name"},
		{"twice", `[{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]`, "twice"},
		{"bad parameters", `[{"type": "function", "function": {"name": "a", "parameters": {"type": 1}}}]`, "(a) parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CompileTools("tools", []byte(tc.tools)); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("CompileTools = %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

// BenchmarkCheck is the per-answer cost of the check: what each
// structured-output request adds to the client's work.
func BenchmarkCheck(b *testing.B) {
	s, err := Compile("bench", []byte(weather))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Check(`{"city": "Oslo", "days": 3}`).Outcome != Valid {
			b.Fatal("not valid")
		}
	}
}
