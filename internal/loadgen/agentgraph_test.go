package loadgen

import (
	"strings"
	"testing"
)

// graphBranchJoin is a session whose plan step branches into two
// sub-agents that join in the answer, beside a one-step session, with
// the lines out of order (a child before its parents).
const graphBranchJoin = `{"session": "a", "id": "answer", "parents": ["web", "code"], "delay_ms": 10, "input_tokens": 400, "output_tokens": 64}
{"session": "a", "id": "plan", "at_ms": 0, "input_tokens": 256, "output_tokens": 32}
{"session": "a", "id": "web", "parents": ["plan"], "delay_ms": 50, "input_tokens": 320, "output_tokens": 16}

{"session": "a", "id": "code", "parents": ["plan"], "delay_ms": 80, "input_tokens": 300, "output_tokens": 16}
{"session": 7, "id": "only", "input_tokens": 64, "output_tokens": 8}
`

func TestParseAgentGraph(t *testing.T) {
	gs, err := ParseAgentGraph(strings.NewReader(graphBranchJoin), "g.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Name != "a" || gs[1].Name != "7" || len(gs[0].Steps) != 4 || len(gs[1].Steps) != 1 {
		t.Fatalf("sessions %+v", gs)
	}
	pos := map[string]int{}
	for k, s := range gs[0].Steps {
		pos[s.ID] = k
		for _, p := range s.Parents {
			if p >= k {
				t.Errorf("step %q at %d has parent %d after it", s.ID, k, p)
			}
		}
	}
	depth := map[string]int{}
	for _, s := range gs[0].Steps {
		depth[s.ID] = s.Depth
	}
	if depth["plan"] != 1 || depth["web"] != 2 || depth["code"] != 2 || depth["answer"] != 3 || gs[0].MaxDepth() != 3 {
		t.Errorf("depths %v", depth)
	}
	ans := gs[0].Steps[pos["answer"]]
	if len(ans.Parents) != 2 || ans.DelayMs != 10 || ans.Line != 1 || ans.InputTokens != 400 || ans.OutputTokens != 64 {
		t.Errorf("answer %+v", ans)
	}
}

// TestParseAgentGraphInferencePerf reads inference-perf's replay graph
// events (its GraphEvent, one a line) as steps.
func TestParseAgentGraphInferencePerf(t *testing.T) {
	src := `{"event_id": "e1", "predecessor_event_ids": [], "wait_ms": 0, "t_start_ms": 0, "t_end_ms": 900, "call": {"call_id": "c1", "model": "m", "total_input_tokens": 120, "expected_output_tokens": 30}}
{"event_id": "e2", "predecessor_event_ids": ["e1"], "predecessor_dependency_types": {"e1": "output"}, "wait_ms": 250, "t_start_ms": 1150, "t_end_ms": 2000, "call": {"total_input_tokens": 200, "expected_output_tokens": 40}}`
	gs, err := ParseAgentGraph(strings.NewReader(src), "ip.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || len(gs[0].Steps) != 2 {
		t.Fatalf("%+v", gs)
	}
	e2 := gs[0].Steps[1]
	if e2.ID != "e2" || e2.DelayMs != 250 || e2.InputTokens != 200 || e2.OutputTokens != 40 || e2.Depth != 2 || len(e2.Parents) != 1 {
		t.Errorf("e2 %+v", e2)
	}
}

// TestParseAgentGraphWhole reads a replay graph as inference-perf saves
// one whole (export_replay_graph_to_dot.py reads the same): "nodes" by
// id, "predecessor_node_ids"; a bad one is refused naming the event.
func TestParseAgentGraphWhole(t *testing.T) {
	src := `{"source_file": "trace.json", "root_node_ids": ["n1"], "nodes": {
		"n3": {"predecessor_node_ids": ["n1", "n2"], "wait_ms": 5, "t_start_ms": 900, "t_end_ms": 1000, "call": {"total_input_tokens": 300, "expected_output_tokens": 20}},
		"n1": {"predecessor_node_ids": [], "wait_ms": 0, "t_start_ms": 0, "t_end_ms": 400, "call": {"total_input_tokens": 100, "expected_output_tokens": 10}},
		"n2": {"predecessor_node_ids": ["n1"], "wait_ms": 100, "t_start_ms": 500, "t_end_ms": 800, "call": {"total_input_tokens": 200, "expected_output_tokens": 10}}}}`
	gs, err := ParseAgentGraph(strings.NewReader(src), "g.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || len(gs[0].Steps) != 3 {
		t.Fatalf("%+v", gs)
	}
	n3 := gs[0].Steps[2]
	if n3.ID != "n3" || len(n3.Parents) != 2 || n3.Depth != 3 || n3.DelayMs != 5 || n3.InputTokens != 300 {
		t.Errorf("n3 %+v", n3)
	}
	bad := strings.Replace(src, `["n1", "n2"]`, `["n1", "n9"]`, 1)
	if _, err := ParseAgentGraph(strings.NewReader(bad), "g.json"); err == nil || !strings.Contains(err.Error(), `g.json event:3: step "n3" names parent "n9"`) {
		t.Errorf("err %v", err)
	}
}

// TestParseAgentGraphRefused: a bad graph is refused at its file and
// line, saying what is wrong.
func TestParseAgentGraphRefused(t *testing.T) {
	ok := `{"id": "a", "input_tokens": 8, "output_tokens": 4}` + "\n"
	for _, tc := range []struct{ src, want string }{
		{ok + `{"id": "b", "parents": ["a"], "input_tokens": 8, "output_tokens": 4` + "\n", `g.jsonl:2: not a JSON object`},
		{ok + `[1, 2]` + "\n", `g.jsonl:2: not a JSON object`},
		{ok + `{"id": "b", "parents": ["z"], "input_tokens": 8, "output_tokens": 4}` + "\n", `g.jsonl:2: step "b" names parent "z", which session "" does not have`},
		{ok + `{"id": "b", "parents": ["c"], "input_tokens": 8, "output_tokens": 4}` + "\n" + `{"id": "c", "parents": ["b"], "input_tokens": 8, "output_tokens": 4}` + "\n",
			`g.jsonl:2: step "b" is its own ancestor: the cycle "b" → "c" → "b"`},
		{ok + `{"id": "b", "parents": ["b"], "input_tokens": 8, "output_tokens": 4}` + "\n", `g.jsonl:2: step "b" is its own ancestor`},
		{ok + ok, `g.jsonl:2: step "a" of session "" already on line 1`},
		{ok + `{"id": "b", "input_tokens": 8}` + "\n", `g.jsonl:2: step "b": a step needs "input_tokens" and "output_tokens"`},
		{ok + `{"input_tokens": 8, "output_tokens": 4}` + "\n", `g.jsonl:2: a step needs an "id"`},
		{ok + `{"id": "b", "delay_ms": -5, "input_tokens": 8, "output_tokens": 4}` + "\n", `g.jsonl:2: step "b": at_ms and delay_ms must be finite and not negative`},
		{"\n\n", `g.jsonl: no steps`},
	} {
		_, err := ParseAgentGraph(strings.NewReader(tc.src), "g.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.src, err, tc.want)
		}
	}
}

// FuzzParseAgentGraph: no input makes the parser panic or hang, and a
// graph it accepts has its parents before their children.
func FuzzParseAgentGraph(f *testing.F) {
	f.Add(graphBranchJoin)
	f.Add(`{"id": "b", "parents": ["b"], "input_tokens": 8, "output_tokens": 4}`)
	f.Fuzz(func(t *testing.T, src string) {
		gs, err := ParseAgentGraph(strings.NewReader(src), "f")
		if err != nil {
			return
		}
		for _, g := range gs {
			for k, s := range g.Steps {
				for _, p := range s.Parents {
					if p >= k || s.Depth <= g.Steps[p].Depth {
						t.Fatalf("step %d's parent %d out of order", k, p)
					}
				}
			}
		}
	})
}
