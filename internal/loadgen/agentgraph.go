package loadgen

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// An agent session graph (docs/PLANS.md, Agent session graphs): recorded
// agent sessions as JSONL, one step (one model call) a line:
//
//	{"session": "s1", "id": "plan", "at_ms": 0, "input_tokens": 256, "output_tokens": 32}
//	{"session": "s1", "id": "web", "parents": ["plan"], "delay_ms": 50, "input_tokens": 320, "output_tokens": 16}
//	{"session": "s1", "id": "code", "parents": ["plan"], "delay_ms": 80, "input_tokens": 300, "output_tokens": 16}
//	{"session": "s1", "id": "answer", "parents": ["web", "code"], "delay_ms": 10, "input_tokens": 400, "output_tokens": 64}
//
// A step with parents starts delay_ms after the last of them ended (the
// tools or the orchestration between them), so sub-agents branch (two
// steps with one parent) and join (a step with two); a step without
// parents is a root, starting at_ms after its session's first root.
// Lines of one session may come in any order; ids are the session's own.
//
// inference-perf's replay graph events (its GraphEvent: event_id,
// predecessor_event_ids, wait_ms, t_start_ms, and call.total_input_tokens
// and call.expected_output_tokens), one a line with a "session" beside
// them (a file holds one session without it), are read as they are; so
// is a whole replay graph as it saves one, a JSON object whose "events"
// (or, older, "nodes": predecessor_node_ids) map ids to events.

// GraphStep is one step of a session graph.
type GraphStep struct {
	ID string
	// Parents are the indices of the steps it waits for, in
	// GraphSession.Steps.
	Parents      []int
	AtMs         float64 // a root's start after the session's first root
	DelayMs      float64 // after its last parent ended
	InputTokens  int
	OutputTokens int
	// Depth is the step's position: 1 for a root, else 1 + its deepest
	// parent's (the sub-agents of one step share a position).
	Depth int
	Line  int // where the step is in its file
}

// GraphSession is one session of a graph file, its steps in an order
// where every parent comes before its children.
type GraphSession struct {
	Name  string
	Steps []GraphStep
}

// MaxDepth is the session's deepest step position.
func (g *GraphSession) MaxDepth() int {
	d := 0
	for _, s := range g.Steps {
		d = max(d, s.Depth)
	}
	return d
}

// graphLine is one line as written: benchrun's fields and
// inference-perf's GraphEvent's.
type graphLine struct {
	Session      *json.RawMessage `json:"session"`
	ID           string           `json:"id"`
	Parents      []string         `json:"parents"`
	AtMs         *float64         `json:"at_ms"`
	DelayMs      *float64         `json:"delay_ms"`
	InputTokens  *int             `json:"input_tokens"`
	OutputTokens *int             `json:"output_tokens"`

	EventID      string   `json:"event_id"`
	Predecessors []string `json:"predecessor_event_ids"`
	// Older inference-perf graphs name the events nodes.
	PredecessorNodes []string `json:"predecessor_node_ids"`
	WaitMs           *float64 `json:"wait_ms"`
	TStartMs         *float64 `json:"t_start_ms"`
	Call             *struct {
		TotalInputTokens     *int `json:"total_input_tokens"`
		ExpectedOutputTokens *int `json:"expected_output_tokens"`
	} `json:"call"`
}

// LoadAgentGraph reads a session graph file (ParseAgentGraph).
func LoadAgentGraph(path string) ([]GraphSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agent graph: %w", err)
	}
	defer f.Close()
	return ParseAgentGraph(f, path)
}

// ParseAgentGraph reads a session graph: its sessions in the order their
// first lines come. An error says the file and line: a line that is not
// a JSON object, a step without an id or token counts, an id twice in a
// session, a parent the session does not have, a cycle.
func ParseAgentGraph(r io.Reader, name string) ([]GraphSession, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if lines, ok := wholeGraph(data); ok {
		// Its events, one a line in the order of their starts: an error
		// names the event by that rank.
		data, name = lines, name+" event"
	}
	r = bytes.NewReader(data)
	type pending struct {
		step    GraphStep
		parents []string
	}
	var order []string
	bySession := map[string][]pending{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		var l graphLine
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object: %w", where, err)
		}
		session, step, parents, err := l.step(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if _, seen := bySession[session]; !seen {
			order = append(order, session)
		}
		for _, p := range bySession[session] {
			if p.step.ID == step.ID {
				return nil, fmt.Errorf("%s: step %q of session %q already on line %d", where, step.ID, session, p.step.Line)
			}
		}
		bySession[session] = append(bySession[session], pending{step, parents})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	out := make([]GraphSession, 0, len(order))
	for _, s := range order {
		ps := bySession[s]
		index := map[string]int{}
		steps := make([]GraphStep, len(ps))
		for i, p := range ps {
			index[p.step.ID] = i
			steps[i] = p.step
		}
		for i, p := range ps {
			for _, id := range p.parents {
				j, ok := index[id]
				if !ok {
					return nil, fmt.Errorf("%s:%d: step %q names parent %q, which session %q does not have", name, p.step.Line, p.step.ID, id, s)
				}
				steps[i].Parents = append(steps[i].Parents, j)
			}
		}
		sorted, err := topoSort(steps)
		if err != nil {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
		out = append(out, GraphSession{Name: s, Steps: sorted})
	}
	return out, nil
}

// step reads one line as a step: benchrun's fields, else
// inference-perf's.
func (l *graphLine) step(line int) (session string, s GraphStep, parents []string, err error) {
	if l.Session != nil {
		var str string
		if json.Unmarshal(*l.Session, &str) == nil {
			session = str
		} else {
			session = strings.TrimSpace(string(*l.Session)) // a number: its text
		}
	}
	s = GraphStep{ID: l.ID, Line: line}
	parents = l.Parents
	at, delay, in, out := l.AtMs, l.DelayMs, l.InputTokens, l.OutputTokens
	if s.ID == "" && l.EventID != "" {
		s.ID, parents, at, delay = l.EventID, append(l.Predecessors, l.PredecessorNodes...), l.TStartMs, l.WaitMs
		if l.Call != nil {
			in, out = l.Call.TotalInputTokens, l.Call.ExpectedOutputTokens
		}
	}
	switch {
	case s.ID == "":
		return "", s, nil, fmt.Errorf("a step needs an \"id\" (or inference-perf's \"event_id\")")
	case in == nil || out == nil:
		return "", s, nil, fmt.Errorf("step %q: a step needs \"input_tokens\" and \"output_tokens\" (inference-perf: call.total_input_tokens and call.expected_output_tokens)", s.ID)
	case *in < 1 || *out < 1:
		return "", s, nil, fmt.Errorf("step %q: input_tokens %d and output_tokens %d must be at least 1", s.ID, *in, *out)
	}
	s.InputTokens, s.OutputTokens = *in, *out
	for _, v := range []*float64{at, delay} {
		if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return "", s, nil, fmt.Errorf("step %q: at_ms and delay_ms must be finite and not negative", s.ID)
		}
	}
	if at != nil {
		s.AtMs = *at
	}
	if delay != nil {
		s.DelayMs = *delay
	}
	return session, s, parents, nil
}

// topoSort orders a session's steps so that every parent comes first,
// renumbering the parents, and sets their depths; a cycle is an error
// at the line of a step on it.
func topoSort(steps []GraphStep) ([]GraphStep, error) {
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(steps))
	var order []int
	var visit func(i int, path []int) error
	visit = func(i int, path []int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			ids := []string{}
			start := 0
			for k, j := range path {
				if j == i {
					start = k
				}
			}
			for _, j := range path[start:] {
				ids = append(ids, fmt.Sprintf("%q", steps[j].ID))
			}
			return fmt.Errorf("%d: step %q is its own ancestor: the cycle %s → %q", steps[i].Line, steps[i].ID, strings.Join(ids, " → "), steps[i].ID)
		}
		state[i] = visiting
		for _, p := range steps[i].Parents {
			if err := visit(p, append(path, i)); err != nil {
				return err
			}
		}
		state[i] = done
		order = append(order, i)
		return nil
	}
	for i := range steps {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	at := make([]int, len(steps))
	for k, i := range order {
		at[i] = k
	}
	out := make([]GraphStep, len(steps))
	for k, i := range order {
		s := steps[i]
		s.Parents = make([]int, len(steps[i].Parents))
		s.Depth = 1
		for n, p := range steps[i].Parents {
			s.Parents[n] = at[p]
			s.Depth = max(s.Depth, out[at[p]].Depth+1)
		}
		out[k] = s
	}
	return out, nil
}

// graphAnswer is what a replayed step's children need of its answer.
type graphAnswer struct {
	ok     bool
	end    time.Time
	text   string
	tokens int // its prompt and answer, by the server's usage
}

// replay sends one recorded session: every step once its parents have
// ended and its delay passed (roots at their at_ms after the session's
// start, due; zero: now), all delays divided by TimeScale. A step's
// prompt is its first parent's messages, that parent's answer as the
// server sent it and a new user message making up the step's recorded
// input_tokens (a root: a user message of input_tokens), so the
// prefix a sub-agent shares with its parent is what a prefix cache can
// serve; it asks for output_tokens. A step whose parent failed is not
// sent. send sends a step at its position (depth) and tool time (its
// delay, scaled; 0 for a root).
func (a *Agent) replay(ctx context.Context, t *Target, id int, due time.Time, send func(req Request, step int, toolTime time.Duration) graphAnswer) {
	g := &a.Graph[id%len(a.Graph)]
	scale := a.TimeScale
	if scale <= 0 {
		scale = 1
	}
	scaled := func(ms float64) time.Duration { return time.Duration(ms / scale * float64(time.Millisecond)) }
	if due.IsZero() {
		due = time.Now()
	}
	first := math.Inf(1)
	for _, s := range g.Steps {
		if len(s.Parents) == 0 {
			first = math.Min(first, s.AtMs)
		}
	}
	type outcome struct {
		done chan struct{}
		ans  graphAnswer
		msgs []Message
	}
	outs := make([]outcome, len(g.Steps))
	for k := range outs {
		outs[k].done = make(chan struct{})
	}
	var wg sync.WaitGroup
	for k := range g.Steps {
		wg.Go(func() {
			defer close(outs[k].done)
			st := &g.Steps[k]
			rng := rand.New(rand.NewPCG(a.Seed^uint64(id), uint64(k)))
			at, tool := due.Add(scaled(st.AtMs-first)), time.Duration(0)
			var msgs []Message
			if len(st.Parents) > 0 {
				var last time.Time
				for _, p := range st.Parents {
					select {
					case <-outs[p].done:
					case <-ctx.Done():
						return
					}
					if !outs[p].ans.ok {
						return // no answer to go on from
					}
					last = later(last, outs[p].ans.end)
				}
				tool = scaled(st.DelayMs)
				at = last.Add(tool)
				p := &outs[st.Parents[0]]
				msgs = append(p.msgs[:len(p.msgs):len(p.msgs)], Message{Role: "assistant", Content: p.ans.text})
				msgs = append(msgs, Message{Role: "user", Content: a.words(rng, max(st.InputTokens-p.ans.tokens, 1))})
			} else {
				msgs = []Message{{Role: "user", Content: a.rootText(rng, st.InputTokens)}}
			}
			req := a.Request
			req.Prompt, req.Messages, req.KeepText, req.Scheduled = "", msgs, true, at
			req.MaxTokens = st.OutputTokens
			if a.Request.ExpectTokens > 0 {
				// Forced output: each step its own recorded length.
				req.ExpectTokens = st.OutputTokens
				req.Body = maps.Clone(a.Request.Body)
				if req.Body == nil {
					req.Body = map[string]any{}
				}
				req.Body["min_tokens"] = st.OutputTokens
			}
			t.prepare(&req)
			if !thinkUntil(ctx, at) {
				return
			}
			outs[k].ans, outs[k].msgs = send(req, st.Depth, tool), msgs
		})
	}
	wg.Wait()
}

// rootText is a root's first message, input_tokens long as a synthetic
// prompt is (the calibrated vocabulary, the chat template's own tokens
// taken off, its lead word first).
func (a *Agent) rootText(rng *rand.Rand, tokens int) string {
	if a.Vocab == nil {
		return a.words(rng, tokens)
	}
	return a.Vocab.withLead(a.Vocab.Text(rng, a.Vocab.WordsFor(tokens)))
}

// words is n words of the vocabulary (a word each without one).
func (a *Agent) words(rng *rand.Rand, n int) string {
	if a.Vocab == nil {
		return strings.TrimSpace(strings.Repeat("word ", n))
	}
	return a.Vocab.Text(rng, n)
}

// wholeGraph turns a replay graph saved whole by inference-perf (one JSON
// object: "events" or "nodes" mapping each id to its event) into one
// event a line, in the order of their starts (t_start_ms, then id), each
// with its id; false when data is not such an object (JSONL is not).
func wholeGraph(data []byte) ([]byte, bool) {
	var whole struct {
		Events map[string]json.RawMessage `json:"events"`
		Nodes  map[string]json.RawMessage `json:"nodes"`
	}
	if json.Unmarshal(data, &whole) != nil {
		return nil, false
	}
	events := whole.Events
	if len(events) == 0 {
		events = whole.Nodes
	}
	if len(events) == 0 {
		return nil, false
	}
	type event struct {
		id    string
		start float64
		raw   map[string]json.RawMessage
	}
	list := make([]event, 0, len(events))
	for id, raw := range events {
		e := event{id: id}
		if json.Unmarshal(raw, &e.raw) != nil {
			e.raw = map[string]json.RawMessage{} // ParseAgentGraph says what it lacks
		}
		if t, ok := e.raw["t_start_ms"]; ok {
			_ = json.Unmarshal(t, &e.start)
		}
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b event) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	var out bytes.Buffer
	for _, e := range list {
		id, _ := json.Marshal(e.id)
		e.raw["event_id"] = id
		delete(e.raw, "id")
		b, _ := json.Marshal(e.raw)
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), true
}
