package plans_test

import (
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// TestOllamaRealworld runs a validate stage after a sweep on a real engine:
// the document's row carries its ratios against the sweep's c=2 cell,
// measured in the same run.
func TestOllamaRealworld(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-realworld.cue")
	if code := b.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	var doc *results.Cell
	cells := readCells(t, b.runDir(t))
	for i, c := range cells {
		if c.Stage == "realworld" {
			doc = &cells[i]
		}
	}
	if doc == nil {
		t.Fatalf("no validate row among %d cells\n%s", len(cells), b.stderr.String())
	}
	t.Logf("%s vs %s: effective isl %.1f vs %.1f, decode ×%.2f, prefill ×%.2f, ttft ×%.2f, e2el ×%.2f", doc.CellID, doc.AgainstCellID,
		results.ValueOr(doc.EffectiveISL, 0), results.ValueOr(doc.SyntheticEffectiveISL, 0), results.ValueOr(doc.DecodeTokSRatio, 0),
		results.ValueOr(doc.PrefillTokSRatio, 0), results.ValueOr(doc.TTFTRatio, 0), results.ValueOr(doc.E2ELRatio, 0))
	if doc.Status != results.StatusOK || doc.AgainstCellID != "sweep/48:24/c2" || doc.Documents != 1 || doc.Engine != "ollama" {
		t.Fatalf("row %s %q against %q, %d documents, engine %q", doc.Status, doc.Reason, doc.AgainstCellID, doc.Documents, doc.Engine)
	}
	for name, v := range map[string]*float64{"decode_tok_s_ratio": doc.DecodeTokSRatio, "prefill_tok_s_ratio": doc.PrefillTokSRatio,
		"ttft_ratio": doc.TTFTRatio, "tpot_ratio": doc.TPOTRatio, "e2el_ratio": doc.E2ELRatio} {
		if v == nil || *v <= 0 {
			t.Errorf("%s = %v; want a positive ratio", name, v)
		}
	}
	// The document is longer than the cell's 48 tokens: usage says so.
	if results.ValueOr(doc.EffectiveISL, 0) <= results.ValueOr(doc.SyntheticEffectiveISL, 0) {
		t.Errorf("effective isl %.1f not above the synthetic %.1f", results.ValueOr(doc.EffectiveISL, 0), results.ValueOr(doc.SyntheticEffectiveISL, 0))
	}
}
