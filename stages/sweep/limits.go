package sweep

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
)

// What one sweep point may ask of the machine benchrun runs on. Past
// these a run does not measure anything: it runs out of memory, file
// descriptors or time. vet refuses them with the limit in the message
// (docs/PLANS.md, "Limits").
const (
	// MaxConcurrency is the most closed-loop sessions (and the largest
	// max_inflight) of one point: each is a goroutine and a connection.
	MaxConcurrency = 100_000
	// MaxRate is the highest open-loop rate, requests per second: one
	// process schedules every send (benchrun self-bench measures the
	// client's real ceiling, far lower).
	MaxRate = 1e6
	// MaxRequests is the most requests one point keeps: requests per pass
	// × timed iterations (their results are pooled into the point's row
	// and held until it is written), and per pass for any pass.
	MaxRequests = 10_000_000
	// MaxPassDuration bounds duration and min_duration (24h).
	MaxPassDuration = 24 * time.Hour
	// MaxTokens bounds isl and osl: ten million tokens is past every
	// model's context, and a prompt that long is tens of megabytes.
	MaxTokens = 10_000_000
	// MaxPoints is the most points (rows) one sweep measures: cells ×
	// variants × ladder × repeats. Each point is at least a warm-up and a
	// timed pass, seconds at the least, so more is days of a server's
	// time.
	MaxPoints = 10_000
)

// validateLimits refuses what the machine cannot do (see the constants),
// each at the field that asks for it.
func (s *Stage) validateLimits(bad func([]string, string, ...any)) {
	c := &s.cfg
	fieldsOK := true
	check := func(ok bool, field []string, format string, args ...any) {
		if !ok {
			fieldsOK = false
			bad(field, format, args...)
		}
	}
	for i, cell := range c.Cells {
		check(cell.maxISL() <= MaxTokens, []string{"cells", fmt.Sprint(i), "isl"}, "%d tokens%s: at most %d (past every model's context)", cell.maxISL(), upperNote(cell), MaxTokens)
		check(cell.maxOSL() <= MaxTokens, []string{"cells", fmt.Sprint(i), "osl"}, "%d tokens%s: at most %d (past every model's context)", cell.maxOSL(), upperNote(cell), MaxTokens)
	}
	if len(c.Rates) == 0 {
		for i, n := range c.Concurrency {
			check(n <= MaxConcurrency, []string{"concurrency", fmt.Sprint(i)}, "%d sessions: at most %d per point (each session is a goroutine and a connection on this machine)", n, MaxConcurrency)
		}
	}
	for i, r := range c.Rates {
		check(r <= MaxRate, []string{"rates", fmt.Sprint(i)}, "%g requests/s: at most %g/s (one process schedules every send; `benchrun self-bench` measures this machine's real ceiling)", r, MaxRate)
	}
	if c.Ramp != nil {
		check(c.Ramp.From <= MaxRate, []string{"ramp", "from"}, "%g requests/s: at most %g/s", c.Ramp.From, MaxRate)
	}
	check(c.MaxInflight <= MaxConcurrency, []string{"max_inflight"}, "%d: at most %d requests in flight (each is a goroutine and a connection)", c.MaxInflight, MaxConcurrency)
	check(c.Requests <= MaxRequests, []string{"requests"}, "%d requests per pass: at most %d (every request's result is kept in memory until its point is written)", c.Requests, MaxRequests)
	check(c.MinRequests <= MaxRequests, []string{"min_requests"}, "%d requests per pass: at most %d (every request's result is kept in memory until its point is written)", c.MinRequests, MaxRequests)
	check(s.duration <= MaxPassDuration, []string{"duration"}, "%q per pass: at most %q", c.Duration, "24h")
	check(s.minDuration <= MaxPassDuration, []string{"min_duration"}, "%q per pass: at most %q", c.MinDuration, "24h")
	check(c.Slice == "" || s.slice >= time.Millisecond, []string{"slice"}, "%q: time slices are at least \"1ms\" wide (leave slice out for about %d windows a cell)", c.Slice, measure.AutoSlices)
	if !fieldsOK {
		return // what follows would only repeat it
	}
	if n, field, what := s.pointCount(); n > MaxPoints {
		bad(field, "the sweep has %d points (%s): at most %d per sweep stage (each is at least a warm-up and a timed pass); split it into stages or sample the ladder", n, what, MaxPoints)
		return
	}
	// What the fields ask for together: a rate over a duration, or many
	// timed passes pooled into one row.
	for _, p := range s.points() {
		_, perPass := s.load(p, nil, 0)
		if perPass > MaxRequests {
			// Only a rate over a duration gets here: requests and
			// min_requests are bounded above, and the default pass
			// (10 s of arrivals) is at most MaxRate × 10 s.
			bad([]string{"duration"}, "%q at %g requests/s is %d requests per pass: at most %d (every request's result is kept in memory until its point is written); shorten the duration or lower the rate", c.Duration, p.rate, perPass, MaxRequests)
			return
		}
		if total := perPass * max(c.Iterations, 1); total > MaxRequests {
			bad([]string{"iterations"}, "%d timed passes of %d requests pool %d requests into one row: at most %d (they are kept in memory until the point is written)", c.Iterations, perPass, total, MaxRequests)
			return
		}
	}
}

// pointCount is how many points the sweep measures, counted without
// listing them, with the field that grows it most and the product in words.
func (s *Stage) pointCount() (int, []string, string) {
	c := &s.cfg
	if c.Search != nil || s.isTrace() {
		return 0, nil, "" // bounded by their own validation
	}
	cells, variants := len(c.Cells), len(s.variants())
	if c.Endpoint == "transcriptions" {
		cells = 1
	}
	ladder, ladderField := len(c.Concurrency), "concurrency"
	if len(c.Rates) > 0 {
		ladder, ladderField = len(c.Rates), "rates"
	}
	repeats := max(c.Repeats, 1)
	n := cells * max(variants, 1) * ladder * repeats
	field := ladderField
	switch {
	case cells >= ladder && cells >= repeats:
		field = "cells"
	case repeats > ladder:
		field = "repeats"
	}
	what := fmt.Sprintf("%d cells × %d %s", cells, ladder, ladderField)
	if variants > 1 {
		what = fmt.Sprintf("%d cells × %d variants × %d %s", cells, variants, ladder, ladderField)
	}
	if repeats > 1 {
		what += fmt.Sprintf(" × %d repeats", repeats)
	}
	return n, []string{field}, what
}

// validateDuplicates refuses a cell or a ladder point given twice: every
// cell × ladder point is one row under one cell id, and a second one
// would measure the same id again.
func (s *Stage) validateDuplicates(bad func([]string, string, ...any)) {
	c := &s.cfg
	seen := map[string]int{}
	for i, cell := range c.Cells {
		k := cell.key()
		if j, dup := seen[k]; dup {
			what := cell.shape()
			if len(cell.Server) > 0 {
				what += " " + cell.serverVars(" ")
			}
			bad([]string{"cells", fmt.Sprint(i)}, "the same cell as cells.%d (%s): each cell × ladder point is one row under one cell id; give it once", j, what)
			continue
		}
		seen[k] = i
	}
	if len(c.Rates) > 0 {
		seenRate := map[string]int{}
		for i, r := range c.Rates {
			k := fmt.Sprintf("%g", r) // as the cell id writes it (r2)
			if j, dup := seenRate[k]; dup {
				bad([]string{"rates", fmt.Sprint(i)}, "%s is already on the ladder (rates.%d): each point is one row under one cell id; give it once", k, j)
				continue
			}
			seenRate[k] = i
		}
		return
	}
	seenConc := map[int]int{}
	for i, n := range c.Concurrency {
		if j, dup := seenConc[n]; dup {
			bad([]string{"concurrency", fmt.Sprint(i)}, "%d is already on the ladder (concurrency.%d): each point is one row under one cell id; give it once", n, j)
			continue
		}
		seenConc[n] = i
	}
}
