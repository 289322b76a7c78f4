// Package json writes result.json in the run directory: one object per run
// whose cells carry the keys users of vLLM's `bench serve --save-result`
// know (request_throughput, output_throughput, mean_ttft_ms, p99_itl_ms,
// ...), plus benchrun's cell identity and the run's metadata stamps. The
// file is rewritten atomically after every cell, so it is current and whole
// even when a run is killed.
package json

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink        = (*Output)(nil)
	_ pipeline.VerdictSink = (*Output)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run.
var Kind = pipeline.SinkKind{
	Name:    "json",
	Doc:     "result.json: per-cell summaries under the key names of vLLM bench serve, plus --metadata stamps",
	Schema:  schema.KindSchema{Def: "#JSON", Source: schemaSource},
	Default: true,
	Writes:  FileName,
	Flags:   []string{"prefix"},
	New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
		prefix, err := spec.PrefixOnly()
		if err != nil {
			return nil, err
		}
		o := New()
		o.Prefix = prefix
		return o, nil
	},
}

// FileName is the output's name in the run directory.
const FileName = "result.json"

// Result is result.json.
type Result struct {
	results.Run
	SchemaVersion int          `json:"schema_version"`
	Cells         []CellResult `json:"cells"`
	Assertions    Assertions   `json:"assertions"`
}

// Assertions sums up the verdicts and lists them.
type Assertions struct {
	Checked  int               `json:"checked"`
	Failed   int               `json:"failed"`
	Verdicts []results.Verdict `json:"verdicts"`
}

// CellResult is one cell × ladder point, in vLLM `bench serve` terms first
// (same names, same units, same definitions: docs/RESULTS.md lists the
// mapping), then benchrun's own keys.
type CellResult struct {
	Date                 string   `json:"date"` // the cell's start, as vLLM writes it: 20060102-150405
	Backend              string   `json:"backend"`
	ModelID              string   `json:"model_id"`
	NumPrompts           int64    `json:"num_prompts"`
	RequestRate          *float64 `json:"request_rate"` // requests/s; null for a closed-loop cell (vLLM writes inf)
	MaxConcurrency       int64    `json:"max_concurrency"`
	Duration             float64  `json:"duration"`
	Completed            int64    `json:"completed"`
	Failed               int64    `json:"failed"`
	TotalInputTokens     int64    `json:"total_input_tokens"`
	TotalOutputTokens    int64    `json:"total_output_tokens"`
	RequestThroughput    *float64 `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput"`
	OutputThroughput     *float64 `json:"output_throughput"`
	TotalTokenThroughput *float64 `json:"total_token_throughput"`
	MeanTTFTMs           *float64 `json:"mean_ttft_ms"`
	MedianTTFTMs         *float64 `json:"median_ttft_ms"`
	StdTTFTMs            *float64 `json:"std_ttft_ms"`
	P90TTFTMs            *float64 `json:"p90_ttft_ms"`
	P99TTFTMs            *float64 `json:"p99_ttft_ms"`
	MeanTPOTMs           *float64 `json:"mean_tpot_ms"`
	MedianTPOTMs         *float64 `json:"median_tpot_ms"`
	StdTPOTMs            *float64 `json:"std_tpot_ms"`
	P90TPOTMs            *float64 `json:"p90_tpot_ms"`
	P99TPOTMs            *float64 `json:"p99_tpot_ms"`
	MeanITLMs            *float64 `json:"mean_itl_ms"`
	MedianITLMs          *float64 `json:"median_itl_ms"`
	StdITLMs             *float64 `json:"std_itl_ms"`
	P90ITLMs             *float64 `json:"p90_itl_ms"`
	P99ITLMs             *float64 `json:"p99_itl_ms"`
	MeanE2ELMs           *float64 `json:"mean_e2el_ms"`
	MedianE2ELMs         *float64 `json:"median_e2el_ms"`
	StdE2ELMs            *float64 `json:"std_e2el_ms"`
	P90E2ELMs            *float64 `json:"p90_e2el_ms"`
	P99E2ELMs            *float64 `json:"p99_e2el_ms"`

	// benchrun's keys.
	RunID       string            `json:"run_id"`
	Plan        string            `json:"plan"`
	Stage       string            `json:"stage"`
	CellID      string            `json:"cell_id"`
	Attempt     int64             `json:"attempt"` // the run attempt that measured the row (docs/RESULTS.md)
	StartedAt   time.Time         `json:"started_at"`
	ModelDigest string            `json:"model_digest,omitempty"`
	Endpoint    string            `json:"endpoint"`
	ISL         int64             `json:"isl"`
	OSL         int64             `json:"osl"`
	Concurrency int64             `json:"concurrency"`
	DecodeTokS  *float64          `json:"decode_tok_s"`
	PrefillTokS *float64          `json:"prefill_tok_s"`
	Status      string            `json:"status"`
	Reason      string            `json:"reason,omitempty"`
	Notes       string            `json:"notes,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// MarshalJSON adds the metadata stamps as top-level keys, as vLLM's
// --metadata does, where they do not collide with a key of the cell.
func (c CellResult) MarshalJSON() ([]byte, error) {
	type plain CellResult
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	return withMetadataKeys(b, c.Metadata)
}

// MarshalJSON adds the metadata stamps as top-level keys (see CellResult).
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	b, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	return withMetadataKeys(b, r.Metadata)
}

func withMetadataKeys(obj []byte, md map[string]string) ([]byte, error) {
	if len(md) == 0 {
		return obj, nil
	}
	var have map[string]json.RawMessage
	if err := json.Unmarshal(obj, &have); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		if _, taken := have[k]; !taken {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Write(obj[:len(obj)-1]) // drop the closing brace
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(md[k])
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// NewCellResult converts a cell row and its request rows. Means, medians
// and percentiles come from the cell row (measured once, by the stage);
// the standard deviations and token totals from the requests (a
// deviation without an ok request is null).
func NewCellResult(c results.Cell, reqs []results.Request) CellResult {
	r := CellResult{
		Date: c.StartedAt.UTC().Format("20060102-150405"), Backend: c.Engine, ModelID: c.Model,
		NumPrompts: c.Requests, MaxConcurrency: c.Concurrency, Duration: c.DurationS,
		Completed: c.Completed, Failed: c.Failed,
		RequestThroughput: c.ReqS, RequestGoodput: c.Goodput, OutputThroughput: c.OutputTokS, TotalTokenThroughput: c.TotalTokS,
		MeanTTFTMs: c.TTFTMs, MedianTTFTMs: c.TTFTP50Ms, P90TTFTMs: c.TTFTP90Ms, P99TTFTMs: c.TTFTP99Ms,
		MeanTPOTMs: c.TPOTMs, MedianTPOTMs: c.TPOTP50Ms, P90TPOTMs: c.TPOTP90Ms, P99TPOTMs: c.TPOTP99Ms,
		MeanITLMs: c.ITLMs, MedianITLMs: c.ITLP50Ms, P90ITLMs: c.ITLP90Ms, P99ITLMs: c.ITLP99Ms,
		MeanE2ELMs: c.E2ELMs, MedianE2ELMs: c.E2ELP50Ms, P90E2ELMs: c.E2ELP90Ms, P99E2ELMs: c.E2ELP99Ms,
		RunID: c.RunID, Plan: c.Plan, Stage: c.Stage, CellID: c.CellID, Attempt: results.AttemptOf(c.Attempt),
		StartedAt:   c.StartedAt.UTC().Truncate(time.Microsecond), // as the Parquet tables store it
		ModelDigest: c.ModelDigest, Endpoint: c.Endpoint, ISL: c.ISL, OSL: c.OSL, Concurrency: c.Concurrency,
		DecodeTokS: c.DecodeTokS, PrefillTokS: c.PrefillTokS,
		Status: c.Status, Reason: c.Reason, Notes: c.Notes, Metadata: c.Metadata,
	}
	if c.Rate > 0 && !math.IsInf(c.Rate, 0) {
		rate := c.Rate
		r.RequestRate = &rate
	}
	var ttft, tpot, itl, e2el []float64
	for _, q := range reqs {
		if q.Status != results.StatusOK || q.TTFTMs == nil || q.E2ELMs == nil {
			continue
		}
		r.TotalInputTokens += q.InputTokens
		r.TotalOutputTokens += q.OutputTokens
		ttft = append(ttft, *q.TTFTMs)
		e2el = append(e2el, *q.E2ELMs)
		if q.OutputTokens > 1 {
			tpot = append(tpot, (*q.E2ELMs-*q.TTFTMs)/float64(q.OutputTokens-1))
		}
		itl = append(itl, q.ChunkGapsMs...)
	}
	if len(reqs) == 0 {
		r.TotalInputTokens = int64(math.Round(results.ValueOr(c.EffectiveISL, 0) * float64(c.Completed)))
		r.TotalOutputTokens = int64(math.Round(results.ValueOr(c.EffectiveOSL, 0) * float64(c.Completed)))
	}
	r.StdTTFTMs, r.StdTPOTMs, r.StdITLMs, r.StdE2ELMs = std(ttft), std(tpot), std(itl), std(e2el)
	nullNonFinite(reflect.ValueOf(&r).Elem())
	return r
}

// nullNonFinite replaces NaN and ±Inf, which JSON cannot carry: a nullable
// metric becomes null (not measured), a plain number 0.
func nullNonFinite(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Float64 && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)):
			f.SetFloat(0)
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Float64 &&
			(math.IsNaN(f.Elem().Float()) || math.IsInf(f.Elem().Float(), 0)):
			f.SetZero()
		}
	}
}

// std is the population standard deviation (numpy's np.std, as vLLM uses);
// nil without samples.
func std(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return results.Some(math.Sqrt(ss / float64(len(xs))))
}

// Build assembles result.json's content.
func Build(run results.Run, cells []CellResult, verdicts []results.Verdict) Result {
	res := Result{Run: run, SchemaVersion: results.SchemaVersion, Cells: cells, Assertions: Assertions{Verdicts: []results.Verdict{}}}
	if res.Cells == nil {
		res.Cells = []CellResult{}
	}
	for _, v := range verdicts {
		v.Attempt = results.AttemptOf(v.Attempt)           // rows of older files count as attempt 1
		v.JudgedAt = v.JudgedAt.Truncate(time.Microsecond) // as the Parquet tables store it
		res.Assertions.Verdicts = append(res.Assertions.Verdicts, v)
	}
	res.Assertions.Checked = len(verdicts)
	for _, v := range verdicts {
		if !v.Passed {
			res.Assertions.Failed++
		}
	}
	return res
}

// Encode renders a result as indented JSON.
func Encode(res Result) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", FileName, err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", FileName, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Output writes result.json (and Prefix+".json" when Prefix is set).
type Output struct {
	Prefix string

	ri       *pipeline.RunInfo
	cells    []CellResult
	index    map[string]int // cell id → its place in cells
	verdicts []results.Verdict
	// The last write's size, cost and end: a large file (thousands of
	// cells) is written again only after ten times its cost, so the run
	// pays at most about a tenth of its time for it, not a write of every
	// cell so far after every cell (quadratic: 2,000 exec records took
	// ~590 s). A small one is current after every cell. Stop always
	// writes.
	lastSize int
	lastCost time.Duration
	lastEnd  time.Time
	writes   int
}

// largeFile is the size from which result.json is no longer rewritten
// after every cell.
const largeFile = 256 << 10

// New returns the result.json output.
func New() *Output { return &Output{} }

// Name implements pipeline.Sink.
func (o *Output) Name() string { return "json" }

// Start writes result.json as it stands: empty for a new run or a
// replay; for a resumed run, with the cells and verdicts its earlier
// attempts stored (SinkEnv.Prior).
func (o *Output) Start(env *pipeline.SinkEnv) error {
	o.ri = env.Run
	prior, err := env.Prior()
	if err != nil {
		return err
	}
	if prior != nil && len(prior.Cells) > 0 {
		latest := results.LatestCells(prior.Cells)
		byCell := results.RequestsOf(latest, prior.Requests) // the requests of each row's own attempt
		for _, c := range latest {
			o.cells = append(o.cells, NewCellResult(c, byCell[c.CellID]))
		}
		o.verdicts = results.LatestVerdicts(prior.Verdicts)
	}
	return o.write(nil)
}

// Cell adds a cell (replacing an earlier row of the same cell id, as a
// resumed run re-measures) and rewrites the file.
func (o *Output) Cell(c results.Cell, reqs []results.Request) error {
	r := NewCellResult(c, reqs)
	if o.index == nil {
		o.index = map[string]int{}
		for i, x := range o.cells {
			o.index[x.CellID] = i
		}
	}
	if i, ok := o.index[c.CellID]; ok && c.CellID != "" {
		o.cells[i] = r
		o.verdicts = slices.DeleteFunc(o.verdicts, func(v results.Verdict) bool { return v.CellID == c.CellID })
		return o.writeSoon()
	}
	o.index[c.CellID] = len(o.cells)
	o.cells = append(o.cells, r)
	return o.writeSoon()
}

// writeSoon writes result.json now, unless the last write was slow and
// recent (see Output).
func (o *Output) writeSoon() error {
	if o.lastSize >= largeFile && time.Since(o.lastEnd) < 10*o.lastCost {
		return nil
	}
	return o.write(nil)
}

// Verdicts adds the cell's verdicts and rewrites the file.
func (o *Output) Verdicts(c results.Cell, rows []results.Verdict) error {
	if len(rows) == 0 {
		return nil
	}
	for _, v := range rows {
		if v.Attempt == 0 {
			v.Attempt = c.Attempt // the judged row's attempt
		}
		o.verdicts = append(o.verdicts, v)
	}
	return o.writeSoon()
}

// Stop writes the final file with the run's outcome.
func (o *Output) Stop(sum *pipeline.Summary) error {
	if err := o.write(sum); err != nil {
		return err
	}
	if o.Prefix == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(o.ri.Dir, FileName))
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Prefix), 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return pipeline.WriteFileAtomic(o.Prefix+".json", b)
}

func (o *Output) write(sum *pipeline.Summary) error {
	start := time.Now()
	b, err := Encode(Build(pipeline.RunRecord(o.ri, sum), o.cells, o.verdicts))
	if err != nil {
		return err
	}
	err = pipeline.WriteFileAtomic(filepath.Join(o.ri.Dir, FileName), b)
	o.lastEnd = time.Now()
	o.lastCost, o.lastSize = o.lastEnd.Sub(start), len(b)
	o.writes++
	return err
}
