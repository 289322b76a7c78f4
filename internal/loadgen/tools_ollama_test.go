package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/jsonvalid"
)

// TestOllamaTranscriptsChecked replays Ollama v0.17.4's recorded answers
// (testdata/ollama-0.17.4, README there) to the client with the recorded
// request's tools and response_format as its check: a forced call,
// streamed (one event, the whole call) and whole, is an ok request with
// its call counted, JSON and valid (its format, the grammar that forced
// the call, not held to the empty text); an unforced answer in plain
// content makes no call; a json_schema answer with its whitespace deltas
// is valid, and cut by max_tokens, or a json_object answer cut, is not
// JSON.
func TestOllamaTranscriptsChecked(t *testing.T) {
	for _, tc := range []struct {
		file            string
		calls, valid    int
		format, answer  bool // format asked; answer valid
		events, outToks int
	}{
		{"tools-forced-stream", 1, 1, false, false, 1, 56},
		{"tools-forced", 1, 1, false, false, 1, 56},
		{"tools-unforced-stream", 0, 0, false, false, 8, 8},
		{"json-schema-stream", 0, 0, true, true, 51, 52},
		{"json-schema", 0, 0, true, true, 1, -1},
		{"json-schema-cut", 0, 0, true, false, 5, 5},
		{"json-object", 0, 0, true, false, 1, 24},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, ctype, req, stream := readTranscript(t, tc.file)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", ctype)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			tg := &Target{BaseURL: srv.URL, Model: "m", Endpoint: Chat, Stream: stream, Check: checkOf(t, req)}
			r := tg.Do(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 64})
			c := r.Check
			if r.Err != nil || c.ToolCalls != tc.calls || c.ToolCallsValid != tc.valid || c.ToolCallsJSON != tc.valid ||
				c.FormatAsked != tc.format || c.AnswerValid != tc.answer {
				t.Fatalf("err %v, check %+v; want ok, %d calls (%d valid), format asked %v, answer valid %v", r.Err, c, tc.calls, tc.valid, tc.format, tc.answer)
			}
			if len(r.Tokens) != tc.events || (tc.outToks >= 0 && r.OutputTokens != tc.outToks) {
				t.Errorf("%d events, %d output tokens; want %d and %d", len(r.Tokens), r.OutputTokens, tc.events, tc.outToks)
			}
			if tc.calls > 0 && (!r.Answered() || r.Tokens[0].Kind != EventToolCall) {
				t.Errorf("the call is not an answer event: %+v", r.Tokens)
			}
		})
	}
}

// readTranscript reads a recorded exchange: the response body, its
// Content-Type, the request body, and whether it streamed.
func readTranscript(t *testing.T, name string) (body []byte, ctype string, req map[string]any, stream bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "ollama-0.17.4", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for len(raw) > 0 && raw[0] == '#' {
		i := bytes.IndexByte(raw, '\n')
		line := string(raw[:i])
		raw = raw[i+1:]
		lines++
		switch {
		case lines == 2:
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "# > ")), &req); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "# < Content-Type: "):
			ctype = strings.TrimPrefix(line, "# < Content-Type: ")
		}
	}
	stream, _ = req["stream"].(bool)
	return raw, ctype, req, stream
}

// checkOf is the check a plan would compile from the request's tools and
// response_format.
func checkOf(t *testing.T, req map[string]any) *AnswerCheck {
	t.Helper()
	c := &AnswerCheck{}
	if tools, ok := req["tools"]; ok {
		b, _ := json.Marshal(tools)
		ts, err := jsonvalid.CompileTools("tools", b)
		if err != nil {
			t.Fatal(err)
		}
		c.Tools = ts
	}
	if rf, ok := req["response_format"].(map[string]any); ok {
		sc := any(map[string]any{"type": "object"})
		if js, ok := rf["json_schema"].(map[string]any); ok {
			sc = js["schema"]
		}
		b, _ := json.Marshal(sc)
		s, err := jsonvalid.Compile("response_format", b)
		if err != nil {
			t.Fatal(err)
		}
		c.Format = s
	}
	return c
}
