// Package turns computes a cell's conversation and prefix-cache columns
// from its request rows (docs/RESULTS.md): TTFT by turn, the cached
// tokens the answers reported and the hit rate, with the notes that say
// where the hit rate came from and whether the cache engaged. The sweep
// and `benchrun merge` both call Fill on the request rows, so a merged
// row gives what the sweep gives.
package turns

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// Expect is what should make a cell's prompts hit a prefix cache.
type Expect int

const (
	// ExpectNothing: prompts are fresh; the cache is only measured.
	ExpectNothing Expect = iota
	// ExpectHistory: a conversation's turns 2 and later resend the
	// history, which a working prefix cache serves.
	ExpectHistory
	// ExpectSharedPrefix: every prompt opens with the same tokens.
	ExpectSharedPrefix
)

// sharedPrefixNote opens the sweep's note on a shared_prefix cell.
const sharedPrefixNote = "shared_prefix="

// SharedPrefixNote is the cell note of a shared_prefix cell (ExpectOf
// reads it back from a row).
func SharedPrefixNote(tokens int) string {
	return fmt.Sprintf("%s%d tokens", sharedPrefixNote, tokens)
}

// ExpectOf says what should engage the cache of a cell row: a
// conversation of two or more turns, a shared prefix (its note), or
// nothing.
func ExpectOf(row results.Cell) Expect {
	switch {
	case row.Turns != nil && *row.Turns >= 2, row.MaxSteps != nil && *row.MaxSteps >= 2:
		return ExpectHistory // an agent's later steps resend the session too
	case strings.HasPrefix(row.Notes, sharedPrefixNote) || strings.Contains(row.Notes, "; "+sharedPrefixNote):
		return ExpectSharedPrefix
	}
	return ExpectNothing
}

// The notes Fill writes begin with one of these (IsNote).
var notePrefixes = []string{"conversations: ", "prefix_cache_hit_rate ", "prefix cache did not engage", "agent: "}

// IsNote says whether a note is one of Fill's (a merge drops a shard's
// and writes its own from the pooled rows).
func IsNote(n string) bool {
	for _, p := range notePrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// maxApart is how far, in points of hit rate, the answers' and the
// server's figures may be before a note says so.
const maxApart = 5

// Fill sets the row's request-derived conversation and prefix-cache
// columns and appends its notes. It reads the row's turns (nil: not a
// conversation) and server_prefix_cache_hit_rate (the server's counters,
// set before), so call it after telemetry.
//
//   - ttft_turn1_p50_ms, ttft_later_turns_p50_ms: median TTFT of the
//     completed first turns, and of turns 2 and later (conversations);
//   - cached_tokens: Σ cached_tokens over the completed requests that
//     reported it (nil when none did);
//   - prefix_cache_hit_rate: those requests' cached tokens over their
//     prompt tokens, else the server's figure.
func Fill(row *results.Cell, reqs results.Requests, expect Expect) {
	if reqs == nil {
		reqs = results.RequestSlice(nil)
	}
	t := tallyRequests(reqs)
	conversation := row.Turns != nil
	row.TTFTTurn1P50Ms, row.TTFTLaterTurnsP50Ms = nil, nil
	if conversation {
		row.TTFTTurn1P50Ms = p50(t.first)
		row.TTFTLaterTurnsP50Ms = p50(t.later)
	}
	row.CachedTokens = results.SomeIf(t.reported > 0, t.cached)
	var usage *float64
	if t.reported > 0 && t.prompt > 0 {
		usage = results.Some(float64(t.cached) / float64(t.prompt))
	}
	server := row.ServerPrefixCacheHitRate
	row.PrefixCacheHitRate = usage
	if usage == nil {
		row.PrefixCacheHitRate = server
	}

	var notes []string
	if conversation && len(t.sessions) > 0 {
		notes = append(notes, t.conversationNote(*row.Turns))
	}
	if row.MaxSteps != nil {
		// An agent cell's steps are grouped by session: its rows are held
		// (sessions of a few steps, not a soak's millions of requests).
		rows, _ := results.CollectRequests(reqs)
		fillAgent(row, rows)
		if n := agentNote(row); n != "" {
			notes = append(notes, n)
		}
	}
	notes = append(notes, t.hitRateNotes(usage, server)...)
	if n := t.cacheIdleNote(expect, server); n != "" {
		notes = append(notes, n)
	}
	for _, n := range notes {
		if row.Notes == "" {
			row.Notes = n
		} else {
			row.Notes += "; " + n
		}
	}
}

// tally is what Fill counts over a cell's request rows.
type tally struct {
	first, later []float64      // TTFTs of the completed first turns, and of turns 2 and later
	completed    int            // completed requests with a TTFT
	turnsSent    int            // conversation turns sent, completed or not
	sessions     map[int64]bool // the conversations' sessions
	laterSteps   bool           // the later requests are agent steps, not turns
	// Over the completed requests that reported cached tokens: how many,
	// their cached and their prompt tokens; the later* fields count the
	// same over turns 2 and later.
	reported, laterReported                  int
	cached, prompt, laterCached, laterPrompt int64
}

func tallyRequests(reqs results.Requests) tally {
	t := tally{sessions: map[int64]bool{}}
	for r := range reqs.All() {
		if r.Turn != nil && r.Session != nil {
			t.sessions[*r.Session] = true
			t.turnsSent++
		}
		if r.Status != results.StatusOK || r.TTFTMs == nil {
			continue
		}
		t.completed++
		if r.Turn != nil {
			if *r.Turn == 1 {
				t.first = append(t.first, *r.TTFTMs)
			} else {
				t.later = append(t.later, *r.TTFTMs)
			}
		}
		if r.CachedTokens == nil {
			continue
		}
		t.reported++
		t.cached += *r.CachedTokens
		t.prompt += r.InputTokens
		if r.Turn != nil && *r.Turn >= 2 || r.Step != nil && *r.Step >= 2 {
			t.laterSteps = t.laterSteps || r.Step != nil
			t.laterReported++
			t.laterCached += *r.CachedTokens
			t.laterPrompt += r.InputTokens
		}
	}
	return t
}

// conversationNote says how many sessions sent how many turns, of at
// most maxTurns each.
func (t tally) conversationNote(maxTurns int64) string {
	plural := "s"
	if len(t.sessions) == 1 {
		plural = ""
	}
	return fmt.Sprintf("conversations: %d session%s sent %d turns (%.1f per session; at most %d each); effective_isl includes the history",
		len(t.sessions), plural, t.turnsSent, float64(t.turnsSent)/float64(len(t.sessions)), maxTurns)
}

// hitRateNotes say where prefix_cache_hit_rate came from (usage, the
// hit rate by the answers' cached tokens, or server, the server's
// counters), and whether the two disagree.
func (t tally) hitRateNotes(usage, server *float64) []string {
	var notes []string
	switch {
	case usage != nil && t.reported < t.completed:
		notes = append(notes, fmt.Sprintf("prefix_cache_hit_rate from usage cached_tokens, which %d of %d completed requests reported", t.reported, t.completed))
	case usage != nil:
		notes = append(notes, "prefix_cache_hit_rate from usage cached_tokens")
	case server != nil:
		notes = append(notes, "prefix_cache_hit_rate from the server's counters (no answer carried usage cached_tokens)")
	}
	if usage != nil && server != nil && math.Abs(*usage-*server)*100 > maxApart {
		notes = append(notes, fmt.Sprintf("prefix_cache_hit_rate %.3f by usage, %.3f by the server's counters: %.1f points apart (server_prefix_cache_hit_rate; the server counts what it computed over the window, the answers what they were served)",
			*usage, *server, math.Abs(*usage-*server)*100))
	}
	return notes
}

// cacheIdleNote is the note of a cell whose prompts should have hit the
// prefix cache (expect) and did not, by the answers' cached tokens or,
// when none reported them, by the server's hit rate; "" if none is due.
func (t tally) cacheIdleNote(expect Expect, server *float64) string {
	switch expect {
	case ExpectHistory:
		switch {
		case t.laterReported > 0 && t.laterCached == 0 && t.laterSteps:
			return fmt.Sprintf("prefix cache did not engage: the %d later agent steps (2 and on) had 0 of their %d prompt tokens cached, so every step computed its session's history again (is prefix caching on in the server?)", t.laterReported, t.laterPrompt)
		case t.laterReported > 0 && t.laterCached == 0:
			return fmt.Sprintf("prefix cache did not engage: the %d later turns (2 and on) had 0 of their %d prompt tokens cached, so every turn computed its whole history again (is prefix caching on in the server?)", t.laterReported, t.laterPrompt)
		case t.laterReported == 0 && server != nil && *server == 0 && t.turnsSent > len(t.sessions):
			return "prefix cache did not engage: the server's counters show no hit over the conversations' turns (is prefix caching on in the server?)"
		}
	case ExpectSharedPrefix:
		switch {
		case t.reported >= 2 && t.cached == 0:
			return fmt.Sprintf("prefix cache did not engage: %d requests opening with the shared prefix had 0 of %d prompt tokens cached (is prefix caching on? a prefix shorter than the server's cache block is never cached)", t.reported, t.prompt)
		case t.reported < 2 && server != nil && *server == 0 && t.completed >= 2:
			return "prefix cache did not engage: the server's counters show no hit over prompts sharing a prefix (is prefix caching on? a prefix shorter than the server's cache block is never cached)"
		}
	}
	return ""
}

// TurnTTFT is the TTFT of one turn over a cell's completed requests.
type TurnTTFT struct {
	Turn     int64
	Requests int // completed requests of the turn
	P50Ms    float64
	P99Ms    float64
	// HistoryMean and CachedMean are the turn's mean history and cached
	// tokens (CachedMean nil when no request of the turn reported it).
	HistoryMean *float64
	CachedMean  *float64
	PromptMean  float64
}

// ByTurn is the cell's TTFT turn by turn (a report's table), in turn
// order; nil for a cell that is not a conversation.
func ByTurn(reqs []results.Request) []TurnTTFT {
	return byPosition(reqs, func(r *results.Request) *int64 { return r.Turn })
}

// ByStep is an agent cell's TTFT step position by step position, as
// ByTurn (Turn holds the position; HistoryMean is nil: a step's history
// is its session's messages, not counted apart); nil for a cell that is
// not an agent cell.
func ByStep(reqs []results.Request) []TurnTTFT {
	return byPosition(reqs, func(r *results.Request) *int64 { return r.Step })
}

// byPosition summarizes the completed requests by their position (a
// conversation's turn, an agent session's step; nil: not counted).
func byPosition(reqs []results.Request, position func(*results.Request) *int64) []TurnTTFT {
	type acc struct {
		ttft                     []float64
		hist, cached, prompt     float64
		nHist, nCached, nPrompts int
	}
	by := map[int64]*acc{}
	maxTurn := int64(0)
	for i := range reqs {
		r := &reqs[i]
		pos := position(r)
		if pos == nil || r.Status != results.StatusOK || r.TTFTMs == nil {
			continue
		}
		a := by[*pos]
		if a == nil {
			a = &acc{}
			by[*pos] = a
		}
		maxTurn = max(maxTurn, *pos)
		a.ttft = append(a.ttft, *r.TTFTMs)
		a.prompt += float64(r.InputTokens)
		a.nPrompts++
		if r.HistoryTokens != nil {
			a.hist += float64(*r.HistoryTokens)
			a.nHist++
		}
		if r.CachedTokens != nil {
			a.cached += float64(*r.CachedTokens)
			a.nCached++
		}
	}
	var out []TurnTTFT
	for k := int64(1); k <= maxTurn; k++ {
		a := by[k]
		if a == nil {
			continue
		}
		s := stats.Summarize(a.ttft)
		t := TurnTTFT{Turn: k, Requests: len(a.ttft), P50Ms: s.P50, P99Ms: s.P99, PromptMean: a.prompt / float64(a.nPrompts)}
		if a.nHist > 0 {
			t.HistoryMean = results.Some(a.hist / float64(a.nHist))
		}
		if a.nCached > 0 {
			t.CachedMean = results.Some(a.cached / float64(a.nCached))
		}
		out = append(out, t)
	}
	return out
}

func p50(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	return results.Some(stats.Summarize(xs).P50)
}
