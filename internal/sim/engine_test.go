package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
)

// loadResult summarises one closed-loop load level.
type loadResult struct {
	conc      int
	tokS      float64
	ttftP50   time.Duration
	ttftP99   time.Duration
	maxWait   int64
	completed int
	itlP50    time.Duration
	itlP99    time.Duration
}

// closedLoop keeps conc streams busy for rounds requests each and measures
// throughput and TTFT from the server's own records (exact, no client noise).
func closedLoop(t testing.TB, s *Server, url string, conc, rounds, isl, osl int, promptOf func(w, r int) string) loadResult {
	return closedLoopVar(t, s, url, conc, rounds, isl, func(int, int) int { return osl }, promptOf)
}

// closedLoopVar is closedLoop with a per-request output length.
func closedLoopVar(t testing.TB, s *Server, url string, conc, rounds, isl int, oslOf func(w, r int) int, promptOf func(w, r int) string) loadResult {
	t.Helper()
	s.ResetRecords()
	c := testClient()
	var wg sync.WaitGroup
	var maxWait atomic.Int64
	stop := make(chan struct{})
	go func() { // sample the waiting queue as /metrics would
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				if w := s.engine.nWaiting.Load(); w > maxWait.Load() {
					maxWait.Store(w)
				}
			}
		}
	}()
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				prompt := words(isl)
				if promptOf != nil {
					prompt = promptOf(w, r)
				}
				res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{
					"prompt": prompt, "max_tokens": oslOf(w, r), "ignore_eos": true, "stream": true})
				if res.err != nil || !res.done {
					t.Errorf("stream: %v", res.err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	var ttfts, itls []time.Duration
	tokens := 0
	for _, r := range s.Records() {
		tokens += r.CompletionTokens
		if len(r.Events) > 0 {
			ttfts = append(ttfts, r.Events[0].Time.Sub(r.Received))
		}
		for i := 1; i < len(r.Events); i++ {
			itls = append(itls, r.Events[i].Time.Sub(r.Events[i-1].Time))
		}
	}
	slices.Sort(ttfts)
	slices.Sort(itls)
	var itlP50, itlP99 time.Duration
	if len(itls) > 0 {
		itlP50, itlP99 = itls[len(itls)/2], itls[len(itls)*99/100]
	}
	return loadResult{
		conc: conc, tokS: float64(tokens) / elapsed.Seconds(),
		ttftP50: ttfts[len(ttfts)/2], ttftP99: ttfts[len(ttfts)*99/100],
		maxWait: maxWait.Load(), completed: len(ttfts), itlP50: itlP50, itlP99: itlP99,
	}
}

func curveConfig() Config {
	cfg := DefaultConfig()
	cfg.Mode = ModeEngine
	cfg.Engine = EngineConfig{
		MaxNumSeqs: 16, KVCacheTokens: 65536, BlockSize: 16, ChunkedPrefill: true,
		MaxBatchedTokens: 2048, PrefixCache: false,
		StepBase: 2 * time.Millisecond, PerSeq: 100 * time.Microsecond, PerPrefillToken: 5 * time.Microsecond,
	}
	return cfg
}

// TestEngineCurve: throughput rises with concurrency and saturates at
// max_num_seqs; past it, TTFT grows with queueing and requests wait.
func TestEngineCurve(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing test")
	}
	s, url := startSim(t, curveConfig())
	var res []loadResult
	for _, conc := range []int{1, 4, 16, 64} {
		rounds := 3
		if conc == 1 {
			rounds = 4
		}
		// Output lengths vary (4..44, mean 24) as real traffic does; that
		// is what spreads queueing delays and pulls p99 away from p50.
		r := closedLoopVar(t, s, url, conc, rounds, 32, func(w, r int) int { return 4 + (w*17+r*29)%41 }, nil)
		t.Logf("conc %3d: %6.0f tok/s  ttft p50 %8v p99 %8v  itl p50 %7v p99 %7v  max waiting %d", conc, r.tokS,
			r.ttftP50.Round(10*time.Microsecond), r.ttftP99.Round(10*time.Microsecond),
			r.itlP50.Round(10*time.Microsecond), r.itlP99.Round(10*time.Microsecond), r.maxWait)
		res = append(res, r)
	}
	c1, c4, c16, c64 := res[0], res[1], res[2], res[3]
	// Model: 24 tokens take 24 steps of 2ms+0.1ms*n, so c=1 ~ 470 tok/s,
	// c=4 ~ 1.7k, c=16 ~ 4.4k, and c=64 is capped at 16 running.
	if c4.tokS < 2.5*c1.tokS || c16.tokS < 1.8*c4.tokS {
		t.Fatalf("throughput does not rise with concurrency: %.0f %.0f %.0f", c1.tokS, c4.tokS, c16.tokS)
	}
	if c64.tokS > 1.35*c16.tokS || c64.tokS < 0.7*c16.tokS {
		t.Fatalf("throughput does not saturate past max_num_seqs: c16 %.0f c64 %.0f", c16.tokS, c64.tokS)
	}
	if c64.ttftP50 < 2*c16.ttftP50 || c64.maxWait < 16 {
		t.Fatalf("no queueing at c=64: ttft p50 %v vs %v, max waiting %d", c64.ttftP50, c16.ttftP50, c64.maxWait)
	}
	// Under pressure the queueing delays spread: p99 - p50 of TTFT exceeds
	// a few whole unloaded TTFTs. The unloaded TTFT is the model's own (one
	// prefill step of the 32-word prompt alone: the step's base and its
	// prompt tokens; a prefill step has no decodes), not a measured one:
	// c=16 already fills max_num_seqs and queues, and a busy machine
	// stretches every step, which only widens the spread.
	e := curveConfig().Engine
	unloaded := e.StepBase + 32*e.PerPrefillToken
	if c1.ttftP50 < e.StepBase {
		t.Fatalf("c=1 ttft p50 %v is under one step's base %v: the engine runs early", c1.ttftP50, e.StepBase)
	}
	if spread64 := c64.ttftP99 - c64.ttftP50; spread64 < 3*unloaded {
		t.Fatalf("p99 does not leave p50 behind under pressure: p99-p50 %v at c=64, the model's unloaded TTFT %v", spread64, unloaded)
	}
}

// TestEngineKVAdmission: a KV budget smaller than the offered load makes
// requests wait for admission although max_num_seqs would allow them.
func TestEngineKVAdmission(t *testing.T) {
	machine := machinetest.Start()
	cfg := curveConfig()
	cfg.MaxModelLen = 1024
	cfg.Engine.MaxNumSeqs = 64
	cfg.Engine.KVCacheTokens = 4096 // 8 sequences of 512 tokens
	cfg.Engine.PerPrefillToken = 0
	s, url := startSim(t, cfg)
	var peakRunning atomic.Int64
	var peakUsage atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				if n := s.engine.nRunning.Load(); n > peakRunning.Load() {
					peakRunning.Store(n)
				}
				if u := uint64(s.gauges().kvUsage * 1000); u > peakUsage.Load() {
					peakUsage.Store(u)
				}
			}
		}
	}()
	r := closedLoop(t, s, url, 32, 1, 480, 30, nil)
	close(stop)
	<-done
	// 32 clients against max_num_seqs 64: only the KV budget makes one wait.
	if peakRunning.Load() > 8 || r.maxWait < 1 {
		t.Fatalf("KV budget not enforced: peak running %d, max waiting %d", peakRunning.Load(), r.maxWait)
	}
	if r.maxWait < 16 {
		// Clients that send late (a busy machine) keep the queue short.
		t.Logf("max waiting %d of the 24 the budget leaves out", r.maxWait)
		machine.Judge(t, "most of 24 held-back requests waiting at once")
		t.Fatalf("max waiting %d, want 16 or more of 24", r.maxWait)
	}
	if peakUsage.Load() < 900 {
		t.Fatalf("peak KV usage %.3f, want near 1", float64(peakUsage.Load())/1000)
	}
	// Gauges are back to idle, and /metrics shows them.
	eventually(t, 2*time.Second, "idle engine", func() bool { return s.engine.nRunning.Load() == 0 })
	_, body := getBody(t, testClient(), url+"/metrics")
	if !strings.Contains(body, `vllm:num_requests_waiting{model_name="sim-llama"} 0`) || !strings.Contains(body, `vllm:kv_cache_usage_perc{model_name="sim-llama"} 0`) {
		t.Fatalf("idle metrics:\n%s", body)
	}
}

// TestEnginePrefixCache: a shared prefix makes TTFT cheaper, and the records
// and counters say how many tokens hit.
func TestEnginePrefixCache(t *testing.T) {
	cfg := curveConfig()
	cfg.Engine.PrefixCache = true
	cfg.Engine.PerPrefillToken = 50 * time.Microsecond // 1000 tokens = 50 ms
	s, url := startSim(t, cfg)
	c := testClient()
	shared := words(992)
	ttft := func(prompt string) (time.Duration, RequestRecord) {
		res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 2, "ignore_eos": true, "stream": true})
		if res.err != nil {
			t.Fatal(res.err)
		}
		id := parseChunks(t, res.events)[0].ID
		rec, _ := s.Record(id)
		return rec.Events[0].Time.Sub(rec.Received), rec
	}
	cold, rec1 := ttft(shared + " tail one two three four five six seven eight")
	warm, rec2 := ttft(shared + " other suffix here")
	t.Logf("ttft cold %v warm %v, cached %d", cold, warm, rec2.CachedTokens)
	if rec1.CachedTokens != 0 || rec2.CachedTokens != 992 {
		t.Fatalf("cached tokens: %d then %d, want 0 then 992", rec1.CachedTokens, rec2.CachedTokens)
	}
	if warm > cold/3 {
		t.Fatalf("prefix cache did not make TTFT cheaper: cold %v warm %v", cold, warm)
	}
	_, body := getBody(t, c, url+"/metrics")
	if !strings.Contains(body, `vllm:prefix_cache_hits_total{model_name="sim-llama"} 992`) {
		t.Fatal("prefix cache hits not in /metrics")
	}
}

// TestEnginePreemption: when decodes outgrow the KV cache the newest
// sequence is preempted and recomputed; every request still completes with
// all its tokens.
func TestEnginePreemption(t *testing.T) {
	cfg := curveConfig()
	cfg.MaxModelLen = 512
	cfg.Engine.KVCacheTokens = 1024
	cfg.Engine.PerPrefillToken = 0
	cfg.ITL = 0
	s, url := startSim(t, cfg)
	// Prompts of 16 tokens admit many sequences; 200 outputs each outgrow 1024.
	r := closedLoop(t, s, url, 12, 1, 16, 200, nil)
	if r.completed != 12 {
		t.Fatalf("%d completed", r.completed)
	}
	for _, rec := range s.Records() {
		if rec.CompletionTokens != 200 || rec.FinishReason != "length" {
			t.Fatalf("%s: %d tokens, %s", rec.ID, rec.CompletionTokens, rec.FinishReason)
		}
	}
	if s.metrics.preemptions.Load() == 0 {
		t.Fatal("no preemption although the KV cache overflowed")
	}
}

// TestEngineChunkedPrefill: a long prompt does not stall running decodes
// with chunked prefill, and does without it.
func TestEngineChunkedPrefill(t *testing.T) {
	maxGap := func(chunked bool) time.Duration {
		cfg := curveConfig()
		cfg.Engine.ChunkedPrefill = chunked
		cfg.Engine.MaxBatchedTokens = 256
		cfg.Engine.PerPrefillToken = 20 * time.Microsecond // 4000 tokens = 80 ms unchunked
		s, url := startSim(t, cfg)
		c := testClient()
		var wg sync.WaitGroup
		var decodeID atomic.Value
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": "short", "max_tokens": 80, "ignore_eos": true, "stream": true})
			if res.err == nil && len(res.events) > 0 {
				decodeID.Store(parseChunks(t, res.events)[0].ID)
			}
		}()
		time.Sleep(30 * time.Millisecond)
		readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": words(4000), "max_tokens": 1, "stream": true})
		wg.Wait()
		id, _ := decodeID.Load().(string)
		rec, ok := s.Record(id)
		if !ok {
			t.Fatal("no decode record")
		}
		var worst time.Duration
		for i := 1; i < len(rec.Events); i++ {
			worst = max(worst, rec.Events[i].Time.Sub(rec.Events[i-1].Time))
		}
		return worst
	}
	// A stall of the shared machine can only lengthen a chunked gap, so the
	// chunked figure is the best of three tries. The unchunked stall is the
	// 80 ms prefill step, less however late the step before it ran: steps
	// keep an ideal timeline, so a late step's successor runs short. The
	// probe measures how late the machine ran an event loop meanwhile.
	chunked := maxGap(true)
	machine := watchLateness(t)
	whole := maxGap(false)
	allow := machine.Max()
	for range 2 {
		if chunked <= whole/2 {
			break
		}
		chunked = min(chunked, maxGap(true))
	}
	t.Logf("worst decode gap: chunked %v, unchunked %v (the machine ran an event loop up to %v late meanwhile)", chunked, whole, allow)
	if whole < 80*time.Millisecond-allow {
		t.Fatalf("an unchunked 4000-token prefill stalled decodes %v, short of its 80 ms by more than the machine's lateness (%v)", whole, allow)
	}
	if chunked > whole/2 {
		t.Fatalf("chunked prefill should bound decode stalls: chunked %v unchunked %v", chunked, whole)
	}
}

// TestEngineDeterministicOutput: the same seed and prompt give the same text
// in either mode and at any load.
func TestEngineDeterministicOutput(t *testing.T) {
	text := func(mode string, seed int64) string {
		cfg := fastConfig()
		cfg.Mode = mode
		cfg.Seed = seed
		_, url := startSim(t, cfg)
		_, body := postJSON(t, testClient(), url+"/v1/completions", map[string]any{"prompt": "same prompt", "max_tokens": 12, "ignore_eos": true})
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Text
	}
	a, b, c := text(ModeFixed, 3), text(ModeEngine, 3), text(ModeFixed, 4)
	if a != b || a == c {
		t.Fatalf("texts: fixed/3 %q engine/3 %q fixed/4 %q", a, b, c)
	}
}

// TestEngineClientCancel: a client that goes away frees its sequence.
func TestEngineClientCancel(t *testing.T) {
	cfg := curveConfig()
	s, url := startSim(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	readStream(ctx, testClient(), url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 5000, "ignore_eos": true, "stream": true})
	eventually(t, 2*time.Second, "sequence freed", func() bool {
		return s.engine.nRunning.Load() == 0 && s.engine.usedBlocks.Load() == 0
	})
	eventually(t, 2*time.Second, "aborted record", func() bool {
		recs := s.Records()
		return len(recs) == 1 && recs[0].FinishReason == "abort"
	})
	_ = fmt.Sprint()
}

// TestEngineTokensPerChunk: with N tokens per step, the first event (the
// prefill step's sample) carries one token and later ones N.
func TestEngineTokensPerChunk(t *testing.T) {
	cfg := curveConfig()
	cfg.TokensPerChunk = 4
	s, url := startSim(t, cfg)
	res := readStream(context.Background(), testClient(), url+"/v1/completions", streamBody(10))
	if res.err != nil || !res.done {
		t.Fatal(res.err)
	}
	rec := s.Records()[0]
	// The steps make 1 (the prefill's token), 4, 4 and 1 tokens; a handler
	// the machine ran late sends the steps it missed as one event (as
	// vLLM's frontend does), so every event ends on a step's boundary.
	boundary := map[int]bool{1: true, 5: true, 9: true, 10: true}
	total := 0
	for _, e := range rec.Events {
		total += e.Tokens
		if !boundary[total] {
			t.Fatalf("an event ends at token %d, inside a step of 4 (steps end at 1, 5, 9, 10): %+v", total, rec.Events)
		}
	}
	if total != 10 || len(rec.Events) > 4 {
		t.Fatalf("events %+v", rec.Events)
	}
	u := parseChunks(t, res.events)
	if last := u[len(u)-1].Usage; last == nil || last.CompletionTokens != 10 {
		t.Fatalf("usage %s", res.events[len(res.events)-1].data)
	}
}
