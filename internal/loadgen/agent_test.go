package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// TestRunAgentsRecordedResults runs agent sessions against the simulator
// (sessions of 1 to 4 steps) with recorded tool results, the bodies read
// on their way in: every session sends the steps its first message
// planned (sim.AgentSteps), each step after the first carries the whole
// history, the assistant's call with the arguments the simulator sent
// and the client's id, and a tool message naming that id with one of the
// search tool's recorded results (never the other tool's).
func TestRunAgentsRecordedResults(t *testing.T) {
	s := simtest.NewSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL, c.EOSProb = time.Millisecond, 0, 0
		c.Tools.AgentSteps = 4
	})
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "results.jsonl")
	recorded := "{\"name\": \"search\", \"content\": \"three pages found\"}\n{\"name\": \"search\", \"content\": \"no page found\"}\n{\"name\": \"other\", \"content\": \"not for search\"}\n"
	if err := os.WriteFile(path, []byte(recorded), 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := LoadToolResults(path)
	if err != nil {
		t.Fatal(err)
	}
	tgt := newTarget(srv.URL, 4)
	tgt.Endpoint = Chat
	tgt.ExtraBody = map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "search", "parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}}}}}}
	firsts := map[int]string{}
	a := Agent{
		MaxSteps:    4,
		User:        func(id int) string { firsts[id] = fmt.Sprintf("session %d asks a question", id); return firsts[id] },
		ToolLatency: 5 * time.Millisecond,
		Results:     results,
		Request:     Request{MaxTokens: 16},
	}
	var got []Result
	st, err := RunAgents(t.Context(), tgt, Load{Concurrency: 1, Requests: 12}, a, func(_ int, r Result) { got = append(got, r) })
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int]int{}
	for _, r := range got {
		if !r.OK() {
			t.Fatalf("session %d step %d: %v", r.Session, r.Step, r.Err)
		}
		steps[r.Session] = max(steps[r.Session], r.Step)
	}
	for id, n := range steps {
		if want := sim.AgentSteps(firsts[id], 4); n != want {
			t.Errorf("session %d: %d steps, the simulator planned %d", id, n, want)
		}
	}
	if st.Sessions != len(steps) || st.Sent != len(got) {
		t.Errorf("stats %+v for %d sessions, %d steps", st, len(steps), len(got))
	}
	later := 0
	for _, b := range bodies {
		var req struct {
			Messages []Message `json:"messages"`
		}
		if json.Unmarshal(b, &req) != nil || len(req.Messages) == 0 {
			continue // the target's own probes
		}
		for k, m := range req.Messages {
			if m.Role != "tool" {
				continue
			}
			later++
			call := req.Messages[k-1]
			if call.Role != "assistant" || len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != m.ToolCallID ||
				call.ToolCalls[0].Function.Name != "search" || call.ToolCalls[0].Function.Arguments != `{"q":"aaaaa"}` {
				t.Fatalf("tool message %+v after %+v", m, call)
			}
			if !slices.Contains([]string{"three pages found", "no page found"}, m.Content) || !strings.HasPrefix(m.ToolCallID, "call_") {
				t.Fatalf("tool result %q (id %q): not one of search's recorded results", m.Content, m.ToolCallID)
			}
		}
	}
	if later == 0 {
		t.Fatal("no step carried a tool result")
	}
}

// TestLoadToolResultsRefused: a bad results file is refused at its line.
func TestLoadToolResultsRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"{\"name\": \"a\", \"content\": \"x\"}\n{\"name\": \"a\"\n", "r.jsonl:2: not a JSON object"},
		{"{\"name\": \"a\"}\n", "r.jsonl:1: a tool result needs its \"content\""},
		{"\n", "r.jsonl: no tool results"},
	} {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadToolResults(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.src, err, tc.want)
		}
	}
}
