package report

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/turns"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// turnTable is one conversation cell's TTFT turn by turn, from its
// request rows: the table that shows whether a prefix cache serves the
// history (later turns carry more prompt yet start no later).
type turnTable struct {
	Label string
	Rows  []turnRow
}

type turnRow struct {
	Turn, Requests, Prompt, History, Cached, P50, P99 string
}

// turnIntro says what the "TTFT by turn" tables show.
const turnIntro = "Conversation cells: each turn resends the session's earlier prompts and answers. Prompt, history and cached are mean tokens per request of the turn (cached: usage cached_tokens, – where the server does not say); TTFT in ms over the turn's completed requests."

// keepTurns records a conversation cell's turn summary, or an agent
// cell's by step position (nil requests leave what an earlier feed
// recorded).
func (d *Data) keepTurns(c results.Cell, reqs results.Requests) {
	if c.Turns == nil && c.MaxSteps == nil || reqs == nil {
		return
	}
	// A conversation's or an agent's cell: its rows are few enough to
	// hold while its turns are summed.
	rows, err := results.CollectRequests(reqs)
	if err != nil {
		return // the report then shows no turn table for the cell
	}
	if d.Turns == nil {
		d.Turns = map[string][]turns.TurnTTFT{}
	}
	if c.Turns == nil {
		d.Turns[c.CellID] = turns.ByStep(rows)
		return
	}
	d.Turns[c.CellID] = turns.ByTurn(rows)
}

// turnTables builds the section's tables, in cell order.
func turnTables(d Data) []turnTable {
	var out []turnTable
	for _, c := range d.Cells {
		by := d.Turns[c.CellID]
		if c.Turns == nil && c.MaxSteps == nil || len(by) == 0 {
			continue
		}
		t := turnTable{Label: runview.CellLabel(c)}
		if c.Turns == nil {
			t.Label += " (agent sessions: the turn is the step's position)"
		}
		for _, r := range by {
			opt := func(p *float64) string {
				if p == nil {
					return "–"
				}
				return fmt.Sprintf("%.1f", *p)
			}
			t.Rows = append(t.Rows, turnRow{Turn: fmt.Sprint(r.Turn), Requests: fmt.Sprint(r.Requests), Prompt: fmt.Sprintf("%.1f", r.PromptMean),
				History: opt(r.HistoryMean), Cached: opt(r.CachedMean), P50: num(r.P50Ms, true), P99: num(r.P99Ms, true)})
		}
		out = append(out, t)
	}
	return out
}
