package sweep

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// runStageLog is runStage with the stage's log kept.
func runStageLog(t *testing.T, st *Stage, p *schema.Plan) (*collected, string, error) {
	t.Helper()
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var c collected
	var log testkit.SyncBuffer
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Progress: &log, Log: &log,
		Emit: func(cell results.Cell, in results.Requests) error {
			reqs, _ := results.CollectRequests(in)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cells = append(c.cells, cell)
			c.reqs = append(c.reqs, reqs...)
			return nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := st.Run(ctx, env)
	return &c, log.String(), err
}

// TestSweepResetCache is the proof of reset_cache against the simulator's
// prompt caches (fixed mode, the vLLM persona's block cache and SGLang's
// radix cache): warm prompts, the same set at both ladder points, so
// without a reset the second point's prompts are served from the cache
// the first point filled (cached_tokens > 0), and with reset_cache the
// cache is emptied before each timed pass: the second point finds what
// the first found (0 in vLLM's whole blocks; the few first tokens its
// own prompts share in SGLang's radix tree), the simulator counting one
// reset per timed pass. The calls and the engine's
// answers are in the stage log and the row's notes; profile: true starts
// and stops the profiler once per timed pass.
func TestSweepResetCache(t *testing.T) {
	for _, tc := range []struct{ persona, call string }{
		{sim.PersonaVLLM, "POST /reset_prefix_cache → 200 (no body)"},
		{sim.PersonaSGLang, "POST /flush_cache → 200 Cache flushed."},
	} {
		t.Run(tc.persona, func(t *testing.T) {
			var noReset int64
			for _, reset := range []bool{false, true} {
				srv, url := startSim(t, func(c *sim.Config) {
					if err := sim.ApplyPersonality(c, tc.persona); err != nil {
						t.Fatal(err)
					}
					c.TTFT, c.ITL, c.EOSProb, c.PromptCache = 5*time.Millisecond, time.Millisecond, 0, true
				})
				st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
					cells: [{isl: 64, osl: 4}], concurrency: [1, 2], requests: 6, warmup: 0, prompts: "warm"
					reset_cache: %v, profile: %v
					telemetry: {gpu: "off", host: "off", machine: "off", metrics: "off"}`, url, reset, reset), "")
				c, log, err := runStageLog(t, st, p)
				if err != nil {
					t.Fatal(err)
				}
				if len(c.cells) != 2 {
					t.Fatalf("%d rows", len(c.cells))
				}
				second := c.cells[1]
				if second.Status != results.StatusOK || second.CachedTokens == nil {
					t.Fatalf("second point: %s %q, cached %v", second.Status, second.Reason, second.CachedTokens)
				}
				hooks := srv.Hooks()
				if !reset {
					if *second.CachedTokens == 0 || hooks.Resets != 0 || hooks.ProfileStarts != 0 {
						t.Fatalf("without reset_cache: the second point's cached tokens %d (want > 0: it re-sends the first point's prompts); hooks %+v", *second.CachedTokens, hooks)
					}
					t.Logf("%s without reset_cache: second point cached %d of %d prompt tokens", tc.persona, *second.CachedTokens, 6*64)
					noReset = *second.CachedTokens
					continue
				}
				// The second point starts as cold as the first: what it
				// finds cached is only what its own pass's prompts share
				// (a radix cache's common first tokens; none of vLLM's
				// whole blocks), the first point's count.
				first := c.cells[0]
				if first.CachedTokens == nil || *second.CachedTokens != *first.CachedTokens || *second.CachedTokens > noReset/10 || tc.persona == sim.PersonaVLLM && *second.CachedTokens != 0 {
					t.Errorf("with reset_cache: cached tokens %v at the first point, %d at the second; want the second as the first's (0 for vLLM's blocks), against %d without the reset",
						results.ValueOr(first.CachedTokens, -1), *second.CachedTokens, noReset)
				}
				t.Logf("%s with reset_cache: second point cached %d prompt tokens (first point %d)", tc.persona, *second.CachedTokens, *first.CachedTokens)
				for _, row := range c.cells {
					if !strings.Contains(row.Notes, "server hooks around the timed passes: "+tc.call) {
						t.Errorf("%s: notes do not say the reset: %s", row.CellID, row.Notes)
					}
				}
				if hooks.Resets != 2 || hooks.ProfileStarts != 2 || hooks.ProfileStops != 2 {
					t.Errorf("the simulator was called %+v; want 2 resets, 2 profiler starts and stops (one per timed pass)", hooks)
				}
				if !strings.Contains(log, "sweep/64:64/c2: reset_cache: "+tc.call) && !strings.Contains(log, "reset_cache: "+tc.call) {
					t.Errorf("the stage log does not say the reset:\n%s", log)
				}
				if !strings.Contains(log, "profile: POST /start_profile → 200") || !strings.Contains(log, "profile: POST /stop_profile → 200") {
					t.Errorf("the stage log does not say the profiler's calls:\n%s", log)
				}
			}
		})
	}
}

// TestSweepResetCacheSlots: against llama-server's persona, reset_cache
// erases every slot /slots lists, one POST /slots/{id}?action=erase each,
// and the log has each answer.
func TestSweepResetCacheSlots(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		if err := sim.ApplyPersonality(c, sim.PersonaLlamaServer); err != nil {
			t.Fatal(err)
		}
		c.TTFT, c.ITL, c.EOSProb, c.PromptCache, c.Slots = 5*time.Millisecond, time.Millisecond, 0, true, 2
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 64, osl: 4}], concurrency: [2], requests: 4, warmup: 0, reset_cache: true
		telemetry: {gpu: "off", host: "off", machine: "off", metrics: "off"}`, url), "")
	c, log, err := runStageLog(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 1 || c.cells[0].Status != results.StatusOK {
		t.Fatalf("rows %+v", c.cells)
	}
	if h := srv.Hooks(); h.Erases != 2 {
		t.Errorf("%d slot erases, want one per slot (2)", h.Erases)
	}
	for _, want := range []string{"GET /slots → 200", `POST /slots/0?action=erase → 200 {"id_slot":0,"n_erased":`, `POST /slots/1?action=erase → 200`} {
		if !strings.Contains(log, want) {
			t.Errorf("the stage log lacks %q:\n%s", want, log)
		}
	}
}

// TestRealLlamaServerResetCache is reset_cache against a real llama-server
// ($BENCHRUN_LLAMA_SERVER, else llama-server on PATH; Debian packages
// none) serving the repository's stories260K, started with
// --slot-save-path, without which its slot actions answer 501, and
// --cache-ram 0, so no host-memory copy of a prompt outlives its slot:
// the same two warm prompts at c=1 then c=2 (two slots, each keeping
// the prompt it served), the second point finding them cached without the
// reset and, with it, only what it found at the first point. Without a llama-server the test says
// so and skips; the slot erase is then checked against the simulator's
// llama-server persona only (TestSweepResetCacheSlots).
func TestRealLlamaServerResetCache(t *testing.T) {
	bin := os.Getenv("BENCHRUN_LLAMA_SERVER")
	if bin == "" {
		p, err := exec.LookPath("llama-server")
		if err != nil {
			t.Skip("no llama-server: none on PATH and $BENCHRUN_LLAMA_SERVER is unset; reset_cache's slot erase is checked against the simulator's llama-server persona only")
		}
		bin = p
	}
	model, _ := filepath.Abs("../../testdata/models/stories260K.gguf")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-m", model, "--port", fmt.Sprint(port), "-np", "2", "-c", "1024",
		"--slot-save-path", t.TempDir(), "--cache-ram", "0", "--metrics")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testkit.WaitFor(t, 2*time.Minute, "llama-server to answer /health", func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var noReset int64
	for _, reset := range []bool{false, true} {
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
			cells: [{isl: 64, osl: 4}], concurrency: [1, 2], requests: 2, warmup: 0, prompts: "warm", reset_cache: %v
			telemetry: {gpu: "off", host: "off", machine: "off"}`, url, reset), "")
		c, log, err := runStageLog(t, st, p)
		if err != nil || len(c.cells) != 2 || c.cells[0].CachedTokens == nil || c.cells[1].CachedTokens == nil {
			t.Fatalf("reset_cache %v: %v, rows %+v\n%s", reset, err, c.cells, log)
		}
		first, second := *c.cells[0].CachedTokens, *c.cells[1].CachedTokens
		t.Logf("reset_cache %v: cached tokens %d at c=1, %d at c=2 (of 2 × 64-token prompts; a slot keeps one prompt)", reset, first, second)
		if !reset {
			noReset = second
			if second < 64 {
				t.Errorf("without reset_cache the second point re-sends the first's prompts, yet found %d tokens cached\n%s", second, log)
			}
			continue
		}
		// Cold again: only what the pass's own prompts share in a slot
		// (the first tokens), as at the first point.
		if second != first || second > noReset/10 || !strings.Contains(log, "?action=erase → 200") {
			t.Errorf("with reset_cache: %d cached at c=2 against %d at c=1 and %d without the reset\n%s", second, first, noReset, log)
		}
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
