package plans_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// runPlan runs a plan through the binary, the simulator ("benchrun sim")
// on PATH, and returns its exit code, run directory and stderr.
func runPlan(t *testing.T, plan string, args ...string) (int, string, string) {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, append([]string{plan, "--out", out}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", plan, err)
		}
		code = ee.ExitCode()
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "plan=*", "date=*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("%s: run directories %v\n%s", plan, dirs, stderr.String())
	}
	return code, dirs[0], stderr.String()
}

// sessionsOf is a cell's request rows by session, in turn order.
func sessionsOf(t *testing.T, reqs []results.Request, cellID string) map[int64][]results.Request {
	t.Helper()
	out := map[int64][]results.Request{}
	for _, q := range reqs {
		if q.CellID != cellID {
			continue
		}
		if q.Session == nil || q.Turn == nil {
			t.Fatalf("%s request %d: session %v turn %v", cellID, q.Seq, q.Session, q.Turn)
		}
		out[*q.Session] = append(out[*q.Session], q)
	}
	for _, qs := range out {
		slices.SortFunc(qs, func(a, b results.Request) int { return int(*a.Turn - *b.Turn) })
	}
	return out
}

// checkHistory: every session's turns are 1..n in order, each turn's
// history the turn before's prompt + completion tokens (its usage), and
// each prompt longer than its history.
func checkHistory(t *testing.T, cellID string, sessions map[int64][]results.Request) {
	t.Helper()
	for id, qs := range sessions {
		for k, q := range qs {
			want := int64(0)
			if k > 0 {
				want = qs[k-1].InputTokens + qs[k-1].OutputTokens
			}
			if *q.Turn != int64(k+1) || q.HistoryTokens == nil || *q.HistoryTokens != want || q.InputTokens <= want {
				t.Errorf("%s session %d: turn %d history %v prompt %d; want turn %d, history %d", cellID, id, *q.Turn, q.HistoryTokens, q.InputTokens, k+1, want)
			}
		}
	}
}

// TestChatMultiturnPlan runs the example plan against the simulator as
// vLLM: every cell ok, the cache serving the history (the assertions pass);
// with -t prompt_cache=false the rows stay ok, say that the cache did not
// engage, and the assertions that need the cache fail (exit 1).
func TestChatMultiturnPlan(t *testing.T) {
	code, run, stderr := runPlan(t, "chat-multiturn.cue")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cells := readCells(t, run)
	reqs, err := resultstest.ReadTable[results.Request](run, "requests")
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 3 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, c := range cells {
		if c.Status != results.StatusOK || c.Turns == nil || *c.Turns != 4 || c.CachedTokens == nil || c.PrefixCacheHitRate == nil || c.ServerPrefixCacheHitRate == nil {
			t.Fatalf("%s: %s %q turns %v cached %v hit rate %v / %v", c.CellID, c.Status, c.Reason, c.Turns, c.CachedTokens, c.PrefixCacheHitRate, c.ServerPrefixCacheHitRate)
		}
		// The answers' usage and the simulator's own counters agree.
		if d := *c.PrefixCacheHitRate - *c.ServerPrefixCacheHitRate; d > 1e-9 || d < -1e-9 || strings.Contains(c.Notes, "points apart") {
			t.Errorf("%s: hit rate %v by usage, %v by the server", c.CellID, *c.PrefixCacheHitRate, *c.ServerPrefixCacheHitRate)
		}
		sessions := sessionsOf(t, reqs, c.CellID)
		checkHistory(t, c.CellID, sessions)
		var in, cached int64
		for _, qs := range sessions {
			for _, q := range qs {
				in += q.InputTokens
				cached += *q.CachedTokens
			}
		}
		if in != c.AdmittedTok || cached != *c.CachedTokens {
			t.Errorf("%s: Σ input %d cached %d; the row says %d and %d", c.CellID, in, cached, c.AdmittedTok, *c.CachedTokens)
		}
		t.Logf("%s: %d sessions, ttft turn 1 %.1f ms, later %.1f ms, hit rate %.3f", c.CellID, len(sessions), *c.TTFTTurn1P50Ms, *c.TTFTLaterTurnsP50Ms, *c.PrefixCacheHitRate)
	}
	if md, err := os.ReadFile(filepath.Join(run, "report.md")); err != nil || !strings.Contains(string(md), "## TTFT by turn") {
		t.Errorf("report.md has no TTFT by turn (%v)", err)
	}

	code, run, stderr = runPlan(t, "chat-multiturn.cue", "-t", "prompt_cache=false")
	if code != 1 {
		t.Fatalf("cache off: exit %d, want 1 (assertions failed)\n%s", code, stderr)
	}
	for _, c := range readCells(t, run) {
		if c.Status != results.StatusOK || !strings.Contains(c.Notes, "prefix cache did not engage") || c.PrefixCacheHitRate == nil || *c.PrefixCacheHitRate != 0 {
			t.Errorf("cache off %s: %s, hit rate %v, notes %s", c.CellID, c.Status, c.PrefixCacheHitRate, c.Notes)
		}
	}
	verdicts, err := resultstest.ReadTable[results.Verdict](run, "assertions")
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, v := range verdicts {
		if v.Outcome == results.OutcomeFail {
			failed[v.Assertion] = true
		}
	}
	if !failed["prefix_cache_hit_rate > 0.3"] || !failed["prefix_cache_hit_rate > 0"] {
		t.Errorf("cache off: failed assertions %v", failed)
	}
}

// TestOllamaMultiTurn is one multi-turn run on a real engine: Ollama
// serving stories260K, chat and completions conversations. Every row has
// its session and turn; each turn's history is the turn before's usage;
// the cell's input tokens are the turns' sum; Ollama says nothing of
// cached tokens and has no metrics, so the cache columns are NULL with
// the reason, while TTFT by turn is measured.
func TestOllamaMultiTurn(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	start := time.Now()
	b := startBenchrun(t, dir, "testdata/ollama-multiturn.cue")
	if code := b.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	run := b.runDir(t)
	cells := readCells(t, run)
	reqs, err := resultstest.ReadTable[results.Request](run, "requests")
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 3 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, c := range cells {
		if c.Status != results.StatusOK || c.Failed != 0 || c.Turns == nil || *c.Turns != 3 || c.TTFTTurn1P50Ms == nil || c.TTFTLaterTurnsP50Ms == nil {
			t.Fatalf("%s: %s %q, failed %d, turns %v, ttft by turn %v / %v", c.CellID, c.Status, c.Reason, c.Failed, c.Turns, c.TTFTTurn1P50Ms, c.TTFTLaterTurnsP50Ms)
		}
		if c.CachedTokens != nil || c.PrefixCacheHitRate != nil || !strings.Contains(results.WhyNull(c, "prefix_cache_hit_rate"), "no answer carried usage.prompt_tokens_details.cached_tokens") {
			t.Errorf("%s: cached %v hit rate %v on Ollama", c.CellID, c.CachedTokens, c.PrefixCacheHitRate)
		}
		sessions := sessionsOf(t, reqs, c.CellID)
		checkHistory(t, c.CellID, sessions)
		var in int64
		firsts := 0
		for _, qs := range sessions {
			if len(qs) != 3 {
				t.Errorf("%s: a session of %d turns", c.CellID, len(qs))
			}
			for _, q := range qs {
				in += q.InputTokens
				if q.CachedTokens != nil {
					t.Errorf("%s: cached tokens %d from Ollama", c.CellID, *q.CachedTokens)
				}
			}
			// First turns are the calibrated isl; later ones carry history.
			if qs[0].InputTokens == c.ISL {
				firsts++
			}
		}
		if in != c.AdmittedTok || firsts != len(sessions) {
			t.Errorf("%s: Σ input %d, admitted %d; %d of %d first turns of isl %d", c.CellID, in, c.AdmittedTok, firsts, len(sessions), c.ISL)
		}
		t.Logf("%s: %d sessions, Σ input %d tokens, ttft turn 1 %.1f ms, later turns %.1f ms", c.CellID, len(sessions), in, *c.TTFTTurn1P50Ms, *c.TTFTLaterTurnsP50Ms)
	}
	t.Logf("ollama multi-turn in %s", time.Since(start).Round(time.Second))
}
