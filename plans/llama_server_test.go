package plans_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// llamaServerDir finds a real llama-server, $BENCHRUN_LLAMA_SERVER (a
// path to the binary) or llama-server on PATH, and returns a directory
// whose llama-server is it (for the plan's cmd); it skips the test, saying
// why, when there is none. No llama-server can be installed here from a
// package (Debian bookworm has no llama.cpp); one builds from llama.cpp's
// source: cmake -B build -DLLAMA_CURL=OFF && cmake --build build --target
// llama-server (node-llama-cpp's npm package carries a release's source as
// llama/gitRelease.bundle).
func llamaServerDir(t *testing.T) string {
	t.Helper()
	path := os.Getenv("BENCHRUN_LLAMA_SERVER")
	if path == "" {
		p, err := exec.LookPath("llama-server")
		if err != nil {
			t.Skip("no llama-server: none on PATH and $BENCHRUN_LLAMA_SERVER is unset (Debian bookworm packages no llama.cpp; build tools/server from llama.cpp's source and set BENCHRUN_LLAMA_SERVER to the binary)")
		}
		return filepath.Dir(p)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("$BENCHRUN_LLAMA_SERVER names no binary: %v", err)
	}
	if filepath.Base(path) == "llama-server" {
		return filepath.Dir(path)
	}
	dir := t.TempDir()
	abs, _ := filepath.Abs(path)
	if err := os.Symlink(abs, filepath.Join(dir, "llama-server")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLlamaServerAnswers runs plans/testdata/llama-server-answers.cue on a
// real llama-server serving stories260K. Thinking (a template that opens
// <think>, --reasoning-format deepseek): every request ok, its tokens
// delta.reasoning_content, counted and timed as reasoning, none answered
// (stories260K never closes the block). json_schema: every request ok
// (a grammar-constrained answer of whitespace alone is an answer that is
// not JSON, never a failed request), each answer checked, the cell's valid
// rate the requests' own. The Messages API with a thinking budget of 8:
// every request ok, its thinking_delta events counted as reasoning.
func TestLlamaServerAnswers(t *testing.T) {
	dir := llamaServerDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/llama-server-answers.cue")
	if code := b.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	run := b.runDir(t)
	cells := map[string]results.Cell{}
	for _, c := range readCells(t, run) {
		cells[c.Stage] = c
	}
	reqs := map[string][]results.Request{}
	rows, err := resultstest.ReadTable[results.Request](run, "requests")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range rows {
		reqs[q.Stage] = append(reqs[q.Stage], q)
	}
	think := cells["think"]
	t.Logf("think: %s, reasoning %v (%s) answer %v, answered %v %%, ttfr %v ms", think.Status, results.ValueOr(think.ReasoningTokensAvg, -1), think.Reason,
		results.ValueOr(think.AnswerTokensAvg, -1), results.ValueOr(think.AnsweredPct, -1), results.ValueOr(think.TTFRMs, -1))
	if think.Status != results.StatusOK || think.Completed != 6 || results.ValueOr(think.ReasoningTokensAvg, 0) <= 0 || think.TTFRMs == nil {
		t.Errorf("think: status %s (%s), %d completed, reasoning %v, ttfr %v: want ok, 6, reasoning counted and timed",
			think.Status, think.Reason, think.Completed, results.ValueOr(think.ReasoningTokensAvg, -1), think.TTFRMs)
	}
	for _, q := range reqs["think"] {
		if q.Status != results.StatusOK || q.ReasoningTokens == nil || *q.ReasoningTokens != q.OutputTokens || q.Answered == nil || *q.Answered || q.TTFRMs == nil {
			t.Errorf("think request %d: %s %q, reasoning %v of %d output tokens, answered %v, ttfr %v: want every token reasoning, timed, unanswered",
				q.Seq, q.Status, q.Error, results.ValueOr(q.ReasoningTokens, -1), q.OutputTokens, results.ValueOr(q.Answered, true), q.TTFRMs)
		}
	}
	structured := cells["structured"]
	valid := 0
	for _, q := range reqs["structured"] {
		if q.Status != results.StatusOK || q.AnswerValid == nil {
			t.Errorf("structured request %d: %s %q, answer_valid %v: want ok and checked", q.Seq, q.Status, q.Error, q.AnswerValid)
			continue
		}
		if *q.AnswerValid {
			valid++
		}
	}
	want := 100 * float64(valid) / 6
	t.Logf("structured: %s, %v %% valid (%d of 6)", structured.Status, results.ValueOr(structured.StructuredValidPct, -1), valid)
	if structured.Status != results.StatusOK || structured.Completed != 6 || results.ValueOr(structured.StructuredValidPct, -1) != want {
		t.Errorf("structured: status %s (%s), %d completed, %v %% valid: want ok, 6, %v", structured.Status, structured.Reason, structured.Completed,
			results.ValueOr(structured.StructuredValidPct, -1), want)
	}
	budget := cells["budget"]
	t.Logf("budget: %s, reasoning %v answer %v, answered %v %%", budget.Status, results.ValueOr(budget.ReasoningTokensAvg, -1),
		results.ValueOr(budget.AnswerTokensAvg, -1), results.ValueOr(budget.AnsweredPct, -1))
	if budget.Status != results.StatusOK || budget.Completed != 6 {
		t.Errorf("budget: status %s (%s), %d completed: want ok, 6", budget.Status, budget.Reason, budget.Completed)
	}
	// llama-server reads budget_tokens (as thinking_budget_tokens) but,
	// on this template, thinks past it: what is measured is what it sent,
	// every thinking_delta counted as reasoning.
	for _, q := range reqs["budget"] {
		if q.Status != results.StatusOK || q.ReasoningTokens == nil || *q.ReasoningTokens < 1 || *q.ReasoningTokens > q.OutputTokens {
			t.Errorf("budget request %d: %s %q, %v reasoning tokens of %d: want ok, the thinking counted", q.Seq, q.Status, q.Error, q.ReasoningTokens, q.OutputTokens)
		}
	}
	// reset_cache erases each slot before a point (POST
	// /slots/N?action=erase): the second point's first request on each of
	// the two slots finds nothing cached, where without it the slot still
	// holds the first point's last prompt (its shared BOS is found). The
	// host-memory prompt cache (--cache-ram) outlives an erase, which is
	// why the plan turns it off: with it on, the reset point found its
	// prompts cached as the kept one did.
	found := map[string]int64{}
	for _, q := range rows {
		if (q.Stage == "cache_kept" || q.Stage == "cache_reset") && strings.HasSuffix(q.CellID, "/c2") && q.Seq < 2 {
			found[q.Stage] += results.ValueOr(q.CachedTokens, -100)
		}
	}
	t.Logf("the second point's first two requests found %d tokens cached without reset_cache, %d with it", found["cache_kept"], found["cache_reset"])
	if found["cache_kept"] < 2 || found["cache_reset"] != 0 {
		t.Errorf("the second point's first two requests found %d tokens cached without reset_cache, %d with it: want each slot's leftovers, then none",
			found["cache_kept"], found["cache_reset"])
	}
}
