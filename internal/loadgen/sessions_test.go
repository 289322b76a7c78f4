package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// collect gathers a run's results in send order.
type collect struct {
	mu sync.Mutex
	rs map[int]Result
}

func (c *collect) add(i int, r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rs == nil {
		c.rs = map[int]Result{}
	}
	c.rs[i] = r
}

func (c *collect) inOrder(t *testing.T) []Result {
	t.Helper()
	out := make([]Result, len(c.rs))
	for i, r := range c.rs {
		if i >= len(out) {
			t.Fatalf("send index %d of %d results: the indices have a gap", i, len(out))
		}
		out[i] = r
	}
	return out
}

// bySession is each session's turns in turn order.
func bySession(rs []Result) map[int][]Result {
	out := map[int][]Result{}
	for _, r := range rs {
		out[r.Session] = append(out[r.Session], r)
	}
	for _, turns := range out {
		slices.SortFunc(turns, func(a, b Result) int { return a.Turn - b.Turn })
	}
	return out
}

func userTexts(words int) func(id, turn int) string {
	return func(id, turn int) string {
		return SyntheticPrompt(rand.New(rand.NewPCG(uint64(id), uint64(turn))), words)
	}
}

// TestSessionsAgainstSimulator is the multi-turn ground truth: the
// simulator (fixed mode, vLLM-style block prefix cache that keeps answers)
// serves four-turn conversations on both endpoints, streamed and not, and
// over the Responses and Messages APIs (the history as their input items
// and messages; Messages' cache reads counted apart from its
// input_tokens, as Anthropic's usage does). Turn
// k's history is turn k-1's prompt and answer by usage; the cache serves
// every whole block of it (all of it but the last generated token), which
// the answers report as cached_tokens equal to the simulator's records;
// and TTFT follows the simulator's rule ttft × uncached / prompt tokens,
// turn by turn: the number that shows the cache works.
func TestSessionsAgainstSimulator(t *testing.T) {
	const ttft, block = 60 * time.Millisecond, 16
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL, c.PromptCache = ttft, time.Millisecond, true
	})
	for _, tc := range []struct {
		ep     Endpoint
		stream bool
	}{{Completions, true}, {Chat, true}, {Completions, false}, {Chat, false}, {Responses, true}, {Messages, true}, {Messages, false}} {
		t.Run(fmt.Sprintf("%s stream=%v", tc.ep, tc.stream), func(t *testing.T) {
			machine := machinetest.Start()
			tg := newTarget(url, 4)
			tg.Endpoint, tg.Stream = tc.ep, tc.stream
			var got collect
			conv := Conversation{
				Turns: 4, User: userTexts(24), Seed: 1,
				ID:      func(n int) int { return n + 100*int(tc.ep[0]) + map[bool]int{true: 1}[tc.stream]*10000 },
				Request: Request{MaxTokens: 8, Body: map[string]any{"ignore_eos": true}},
			}
			st, err := RunSessions(context.Background(), tg, Load{Concurrency: 2, Requests: 16}, conv, got.add)
			if err != nil || st.Sent != 16 {
				t.Fatalf("sent %d: %v", st.Sent, err)
			}
			rs := got.inOrder(t)
			sessions := bySession(rs)
			late := make([][]float64, 4)      // per turn: the simulator's first write - its rule, ms
			clientErr := make([][]float64, 4) // per turn: the client's ttft - the simulator's, ms
			if len(sessions) != 4 {
				t.Fatalf("%d sessions, want 16 requests / 4 turns", len(sessions))
			}
			for id, turns := range sessions {
				if len(turns) != 4 {
					t.Fatalf("session %d has %d turns", id, len(turns))
				}
				for k, r := range turns {
					if r.Err != nil || r.Turn != k+1 || !r.HistoryKnown || !r.UsageReported {
						t.Fatalf("session %d turn %d: %+v", id, k+1, r)
					}
					rec, ok := srv.Record(r.ResponseID)
					if !ok {
						t.Fatalf("no record for %s", r.ResponseID)
					}
					// Usage is what the simulator counted, cached tokens included.
					if r.InputTokens != rec.PromptTokens || r.OutputTokens != rec.CompletionTokens || !r.CachedReported || r.CachedTokens != rec.CachedTokens {
						t.Fatalf("session %d turn %d: usage %d/%d cached %d (reported %v); the simulator counted %d/%d cached %d",
							id, k+1, r.InputTokens, r.OutputTokens, r.CachedTokens, r.CachedReported, rec.PromptTokens, rec.CompletionTokens, rec.CachedTokens)
					}
					wantHistory, wantCached := 0, 0
					if k > 0 {
						prev := turns[k-1]
						wantHistory = prev.InputTokens + prev.OutputTokens
						// Everything but the last answer token, in whole blocks.
						wantCached = (wantHistory - 1) / block * block
					}
					if r.HistoryTokens != wantHistory || r.CachedTokens != wantCached {
						t.Fatalf("session %d turn %d: history %d cached %d, want %d and %d", id, k+1, r.HistoryTokens, r.CachedTokens, wantHistory, wantCached)
					}
					if k > 0 && r.InputTokens <= wantHistory {
						t.Fatalf("turn %d: prompt %d tokens does not extend its history of %d", k+1, r.InputTokens, wantHistory)
					}
					// The simulator's TTFT by turn, from its own rule: its first
					// write never comes before ttft × uncached / prompt tokens
					// after the request arrived (the last token's, not
					// streamed), and the client saw it no earlier.
					want := time.Duration(float64(ttft) * float64(r.InputTokens-r.CachedTokens) / float64(r.InputTokens))
					if !tc.stream {
						want += 7 * time.Millisecond // the body comes with the 8th token, 1 ms apart
					}
					server := rec.Events[0].Time.Sub(rec.Received)
					if server < want-100*time.Microsecond || r.TTFT() < server {
						t.Errorf("session %d turn %d: ttft %v, the simulator wrote after %v, its rule %v", id, k+1, r.TTFT(), server, want)
					}
					late[k] = append(late[k], msf(server-want))
					clientErr[k] = append(clientErr[k], msf(r.TTFT()-server))
				}
			}
			// Per turn, the timeliest first write is within a few ms of the
			// rule (a loaded machine delays some writes, never all), and the
			// client measured what the simulator did.
			// On a machine whose cores others hold, every write may be
			// late: the timing is then inconclusive (measuretest).
			var imprecise []string
			for k := range late {
				if best, p50 := slices.Min(late[k]), stats.Percentile(clientErr[k], 50); best > 6 || p50 > 3 {
					imprecise = append(imprecise, fmt.Sprintf("turn %d: the simulator's timeliest first write %.1f ms after its rule; the client's ttft a median %.1f ms over the simulator's", k+1, best, p50))
				}
			}
			// Every turn but the last sent its answer back: the next prompt
			// holds it (the last turn's text is not kept).
			for _, turns := range sessions {
				for k, r := range turns {
					if (r.Text != "") != (k < 3) {
						t.Fatalf("turn %d kept text %q", k+1, r.Text)
					}
				}
			}
			if len(imprecise) > 0 {
				t.Log(strings.Join(imprecise, "; "))
				machine.Judge(t, "the first writes on the simulator's rule and the client's ttft on the simulator's")
				t.Error(strings.Join(imprecise, "; "))
			}
		})
	}
}

// TestSessionsHistoryOnTheWire: what the server received is the history
// as designed: chat messages user/assistant/.../user with the server's own
// answers; completions, the earlier prompt and answer, "\n\n", the new text.
func TestSessionsHistoryOnTheWire(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 0 })
	for _, ep := range []Endpoint{Chat, Completions, Responses, Messages} {
		tg := newTarget(url, 1)
		tg.Endpoint = ep
		tg.HTTP.Transport = recordingTransport{next: tg.HTTP.Transport, record: func(b string) {
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
		}}
		bodies = nil
		var got collect
		conv := Conversation{Turns: 3, User: func(id, turn int) string { return fmt.Sprintf("question %d", turn) },
			Request: Request{MaxTokens: 3, Body: map[string]any{"ignore_eos": true}}}
		if _, err := RunSessions(context.Background(), tg, Load{Concurrency: 1, Requests: 3}, conv, got.add); err != nil {
			t.Fatal(err)
		}
		rs := got.inOrder(t)
		if len(bodies) != 3 {
			t.Fatalf("%s: %d bodies", ep, len(bodies))
		}
		if ep != Completions {
			// Chat's messages; the Responses API's input items; the
			// Messages API's messages.
			key := map[Endpoint]string{Chat: "messages", Responses: "input", Messages: "messages"}[ep]
			want := fmt.Sprintf(`"%s":[{"role":"user","content":"question 1"},{"role":"assistant","content":%q},{"role":"user","content":"question 2"},{"role":"assistant","content":%q},{"role":"user","content":"question 3"}]`, key, rs[0].Text, rs[1].Text)
			if !strings.Contains(bodies[2], want) {
				t.Fatalf("%s turn 3 sent\n%s\nwant %s", ep, bodies[2], want)
			}
		} else {
			want := fmt.Sprintf(`"prompt":%q`, "question 1"+rs[0].Text+"\n\nquestion 2"+rs[1].Text+"\n\nquestion 3")
			if !strings.Contains(bodies[2], want) {
				t.Fatalf("completions turn 3 sent\n%s\nwant %s", bodies[2], want)
			}
		}
		if rs[0].Text == "" || len(strings.Fields(rs[0].Text)) != 3 {
			t.Fatalf("answer text %q", rs[0].Text)
		}
	}
}

// recordingTransport hands every request body to record.
type recordingTransport struct {
	next   http.RoundTripper
	record func(string)
}

func (rt recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	rt.record(string(b))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return rt.next.RoundTrip(r)
}

// TestSessionsThinkTimeAndFailures: a fixed think time separates a
// session's answer from its next turn; a failed turn ends its session (no
// later turn of it is sent) while the other sessions carry on; an open
// loop starts whole sessions at the arrival rate.
func TestSessionsThinkTimeAndFailures(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 2*time.Millisecond, 0
		c.Faults.ErrorRate, c.Faults.ErrorCodes = 0.2, []int{500}
	})
	tg := newTarget(url, 4)
	var got collect
	const think = 25 * time.Millisecond
	conv := Conversation{Turns: 3, User: userTexts(8), Think: think, ThinkDist: ThinkFixed, Seed: 3,
		Request: Request{MaxTokens: 2, Body: map[string]any{"ignore_eos": true}}}
	counters := &Counters{}
	if _, err := RunSessions(context.Background(), tg, Load{Concurrency: 3, Requests: 60, Counters: counters}, conv, got.add); err != nil {
		t.Fatal(err)
	}
	rs := got.inOrder(t)
	failed := 0
	for id, turns := range bySession(rs) {
		for k, r := range turns {
			if r.Turn != k+1 {
				t.Fatalf("session %d: turn %d where %d was due", id, r.Turn, k+1)
			}
			if !r.OK() {
				failed++
				if k != len(turns)-1 {
					t.Fatalf("session %d went on after its failed turn %d", id, r.Turn)
				}
			}
			if k > 0 && r.Sent.Sub(turns[k-1].Finished) < think {
				t.Fatalf("session %d turn %d sent %v after the answer, think time %v", id, r.Turn, r.Sent.Sub(turns[k-1].Finished), think)
			}
		}
		if len(turns) < 3 && turns[len(turns)-1].OK() {
			t.Fatalf("session %d ended after %d turns without a failure", id, len(turns))
		}
	}
	if failed == 0 || len(bySession(rs)) != 20 || counters.Failed.Load() != int64(failed) || counters.Sent.Load() != int64(len(rs)) {
		t.Fatalf("%d failed turns over %d sessions; counters %d sent %d failed", failed, len(bySession(rs)), counters.Sent.Load(), counters.Failed.Load())
	}

	// Open loop: sessions arrive at the rate, each whole.
	_, url2 := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = 2*time.Millisecond, 0 })
	tg2 := newTarget(url2, 8)
	var open collect
	conv.ThinkDist = ThinkExponential
	sch := &Schedule{Rate: 40, Arrival: ArrivalConstant}
	start := time.Now()
	if _, err := RunSessions(context.Background(), tg2, Load{Schedule: sch, Requests: 24}, conv, open.add); err != nil {
		t.Fatal(err)
	}
	ors := open.inOrder(t)
	ss := bySession(ors)
	if len(ors) != 24 || len(ss) != 8 {
		t.Fatalf("open loop: %d requests in %d sessions", len(ors), len(ss))
	}
	for id, turns := range ss {
		first := turns[0]
		// Session n arrives n/λ after the start: its first turn is
		// scheduled then.
		if want := start.Add(time.Duration(id) * time.Second / 40); first.Scheduled.Sub(want).Abs() > 5*time.Millisecond {
			t.Errorf("session %d scheduled %v after the start, want %v", id, first.Scheduled.Sub(start), want.Sub(start))
		}
		if len(turns) != 3 {
			t.Errorf("session %d: %d turns", id, len(turns))
		}
	}
}

// TestRequestRowsConversations: a conversation's rows carry session, turn,
// history and cached tokens; other rows leave them NULL, and cached tokens
// are NULL when the server did not say.
func TestRequestRowsConversations(t *testing.T) {
	now := time.Now()
	ok := Result{Sent: now, Tokens: []TokenEvent{{At: now.Add(time.Millisecond), Tokens: 1}}, Finished: now.Add(time.Millisecond), UsageReported: true}
	turn := ok
	turn.Session, turn.Turn, turn.HistoryTokens, turn.HistoryKnown = 3, 2, 41, true
	turn.CachedTokens, turn.CachedReported = 32, true
	unknown := turn
	unknown.HistoryKnown = false
	failed := turn
	failed.Err = ErrNoTokens
	rows := RequestRows(results.Cell{Stage: "s", CellID: "c"}, []Result{ok, turn, unknown, failed})
	if r := rows[0]; r.Session != nil || r.Turn != nil || r.HistoryTokens != nil || r.CachedTokens != nil {
		t.Errorf("plain request: %+v", r)
	}
	if r := rows[1]; *r.Session != 3 || *r.Turn != 2 || *r.HistoryTokens != 41 || *r.CachedTokens != 32 {
		t.Errorf("turn: %+v", r)
	}
	if r := rows[2]; r.HistoryTokens != nil || *r.Turn != 2 {
		t.Errorf("unknown history: %+v", r)
	}
	if r := rows[3]; r.CachedTokens != nil || *r.Turn != 2 {
		t.Errorf("failed turn: %+v", r)
	}
}
