package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/ktimer"
)

// Agent is a load of agent sessions (docs/METRICS.md, Agent sessions): a
// session is a sequence of steps driven by the answers. Step 1 sends the
// session's first user message with the tools offered; when a step's
// answer ends in tool calls the client plays each tool (a latency drawn
// from ToolLatency and ToolLatencyDist, a result of ToolResultTokens
// tokens) and sends the next step with the history: every earlier
// message, the assistant message carrying the calls, and one `role:
// "tool"` message per call with its result. A session ends on a final
// answer (a step with no call), at MaxSteps, or at a failed step.
//
// The calls of one step are played at once, as an agent runtime runs
// independent tools in parallel: the step's tool time is the longest of
// its calls' latencies. The calls' ids in the history are the client's
// own (call_<session>_<step>_<k>), since servers disagree on whether and
// where a streamed call carries one; tool_call_id names them.
type Agent struct {
	// MaxSteps is the step limit: a session whose MaxSteps-th answer
	// still calls a tool ends there.
	MaxSteps int
	// User is the first user message of session id.
	User func(id int) string
	// ID is the id of the pass's n-th session (nil: n).
	ID func(n int) int
	// ToolLatency is the mean time a tool takes; ToolLatencyDist is
	// ThinkFixed (every call ToolLatency) or ThinkExponential (drawn per
	// call from Seed and the session).
	ToolLatency     time.Duration
	ToolLatencyDist string
	// ToolResultTokens is each result's length in tokens (words of
	// Vocab, drawn from Seed, the session, the step and the call).
	ToolResultTokens int
	Vocab            *Vocab
	// ToolResult, when set, gives the result of call k (0-based) of step
	// of session id in place of a synthetic one; Results, when set,
	// answers a call with a recorded result of its tool (a synthetic one
	// when none is recorded for it).
	ToolResult func(id, step, k int, call ToolCallMade) string
	Results    ToolResults
	// Graph, when set, replays recorded sessions in place of playing
	// tools (agentgraph.go): the pass's session n replays
	// Graph[ID(n) mod len(Graph)], each step after its parents, their
	// delays divided by TimeScale (0: 1, the recorded pace).
	Graph     []GraphSession
	TimeScale float64
	Seed      uint64
	// Request is every step's template (max tokens, body fields);
	// Messages are set per step.
	Request Request
}

// ToolCallMade is one call an answer made: the function's name and its
// arguments as the server sent them (Result.Calls).
type ToolCallMade struct {
	Name      string
	Arguments string
}

// ToolCall is a call in an assistant message of a chat request's history.
type ToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is a history call's function and its arguments.
type ToolCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Validate reports an agent load that cannot run.
func (a *Agent) Validate() error {
	switch {
	case a.Graph != nil:
		if a.TimeScale < 0 {
			return fmt.Errorf("time scale %v: must not be negative", a.TimeScale)
		}
		return nil
	case a.MaxSteps < 1:
		return fmt.Errorf("max steps %d: want at least 1", a.MaxSteps)
	case a.User == nil:
		return fmt.Errorf("an agent load needs its sessions' first messages")
	case a.ToolLatency < 0:
		return fmt.Errorf("tool latency %v: must not be negative", a.ToolLatency)
	case a.ToolResultTokens < 0:
		return fmt.Errorf("tool result tokens %d: must not be negative", a.ToolResultTokens)
	}
	switch a.ToolLatencyDist {
	case ThinkFixed, ThinkExponential, "":
	default:
		return fmt.Errorf("tool latency distribution %q: want fixed or exponential", a.ToolLatencyDist)
	}
	return nil
}

func (a *Agent) id(n int) int {
	if a.ID == nil {
		return n
	}
	return a.ID(n)
}

// latency draws one call's tool latency.
func (a *Agent) latency(rng *rand.Rand) time.Duration {
	if a.ToolLatency <= 0 {
		return 0
	}
	if a.ToolLatencyDist == ThinkExponential {
		return time.Duration(rng.ExpFloat64() * float64(a.ToolLatency))
	}
	return a.ToolLatency
}

// result is the text call k of step of session id returns.
func (a *Agent) result(rng *rand.Rand, id, step, k int, call ToolCallMade) string {
	if a.ToolResult != nil {
		return a.ToolResult(id, step, k, call)
	}
	if r, ok := a.Results.ToolResultFrom(a.Seed, id, step, k, call); ok {
		return r
	}
	if a.ToolResultTokens == 0 {
		return ""
	}
	if a.Vocab == nil {
		return strings.TrimSpace(strings.Repeat("result ", a.ToolResultTokens))
	}
	return a.Vocab.Text(rng, a.ToolResultTokens)
}

// RunAgents sends an agent load and waits for every session it started:
// l.Concurrency sessions at once in a closed loop, or sessions arriving
// on l.Schedule (an open loop of session arrivals; l.MaxInFlight caps
// the sessions in progress), as RunSessions.
//
// The stop: a session starts while the steps sent, plus one for each
// session in progress, are fewer than l.Requests and the pass is younger
// than l.Duration (minimums as in Run); a started session runs to its
// end, so every session is whole.
//
// onResult receives every step's result, with its index in send order
// and Session, Step and ToolTime set. A step after the first is due its
// tool time after the step before's last token arrived (Result.Scheduled):
// its send lag is the client's lateness, apart from the tool time.
func RunAgents(ctx context.Context, t *Target, l Load, a Agent, onResult func(i int, r Result)) (RunStats, error) {
	defer Loading()() // the collector's goal is the load's while it runs (gc.go)
	if err := l.Validate(); err != nil {
		return RunStats{}, err
	}
	if err := a.Validate(); err != nil {
		return RunStats{}, err
	}
	if t.Endpoint != Chat {
		return RunStats{}, fmt.Errorf("agent sessions need the chat endpoint, not %s", t.Endpoint)
	}
	if l.Counters == nil {
		l.Counters = &Counters{}
	}
	c := l.Counters
	var sent atomic.Int64
	var mu sync.Mutex
	planned := 0 // steps sent, and one for each session that has not ended
	more := func() { mu.Lock(); planned++; mu.Unlock() }
	session := func(n int, due time.Time) {
		id := a.id(n)
		rng := rand.New(rand.NewPCG(a.Seed, uint64(id)))
		msgs := []Message{{Role: "user", Content: a.User(id)}}
		var toolTime time.Duration
		for step := 1; step <= a.MaxSteps && ctx.Err() == nil; step++ {
			req := a.Request
			req.Prompt, req.Messages, req.KeepText, req.Scheduled = "", msgs, true, due
			if step > 1 {
				more()
				// The step is built, body and all, while its tools run,
				// so only the wake separates their end from the send.
				t.prepare(&req)
				if !thinkUntil(ctx, due) {
					return
				}
			}
			i := int(sent.Add(1) - 1)
			c.Sent.Add(1)
			r := t.Do(ctx, req)
			r.Session, r.Step, r.ToolTime = id, step, toolTime
			if r.OK() {
				c.Done.Add(1)
			} else {
				c.Failed.Add(1)
			}
			calls, text, ended := r.Calls, r.Text, answerEnd(&r)
			r.Calls, r.Text = nil, ""
			onResult(i, r)
			if !r.OK() || len(calls) == 0 || step == a.MaxSteps {
				return
			}
			msgs, toolTime = a.playTools(rng, msgs, id, step, text, calls)
			due = ended.Add(toolTime)
		}
	}
	if a.Graph != nil {
		session = func(n int, due time.Time) {
			a.replay(ctx, t, a.id(n), due, func(req Request, step int, toolTime time.Duration) graphAnswer {
				i := int(sent.Add(1) - 1)
				c.Sent.Add(1)
				r := t.Do(ctx, req)
				r.Session, r.Step, r.ToolTime = a.id(n), step, toolTime
				if r.OK() {
					c.Done.Add(1)
				} else {
					c.Failed.Add(1)
				}
				ans := graphAnswer{ok: r.OK(), end: answerEnd(&r), text: r.Text, tokens: r.InputTokens + r.OutputTokens}
				r.Calls, r.Text = nil, ""
				onResult(i, r)
				return ans
			})
		}
	}
	st := driveSessions(ctx, l, func(n int, off time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		if l.done(planned, off) {
			return false
		}
		planned++ // the session's first step (the rest as they are sent)
		if a.Graph != nil {
			planned += len(a.Graph[a.id(n)%len(a.Graph)].Steps) - 1 // all its steps, known
		}
		return true
	}, session)
	st.Sent = int(sent.Load())
	return st, nil
}

// answerEnd is when the answer's last token arrived (its kernel receive
// stamp where the connection has them), else when the answer was read:
// the tools start from there, so the client's own delay in reading the
// rest of the answer and turning around is in the next step's send lag,
// stated, not hidden in the tool time.
func answerEnd(r *Result) time.Time {
	if n := len(r.Tokens); n > 0 {
		return r.Tokens[n-1].At
	}
	return r.Finished
}

// playTools plays one step's calls: it returns the next step's messages
// and the step's tool time, the longest of its calls' latencies (the
// calls run at once). The next step is due that long after the
// answer's last token arrived (answerEnd): its send lag is how late the client sent it after its tools
// had finished, the client's own error in the session's time.
func (a *Agent) playTools(rng *rand.Rand, msgs []Message, id, step int, text string, calls []ToolCallMade) ([]Message, time.Duration) {
	asst := Message{Role: "assistant", Content: text, ToolCalls: make([]ToolCall, len(calls))}
	results := make([]Message, len(calls))
	var longest time.Duration
	for k, call := range calls {
		callID := "call_" + strconv.Itoa(id) + "_" + strconv.Itoa(step) + "_" + strconv.Itoa(k)
		asst.ToolCalls[k] = ToolCall{ID: callID, Type: "function", Function: ToolCallFunction(call)}
		results[k] = Message{Role: "tool", ToolCallID: callID, Content: a.result(rng, id, step, k, call)}
		longest = max(longest, a.latency(rng))
	}
	next := append(msgs[:len(msgs):len(msgs)], asst)
	return append(next, results...), longest
}

// driveSessions runs the sessions of RunSessions and RunAgents:
// l.Concurrency at once in a closed loop (each worker starts its next
// session when its last one ends), or arriving on l.Schedule
// (l.MaxInFlight capping those in progress).
// claim says whether the pass's next session, n, may start at offset
// off (and counts it); session runs the pass's n-th session, due when it was
// scheduled (zero in a closed loop).
func driveSessions(ctx context.Context, l Load, claim func(n int, off time.Duration) bool, session func(n int, due time.Time)) RunStats {
	start := time.Now()
	var mu sync.Mutex
	started := 0
	next := func(off time.Duration) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if !claim(started, off) {
			return 0, false
		}
		started++
		return started - 1, true
	}
	var wg sync.WaitGroup
	if l.Schedule == nil {
		for w := 0; w < l.Concurrency; w++ {
			wg.Go(func() {
				for ctx.Err() == nil {
					n, ok := next(time.Since(start))
					if !ok {
						return
					}
					session(n, time.Time{})
				}
			})
		}
		wg.Wait()
		return RunStats{Start: start, Sessions: started}
	}
	var sem chan struct{}
	if l.MaxInFlight > 0 {
		sem = make(chan struct{}, l.MaxInFlight)
	}
	gen := l.Schedule.NewGenerator()
	timer := ktimer.New(ctx)
	timer.PreciseFrom = preciseWait
	defer timer.Stop()
loop:
	for ctx.Err() == nil {
		off := gen.Next()
		n, ok := next(off - l.Schedule.Phase)
		if !ok {
			break
		}
		due := start.Add(off)
		if !timer.SleepUntil(due) {
			break loop
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break loop
			}
		}
		wg.Go(func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			session(n, due)
		})
	}
	wg.Wait()
	return RunStats{Start: start, Sessions: started}
}

// made is the calls an answer made, in order (nil on a nil accumulator:
// no call came).
func (a *answerAcc) made() []ToolCallMade {
	if a == nil || len(a.calls) == 0 {
		return nil
	}
	out := make([]ToolCallMade, len(a.calls))
	for i, c := range a.calls {
		out[i] = ToolCallMade{Name: c.name, Arguments: string(c.args)}
	}
	return out
}

// ToolResults are recorded tool results by tool name ("" for those that
// answer any tool): an agent load answers a call with one of its tool's
// (ToolResultFrom).
type ToolResults map[string][]string

// LoadToolResults reads recorded tool results: JSONL, one result a line,
// {"name": "search", "content": "..."} (name absent: any tool). An error
// says the file and line.
func LoadToolResults(path string) (ToolResults, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tool results: %w", err)
	}
	defer f.Close()
	out := ToolResults{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line, n := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l struct {
			Name    string  `json:"name"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %w", path, line, err)
		}
		if l.Content == nil {
			return nil, fmt.Errorf("%s:%d: a tool result needs its \"content\"", path, line)
		}
		out[l.Name] = append(out[l.Name], *l.Content)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no tool results", path)
	}
	return out, nil
}

// ToolResultFrom answers call k of step of session id with one of the
// recorded results of its tool (else of any tool), chosen by the seed,
// the session, the step and the call, so a plan replays the same
// results; "" and false when none is recorded for it.
func (rs ToolResults) ToolResultFrom(seed uint64, id, step, k int, call ToolCallMade) (string, bool) {
	list := rs[call.Name]
	if len(list) == 0 {
		list = rs[""]
	}
	if len(list) == 0 {
		return "", false
	}
	h := mix64(seed ^ uint64(id)<<32 ^ uint64(step)<<16 ^ uint64(k))
	return list[h%uint64(len(list))], true
}
