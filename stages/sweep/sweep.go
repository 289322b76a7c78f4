// Package sweep is the `sweep` stage: cells × a concurrency ladder over an
// OpenAI-compatible server, one point at a time, with warm-up passes.
package sweep

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:      "sweep",
	Doc:       "measure cells (isl:osl) × a concurrency ladder: ttft, itl, tpot, throughput",
	Measuring: true,
	Schema:    schema.KindSchema{Def: "#Sweep", Source: schemaSource},
	New:       New,
}

// Cell is one input:output shape.
type Cell struct {
	ISL int `json:"isl"`
	OSL int `json:"osl"`
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target      string            `json:"target"`
	Model       string            `json:"model"`
	Endpoint    string            `json:"endpoint"`
	Stream      bool              `json:"stream"`
	Cells       []Cell            `json:"cells"`
	Concurrency []int             `json:"concurrency"`
	Requests    int               `json:"requests"`
	Warmup      int               `json:"warmup"`
	Iterations  int               `json:"iterations"`
	Prompts     string            `json:"prompts"`
	Seed        int64             `json:"seed"`
	ForceOSL    bool              `json:"force_osl"`
	Headers     map[string]string `json:"headers"`
	Body        map[string]any    `json:"body"`
}

// Stage is a configured sweep.
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

// Validate checks the configuration against the plan without side effects.
func (s *Stage) Validate(p *schema.Plan) error {
	var errs schema.Errors
	if len(s.cfg.Cells) == 0 {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf("cells"), Msg: fmt.Sprintf("stages.%s.cells: no cells to measure", s.spec.Name)})
	}
	if len(s.cfg.Concurrency) == 0 {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf("concurrency"), Msg: fmt.Sprintf("stages.%s.concurrency: empty ladder", s.spec.Name)})
	}
	if max := p.Model.MaxModelLen; max > 0 {
		for i, c := range s.cfg.Cells {
			if c.ISL+c.OSL > max {
				errs = append(errs, schema.Error{Pos: s.spec.PosOf("cells", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.cells[%d]: isl+osl = %d exceeds model.max_model_len %d", s.spec.Name, i, c.ISL+c.OSL, max)})
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// point is one cell at one ladder point.
type point struct {
	cell        Cell
	concurrency int
}

// CellID is deterministic, so --resume can recognise finished cells.
func cellID(stage string, p point) string {
	return fmt.Sprintf("%s/%d:%d/c%d", stage, p.cell.ISL, p.cell.OSL, p.concurrency)
}

// Run measures every point in order. A point that fails becomes an error
// row and the sweep goes on; when the context ends (the server died, a
// timeout, Ctrl-C) the running point is an error row, the rest are
// skipped rows, and Run returns the cause.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	model := env.ModelName(s.cfg.Model)
	maxC := slices.Max(s.cfg.Concurrency)
	t := &loadgen.Target{
		BaseURL:   target.URL,
		Model:     model,
		Endpoint:  loadgen.Endpoint(s.cfg.Endpoint),
		Stream:    s.cfg.Stream,
		Headers:   map[string]string{},
		ExtraBody: map[string]any{},
		HTTP:      loadgen.NewHTTPClient(maxC),
	}
	defer t.HTTP.CloseIdleConnections()
	for k, v := range s.cfg.Headers {
		t.Headers[k] = os.ExpandEnv(v)
	}
	for k, v := range s.cfg.Body {
		t.ExtraBody[k] = v
	}

	var points []point
	for _, c := range s.cfg.Cells {
		for _, conc := range s.cfg.Concurrency {
			points = append(points, point{cell: c, concurrency: conc})
		}
	}
	c1 := map[Cell]float64{} // decode_tok_s at concurrency 1, per cell
	var stopErr error
	for i, p := range points {
		base := results.Cell{
			Stage: env.Stage.Name, CellID: cellID(env.Stage.Name, p), Model: model, Engine: target.Engine,
			Endpoint: s.cfg.Endpoint, ISL: int64(p.cell.ISL), OSL: int64(p.cell.OSL), Concurrency: int64(p.concurrency),
		}
		if stopErr != nil {
			row := base
			row.StartedAt = time.Now().UTC()
			row.Status, row.Reason = results.StatusSkipped, "not run: "+stopErr.Error()
			if err := env.Emit(row, nil); err != nil {
				return nil, err
			}
			continue
		}
		if target.Restart != nil {
			if err := target.Restart(ctx); err != nil {
				stopErr = fmt.Errorf("restarting the server before the cell: %w", err)
				row := base
				row.StartedAt = time.Now().UTC()
				row.Status, row.Reason = results.StatusError, stopErr.Error()
				if err := env.Emit(row, nil); err != nil {
					return nil, err
				}
				continue
			}
		}
		fmt.Fprintf(env.Progress, "  %s [%d/%d] %d:%d c=%d …\n", env.Stage.Name, i+1, len(points), p.cell.ISL, p.cell.OSL, p.concurrency)
		row, reqs := s.measure(ctx, t, p, base)
		if ctx.Err() != nil {
			stopErr = context.Cause(ctx)
			row.Status, row.Reason = results.StatusError, stopErr.Error()
		}
		if p.concurrency == 1 && row.Status == results.StatusOK {
			c1[p.cell] = row.DecodeTokS
		}
		if v, ok := c1[p.cell]; ok && v > 0 && row.DecodeTokS > 0 {
			row.SpeedupVsC1 = row.DecodeTokS / v
			row.BatchingEfficiency = row.SpeedupVsC1 / float64(p.concurrency)
		}
		if err := env.Emit(row, reqs); err != nil {
			return nil, err
		}
		fmt.Fprintf(env.Progress, "  %s %d:%d c=%d: %s ttft %.1f ms, itl p50 %.2f ms p99 %.2f ms, %.0f tok/s %s\n",
			env.Stage.Name, p.cell.ISL, p.cell.OSL, p.concurrency, row.Status, row.TTFTMs, row.ITLP50Ms, row.ITLP99Ms, row.DecodeTokS, row.Reason)
	}
	if stopErr != nil {
		return nil, stopErr
	}
	return &pipeline.Outputs{}, nil
}

// measure runs the warm-up passes, then the timed ones, and builds the row.
func (s *Stage) measure(ctx context.Context, t *loadgen.Target, p point, row results.Cell) (results.Cell, []results.Request) {
	n := s.cfg.Requests
	if n == 0 {
		n = max(8, 2*p.concurrency)
	}
	// The same seed per cell, whatever the ladder point, so every point
	// sees the same prompts.
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(p.cell.ISL)<<32|uint64(p.cell.OSL)))
	var warmSet []string
	prompt := func() string {
		return loadgen.SyntheticPrompt(rng, p.cell.ISL)
	}
	if s.cfg.Prompts == "warm" {
		for i := 0; i < n; i++ {
			warmSet = append(warmSet, prompt())
		}
	}
	next := func(i int) loadgen.Request {
		var pr string
		if warmSet != nil {
			pr = warmSet[i%len(warmSet)]
		} else {
			pr = prompt()
		}
		return loadgen.Request{Prompt: pr, MaxTokens: p.cell.OSL}
	}
	if s.cfg.ForceOSL && t.Endpoint != loadgen.Embeddings {
		t.ExtraBody["ignore_eos"] = true
		t.ExtraBody["min_tokens"] = p.cell.OSL
	}
	var mu sync.Mutex
	row.StartedAt = time.Now().UTC()
	var warmTTFT []float64
	for pass := 0; pass < s.cfg.Warmup && ctx.Err() == nil; pass++ {
		var rs []loadgen.Result
		loadgen.RunClosed(ctx, t, p.concurrency, n, func(i int) loadgen.Request {
			mu.Lock()
			defer mu.Unlock()
			return next(i)
		}, func(i int, r loadgen.Result) {
			mu.Lock()
			rs = append(rs, r)
			mu.Unlock()
		})
		if pass == 0 && len(rs) > 0 {
			row.FirstCallMs = ms(rs[0].E2EL())
		}
		warmTTFT = warmTTFT[:0]
		for _, r := range rs {
			if r.OK() {
				warmTTFT = append(warmTTFT, ms(r.TTFT()))
			}
		}
	}
	var timed []loadgen.Result
	for it := 0; it < s.cfg.Iterations && ctx.Err() == nil; it++ {
		loadgen.RunClosed(ctx, t, p.concurrency, n, func(i int) loadgen.Request {
			mu.Lock()
			defer mu.Unlock()
			return next(i)
		}, func(i int, r loadgen.Result) {
			mu.Lock()
			timed = append(timed, r)
			mu.Unlock()
		})
	}
	if s.cfg.Warmup == 0 && len(timed) > 0 {
		row.FirstCallMs = ms(timed[0].E2EL())
	}
	row.Requests = int64(len(timed))
	fillRow(&row, timed, warmTTFT, s.cfg)
	return row, requestRows(row, timed)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
