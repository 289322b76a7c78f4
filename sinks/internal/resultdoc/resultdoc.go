// Package resultdoc is result.json's document: one object per run whose
// cells carry the keys users of vLLM's `bench serve --save-result` know
// (request_throughput, output_throughput, mean_ttft_ms, p99_itl_ms, ...),
// plus benchrun's cell identity and the run's metadata stamps. The json
// sink writes it to the run directory; the webhook sink posts it.
package resultdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// FileName is the document's name in the run directory.
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
func NewCellResult(c results.Cell, reqs results.Requests) CellResult {
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
		StartedAt:   c.StartedAt.UTC(),
		ModelDigest: c.ModelDigest, Endpoint: c.Endpoint, ISL: c.ISL, OSL: c.OSL, Concurrency: c.Concurrency,
		DecodeTokS: c.DecodeTokS, PrefillTokS: c.PrefillTokS,
		Status: c.Status, Reason: c.Reason, Notes: c.Notes, Metadata: c.Metadata,
	}
	if c.Rate > 0 && !math.IsInf(c.Rate, 0) {
		rate := c.Rate
		r.RequestRate = &rate
	}
	if reqs == nil {
		reqs = results.RequestSlice(nil)
	}
	// The totals and the four deviations walk the requests' samples
	// twice in all (the sums, then the squares) rather than copying them:
	// a long cell's gaps are its largest family.
	var devs [stdFamilies]deviation
	first := true
	walk := func(add func(fam int, x float64)) {
		for q := range reqs.All() {
			s, ok := measure.SampleOf(q)
			if !ok {
				continue
			}
			if first {
				r.TotalInputTokens += q.InputTokens
				r.TotalOutputTokens += q.OutputTokens
			}
			add(stdTTFT, s.TTFTMs)
			if s.HasTPOT {
				add(stdTPOT, s.TPOTMs)
			}
			for _, g := range s.GapsMs {
				add(stdITL, g)
			}
			add(stdE2EL, s.E2ELMs)
		}
		first = false
	}
	walk(func(f int, x float64) { devs[f].sum += x; devs[f].n++ })
	if devs[stdTTFT].n > 0 {
		walk(func(f int, x float64) { devs[f].square(x) })
	}
	if reqs.Len() == 0 {
		r.TotalInputTokens = int64(math.Round(results.ValueOr(c.EffectiveISL, 0) * float64(c.Completed)))
		r.TotalOutputTokens = int64(math.Round(results.ValueOr(c.EffectiveOSL, 0) * float64(c.Completed)))
	}
	r.StdTTFTMs, r.StdTPOTMs, r.StdITLMs, r.StdE2ELMs = devs[stdTTFT].std(), devs[stdTPOT].std(), devs[stdITL].std(), devs[stdE2EL].std()
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

// The families whose population standard deviation result.json carries.
const (
	stdTTFT = iota
	stdTPOT
	stdITL
	stdE2EL
	stdFamilies
)

// deviation is one family's population standard deviation (numpy's
// np.std, as vLLM uses), from two walks over its values: the sum, then
// the squares about the mean.
type deviation struct {
	sum, ss float64
	n       int
}

func (d *deviation) square(x float64) {
	m := d.sum / float64(d.n)
	d.ss += (x - m) * (x - m)
}

// std is the deviation, nil without values.
func (d *deviation) std() *float64 {
	if d.n == 0 {
		return nil
	}
	return results.Some(math.Sqrt(d.ss / float64(d.n)))
}

// Build assembles result.json's content.
func Build(run results.Run, cells []CellResult, verdicts []results.Verdict) Result {
	res := Result{Run: run, SchemaVersion: results.SchemaVersion, Cells: cells, Assertions: Assertions{Verdicts: []results.Verdict{}}}
	if res.Cells == nil {
		res.Cells = []CellResult{}
	}
	for _, v := range verdicts {
		v.Attempt = results.AttemptOf(v.Attempt) // rows of older files count as attempt 1
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
