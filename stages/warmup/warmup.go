// Package warmup is the `warmup` stage: untimed requests at the load the
// next stage will apply, until time-to-first-token stops moving.
package warmup

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage  = (*Stage)(nil)
	_ pipeline.Warner = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "warmup",
	Doc:    "untimed requests at the next stage's concurrency, a fixed count or until TTFT settles",
	Schema: schema.KindSchema{Def: "#Warmup", Source: client.WithSchema(schemaSource)},
	New:    New,
}

// Stage is a configured warm-up.
type Stage struct {
	spec *schema.Stage
	cfg  Config
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(c *pipeline.Check) error {
	errs := s.cfg.Check(s.spec)
	// The endpoint is the warm-up's own or its followers' (ShapeFor).
	ep := cmp.Or(s.ShapeFor(c.Dependents()).Endpoint, "completions")
	errs = append(errs, s.cfg.CheckReasoning(s.spec, ep)...)
	errs = append(errs, s.cfg.CheckConstraints(s.spec, ep)...)
	if len(errs) > 0 {
		return errs
	}
	if len(followers(c.Dependents(), s.spec.Name)) == 0 && s.cfg.Concurrency == 0 {
		return schema.Error{Pos: s.spec.Pos, Msg: fmt.Sprintf("stages.%s: no stage needs this warm-up, so its concurrency is unknown: add it to the next stage's needs, or set concurrency", s.spec.Name)}
	}
	if s.cfg.Requests == 0 {
		// Settling compares two windows: with fewer requests allowed than
		// that, the warm-up could only ever report that TTFT never settled.
		window := s.window(s.ShapeFor(c.Dependents()))
		if s.cfg.Settle.MaxRequests < 2*window {
			return schema.Error{Pos: s.spec.PosOf("settle", "max_requests"), Msg: fmt.Sprintf("stages.%s.settle.max_requests: %d cannot settle: comparing two windows of %d requests needs at least %d; raise max_requests, or lower settle.window", s.spec.Name, s.cfg.Settle.MaxRequests, window, 2*window)}
		}
	}
	return nil
}

// window is the number of requests per settling window: the plan's, or
// max(8, 2 × concurrency), so that a window spans a couple of rounds of
// the parallel sessions.
func (s *Stage) window(sh Shape) int {
	if s.cfg.Settle.Window > 0 {
		return s.cfg.Settle.Window
	}
	if sh.Rate > 0 {
		// An open loop's parallelism is rate × latency, unknown before it
		// runs: windows of 8 requests, the closed loop's floor.
		return 8
	}
	return max(8, 2*sh.Concurrency)
}

// Shape is the load a warm-up applies: the stage it prepares, open loop
// included.
type Shape struct {
	Endpoint    string
	Concurrency int
	// Rate, when positive, makes the warm-up an open loop at this many
	// requests per second (the largest rate of a rates-only sweep).
	Rate     float64
	Arrival  string
	ISL, OSL int
	// Cells are the follower's cells in order: the warm-up uses the first
	// that fits the server's context when ISL/OSL are not set.
	Cells     [][2]int
	Calibrate string
	Seed      int64
}

// Warnings are vet's warnings (pipeline.Warner): a warm-up that leaves
// its load to the stages that need it, when none of them says what load it
// applies (none is a pipeline.LoadShaper), warms with defaults that may be
// nothing like the load that follows; it says which.
func (s *Stage) Warnings(c *pipeline.Check) []schema.Error {
	fs := followers(c.Dependents(), s.spec.Name)
	var names []string
	for _, f := range fs {
		if _, ok := f.Stage.(pipeline.LoadShaper); ok {
			return nil
		}
		names = append(names, fmt.Sprintf("stages.%s (%s)", f.Spec.Name, f.Spec.Kind))
	}
	if len(fs) == 0 {
		return nil // Validate's error, or the warm-up's own concurrency
	}
	sh := s.ShapeFor(c.Dependents())
	var guessed []string
	for _, g := range []struct {
		field string
		set   bool
		value string
	}{
		{"concurrency", s.cfg.Concurrency > 0, fmt.Sprint(sh.Concurrency)},
		{"isl", s.cfg.ISL > 0, fmt.Sprint(sh.ISL)},
		{"osl", s.cfg.OSL > 0, fmt.Sprint(sh.OSL)},
	} {
		if !g.set {
			guessed = append(guessed, g.field+" "+g.value)
		}
	}
	if len(guessed) == 0 {
		return nil
	}
	return []schema.Error{{Pos: s.spec.Pos, Msg: fmt.Sprintf(
		"stages.%s: no stage that needs this warm-up says what load it applies (%s), so it warms with the defaults %s; set them on the warm-up to match the load that follows",
		s.spec.Name, strings.Join(names, ", "), strings.Join(guessed, ", "))}}
}

// followers are the stages among peers that need this one (the stages
// it prepares).
func followers(peers []pipeline.Peer, name string) []pipeline.Peer {
	var out []pipeline.Peer
	for _, p := range peers {
		if slices.Contains(p.Spec.Needs, name) {
			out = append(out, p)
		}
	}
	return out
}

// ShapeFor works out the load from the configuration and, for what it
// leaves open, from the stages among peers that need this one and say
// what load they apply (pipeline.LoadShaper): their largest concurrency
// (or, when they run open loops only, their largest rate), the first
// one's endpoint and calibration, and their cells. Stages that are not
// LoadShapers are passed over; with none, the defaults stand.
func (s *Stage) ShapeFor(peers []pipeline.Peer) Shape {
	sh := Shape{Endpoint: s.cfg.Endpoint, Concurrency: s.cfg.Concurrency, ISL: s.cfg.ISL, OSL: s.cfg.OSL}
	maxC := 0
	maxRate := 0.0
	fixedShape := sh.ISL != 0 || sh.OSL != 0
	for _, f := range followers(peers, s.spec.Name) {
		shaper, ok := f.Stage.(pipeline.LoadShaper)
		if !ok {
			continue
		}
		l := shaper.LoadShape()
		if len(l.Rates) > 0 {
			// An open loop's concurrency field is the unused default.
			for _, r := range l.Rates {
				maxRate = max(maxRate, r)
			}
			if sh.Arrival == "" {
				sh.Arrival = l.Arrival
			}
		} else {
			for _, c := range l.Concurrency {
				maxC = max(maxC, c)
			}
		}
		// Embeddings and rerank are not warmed as such (a warm-up request
		// is one prompt; a rerank one needs documents): completions, as
		// for embeddings, unless the warm-up says.
		if sh.Endpoint == "" && l.Endpoint != "embeddings" && l.Endpoint != "rerank" {
			sh.Endpoint = l.Endpoint
		}
		if sh.Calibrate == "" {
			sh.Calibrate, sh.Seed = l.Calibrate, l.Seed
		}
		if len(l.Cells) > 0 {
			if sh.ISL == 0 {
				sh.ISL = l.Cells[0].ISL
			}
			if sh.OSL == 0 {
				sh.OSL = l.Cells[0].OSL
			}
			if !fixedShape {
				for _, c := range l.Cells {
					sh.Cells = append(sh.Cells, [2]int{c.ISL, c.OSL})
				}
			}
		}
	}
	if sh.Concurrency == 0 && maxC == 0 && maxRate > 0 {
		sh.Rate = maxRate
		if sh.Arrival == "" {
			sh.Arrival = loadgen.ArrivalPoisson
		}
	}
	if sh.Calibrate == "" {
		sh.Calibrate = loadgen.CalibrateAuto
	}
	if sh.Concurrency == 0 && sh.Rate == 0 {
		sh.Concurrency = max(maxC, 1)
	}
	if sh.Endpoint == "" {
		sh.Endpoint = "completions"
	}
	if sh.ISL == 0 {
		sh.ISL = 128
	}
	if sh.OSL == 0 {
		sh.OSL = 32
	}
	return sh
}

// Run sends the warm-up requests.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	sh := s.ShapeFor(env.Dependents())
	t, err := s.cfg.NewTarget(env.Stage.Name, target.URL, env.ModelName(s.cfg.Model), loadgen.Endpoint(sh.Endpoint), true, max(sh.Concurrency, int(min(sh.Rate, 1024))))
	if err != nil {
		return nil, err
	}
	defer t.HTTP.CloseIdleConnections()
	// Size prompts exactly as the sweep will (the same calibration, shared
	// through the cache), and never warm with a shape the server's context
	// cannot hold.
	info := loadgen.Discover(ctx, t, target.Engine)
	if limit := info.MaxModelLen; limit > 0 && sh.ISL+sh.OSL > limit {
		fits := false
		for _, c := range sh.Cells {
			if c[0]+c[1] <= limit {
				sh.ISL, sh.OSL, fits = c[0], c[1], true
				break
			}
		}
		if !fits {
			return nil, fmt.Errorf("no warm-up shape fits the server's context of %d tokens per request (%s): %d:%d needs %d", limit, info.ContextFrom, sh.ISL, sh.OSL, sh.ISL+sh.OSL)
		}
	}
	vocab := loadgen.AssumedVocab()
	calib := "prompt length not calibrated"
	if sh.Calibrate != loadgen.CalibrateOff {
		if v, err := loadgen.CalibrateCached(ctx, t, sh.Calibrate, info); err == nil {
			vocab, calib = v, fmt.Sprintf("prompts calibrated by %s", v.Method)
		} else {
			calib = "prompt length not calibrated: " + err.Error()
		}
	}
	src := &loadgen.PromptSource{ISL: sh.ISL, Seed: uint64(sh.Seed), CellKey: uint64(sh.ISL)<<32 | uint64(sh.OSL),
		PointKey: loadgen.PointKey("warmup:"+env.Stage.Name, sh.Concurrency, sh.Rate), Vocab: vocab}
	src.Prepare()
	window := s.window(sh)
	total := s.cfg.Requests
	fixed := total > 0
	if !fixed {
		total = s.cfg.Settle.MaxRequests
	}
	load := fmt.Sprintf("concurrency %d", sh.Concurrency)
	if sh.Rate > 0 {
		load = fmt.Sprintf("%g req/s (%s)", sh.Rate, sh.Arrival)
	}
	fmt.Fprintf(env.Progress, "  %s: %s at %s, %d:%d (%s), %s\n", env.Stage.Name, sh.Endpoint, load, sh.ISL, sh.OSL, calib,
		map[bool]string{true: fmt.Sprintf("%d requests", total), false: fmt.Sprintf("until TTFT settles (window %d, tolerance %.0f%%, at most %d requests)", window, 100*s.cfg.Settle.Tolerance, total)}[fixed])

	var mu sync.Mutex
	var ttfts []float64 // ms, in completion order, successful requests only
	var failed int
	var lastErr error
	settled := false
	hopeless := false
	var verdict string
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	// Once this many requests failed and none succeeded, every request
	// fails: stop with the server's answer instead of sending the rest.
	giveUp := max(3, min(sh.Concurrency, 8))
	l := loadgen.Load{Concurrency: sh.Concurrency, Requests: total}
	if sh.Rate > 0 {
		l.Schedule = &loadgen.Schedule{Rate: sh.Rate, Arrival: sh.Arrival, Burstiness: 1, Seed: uint64(sh.Seed) ^ 0x5741524d}
	}
	_, _ = loadgen.Run(runCtx, t, l, func(i int) loadgen.Request {
		return loadgen.Request{Prompt: src.Prompt(0, i), MaxTokens: sh.OSL}
	}, func(i int, r loadgen.Result) {
		mu.Lock()
		defer mu.Unlock()
		if runCtx.Err() != nil {
			return // cancelled by settling: not a failure
		}
		if !r.OK() {
			failed++
			lastErr = r.Err
			if len(ttfts) == 0 && failed >= giveUp {
				hopeless = true
				stop()
			}
			return
		}
		ttfts = append(ttfts, float64(r.TTFT())/float64(time.Millisecond))
		if !fixed && !settled {
			if ok, v := Settled(ttfts, window, s.cfg.Settle.Tolerance); ok {
				settled, verdict = true, v
				stop()
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	done := len(ttfts) + failed
	values := map[string]any{"warmup_requests": done, "warmup_failed": failed, "warmup_settled": settled}
	if len(ttfts) == 0 {
		if hopeless {
			return nil, fmt.Errorf("the first %d warm-up requests all failed, so the rest were not sent; the server answered: %w", done, lastErr)
		}
		return nil, fmt.Errorf("all %d warm-up requests failed; last error: %w", done, lastErr)
	}
	last := ttfts[max(0, len(ttfts)-window):]
	values["warmup_ttft_ms"] = median(last)
	summary := fmt.Sprintf("%d requests in %s, %d failed, TTFT median of the last %d: %.1f ms", done, time.Since(start).Round(time.Millisecond), failed, len(last), median(last))
	if failed > 0 {
		summary += fmt.Sprintf(" (last error: %v)", lastErr)
	}
	switch {
	case fixed:
		fmt.Fprintf(env.Progress, "  %s: %s\n", env.Stage.Name, summary)
	case settled:
		fmt.Fprintf(env.Progress, "  %s: TTFT settled (%s): %s\n", env.Stage.Name, verdict, summary)
	default:
		_, v := Settled(ttfts, window, s.cfg.Settle.Tolerance)
		msg := fmt.Sprintf("TTFT did not settle within %d requests (%s): %s", total, v, summary)
		fmt.Fprintf(env.Progress, "  %s: warning: %s\n", env.Stage.Name, msg)
		fmt.Fprintf(env.Log, "benchrun: %s\n", msg)
		if s.cfg.RequireSettled {
			return nil, errors.New(msg)
		}
	}
	fmt.Fprintf(env.Log, "benchrun: warm-up: %s\n", summary)
	out := *target
	out.Done, out.DoneReason, out.Restart, out.StartupS = nil, nil, nil, nil
	out.Values = values
	return &out, nil
}

// Settled reports whether the last window of TTFTs has a median within
// tolerance (a fraction) of the window before it, and says what it compared.
func Settled(ttfts []float64, window int, tolerance float64) (bool, string) {
	if len(ttfts) < 2*window {
		return false, fmt.Sprintf("%d of the %d requests two windows need", len(ttfts), 2*window)
	}
	prev := median(ttfts[len(ttfts)-2*window : len(ttfts)-window])
	last := median(ttfts[len(ttfts)-window:])
	change := math.Abs(last-prev) / prev
	if prev == 0 {
		change = math.Inf(1)
		if last == 0 {
			change = 0
		}
	}
	v := fmt.Sprintf("window medians %.1f ms then %.1f ms, %.1f%% apart, tolerance %.0f%%", prev, last, 100*change, 100*tolerance)
	return change <= tolerance, v
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
