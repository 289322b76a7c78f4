package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// startPersona serves the simulator with a real engine's habits.
func startPersona(t *testing.T, persona string, edit func(*sim.Config)) (*sim.Server, string) {
	t.Helper()
	cfg := simtest.DefaultConfigFor(persona)
	cfg.Models = []string{"sim-llama"}
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 20*time.Millisecond, time.Millisecond, 0
	if edit != nil {
		edit(&cfg)
	}
	s := simtest.NewSimFrom(t, cfg)
	return s, simtest.Serve(t, s)
}

// The flagship plan's shape against each engine's habits: every row ok,
// prompts exactly isl tokens as the server counts them, output exactly
// osl, and the engine and version on every row. Against llama-server this
// produced no ok row before (connections closed after every stream; a
// /tokenize that answers {"tokens":[]} to the vLLM dialect, so 128-token
// cells sent ~375 tokens; cached "cold" prompts).
func TestEveryEnginePersonalityGivesExactOKRows(t *testing.T) {
	for _, tc := range []struct {
		persona, endpoint, engine, version string
	}{
		{sim.PersonaLlamaServer, "completions", "llama-server", "b6500-sim"},
		{sim.PersonaLlamaServer, "chat", "llama-server", "b6500-sim"},
		{sim.PersonaVLLM, "completions", "vllm", "0.11.0"},
		{sim.PersonaVLLM, "chat", "vllm", "0.11.0"},
		{sim.PersonaSGLang, "completions", "sglang", "0.5.2"},
		{sim.PersonaOllama, "completions", "ollama", "0.17.4"},
		{sim.PersonaOllama, "chat", "ollama", "0.17.4"},
	} {
		t.Run(tc.persona+"/"+tc.endpoint, func(t *testing.T) {
			_, url := startPersona(t, tc.persona, func(c *sim.Config) { c.MaxModelLen = 512 })
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: %q
				cells: [{isl: 48, osl: 8}, {isl: 128, osl: 16}], concurrency: [1, 4], requests: 8, warmup: 1`, url, tc.endpoint), ``)
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			retries := int64(0)
			for _, r := range c.cells {
				if r.Status != results.StatusOK {
					t.Fatalf("%s: %s %s (notes %s)", r.CellID, r.Status, r.Reason, r.Notes)
				}
				if v(r.EffectiveISL) != float64(r.ISL) || v(r.EffectiveOSL) != float64(r.OSL) {
					t.Errorf("%s: effective isl/osl %.2f/%.2f, want %d/%d (notes %s)", r.CellID, v(r.EffectiveISL), v(r.EffectiveOSL), r.ISL, r.OSL, r.Notes)
				}
				if r.Engine != tc.engine || r.EngineVersion != tc.version || v(r.MaxModelLen) != 512 {
					t.Errorf("%s: engine %q version %q max_model_len %d", r.CellID, r.Engine, r.EngineVersion, v(r.MaxModelLen))
				}
				if !strings.Contains(r.Notes, "calibrated by") {
					t.Errorf("%s: notes %q", r.CellID, r.Notes)
				}
				retries += r.ConnRetries
			}
			calib := c.cells[0].Notes
			if tc.persona == sim.PersonaOllama && !strings.Contains(calib, "calibrated by probe") {
				t.Errorf("ollama has no tokenizer endpoint, so calibration probes: %s", calib)
			}
			if tc.persona == sim.PersonaLlamaServer {
				if !strings.Contains(calib, "tokenize(content)") {
					t.Errorf("llama-server's /tokenize speaks the content dialect: %s", calib)
				}
				if retries == 0 {
					t.Error("no request met a connection llama-server closed after its stream: the personality or the count is broken")
				}
			}
		})
	}
}

// Cold prompts stay cold against a prompt cache: TTFT at c=4 does not
// fall below c=1's because the server has seen the prompts. In fixed mode
// the simulator's TTFT is ttft × (uncached share), so reused prompts
// would show up as TTFT near its 1 ms floor.
func TestColdPromptsDefeatThePromptCache(t *testing.T) {
	srv, url := startPersona(t, sim.PersonaLlamaServer, func(c *sim.Config) { c.MaxModelLen = 512 })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 128, osl: 4}], concurrency: [1, 4], requests: 8, warmup: 2`, url), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	c1, c4 := c.cells[0], c.cells[1]
	if v(c4.TTFTP50Ms) < 0.8*v(c1.TTFTP50Ms) || v(c1.TTFTP50Ms) < 15 {
		t.Fatalf("ttft p50 c=1 %.1f ms, c=4 %.1f ms: cold prompts were served from the prompt cache", v(c1.TTFTP50Ms), v(c4.TTFTP50Ms))
	}
	cached := 0
	for _, q := range c.reqs {
		if rec, ok := srv.Record(q.ResponseID); ok {
			cached = max(cached, rec.CachedTokens)
		}
	}
	// The lead word and BOS are shared by every prompt, and a first
	// random word now and then: a few tokens, never the prompt.
	if cached > 8 {
		t.Fatalf("a timed request had %d of its 128 prompt tokens cached", cached)
	}
}

// Ollama ends a stream cut short by its dying runner cleanly (200, no
// usage, no [DONE]); those requests are failures, not completions.
func TestOllamaCleanCutIsAFailure(t *testing.T) {
	_, url := startPersona(t, sim.PersonaOllama, func(c *sim.Config) {
		c.MaxModelLen = 512
		c.Faults.CutRate = 0.5
		c.Faults.DropAfter = 2
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, calibrate: "off"
		cells: [{isl: 16, osl: 8}], concurrency: [2], requests: 16, warmup: 0`, url), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	r := c.cells[0]
	if r.Status != results.StatusError || r.Failed == 0 || !strings.Contains(r.Reason, "cut short") {
		t.Fatalf("%s failed %d: %q", r.Status, r.Failed, r.Reason)
	}
	for _, q := range c.reqs {
		if q.Status == results.StatusOK && q.OutputTokens != 8 {
			t.Fatalf("a request with %d of 8 tokens counted as completed", q.OutputTokens)
		}
	}
}
