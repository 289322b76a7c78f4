// Package validate is the `validate` stage: real documents sent through
// the load of a synthetic cell an earlier sweep measured in this run, and
// each metric's real/synthetic ratio (the seed's bench-realworld and
// bench-realworld-embeddings: "real-world docs are 0.3-0.9x synthetic
// performance"). docs/PLANS.md, "Real-document validation".
package validate

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// What this kind implements, checked by the compiler.
var _ pipeline.Stage = (*Stage)(nil)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:      "validate",
	Doc:       "real documents at a sweep's synthetic cell (same endpoint, osl, concurrency): real/synthetic ratios, asserted within a band (default 0.3-0.9)",
	Measuring: true,
	Schema:    schema.KindSchema{Def: "#Validate", Source: client.WithSchema(schemaSource)},
	New:       New,
}

// Stage is a configured validation.
type Stage struct {
	spec         *schema.Stage
	cfg          Config
	globs        []string
	stallTimeout time.Duration
}

// Point is the synthetic cell the documents are measured against, as the
// sweep's load shape gives it.
type Point struct {
	Endpoint    string
	ISL, OSL    int
	Concurrency int
	Seed        int64
}

// point picks the synthetic cell from the sweep's load shape: the cell
// the plan names (else the first) at the concurrency it names (else the
// first of the ladder). The error says what the sweep has instead.
func (s *Stage) point(l pipeline.LoadShape) (Point, []string, string) {
	p := Point{Endpoint: l.Endpoint, Seed: l.Seed}
	if len(l.Rates) > 0 {
		return p, []string{"against"}, fmt.Sprintf("stages.%s runs an open loop (rates): validate compares at a closed-loop point; give the sweep a concurrency ladder", s.cfg.Against)
	}
	if len(l.Cells) == 0 || len(l.Concurrency) == 0 {
		return p, []string{"against"}, fmt.Sprintf("stages.%s measures no cell at any concurrency", s.cfg.Against)
	}
	p.ISL, p.OSL = l.Cells[0].ISL, l.Cells[0].OSL
	if s.cfg.Cell != "" {
		found := false
		var have []string
		for _, c := range l.Cells {
			have = append(have, fmt.Sprintf("%d:%d", c.ISL, c.OSL))
			if fmt.Sprintf("%d:%d", c.ISL, c.OSL) == s.cfg.Cell {
				p.ISL, p.OSL, found = c.ISL, c.OSL, true
				break
			}
		}
		if !found {
			return p, []string{"cell"}, fmt.Sprintf("stages.%s has no cell %s (its cells: %s)", s.cfg.Against, s.cfg.Cell, strings.Join(have, ", "))
		}
	}
	p.Concurrency = l.Concurrency[0]
	if s.cfg.Concurrency > 0 {
		if !slices.Contains(l.Concurrency, s.cfg.Concurrency) {
			return p, []string{"concurrency"}, fmt.Sprintf("stages.%s measures no point at concurrency %d (its ladder: %v)", s.cfg.Against, s.cfg.Concurrency, l.Concurrency)
		}
		p.Concurrency = s.cfg.Concurrency
	}
	return p, nil, ""
}

// shape finds the sweep named by `against` among peers and its load shape.
func (s *Stage) shape(peer func(string) (pipeline.Stage, bool), plan *schema.Plan) (pipeline.LoadShape, string) {
	st, ok := peer(s.cfg.Against)
	if !ok {
		if plan != nil && plan.Stage(s.cfg.Against) != nil {
			return pipeline.LoadShape{}, fmt.Sprintf("stages.%s did not decode, so the cell to compare with is unknown", s.cfg.Against)
		}
		return pipeline.LoadShape{}, fmt.Sprintf("no stage named %q to validate against", s.cfg.Against)
	}
	shaper, ok := st.(pipeline.LoadShaper)
	if !ok {
		return pipeline.LoadShape{}, fmt.Sprintf("stages.%s applies no known load (it is not a sweep), so there is no synthetic cell to compare with", s.cfg.Against)
	}
	return shaper.LoadShape(), ""
}

// Validate checks the configuration against the sweep it names, without
// side effects beyond adding the band's assertions (bandAssertions).
func (s *Stage) Validate(c *pipeline.Check) error {
	var errs schema.Errors
	bad := func(field []string, msg string) {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf(field...), Msg: fmt.Sprintf("stages.%s.%s: %s", s.spec.Name, strings.Join(field, "."), msg)})
	}
	errs = append(errs, s.cfg.Check(s.spec)...)
	l, why := s.shape(c.Peer, c.Plan)
	endpoint := ""
	if why != "" {
		bad([]string{"against"}, why)
	} else {
		p, field, why := s.point(l)
		if why != "" {
			bad(field, why)
		}
		endpoint = p.Endpoint
		errs = append(errs, s.cfg.CheckReasoning(s.spec, endpoint)...)
		errs = append(errs, s.cfg.CheckConstraints(s.spec, endpoint)...)
		if !slices.Contains(s.spec.Needs, s.cfg.Against) {
			// Its row must exist when this stage runs.
			bad([]string{"against"}, fmt.Sprintf("stages.%s must run first: add it to needs", s.cfg.Against))
		}
	}
	if len(s.globs) == 0 {
		bad([]string{"documents"}, "no documents: give a glob of text or Markdown files, or JSONL files")
	}
	for i, g := range s.globs {
		if _, err := filepath.Match(g, ""); err != nil {
			bad([]string{"documents"}, fmt.Sprintf("glob %d %q: %v", i, g, err))
		}
	}
	if lo, hi := s.cfg.Band[0], s.cfg.Band[1]; lo > hi {
		bad([]string{"band"}, fmt.Sprintf("[%g, %g]: the low end is above the high end", lo, hi))
	}
	if len(errs) > 0 {
		return errs
	}
	s.bandAssertions(endpoint)
	return nil
}

// bandColumns are the columns the band is asserted on: the plan's, else
// the throughput the seed's band is about (decode tokens/s; input tokens/s
// for embeddings, which produce no output tokens).
func (s *Stage) bandColumns(endpoint string) []string {
	if s.cfg.BandOn != nil {
		return *s.cfg.BandOn
	}
	if endpoint == "embeddings" {
		return []string{results.ColTotalTokSRatio}
	}
	return []string{results.ColDecodeTokSRatio}
}

// Run measures the documents and emits one row with the ratios.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	l, why := s.shape(env.Peer, env.Plan)
	if why != "" {
		return nil, fmt.Errorf("stages.%s.against: %s", env.Stage.Name, why)
	}
	p, _, why := s.point(l)
	if why != "" {
		return nil, fmt.Errorf("stages.%s: %s", env.Stage.Name, why)
	}
	model := env.ModelName(s.cfg.Model)
	row := results.Cell{
		Stage: env.Stage.Name, CellID: fmt.Sprintf("%s/docs/%d:%d/c%d", env.Stage.Name, p.ISL, p.OSL, p.Concurrency),
		Model: model, Engine: target.Engine, Endpoint: p.Endpoint, ISL: int64(p.ISL), OSL: int64(p.OSL),
		Concurrency: int64(p.Concurrency), StartedAt: time.Now().UTC(),
	}
	if env.CellDone(row.CellID) {
		return &pipeline.Outputs{}, nil // finished in the run being resumed
	}
	synth, why := s.synthetic(env.StageRows(s.cfg.Against), p)
	if why != "" {
		// Never a ratio against nothing: the row says why there is none,
		// and nothing is sent.
		row.Status, row.Reason = results.StatusError, why
		row.EngineVersion = "unknown"
		return &pipeline.Outputs{}, env.Emit(row, nil)
	}
	row.AgainstCellID, row.SyntheticEffectiveISL = synth.CellID, synth.EffectiveISL
	docs, err := s.documents(env.Plan)
	if err != nil {
		row.Status, row.Reason = results.StatusError, fmt.Sprintf("stages.%s.documents: %v", env.Stage.Name, err)
		row.EngineVersion = synth.EngineVersion
		return &pipeline.Outputs{}, env.Emit(row, nil)
	}
	row.Documents = int64(len(docs))
	t, err := s.cfg.NewTarget(env.Stage.Name, target.URL, model, loadgen.Endpoint(p.Endpoint), s.cfg.Stream, p.Concurrency)
	if err != nil {
		return nil, err
	}
	t.FirstTokenTimeout = s.stallTimeout
	defer t.HTTP.CloseIdleConnections()
	info := loadgen.Discover(ctx, t, target.Engine)
	row.EngineVersion = synth.EngineVersion
	if info.Version != "" {
		row.EngineVersion = info.Version
	}
	if (row.Engine == "" || row.Engine == engines.Custom.Name) && info.Engine != "" {
		row.Engine = info.Engine
	}
	if info.MaxModelLen > 0 {
		row.MaxModelLen = results.Some(int64(info.MaxModelLen))
	}
	reqs := s.measure(ctx, env, t, p, docs, &row)
	s.ratios(&row, synth)
	if env.Log != nil {
		fmt.Fprintf(env.Log, "benchrun: %d documents at %s: %s %s; decode ratio %s, ttft ratio %s, prefill ratio %s\n",
			len(docs), synth.CellID, row.Status, row.Reason, opt(row.DecodeTokSRatio), opt(row.TTFTRatio), opt(row.PrefillTokSRatio))
	}
	fmt.Fprintf(env.Progress, "  %s: %d documents (effective isl %s) vs %s (isl %s): decode ×%s, prefill ×%s, ttft ×%s, e2el ×%s %s\n",
		env.Stage.Name, len(docs), opt(row.EffectiveISL), synth.CellID, opt(synth.EffectiveISL), opt(row.DecodeTokSRatio),
		opt(row.PrefillTokSRatio), opt(row.TTFTRatio), opt(row.E2ELRatio), row.Reason)
	if err := env.Emit(row, results.AsRequests(reqs)); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return &pipeline.Outputs{}, nil
}

// synthetic finds the sweep's current row of the point (the latest
// measurement; with repeats, the last ok repeat), or says why there is
// none to compare with.
func (s *Stage) synthetic(rows []results.Cell, p Point) (results.Cell, string) {
	var match []results.Cell
	for _, r := range rows {
		if r.ISL == int64(p.ISL) && r.OSL == int64(p.OSL) && r.Concurrency == int64(p.Concurrency) && r.Rate == 0 {
			match = append(match, r)
		}
	}
	label := fmt.Sprintf("%d:%d at concurrency %d", p.ISL, p.OSL, p.Concurrency)
	if len(match) == 0 {
		return results.Cell{}, fmt.Sprintf("stages.%s measured no synthetic cell %s in this run, so there is nothing to compare the documents with", s.cfg.Against, label)
	}
	for i := len(match) - 1; i >= 0; i-- {
		if match[i].Status == results.StatusOK {
			return match[i], ""
		}
	}
	m := match[len(match)-1]
	return results.Cell{}, fmt.Sprintf("the synthetic cell %s (%s) is %s: %s; no ratio against a failed measurement", m.CellID, label, m.Status, m.Reason)
}

// documents reads the documents: each text or Markdown file one, each
// JSONL record's field one; globs relative to the plan file, in order,
// each file once, README-like files (exclude) left out.
func (s *Stage) documents(plan *schema.Plan) ([]string, error) {
	dir := ""
	if plan != nil && plan.Path != "" {
		dir = filepath.Dir(plan.Path)
	}
	seen := map[string]bool{}
	var docs []string
	for _, g := range s.globs {
		if !filepath.IsAbs(g) && dir != "" {
			g = filepath.Join(dir, g)
		}
		files, err := filepath.Glob(g)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s matches no file", g)
		}
		for _, f := range files {
			if seen[f] || s.excluded(f) {
				continue
			}
			seen[f] = true
			if st, err := os.Stat(f); err != nil || st.IsDir() {
				continue
			}
			format := loadgen.FormatText
			if strings.HasSuffix(f, ".jsonl") {
				format = loadgen.FormatJSONL
			}
			d, err := loadgen.LoadDataset(loadgen.DatasetSpec{Path: f, Format: format, Field: s.cfg.Field})
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents in %s", strings.Join(s.globs, ", "))
	}
	return docs, nil
}

func (s *Stage) excluded(f string) bool {
	for _, x := range s.cfg.Exclude {
		if ok, _ := filepath.Match(x, filepath.Base(f)); ok {
			return true
		}
	}
	return false
}

// requests is a timed pass's request count: the plan's, else every
// document at least once and at least the sweep's own default for a
// closed-loop point (max(8, 2 × concurrency)), in whole rounds of the
// documents, so each is sent equally often.
func (s *Stage) requests(docs, concurrency int) int {
	if s.cfg.Requests > 0 {
		return s.cfg.Requests
	}
	n := max(docs, 8, 2*concurrency)
	return (n + docs - 1) / docs * docs
}

// measure sends the warm-up passes and the timed pass through the load
// generator, and fills the row from the timed one.
func (s *Stage) measure(ctx context.Context, env *pipeline.Env, t *loadgen.Target, p Point, docs []string, row *results.Cell) []results.Request {
	src := &loadgen.PromptSource{Dataset: docs, Seed: uint64(p.Seed), CellKey: uint64(p.ISL)<<32 | uint64(p.OSL),
		PointKey: loadgen.PointKey("validate:"+env.Stage.Name, p.Concurrency, 0), Vocab: loadgen.AssumedVocab()}
	src.Prepare()
	var body map[string]any
	maxTokens, expect := p.OSL, 0
	if p.Endpoint == string(loadgen.Embeddings) {
		maxTokens = 0
	} else if s.cfg.ForceOSL {
		body = map[string]any{"ignore_eos": true, "min_tokens": p.OSL}
		expect = p.OSL
	}
	n := s.requests(len(docs), p.Concurrency)
	b := *t
	b.Timeout = s.stallTimeout + time.Duration(max(p.OSL, 1))*time.Second // no request unbounded, as the sweep bounds its own
	pass := func(k int) ([]loadgen.Result, time.Duration, error) {
		var mu sync.Mutex
		var sent []sentResult
		st, err := loadgen.Run(ctx, &b, loadgen.Load{Concurrency: p.Concurrency, Requests: n}, func(i int) loadgen.Request {
			return loadgen.Request{Prompt: src.Prompt(k, i), MaxTokens: maxTokens, Body: body, ExpectTokens: expect}
		}, func(i int, r loadgen.Result) {
			mu.Lock()
			sent = append(sent, sentResult{i, r})
			mu.Unlock()
		})
		slices.SortFunc(sent, func(a, b sentResult) int { return a.i - b.i })
		rs := make([]loadgen.Result, len(sent))
		var last time.Time
		for i := range sent {
			rs[i] = sent[i].r
			if rs[i].Finished.After(last) {
				last = rs[i].Finished
			}
		}
		window := time.Duration(0)
		if !last.IsZero() {
			window = last.Sub(st.Start)
		}
		return rs, window, err
	}
	k := 0
	for ; k < s.cfg.Warmup && ctx.Err() == nil; k++ {
		_, _, _ = pass(k)
	}
	rs, window, err := pass(k)
	reqs := fillRow(row, rs, window, measure.SLO(env.Plan.SLO))
	if err != nil {
		row.Status, row.Reason = results.StatusError, err.Error()
	}
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		row.Status, row.Reason = results.StatusError, c.Error()
	}
	return reqs
}

type sentResult struct {
	i int
	r loadgen.Result
}

// ratios fills each real/synthetic ratio where both sides were measured
// and the synthetic one is not 0 (nil otherwise: no ratio against nothing).
func (s *Stage) ratios(row *results.Cell, synth results.Cell) {
	ratio := func(real, syn *float64) *float64 {
		if real == nil || syn == nil || *syn == 0 || math.IsNaN(*real) || math.IsNaN(*syn) {
			return nil
		}
		return results.Some(*real / *syn)
	}
	row.DecodeTokSRatio = ratio(row.DecodeTokS, synth.DecodeTokS)
	row.OutputTokSRatio = ratio(row.OutputTokS, synth.OutputTokS)
	row.PrefillTokSRatio = ratio(row.PrefillTokS, synth.PrefillTokS)
	row.TotalTokSRatio = ratio(row.TotalTokS, synth.TotalTokS)
	row.ReqSRatio = ratio(row.ReqS, synth.ReqS)
	row.TTFTRatio = ratio(row.TTFTMs, synth.TTFTMs)
	row.TPOTRatio = ratio(row.TPOTMs, synth.TPOTMs)
	row.ITLRatio = ratio(row.ITLMs, synth.ITLMs)
	row.E2ELRatio = ratio(row.E2ELMs, synth.E2ELMs)
}

func opt(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}
