package sweep

import (
	"github.com/benchrun/benchrun/internal/results"
)

// validateRerank checks what a rerank sweep needs and refuses what it
// cannot carry: documents per request (batch), and no stream (a rerank
// answer comes in one body).
func (s *Stage) validateRerank(bad func([]string, string, ...any)) {
	if s.cfg.Endpoint != "rerank" {
		return
	}
	if len(s.cfg.Batch) == 0 {
		bad([]string{"batch"}, "a rerank sweep needs documents per request: batch: [8, 32]")
	}
	if s.writes("stream") {
		bad([]string{"stream"}, "a rerank answer comes in one body: drop stream")
	}
}

// writes says the plan writes the stage's field itself (a default is the
// schema's, not the plan's).
func (s *Stage) writes(field string) bool {
	return s.spec.PosOf(field) != s.spec.Pos
}

// fillRerank sets a rerank cell's throughput from its completed
// requests: in input tokens and docs documents scored over the window of
// w seconds. The effective isl is per text (the query and each
// document), so it reads against isl whatever the batch.
func fillRerank(row *results.Cell, in, docs, w float64) {
	if w > 0 {
		row.DocumentsS = results.Some(docs / w)
	}
	if texts := docs + float64(row.Completed); docs > 0 {
		row.EffectiveISL = results.Some(in / texts)
	}
}
