package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/loadgen/sse"
	"github.com/benchrun/benchrun/internal/sim"
)

func TestClientAgainstSimulator(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) { c.TTFT = 2 * time.Millisecond; c.ITL = time.Millisecond })
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		ep       Endpoint
		stream   bool
		tpc      int // the simulator's tokens per chunk
		events   int
		estimate bool
	}{
		{"completions stream", Completions, true, 1, 8, false},
		{"chat stream skips the role chunk", Chat, true, 1, 8, false},
		{"completions whole", Completions, false, 1, 1, false},
		{"chat whole", Chat, false, 1, 1, false},
		{"multi-token chunks", Completions, true, 4, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(url, 2)
			tg.Endpoint, tg.Stream = tc.ep, tc.stream
			if tc.tpc > 1 {
				_, url2 := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.TokensPerChunk = 0, time.Millisecond, tc.tpc })
				tg.BaseURL = url2
			}
			r := tg.Do(ctx, Request{Prompt: "one two three", MaxTokens: 8, Body: map[string]any{"ignore_eos": true}})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.InputTokens <= 0 || r.OutputTokens != 8 || !r.UsageReported {
				t.Errorf("usage in/out %d/%d reported=%v", r.InputTokens, r.OutputTokens, r.UsageReported)
			}
			if len(r.Tokens) != tc.events || r.TokensEstimated != tc.estimate {
				t.Errorf("%d token events (estimated %v), want %d (%v)", len(r.Tokens), r.TokensEstimated, tc.events, tc.estimate)
			}
			sum := 0
			for _, e := range r.Tokens {
				sum += e.Tokens
			}
			if sum != 8 {
				t.Errorf("tokens per event sum to %d, want 8", sum)
			}
			if r.TTFT() <= 0 || r.E2EL() < r.TTFT() || r.Sent.IsZero() || r.Finished.Before(r.Tokens[len(r.Tokens)-1].At) {
				t.Errorf("times out of order: ttft %v e2el %v", r.TTFT(), r.E2EL())
			}
			if tc.tpc == 1 {
				if _, ok := srv.Record(r.ResponseID); !ok {
					t.Errorf("response id %q not known to the simulator", r.ResponseID)
				}
			}
		})
	}
	t.Run("continuous usage: tokens per event from the server", func(t *testing.T) {
		// 10 tokens in chunks of 4: events carry 4, 4, 2. Without per-chunk
		// usage the client could only spread 10 evenly (4, 3, 3).
		_, url3 := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.TokensPerChunk = 0, time.Millisecond, 4 })
		for _, ep := range []Endpoint{Completions, Chat} {
			tg := newTarget(url3, 1)
			tg.Endpoint, tg.ContinuousUsage = ep, true
			r := tg.Do(ctx, Request{Prompt: "one two three", MaxTokens: 10, Body: map[string]any{"ignore_eos": true}})
			var got []int
			for _, e := range r.Tokens {
				got = append(got, e.Tokens)
			}
			if r.Err != nil || fmt.Sprint(got) != "[4 4 2]" || !r.ContinuousUsage || r.TokensEstimated || r.OutputTokens != 10 {
				t.Errorf("%s: err %v, tokens per event %v, continuous %v, estimated %v, out %d", ep, r.Err, got, r.ContinuousUsage, r.TokensEstimated, r.OutputTokens)
			}
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		tg := newTarget(url, 2)
		tg.Endpoint, tg.Stream = Embeddings, false
		r := tg.Do(ctx, Request{Prompt: "one two three"})
		if r.Err != nil || r.InputTokens != 3 || len(r.Tokens) != 1 {
			t.Fatalf("embeddings: err %v, input %d, events %d", r.Err, r.InputTokens, len(r.Tokens))
		}
	})
}

// TestClientReportsFailures drives the simulator's faults: every failure is
// an error on the result, in words, never a panic or a hang.
func TestClientReportsFailures(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT = time.Millisecond; c.ITL = time.Millisecond })
	for _, tc := range []struct {
		fault string
		want  string
	}{
		{"error=503", "HTTP 503"},
		{"drop-after=2", "reading stream after 2 token events"},
		{"malformed", "malformed event after 1 token events"},
		// A bare JSON error with a 200 where a stream was due: the
		// server's words, not "unexpected EOF".
		{"sse-json-error", "the model is overloaded, try again later"},
		// A body compressed though benchrun asked for none: named.
		{"gzip", "Content-Encoding: gzip"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			tg := newTarget(url, 1)
			tg.Headers = map[string]string{"X-Sim-Fault": tc.fault}
			r := tg.Do(context.Background(), Request{Prompt: "x", MaxTokens: 8})
			if r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", r.Err, tc.want)
			}
		})
	}
	t.Run("stall ends with the context", func(t *testing.T) {
		tg := newTarget(url, 1)
		tg.Headers = map[string]string{"X-Sim-Fault": "stall=5s"}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		r := tg.Do(ctx, Request{Prompt: "x", MaxTokens: 8})
		if r.Err == nil || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %v", r.Err, time.Since(start))
		}
	})
	// The watchdogs: a server that goes quiet (mid-stream or before its
	// headers) or is merely too slow ends the request with an error that
	// says which, long before the fault would end by itself.
	for _, tc := range []struct {
		name, fault    string
		stall, timeout time.Duration
		want           string
	}{
		{"stall mid-stream", "stall=20s,stall-at=2", 150 * time.Millisecond, 0, "stalled: no bytes for 150ms after 2 token events"},
		{"stall before the first token", "stall=20s,stall-at=0", 150 * time.Millisecond, 0, "stalled: no bytes for 150ms after 0 token events"},
		{"slow headers", "slow-headers=20s", 150 * time.Millisecond, 0, "stalled: no response headers within 150ms"},
		{"request timeout", "none", 0, 150 * time.Millisecond, "request timed out after 150ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(url, 1)
			tg.Headers = map[string]string{"X-Sim-Fault": tc.fault}
			tg.StallTimeout, tg.Timeout = tc.stall, tc.timeout
			req := Request{Prompt: "x", MaxTokens: 8}
			if tc.timeout > 0 {
				// Slow but never silent: 100 tokens 10 ms apart outlast
				// the timeout while every gap stays under any stall limit.
				tg.Headers["X-Sim-Timing"] = "ttft=1ms,itl=10ms"
				req.MaxTokens = 100
			}
			start := time.Now()
			r := tg.Do(context.Background(), req)
			el := time.Since(start)
			if r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", r.Err, tc.want)
			}
			if el > 2*time.Second {
				t.Fatalf("took %v: the watchdog did not end the request", el)
			}
		})
	}
	t.Run("a healthy stream never trips the stall watchdog", func(t *testing.T) {
		tg := newTarget(url, 1)
		tg.StallTimeout = 250 * time.Millisecond
		tg.Headers = map[string]string{"X-Sim-Timing": "ttft=50ms,itl=50ms"}
		// 12 gaps of 50 ms: 600 ms in all, over twice the stall limit,
		// and each gap 200 ms under it (room for a busy machine's stalls).
		r := tg.Do(context.Background(), Request{Prompt: "x", MaxTokens: 12, Body: map[string]any{"ignore_eos": true}})
		if r.Err != nil || r.OutputTokens != 12 {
			t.Fatalf("err %v, %d tokens", r.Err, r.OutputTokens)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		tg := newTarget(url, 1)
		tg.Model = "nope"
		r := tg.Do(context.Background(), Request{Prompt: "x", MaxTokens: 8})
		var he *HTTPError
		if !errors.As(r.Err, &he) || he.Status != 404 && he.Status != 400 {
			t.Fatalf("err = %v", r.Err)
		}
	})
}

// fakeServer plays stream shapes the simulator does not produce (a
// mid-stream error object, zero usage on every chunk, a stream cut without
// [DONE], continuous usage with uneven deltas). It is a fake because no real server here
// sends them on demand; the parsing it exercises is the same.
func fakeServer(t *testing.T, events ...string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "" && got != "Bearer s3cret" {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprint(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestClientStreamShapes(t *testing.T) {
	chunk := func(text string, usage string) string {
		u := ""
		if usage != "" {
			u = `,"usage":` + usage
		}
		return `data: {"id":"x","choices":[{"index":0,"text":"` + text + `"}]` + u + "}\r\n\r\n"
	}
	for _, tc := range []struct {
		name       string
		events     []string
		wantErr    string
		wantTokens []int
		out        int
		usage      bool
		continuous bool
	}{
		{"continuous usage deltas", []string{chunk("a", `{"prompt_tokens":5,"completion_tokens":1}`), chunk("bcd", `{"prompt_tokens":5,"completion_tokens":4}`), chunk("e", `{"prompt_tokens":5,"completion_tokens":6}`), "data: [DONE]\n\n"},
			"", []int{1, 3, 2}, 6, true, true},
		{"zero usage each chunk, real one last", []string{chunk("a", `{"prompt_tokens":0,"completion_tokens":0}`), chunk("b", `{"prompt_tokens":0,"completion_tokens":0}`), `data: {"id":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}` + "\n\n", "data: [DONE]\n\n"},
			"", []int{1, 1}, 2, true, false},
		{"no usage: counted", []string{": keep-alive\n\n", "event: message\n" + chunk("a", ""), chunk("b", ""), "data: [DONE]\n\n"},
			"", []int{1, 1}, 2, false, false},
		// Ollama ends a stream cut short by its runner's death cleanly: 200,
		// no usage, no [DONE], no finish reason. That is a failed request.
		{"ends without [DONE] or a finish reason (cut short)", []string{chunk("a", ""), chunk("b", "")}, "stream cut short: it ended after 2 token events", nil, 0, false, false},
		{"ends without [DONE] after a finish reason", []string{chunk("a", ""), `data: {"id":"x","choices":[{"index":0,"text":"b","finish_reason":"length"}]}` + "\n\n"}, "", []int{1, 1}, 2, false, false},
		{"a 200 KB event (no 64 KB line limit)", []string{chunk(strings.Repeat("x", 200<<10), ""), chunk("b", ""), "data: [DONE]\n\n"}, "", []int{1, 1}, 2, false, false},
		{"error object mid-stream", []string{chunk("a", ""), `data: {"error":{"message":"out of memory","code":500}}` + "\n\n"}, "out of memory", nil, 0, false, false},
		{"error event", []string{chunk("a", ""), "event: error\ndata: {\"message\":\"engine died\"}\n\n"}, "engine died", nil, 0, false, false},
		{"truncated event", []string{chunk("a", ""), `data: {"id":"x","choi`}, "reading stream after 1 token events", nil, 0, false, false},
		{"no tokens", []string{"data: [DONE]\n\n"}, ErrNoTokens.Error(), nil, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(fakeServer(t, tc.events...), 1)
			tg.APIKey = "s3cret"
			r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 8})
			if tc.wantErr != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", r.Err, tc.wantErr)
				}
				if strings.Contains(r.Err.Error(), "s3cret") {
					t.Fatal("the API key leaked into an error")
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			var got []int
			for _, e := range r.Tokens {
				got = append(got, e.Tokens)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantTokens) || r.OutputTokens != tc.out || r.UsageReported != tc.usage || r.ContinuousUsage != tc.continuous {
				t.Fatalf("tokens %v out %d usage %v continuous %v; want %v %d %v %v", got, r.OutputTokens, r.UsageReported, r.ContinuousUsage, tc.wantTokens, tc.out, tc.usage, tc.continuous)
			}
		})
	}
	t.Run("ttft skips the role chunk, e2el stops at the last token", func(t *testing.T) {
		// The role-only chunk arrives at once and [DONE] 150 ms after the
		// last token: a client that stamped either would be off by that much.
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f := w.(http.Flusher)
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(s string) { fmt.Fprint(w, s); f.Flush() }
			send(`data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
			time.Sleep(80 * time.Millisecond)
			send(`data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n")
			time.Sleep(20 * time.Millisecond)
			send(`data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"}}]}` + "\n\n")
			time.Sleep(150 * time.Millisecond)
			send(`data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n")
		}))
		defer hs.Close()
		tg := newTarget(hs.URL, 1)
		tg.Endpoint = Chat
		r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		ttft, e2el, end := msf(r.TTFT()), msf(r.E2EL()), msf(r.Finished.Sub(r.Sent))
		if len(r.Tokens) != 2 || ttft < 75 || e2el < 95 || e2el > 200 || end < 245 || r.OutputTokens != 2 {
			t.Fatalf("%d events, ttft %.1f ms (want ≥ 80), e2el %.1f ms (want ~100), end %.1f ms", len(r.Tokens), ttft, e2el, end)
		}
	})
	t.Run("a JSON body where a stream was asked for", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"id":"x","choices":[{"index":0,"text":"abc"}],"usage":{"prompt_tokens":1,"completion_tokens":3}}`: "instead of an SSE stream",
			`{"error":{"message":"prompt too long","code":400}}`:                                                "prompt too long",
		} {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
			}))
			r := newTarget(hs.URL, 1).Do(context.Background(), Request{Prompt: "p", MaxTokens: 3})
			hs.Close()
			if r.Err == nil || !strings.Contains(r.Err.Error(), want) || len(r.Tokens) != 0 {
				t.Errorf("%s: err %v, %d events; want %q", body, r.Err, len(r.Tokens), want)
			}
		}
	})
	t.Run("wrong key is an HTTP error", func(t *testing.T) {
		tg := newTarget(fakeServer(t, chunk("a", "")), 1)
		tg.APIKey = "wrong"
		r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 8})
		var he *HTTPError
		if !errors.As(r.Err, &he) || he.Status != 401 || strings.Contains(r.Err.Error(), "wrong") {
			t.Fatalf("err = %v", r.Err)
		}
		if strings.Contains(tg.String(), "wrong") {
			t.Fatal("Target.String shows the key")
		}
	})
}

// TestConnectionsAreReused: a stream read to [DONE] must hand its
// connection back to the pool, or every request pays a TCP dial (and the
// timing includes it).
func TestConnectionsAreReused(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = 0, 0 })
	var dials atomic.Int64
	tg := newTarget(url, 4)
	defer tg.HTTP.CloseIdleConnections()
	tr := tg.HTTP.Transport.(*h1Transport)
	d := &net.Dialer{Timeout: time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	for _, stream := range []bool{true, false} {
		tg.Stream = stream
		for i := 0; i < 20; i++ {
			if r := tg.Do(context.Background(), Request{Prompt: "x", MaxTokens: 2}); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("40 sequential requests dialled %d connections, want 1", n)
	}
}

// Usage counts that cannot be true fail the request instead of giving
// negative or absurd throughputs with status ok.
func TestImpossibleUsageIsRefused(t *testing.T) {
	chunk := func(text, usage string) string {
		u := ""
		if usage != "" {
			u = `,"usage":` + usage
		}
		return `data: {"id":"x","choices":[{"index":0,"text":"` + text + `","finish_reason":null}]` + u + "}\n\n"
	}
	for _, tc := range []struct{ name, usage, want string }{
		{"negative prompt tokens", `{"prompt_tokens":-5,"completion_tokens":4}`, "prompt_tokens -5"},
		{"10^12 output tokens on a 4-event stream", `{"prompt_tokens":5,"completion_tokens":1000000000000}`, "completion_tokens 1000000000000 for max_tokens 8"},
		{"more prompt tokens than the prompt holds", `{"prompt_tokens":90000,"completion_tokens":4}`, "prompt_tokens 90000 for a prompt of 1 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fakeServer(t, chunk("a", ""), chunk("b", ""), chunk("c", ""), chunk("d", tc.usage), "data: [DONE]\n\n")
			r := newTarget(url, 1).Do(context.Background(), Request{Prompt: "p", MaxTokens: 8})
			var ue *UsageError
			if !errors.As(r.Err, &ue) || !strings.Contains(r.Err.Error(), tc.want) {
				t.Fatalf("err = %v", r.Err)
			}
		})
	}
	// Honest counts pass, several tokens per event included.
	url := fakeServer(t, chunk("a", ""), chunk("bcd", `{"prompt_tokens":5,"completion_tokens":8}`), "data: [DONE]\n\n")
	if r := newTarget(url, 1).Do(context.Background(), Request{Prompt: "p", MaxTokens: 8}); r.Err != nil {
		t.Fatal(r.Err)
	}
	// A whole answer in one event: impossible from a plain stream, but
	// where tools were offered Ollama holds text back while it could
	// still be a call, and sends all of it at the end (v0.17.4, 96 tokens
	// of stories260K in one content event).
	whole := fakeServer(t, chunk("a whole answer", `{"prompt_tokens":5,"completion_tokens":96}`), "data: [DONE]\n\n")
	if r := newTarget(whole, 1).Do(context.Background(), Request{Prompt: "p", MaxTokens: 96}); !strings.Contains(fmt.Sprint(r.Err), "completion_tokens 96 over 1 streamed token events") {
		t.Errorf("96 tokens in one event, no tools offered: err = %v", r.Err)
	}
	tools := map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}}
	if r := newTarget(whole, 1).Do(context.Background(), Request{Prompt: "p", MaxTokens: 96, Body: tools}); r.Err != nil {
		t.Errorf("96 tokens in one event, tools offered: %v", r.Err)
	}
}

// TestCachedTokensRead: every request reads the answer's
// usage.prompt_tokens_details.cached_tokens, streamed or not, on both
// endpoints, equal to what the simulator's cache served; a server that
// does not send the field leaves it unreported (not a reported 0).
func TestCachedTokensRead(t *testing.T) {
	cached, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.PromptCache = time.Millisecond, 0, true })
	_, plainURL := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 0 })
	prompt := strings.Repeat("one two three four ", 20)
	for _, ep := range []Endpoint{Completions, Chat} {
		for _, stream := range []bool{true, false} {
			tg := newTarget(url, 1)
			tg.Endpoint, tg.Stream = ep, stream
			// A fresh prompt per case: the first request is a reported miss,
			// the second finds the prompt cached.
			p := fmt.Sprintf("%s %v %s", ep, stream, prompt)
			for k := range 2 {
				r := tg.Do(context.Background(), Request{Prompt: p, MaxTokens: 2})
				rec, ok := cached.Record(r.ResponseID)
				if r.Err != nil || !ok {
					t.Fatalf("%s stream=%v: %v", ep, stream, r.Err)
				}
				if !r.CachedReported || r.CachedTokens != rec.CachedTokens || (k == 1) != (r.CachedTokens > 0) {
					t.Fatalf("%s stream=%v request %d: cached %d (reported %v), the simulator served %d", ep, stream, k+1, r.CachedTokens, r.CachedReported, rec.CachedTokens)
				}
			}
			tg.BaseURL = plainURL
			if r := tg.Do(context.Background(), Request{Prompt: p, MaxTokens: 2}); r.Err != nil || r.CachedReported || r.CachedTokens != 0 {
				t.Fatalf("%s stream=%v without the field: cached %d reported %v (%v)", ep, stream, r.CachedTokens, r.CachedReported, r.Err)
			}
		}
	}
}

// TestBodiesThatNeverEnd: a server whose 200 body never ends (the
// simulator's endless fault) costs one request a capped amount of memory
// and an error that says so, streamed (one SSE line with no end) or not
// (a completion, an embedding batch); it never grows the client until the
// kernel kills it.
func TestBodiesThatNeverEnd(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct {
		name     string
		endpoint Endpoint
		stream   bool
		inputs   []string
		limit    int64
	}{
		{"completion", Completions, false, nil, maxBodyBytes},
		{"chat", Chat, false, nil, maxBodyBytes},
		{"embeddings", Embeddings, false, []string{"a", "b"}, maxBodyBytes + 2*maxBodyBytesPerVector},
		{"stream", Completions, true, nil, sse.DefaultMaxEventSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(url, 1)
			tg.Endpoint, tg.Stream = tc.endpoint, tc.stream
			tg.Headers = map[string]string{sim.FaultHeader: "endless"}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := tg.Do(ctx, Request{Prompt: "x", MaxTokens: 8, Inputs: tc.inputs})
			runtime.ReadMemStats(&after)
			if ctx.Err() != nil {
				t.Fatalf("the request ran until the test's deadline: %v", r.Err)
			}
			var tooLarge *BodyTooLargeError
			switch {
			case tc.stream && !errors.Is(r.Err, sse.ErrEventTooLarge):
				t.Fatalf("err = %v; want an event over the cap", r.Err)
			case !tc.stream && !errors.As(r.Err, &tooLarge):
				t.Fatalf("err = %v; want a body over the cap", r.Err)
			}
			// Reading up to the cap allocates a few times the cap as the
			// buffer doubles; never the stream.
			if got := int64(after.TotalAlloc - before.TotalAlloc); got > 6*tc.limit {
				t.Errorf("the request allocated %d MiB against a cap of %d MiB", got>>20, tc.limit>>20)
			}
			t.Logf("%v; allocated %d MiB", r.Err, (after.TotalAlloc-before.TotalAlloc)>>20)
		})
	}
}

// TestRedirectsAreNotFollowed: a server that answers 307 to another (the
// simulator) is an error naming where it pointed; the other server never
// sees the request, nor the key it carries.
func TestRedirectsAreNotFollowed(t *testing.T) {
	srv, url := startSim(t, nil)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, url+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	for _, stream := range []bool{true, false} {
		tg := newTarget(redirect.URL, 1)
		tg.Stream, tg.APIKey = stream, "sk-secret-key"
		r := tg.Do(context.Background(), Request{Prompt: "x", MaxTokens: 4})
		var re *httpsafe.RedirectError
		if !errors.As(r.Err, &re) || re.Status != http.StatusTemporaryRedirect || !strings.Contains(re.Location, url) {
			t.Fatalf("stream %v: err = %v; want the redirect to %s refused", stream, r.Err, url)
		}
	}
	tg := newTarget(redirect.URL, 1)
	if _, err := Calibrate(context.Background(), tg, CalibrateProbe, ServerInfo{}); err == nil || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("calibration through a redirect: %v", err)
	}
	if n := len(srv.Records()); n != 0 {
		t.Errorf("the server redirected to saw %d requests", n)
	}
}
