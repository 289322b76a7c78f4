package sweep

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/internal/turns"
)

// minCPUSpan is the shortest span over which the client's CPU use is
// reported: over a millisecond, a scheduler tick's worth of CPU reads as
// several cores.
const minCPUSpan = 50 * time.Millisecond

// clientCPUUtil is the client's CPU use in cores: cpu over the wall time
// of the same span, nil for a span under minCPUSpan.
func clientCPUUtil(cpu, wall time.Duration) *float64 {
	if wall < minCPUSpan {
		return nil
	}
	return results.Some(cpu.Seconds() / wall.Seconds())
}

// fillRow computes a cell row's metrics from the timed requests over the
// timed passes' summed window (measure.FillCell, docs/METRICS.md) and says
// what a reader needs to know about them in its notes, from the rows
// and what their results told as they finished (tally). It returns the
// cell's request rows, reqs with their stage and cell set.
func fillRow(row *results.Cell, tally *resultTally, reqs results.Requests, window time.Duration, sends sendSpan, warmTTFT []float64, cfg Config, slo measure.SLO) results.Requests {
	if reqs == nil {
		reqs = results.RequestSlice(nil)
	}
	// First: it may set a mixed cell's kernel stamps back to user ones.
	stampNote := joinNotes(tally.stamps.Fill(row), tally.sends.Note())
	stage, cellID, user := row.Stage, row.CellID, row.StampSource == loadgen.StampUser
	reqs = results.MapRequests(reqs, func(q *results.Request) {
		q.Stage, q.CellID = stage, cellID
		if user {
			measure.UserStamps(q) // a mixed cell: its kernel-stamped rows too
		}
	})
	slice, _ := time.ParseDuration(cfg.Slice) // vet refused a bad one
	measure.FillCell(row, reqs, measure.CellWindow{Span: window, SendIntervals: sends.intervals, SendSpan: sends.span, Slice: slice}, slo)
	notes := promptNotes(row, cfg)
	if note := tokenCountNote(row, tally.tokens); note != "" {
		notes = append(notes, note)
	}
	notes = append(notes, shapeNotes(row, cfg, tally.tokens)...)
	notes = append(notes, clientNotes(row, reqs.Len(), sends, stampNote, cfg)...)
	if note := coldNote(row, warmTTFT); note != "" {
		notes = append(notes, note)
	}
	if note := reasoningNote(reqs); note != "" {
		notes = append(notes, note)
	}
	if slo != (measure.SLO{}) {
		notes = append(notes, "goodput counts completed requests meeting every plan SLO; failed requests never count")
	}
	row.Notes = strings.Join(notes, "; ")
	return reqs
}

// promptNotes say how the cell's prompts were made: cold or warm, a shared
// prefix, a conversation's history.
func promptNotes(row *results.Cell, cfg Config) []string {
	var notes []string
	switch {
	case cfg.Prompts == "warm" && cfg.conversation():
		notes = append(notes, "prompts=warm (one set of conversations reused every pass; a prefix cache may serve repeated first turns)")
	case cfg.Prompts == "warm":
		notes = append(notes, "prompts=warm (one prompt set reused every pass; a prefix cache may serve repeats)")
	case cfg.conversation():
		notes = append(notes, "prompts=cold (fresh conversations every pass)")
	default:
		notes = append(notes, "prompts=cold (a fresh prompt every request)")
	}
	if cfg.SharedPrefix > 0 {
		notes = append(notes, turns.SharedPrefixNote(cfg.SharedPrefix))
	}
	if cfg.conversation() {
		how := "history as one text: each prompt and answer, then \"\\n\\n\" and the next turn's text"
		if row.Endpoint == "chat" {
			how = "history as chat messages (the server's answers as assistant messages)"
		}
		think := ""
		if row.ThinkTimeMs != nil && *row.ThinkTimeMs > 0 {
			think = fmt.Sprintf(", think_time %s %s", time.Duration(*row.ThinkTimeMs*float64(time.Millisecond)), cfg.ThinkTimeDist)
		}
		notes = append(notes, "multi-turn: "+how+think)
	}
	return notes
}

// tokenCountNote says where the token counts came from ("" when nothing
// completed).
func tokenCountNote(row *results.Cell, t tokenTally) string {
	switch {
	case row.Completed == 0:
		return ""
	case t.counted == int(row.Completed):
		return "tokens counted from events (the server sent no usage)"
	case t.counted > 0:
		return fmt.Sprintf("tokens counted from events for %d of %d requests (no usage)", t.counted, row.Completed)
	}
	src := "token counts from the server's usage"
	if t.continuous > 0 {
		src += fmt.Sprintf("; tokens per event from usage deltas (%d requests)", t.continuous)
	}
	if t.estimated > 0 {
		src += fmt.Sprintf("; tokens per event estimated as an even share (%d requests sent multi-token events without per-event usage)", t.estimated)
	}
	return src
}

// shapeNotes say where the cell measured is not the shape asked for: an
// output cut short, prompts of another length.
func shapeNotes(row *results.Cell, cfg Config, t tokenTally) []string {
	var notes []string
	if row.OSLDist != "" && row.Completed > 0 {
		// The cell drew each request's output: its mean is what was asked.
		if asked := t.askedOut / float64(row.Completed); *row.EffectiveOSL < 0.95*asked {
			notes = append(notes, fmt.Sprintf("effective osl %.1f below the %.1f the requests drew on average (the server stopped early; force_osl needs ignore_eos or min_tokens support)", *row.EffectiveOSL, asked))
		}
	} else if row.Completed > 0 && row.OSL > 0 && row.Endpoint != "embeddings" && row.Endpoint != "rerank" && *row.EffectiveOSL < 0.95*float64(row.OSL) {
		notes = append(notes, fmt.Sprintf("effective osl %.1f below the %d asked (the server stopped early; force_osl needs ignore_eos or min_tokens support)", *row.EffectiveOSL, row.OSL))
	}
	if row.ISLDist != "" {
		if t.offIn > 0 {
			notes = append(notes, fmt.Sprintf("%d of %d prompts came out more than a token off the length drawn for them (prompt calibration did not hold for this server; each request's draw is its row's isl)", t.offIn, row.Completed))
		}
	} else if row.Completed > 0 && row.ISL > 0 && cfg.Dataset == nil && row.Images == 0 && row.Batch <= 1 && row.Endpoint != "rerank" && !cfg.conversation() && cfg.Agent == nil && math.Abs(*row.EffectiveISL-float64(row.ISL)) >= 0.5 {
		// Synthetic prompts are built to the exact length; a difference
		// means the calibration did not hold (or isl is below the chat
		// template's own tokens), and the cell is not the shape asked for.
		notes = append(notes, fmt.Sprintf("effective isl %.1f differs from the %d asked (prompt calibration did not hold for this server)", *row.EffectiveISL, row.ISL))
	}
	if t.firstN > 0 && row.ISL > 0 && cfg.Dataset == nil && (cfg.conversation() || cfg.Agent != nil && cfg.Agent.Graph == "") && math.Abs(t.firstIn/float64(t.firstN)-float64(row.ISL)) >= 0.5 {
		notes = append(notes, fmt.Sprintf("first turns' (or steps') isl %.1f differs from the %d asked (prompt calibration did not hold for this server)", t.firstIn/float64(t.firstN), row.ISL))
	}
	return notes
}

// clientNotes say where the client, not the server, shaped the figures:
// connections retried, the client's own CPU, requests it held back, its
// timestamps' source, sends that left late.
func clientNotes(row *results.Cell, requests int, sends sendSpan, stampNote string, cfg Config) []string {
	var notes []string
	if row.ConnRetries > 0 && float64(row.ConnRetries) >= 0.01*float64(requests) {
		notes = append(notes, fmt.Sprintf("%d sends met a keep-alive connection the server had closed and went again on a fresh one (the server closes connections it advertises as kept alive; see conn_retries)", row.ConnRetries))
	}
	if n := float64(runtime.NumCPU()); row.ClientCPUUtil != nil && *row.ClientCPUUtil >= 0.8*n {
		notes = append(notes, fmt.Sprintf("client-bound: benchrun itself used %.2f of %.0f cores over the timed window, so its stamps lag the bytes (read the cell as a lower bound of the server)", *row.ClientCPUUtil, n))
	}
	if sends.held > 0 {
		notes = append(notes, fmt.Sprintf("client-bound: %d requests were held back by the client and left late (behind its schedule it sends one request per request that ends, and it holds at most %d connections, its open-file and local-port limits): the client, not the server, capped the load offered; read ttft_sched/e2el_sched", sends.held, sends.limit))
	}
	if sends.paced > 0 {
		notes = append(notes, fmt.Sprintf("server-paced: %d requests waited for one in flight to end and left late (with short requests the client keeps in flight near what the server has been turning over, rather than opening a connection for every request due while the server is behind); the server did not keep up with the schedule; read ttft_sched/e2el_sched", sends.paced))
	}
	if stampNote != "" {
		notes = append(notes, stampNote)
	}
	if p99 := row.SendLagP99; p99 != nil && *p99 > cfg.SendLagThresholdMs {
		notes = append(notes, fmt.Sprintf("client-bound: send_lag p99 %.2f ms exceeds %.2g ms, so sends left late; read ttft_sched/e2el_sched (from the schedule) rather than ttft/e2el", *p99, cfg.SendLagThresholdMs))
	}
	return notes
}

// coldNote says when the cell was still warming up: its last warm-up
// pass far slower to a first token than the timed one ("" otherwise).
func coldNote(row *results.Cell, warmTTFT []float64) string {
	p50 := row.TTFTP50Ms
	if len(warmTTFT) == 0 || p50 == nil {
		return ""
	}
	w := stats.Summarize(warmTTFT).P50
	if w > 1.5**p50 && w-*p50 > 5 {
		return fmt.Sprintf("still cold after warm-up: last warm-up ttft p50 %.1f ms vs timed %.1f ms", w, *p50)
	}
	return ""
}

// opt formats a nullable metric for a progress line: "–" when it was not
// measured.
func opt(p *float64, prec int) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}
