package report

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestTurnTables: a conversation cell fed with its requests gets a "TTFT
// by turn" table in both reports, computed from the request rows (turn 2's
// median over its two requests; cached "–" where no request said); a cell
// that is not a conversation gets none.
func TestTurnTables(t *testing.T) {
	req := func(turn, history int64, cached *int64, ttft float64) results.Request {
		return results.Request{CellID: "sweep/32:8/c2", Status: results.StatusOK, TTFTMs: results.Some(ttft), InputTokens: history + 32,
			Session: results.Some(int64(0)), Turn: results.Some(turn), HistoryTokens: results.Some(history), CachedTokens: cached}
	}
	conv := results.Cell{Stage: "sweep", CellID: "sweep/32:8/c2", ISL: 32, OSL: 8, Concurrency: 2, Status: results.StatusOK, Turns: results.Some(int64(2))}
	plain := results.Cell{Stage: "sweep", CellID: "sweep/32:8/c1", ISL: 32, OSL: 8, Concurrency: 1, Status: results.StatusOK}
	o := New()
	if err := o.Cell(conv, results.AsRequests([]results.Request{req(1, 0, nil, 50), req(1, 0, nil, 52), req(2, 40, results.Some(int64(32)), 20), req(2, 40, results.Some(int64(32)), 24)})); err != nil {
		t.Fatal(err)
	}
	if err := o.Cell(plain, results.AsRequests([]results.Request{{CellID: plain.CellID, Status: results.StatusOK, TTFTMs: results.Some(1.0)}})); err != nil {
		t.Fatal(err)
	}
	md := string(Markdown(o.d, nil, "charts/"))
	for _, want := range []string{"## TTFT by turn", "| 1 | 2 | 32.0 | 0.0 | – | 51.00 |", "| 2 | 2 | 72.0 | 40.0 | 32.0 | 22.00 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "\n### sweep 32:8") != 1 {
		t.Errorf("want one turn table:\n%s", md)
	}
	page, err := HTML(o.d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<h2>TTFT by turn</h2>") || !strings.Contains(string(page), `<td class="n">22.00</td>`) {
		t.Errorf("report.html lacks the table")
	}
}
