package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestSweepConversations is the multi-turn proof against the simulator
// (fixed mode, vLLM-style block cache that keeps answers): four-turn
// sessions on both endpoints and over the Responses and Messages APIs.
// Against the simulator's records and its
// /metrics counters:
//
//   - every request row carries its session, turn and history (the turn
//     before's prompt + completion tokens) and the cached tokens the
//     simulator served; Σ input and Σ cached tokens per turn equal what the
//     simulator counted;
//   - cached_tokens is their sum, prefix_cache_hit_rate (from usage)
//     equals the server's own counters over the window
//     (server_prefix_cache_hit_rate), with no note that they differ;
//   - ttft by turn follows the simulator's rule (ttft × uncached / prompt
//     tokens): the later turns' median well under the first turn's.
func TestSweepConversations(t *testing.T) {
	const ttft = 50 * time.Millisecond
	for _, ep := range []string{"chat", "completions", "responses", "messages"} {
		t.Run(ep, func(t *testing.T) {
			srv, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.PromptCache = ttft, time.Millisecond, true })
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: %q
				cells: [{isl: 32, osl: 8}], concurrency: [2], turns: 4, requests: 16, warmup: 1
				telemetry: {interval: "20ms", gpu: "off", host: "off"}`, url, ep), "")
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.cells) != 1 || len(c.reqs) != 16 {
				t.Fatalf("%d rows, %d requests", len(c.cells), len(c.reqs))
			}
			row := c.cells[0]
			if row.Status != results.StatusOK || row.Completed != 16 || v(row.Turns) != 4 || v(row.ThinkTimeMs) != 0 {
				t.Fatalf("row: %s %q, %d completed, turns %d, think %v", row.Status, row.Reason, row.Completed, v(row.Turns), v(row.ThinkTimeMs))
			}
			type total struct{ in, cached, simIn, simCached int64 }
			perTurn := map[int64]*total{}
			sessions := map[int64][]results.Request{}
			var sumCached, sumIn int64
			var first, later []float64
			for _, q := range c.reqs {
				if q.Session == nil || q.Turn == nil || q.HistoryTokens == nil || q.CachedTokens == nil {
					t.Fatalf("request %d: session %v turn %v history %v cached %v", q.Seq, q.Session, q.Turn, q.HistoryTokens, q.CachedTokens)
				}
				rec, ok := srv.Record(q.ResponseID)
				if !ok {
					t.Fatalf("no record of %s", q.ResponseID)
				}
				tt := perTurn[*q.Turn]
				if tt == nil {
					tt = &total{}
					perTurn[*q.Turn] = tt
				}
				tt.in += q.InputTokens
				tt.cached += *q.CachedTokens
				tt.simIn += int64(rec.PromptTokens)
				tt.simCached += int64(rec.CachedTokens)
				sumCached += *q.CachedTokens
				sumIn += q.InputTokens
				sessions[*q.Session] = append(sessions[*q.Session], q)
				// The simulator's TTFT rule, as it planned it: ttft ×
				// uncached / prompt tokens after the request arrived (the
				// cache discount benchrun's cached_tokens must account
				// for). Its first write never comes before the plan, and the
				// client never reads it before the write; how much later a
				// busy machine makes either is the accuracy benchmarks' to
				// measure.
				want := ms(ttft) * float64(q.InputTokens-*q.CachedTokens) / float64(q.InputTokens)
				server := ms(rec.Events[0].Time.Sub(rec.Received))
				if math.Abs(ms(rec.PlannedTTFT)-want) > 0.001 || server < want-0.1 || *q.TTFTMs < server {
					t.Errorf("session %d turn %d: ttft %.1f ms, the simulator planned %.3f and wrote after %.1f, its rule %.3f (%d of %d cached)",
						*q.Session, *q.Turn, *q.TTFTMs, ms(rec.PlannedTTFT), server, want, *q.CachedTokens, q.InputTokens)
				}
				if *q.Turn == 1 {
					first = append(first, *q.TTFTMs)
				} else {
					later = append(later, *q.TTFTMs)
				}
			}
			if len(sessions) != 4 || len(perTurn) != 4 {
				t.Fatalf("%d sessions over %d turns", len(sessions), len(perTurn))
			}
			for k, tt := range perTurn {
				// The multi-turn token totals benchrun counted against the
				// simulator's: a turn's input and cached tokens.
				t.Logf("turn %d: Σ input %d (simulator %d), Σ cached %d (simulator %d)", k, tt.in, tt.simIn, tt.cached, tt.simCached)
				if tt.in != tt.simIn || tt.cached != tt.simCached || (k > 1) != (tt.cached > 0) {
					t.Errorf("turn %d: Σ input %d cached %d; the simulator counted %d and %d", k, tt.in, tt.cached, tt.simIn, tt.simCached)
				}
			}
			for id, qs := range sessions {
				slices.SortFunc(qs, func(a, b results.Request) int { return int(*a.Turn - *b.Turn) })
				for k, q := range qs {
					want := int64(0)
					if k > 0 {
						want = qs[k-1].InputTokens + qs[k-1].OutputTokens
					}
					if *q.Turn != int64(k+1) || *q.HistoryTokens != want {
						t.Errorf("session %d: turn %d history %d, want turn %d history %d", id, *q.Turn, *q.HistoryTokens, k+1, want)
					}
				}
			}
			if v(row.CachedTokens) != sumCached || row.AdmittedTok != sumIn {
				t.Errorf("cached_tokens %d, admitted %d; the requests say %d and %d", v(row.CachedTokens), row.AdmittedTok, sumCached, sumIn)
			}
			usage := float64(sumCached) / float64(sumIn)
			if math.Abs(v(row.PrefixCacheHitRate)-usage) > 1e-12 || math.Abs(v(row.ServerPrefixCacheHitRate)-usage) > 1e-9 {
				t.Errorf("hit rate %v (usage %v), the server's counters %v", v(row.PrefixCacheHitRate), usage, v(row.ServerPrefixCacheHitRate))
			}
			if v(row.ServerPromptTokens) != float64(sumIn) {
				t.Errorf("the server counted %v prompt tokens over the window, the requests %d", v(row.ServerPromptTokens), sumIn)
			}
			if v(row.TTFTTurn1P50Ms) != stats.Summarize(first).P50 || v(row.TTFTLaterTurnsP50Ms) != stats.Summarize(later).P50 {
				t.Errorf("ttft by turn %v / %v", v(row.TTFTTurn1P50Ms), v(row.TTFTLaterTurnsP50Ms))
			}
			if v(row.TTFTTurn1P50Ms) < ms(ttft) || v(row.TTFTLaterTurnsP50Ms) > 0.75*v(row.TTFTTurn1P50Ms) {
				t.Errorf("ttft turn 1 %.1f ms, later %.1f ms: the cache should serve the history", v(row.TTFTTurn1P50Ms), v(row.TTFTLaterTurnsP50Ms))
			}
			for _, want := range []string{"conversations: 4 sessions sent 16 turns", "prefix_cache_hit_rate from usage cached_tokens", "multi-turn: history as"} {
				if !strings.Contains(row.Notes, want) {
					t.Errorf("notes lack %q: %s", want, row.Notes)
				}
			}
			for _, bad := range []string{"points apart", "did not engage", "effective isl", "isl "} {
				if strings.Contains(row.Notes, bad) && !(bad == "isl " && strings.Contains(row.Notes, "effective_isl includes")) {
					t.Errorf("notes say %q: %s", bad, row.Notes)
				}
			}
		})
	}
}

// TestSweepCacheDidNotEngage: on a server that reports cached_tokens but
// caches nothing (vLLM's personality with its prompt cache off), a
// conversation's later turns and a shared_prefix cell say that the cache
// did not engage; the rows stay ok (a cache-off server is a fair thing to
// measure: plans that need it assert prefix_cache_hit_rate > 0).
func TestSweepCacheDidNotEngage(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		sim.ApplyPersonality(c, sim.PersonaVLLM)
		c.TTFT, c.ITL, c.PromptCache = 5*time.Millisecond, time.Millisecond, false
	})
	for _, tc := range []struct{ extra, want string }{
		{"turns: 3, think_time: \"5ms\", think_time_dist: \"exponential\"", "prefix cache did not engage: the 4 later turns (2 and on) had 0 of their"},
		{"shared_prefix: 24", "prefix cache did not engage: 6 requests opening with the shared prefix had 0 of"},
	} {
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat"
			cells: [{isl: 40, osl: 4}], concurrency: [2], requests: 6, warmup: 0, %s
			telemetry: {gpu: "off", host: "off", metrics: "off"}`, url, tc.extra), "")
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		row := c.cells[0]
		if row.Status != results.StatusOK || !strings.Contains(row.Notes, tc.want) || v(row.CachedTokens) != 0 || v(row.PrefixCacheHitRate) != 0 {
			t.Errorf("%s: %s %q; cached %d, hit rate %v; notes %s", tc.extra, row.Status, row.Reason, v(row.CachedTokens), v(row.PrefixCacheHitRate), row.Notes)
		}
		if strings.HasPrefix(tc.extra, "turns") && (v(row.ThinkTimeMs) != 5 || !strings.Contains(row.Notes, "think_time 5ms exponential")) {
			t.Errorf("think time %v: %s", v(row.ThinkTimeMs), row.Notes)
		}
	}
}

// TestSweepNoCachedTokens: a server that never says (the generic
// simulator without its cache) leaves cached_tokens and the hit rate
// NULL, with the reason; a conversation's rows still have their turns.
func TestSweepNoCachedTokens(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 4}], concurrency: [1], turns: 2, requests: 4, warmup: 0
		telemetry: {gpu: "off", host: "off", metrics: "off"}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	row := c.cells[0]
	if row.Status != results.StatusOK || row.CachedTokens != nil || row.PrefixCacheHitRate != nil || row.TTFTLaterTurnsP50Ms == nil {
		t.Fatalf("%s %q: cached %v hit rate %v later ttft %v", row.Status, row.Reason, row.CachedTokens, row.PrefixCacheHitRate, row.TTFTLaterTurnsP50Ms)
	}
	if why := results.WhyNull(row, "prefix_cache_hit_rate"); !strings.Contains(why, "no answer carried usage.prompt_tokens_details.cached_tokens") {
		t.Errorf("why null: %s", why)
	}
	for _, q := range c.reqs {
		if q.CachedTokens != nil || q.Turn == nil {
			t.Fatalf("request %d: cached %v turn %v", q.Seq, q.CachedTokens, q.Turn)
		}
	}
}

// TestSweepConversationValidate: what a conversation cannot be.
func TestSweepConversationValidate(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`endpoint: "embeddings", turns: 2`, `conversations need endpoint "completions", "chat", "responses" or "messages"`},
		{`think_time: "1s"`, "think_time is the pause between a conversation's turns"},
		{`turns: 20, cells: [{isl: 300, osl: 128}]`, "turns × (isl+osl) = 20 × 428 exceeds model.max_model_len 8192"},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1"
			`+tc.cue, `model: {max_model_len: 8192}`)
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cue, err, tc.want)
		}
	}
}

// TestSweepConversationsOpenLoop: rates are session arrivals; requests
// count turns (8 turns: 4 sessions of 2); the default pass is 10 s of
// arrivals, at least 32 turns.
func TestSweepConversationsOpenLoop(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 4}], rates: [50], arrival: "constant", turns: 2, requests: 8, warmup: 0
		telemetry: {gpu: "off", host: "off", metrics: "off"}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[int64]int{}
	for _, q := range c.reqs {
		sessions[*q.Session]++
	}
	if row := c.cells[0]; row.Status != results.StatusOK || row.Requests != 8 || len(sessions) != 4 || row.Rate != 50 {
		t.Fatalf("%s %q: %d requests in %d sessions at rate %v", row.Status, row.Reason, row.Requests, len(sessions), row.Rate)
	}
	for id, n := range sessions {
		if n != 2 {
			t.Errorf("session %d sent %d turns", id, n)
		}
	}
	st.cfg.Requests = 0
	if l, _ := st.load(point{rate: 1}, nil, 0); l.Requests != 32 {
		t.Errorf("default open-loop pass at 1 session/s of 2 turns: %d turns, want 32 (16 sessions)", l.Requests)
	}
	if l, _ := st.load(point{rate: 5}, nil, 0); l.Requests != 100 {
		t.Errorf("default open-loop pass at 5 sessions/s of 2 turns: %d turns, want 100 (10 s of arrivals)", l.Requests)
	}
}
