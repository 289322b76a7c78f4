// Package warmup is the `warmup` stage: untimed requests at the load the
// next stage will apply, until time-to-first-token stops moving.
package warmup

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"cuelang.org/go/cue"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "warmup",
	Doc:    "untimed requests at the next stage's concurrency, a fixed count or until TTFT settles",
	Schema: schema.KindSchema{Def: "#Warmup", Source: schemaSource},
	New:    New,
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target      string `json:"target"`
	Model       string `json:"model"`
	Endpoint    string `json:"endpoint"`
	Concurrency int    `json:"concurrency"`
	ISL         int    `json:"isl"`
	OSL         int    `json:"osl"`
	Requests    int    `json:"requests"`
	Settle      struct {
		Window      int     `json:"window"`
		Tolerance   float64 `json:"tolerance"`
		MaxRequests int     `json:"max_requests"`
	} `json:"settle"`
	RequireSettled bool              `json:"require_settled"`
	Headers        map[string]string `json:"headers"`
	Body           map[string]any    `json:"body"`
}

// Stage is a configured warm-up.
type Stage struct {
	spec *schema.Stage
	cfg  Config
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	return st, nil
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(p *schema.Plan) error {
	if len(followers(p, s.spec.Name)) == 0 && s.cfg.Concurrency == 0 {
		return schema.Error{Pos: s.spec.Pos, Msg: fmt.Sprintf("stages.%s: no stage needs this warm-up, so its concurrency is unknown: add it to the next stage's needs, or set concurrency", s.spec.Name)}
	}
	if s.cfg.Requests == 0 {
		// Settling compares two windows: with fewer requests allowed than
		// that, the warm-up could only ever report that TTFT never settled.
		window := s.window(s.ShapeFor(p))
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

// followers are the stages that need this one.
func followers(p *schema.Plan, name string) []*schema.Stage {
	var out []*schema.Stage
	for _, st := range p.Stages {
		if slices.Contains(st.Needs, name) {
			out = append(out, st)
		}
	}
	return out
}

// ShapeFor works out the load from the configuration and, for what it
// leaves open, from the stages that follow: their largest concurrency,
// the first one's endpoint and first cell.
func (s *Stage) ShapeFor(p *schema.Plan) Shape {
	sh := Shape{Endpoint: s.cfg.Endpoint, Concurrency: s.cfg.Concurrency, ISL: s.cfg.ISL, OSL: s.cfg.OSL}
	maxC := 0
	maxRate := 0.0
	fixedShape := sh.ISL != 0 || sh.OSL != 0
	for _, st := range followers(p, s.spec.Name) {
		var rates []float64
		if v := st.Value.LookupPath(cue.ParsePath("rates")); v.Exists() && v.Decode(&rates) == nil && len(rates) > 0 {
			// An open loop's concurrency field is the unused default.
			for _, r := range rates {
				maxRate = max(maxRate, r)
			}
			if sh.Arrival == "" {
				sh.Arrival, _ = st.Value.LookupPath(cue.ParsePath("arrival")).String()
			}
		} else {
			var conc []int
			if v := st.Value.LookupPath(cue.ParsePath("concurrency")); v.Exists() && v.Decode(&conc) == nil {
				for _, c := range conc {
					maxC = max(maxC, c)
				}
			}
		}
		if sh.Endpoint == "" {
			if ep, err := st.Value.LookupPath(cue.ParsePath("endpoint")).String(); err == nil && ep != "embeddings" {
				sh.Endpoint = ep
			}
		}
		if sh.Calibrate == "" {
			sh.Calibrate, _ = st.Value.LookupPath(cue.ParsePath("calibrate")).String()
			if seed, err := st.Value.LookupPath(cue.ParsePath("seed")).Int64(); err == nil {
				sh.Seed = seed
			}
		}
		var cells []struct {
			ISL int `json:"isl"`
			OSL int `json:"osl"`
		}
		if v := st.Value.LookupPath(cue.ParsePath("cells")); v.Exists() && v.Decode(&cells) == nil && len(cells) > 0 {
			if sh.ISL == 0 {
				sh.ISL = cells[0].ISL
			}
			if sh.OSL == 0 {
				sh.OSL = cells[0].OSL
			}
			if !fixedShape {
				for _, c := range cells {
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
	sh := s.ShapeFor(env.Plan)
	t := &loadgen.Target{
		BaseURL: target.URL, Model: env.ModelName(s.cfg.Model), Endpoint: loadgen.Endpoint(sh.Endpoint), Stream: true,
		Headers: map[string]string{}, ExtraBody: map[string]any{}, HTTP: loadgen.NewHTTPClient(max(sh.Concurrency, int(min(sh.Rate, 1024)))),
	}
	defer t.HTTP.CloseIdleConnections()
	headers, err := pipeline.ExpandHeaders(env.Stage.Name, s.cfg.Headers)
	if err != nil {
		return nil, err
	}
	t.Headers = headers
	for k, v := range s.cfg.Body {
		t.ExtraBody[k] = v
	}
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
	out.Done, out.DoneReason, out.Restart = nil, nil, nil
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
