package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func streamBody(maxTokens int) map[string]any {
	return map[string]any{"prompt": words(4), "max_tokens": maxTokens, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
}

func TestFaultErrors(t *testing.T) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		cfg := fastConfig()
		cfg.Mode = mode
		s, url := startSim(t, cfg)
		c := testClient()
		for _, code := range []int{500, 429, 503} {
			for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings"} {
				body := map[string]any{"prompt": "a", "messages": []map[string]string{{"role": "user", "content": "a"}}, "input": "a", "stream": true}
				resp, data := postJSON(t, c, url+path, body, FaultHeader, "error="+itoa(code))
				var e apiError
				if err := json.Unmarshal(data, &e); err != nil || resp.StatusCode != code || e.Error.Code != code || !strings.Contains(e.Error.Message, "injected") {
					t.Fatalf("%s %s error=%d: %d %s", mode, path, code, resp.StatusCode, data)
				}
				if code != 500 && resp.Header.Get("Retry-After") == "" {
					t.Fatalf("%d without Retry-After", code)
				}
			}
		}
		recs := s.Records()
		if recs[0].Status != 500 || recs[0].Fault != "error=500" {
			t.Fatalf("record %+v", recs[0])
		}
	}
}

func TestFaultDrop(t *testing.T) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		cfg := fastConfig()
		cfg.Mode = mode
		s, url := startSim(t, cfg)
		c := testClient()
		res := readStream(context.Background(), c, url+"/v1/completions", streamBody(20), FaultHeader, "drop-after=5")
		if res.done || res.err == nil || !errors.Is(res.err, io.ErrUnexpectedEOF) {
			t.Fatalf("%s: want a cut stream, got done=%v err=%v", mode, res.done, res.err)
		}
		if len(res.events) != 5 {
			t.Fatalf("%s: %d events before the drop, want 5", mode, len(res.events))
		}
		rec := s.Records()[0]
		if rec.FinishReason != "abort" || len(rec.Events) != 5 || rec.CompletionTokens < 5 || !strings.Contains(rec.Error, "drop-after=5") {
			t.Fatalf("record %+v", rec)
		}
		// drop-after=0: headers, then nothing.
		res = readStream(context.Background(), c, url+"/v1/completions", streamBody(20), FaultHeader, "drop-after=0")
		if res.done || len(res.events) != 0 || res.err == nil {
			t.Fatalf("drop-after=0: %+v", res)
		}
		// Non-streamed: the connection closes with no response.
		req := strings.NewReader(`{"prompt":"a","max_tokens":3}`)
		hreq, _ := newReq(url+"/v1/completions", req)
		hreq.Header.Set(FaultHeader, "drop-after=1")
		if resp, err := c.Do(hreq); err == nil {
			resp.Body.Close()
			t.Fatalf("non-streamed drop: got status %d", resp.StatusCode)
		}
	}
}

func TestFaultStall(t *testing.T) {
	cfg := fastConfig()
	_, url := startSim(t, cfg)
	c := testClient()
	res := readStream(context.Background(), c, url+"/v1/completions", streamBody(6), FaultHeader, "stall=400ms,stall-at=2")
	if res.err != nil || !res.done || len(res.events) != 7 {
		t.Fatalf("stall: err %v done %v events %d", res.err, res.done, len(res.events))
	}
	gap := res.events[2].at.Sub(res.events[1].at)
	// Client receive times: event 1 read a little late (a busy machine)
	// shortens the gap as seen here by as much, so the floor has slack.
	if gap < 350*time.Millisecond || gap > 1500*time.Millisecond {
		t.Fatalf("gap after event 2 = %v, want about 400ms", gap)
	}
	// A client with a read timeout shorter than the stall gives up; the
	// server notices and the request ends as aborted, nothing hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	res = readStream(ctx, c, url+"/v1/completions", streamBody(6), FaultHeader, "stall=5s,stall-at=0")
	if res.err == nil || len(res.events) != 0 {
		t.Fatalf("stall-at=0 should give no events before the client's timeout: %+v", res)
	}
}

func TestFaultMalformed(t *testing.T) {
	_, url := startSim(t, fastConfig())
	c := testClient()
	res := readStream(context.Background(), c, url+"/v1/completions", streamBody(3), FaultHeader, "malformed")
	if res.err != nil || !res.done {
		t.Fatal(res.err)
	}
	bad := 0
	for _, e := range res.events {
		var v map[string]any
		if json.Unmarshal([]byte(e.data), &v) != nil {
			bad++
		}
	}
	if bad != 1 || len(res.events) != 5 {
		t.Fatalf("want exactly one malformed event among %d, got %d", len(res.events), bad)
	}
	resp, body := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 3}, FaultHeader, "malformed")
	var v map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) == nil {
		t.Fatalf("non-streamed malformed body parsed: %s", body)
	}
}

func TestFaultSlowHeaders(t *testing.T) {
	_, url := startSim(t, fastConfig())
	c := testClient()
	start := time.Now()
	res := readStream(context.Background(), c, url+"/v1/completions", streamBody(2), FaultHeader, "slow-headers=300ms")
	if res.err != nil || !res.done {
		t.Fatal(res.err)
	}
	if d := res.events[0].at.Sub(start); d < 300*time.Millisecond || d > 2*time.Second {
		t.Fatalf("first event after %v, want about 300ms", d)
	}
}

func TestFaultRatesDeterministic(t *testing.T) {
	run := func() []int {
		cfg := fastConfig()
		cfg.TTFT = 0
		cfg.Seed = 42
		cfg.Faults.ErrorRate = 0.3
		cfg.Faults.ErrorCodes = []int{500, 429, 503}
		_, url := startSim(t, cfg)
		c := testClient()
		var codes []int
		for range 40 {
			resp, _ := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
			codes = append(codes, resp.StatusCode)
		}
		return codes
	}
	a, b := run(), run()
	seen := map[int]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %d then %d with the same seed", i, a[i], b[i])
		}
		seen[a[i]]++
	}
	if seen[200] < 15 || seen[200] > 38 || seen[500]+seen[429]+seen[503] < 2 {
		t.Fatalf("status mix %v for rate 0.3", seen)
	}
	// "none" overrides the rates.
	cfg := fastConfig()
	cfg.Faults.ErrorRate = 1
	_, url := startSim(t, cfg)
	if resp, _ := postJSON(t, testClient(), url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}, FaultHeader, "none"); resp.StatusCode != 200 {
		t.Fatalf("none: %d", resp.StatusCode)
	}
}

func TestParseFaults(t *testing.T) {
	good := map[string]string{
		"error=429":                  "error=429",
		"drop-after=3, malformed":    "drop-after=3,malformed",
		"stall=1s":                   "stall=1s,stall-at=1",
		"stall=2s,stall-at=0":        "stall=2s,stall-at=0",
		"slow-headers=250ms":         "slow-headers=250ms",
		"none":                       "",
		"error=503,slow-headers=1ms": "error=503,slow-headers=1ms",
		"hang-up=1500ms":             "hang-up=1.5s",
	}
	for in, want := range good {
		f, err := parseFaults(in)
		if err != nil || f.String() != want {
			t.Errorf("parseFaults(%q) = %q, %v; want %q", in, f.String(), err, want)
		}
	}
	for _, in := range []string{"error=200", "error=x", "drop-after=-1", "stall=soon", "malformed=1", "boom", "error", "hang-up=0s", "hang-up", "hang-up=-1s"} {
		if _, err := parseFaults(in); err == nil {
			t.Errorf("parseFaults(%q) accepted", in)
		}
	}
}

// hang-up holds the request, then closes its connection with no answer:
// a client reads the request's end of file no sooner than the hold, and
// the record names the fault. Fixed and engine modes, streamed or not,
// completions or embeddings: the fault comes before any answer.
func TestFaultHangUp(t *testing.T) {
	const hold = 300 * time.Millisecond
	for _, mode := range []string{ModeFixed, ModeEngine} {
		cfg := fastConfig()
		cfg.Mode = mode
		s, url := startSim(t, cfg)
		c := testClient()
		for _, path := range []string{"/v1/completions", "/v1/embeddings"} {
			hreq, _ := newReq(url+path, strings.NewReader(`{"prompt":"a","input":"a","max_tokens":3,"stream":true}`))
			hreq.Header.Set(FaultHeader, "hang-up="+hold.String())
			start := time.Now()
			resp, err := c.Do(hreq)
			took := time.Since(start)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s %s: got status %d, want the connection closed with no answer", mode, path, resp.StatusCode)
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%s %s: err %v, want an EOF", mode, path, err)
			}
			if took < hold {
				t.Fatalf("%s %s: closed after %v, before the %v hold", mode, path, took, hold)
			}
		}
		for _, rec := range s.Records() {
			if rec.Fault != "hang-up="+hold.String() || rec.FinishReason != "abort" || !strings.Contains(rec.Error, "hang-up") {
				t.Fatalf("%s: record %+v", mode, rec)
			}
		}
	}
	cfg := DefaultConfig()
	cfg.Faults.HangUpRate, cfg.Faults.HangUp = 0.5, 0
	if err := cfg.Validate(); err == nil {
		t.Fatal("a hang-up rate without a duration validated")
	}
}
