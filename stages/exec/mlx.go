package exec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// mlx-lm prints no structured output: mlx_lm.benchmark prints
//
//	Timing with prompt_tokens=512, generation_tokens=1024, batch_size=1.
//	Trial 1:  prompt_tps=1234.567, generation_tps=89.012, peak_memory=4.567, total_time=12.345
//	Averages: prompt_tps=..., generation_tps=..., peak_memory=...
//
// (total_time only in newer releases; peak_memory in GB, 1e9 bytes), and
// mlx_lm.generate --verbose ends with
//
//	Prompt: 7 tokens, 16.200 tokens-per-sec
//	Generation: 20 tokens, 98.705 tokens-per-sec
//	Peak memory: 1.065 GB
//
// (very old releases print no token counts). Both are read from any
// surrounding text: the generated text, warnings, a progress bar.
var (
	mlxTiming   = regexp.MustCompile(`Timing with (.*)$`)
	mlxTrial    = regexp.MustCompile(`^Trial\s+(\d+):\s*(.*)$`)
	mlxAverages = regexp.MustCompile(`^Averages:\s*(.*)$`)
	mlxPair     = regexp.MustCompile(`(\w+)\s*=\s*([-+0-9.eE]+|nan|inf)`)
	mlxPrompt   = regexp.MustCompile(`^Prompt:\s*(?:(\d+)\s+tokens?,\s*)?([0-9.eE+-]+)\s+tokens-per-sec`)
	mlxGen      = regexp.MustCompile(`^Generation:\s*(?:(\d+)\s+tokens?,\s*)?([0-9.eE+-]+)\s+tokens-per-sec`)
	mlxPeak     = regexp.MustCompile(`^Peak memory:\s*([0-9.eE+-]+)\s*GB`)
)

// mlxBench is one "Timing with" block of mlx_lm.benchmark.
type mlxBench struct {
	params   map[string]float64
	trials   []map[string]float64
	averages map[string]float64
}

// mlxGenerate is one summary of mlx_lm.generate --verbose.
type mlxGenerate struct {
	promptTokens, genTokens int64
	haveCounts              bool
	promptTPS, genTPS       *float64
	peakGB                  *float64
}

func pairs(s string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mlxPair.FindAllStringSubmatch(s, -1) {
		if f, err := strconv.ParseFloat(m[2], 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			out[m[1]] = f
		}
	}
	return out
}

// parseMLX reads mlx_lm.benchmark's blocks and mlx_lm.generate's
// summaries from out, one row for each.
func parseMLX(out []byte) ([]record, error) {
	var benches []*mlxBench
	var gens []*mlxGenerate
	var cur *mlxBench
	var gen *mlxGenerate
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimRight(sc.Text(), "\r"))
		switch {
		case mlxTiming.MatchString(line):
			cur = &mlxBench{params: pairs(mlxTiming.FindStringSubmatch(line)[1])}
			benches = append(benches, cur)
		case mlxTrial.MatchString(line):
			if cur == nil { // trials without their header: a release that changed it
				cur = &mlxBench{params: map[string]float64{}}
				benches = append(benches, cur)
			}
			cur.trials = append(cur.trials, pairs(mlxTrial.FindStringSubmatch(line)[2]))
		case mlxAverages.MatchString(line):
			if cur == nil {
				cur = &mlxBench{params: map[string]float64{}}
				benches = append(benches, cur)
			}
			cur.averages = pairs(mlxAverages.FindStringSubmatch(line)[1])
			cur = nil // the block is complete
		case mlxPrompt.MatchString(line):
			m := mlxPrompt.FindStringSubmatch(line)
			gen = &mlxGenerate{}
			gens = append(gens, gen)
			if m[1] != "" {
				gen.promptTokens, _ = strconv.ParseInt(m[1], 10, 64)
				gen.haveCounts = true
			}
			gen.promptTPS = parseFinite(m[2])
		case mlxGen.MatchString(line) && gen != nil:
			m := mlxGen.FindStringSubmatch(line)
			if m[1] != "" {
				gen.genTokens, _ = strconv.ParseInt(m[1], 10, 64)
			}
			gen.genTPS = parseFinite(m[2])
		case mlxPeak.MatchString(line) && gen != nil:
			gen.peakGB = parseFinite(mlxPeak.FindStringSubmatch(line)[1])
			gen = nil
		}
	}
	var recs []record
	for _, b := range benches {
		if r, ok := b.record(); ok {
			recs = append(recs, r)
		}
	}
	for _, g := range gens {
		if g.promptTPS == nil && g.genTPS == nil {
			continue
		}
		recs = append(recs, g.record())
	}
	disambiguate(recs, nil)
	var err error
	if len(recs) == 0 {
		err = errors.New("no mlx_lm.benchmark trials or averages, and no mlx_lm.generate --verbose summary (Prompt: ... tokens-per-sec) on stdout")
	}
	if serr := sc.Err(); serr != nil {
		err = fmt.Errorf("reading mlx-lm output: %w", serr)
	}
	return recs, err
}

func parseFinite(s string) *float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// record is the block's row: the averages (the program's, else the
// trials' mean) as prefill and decode speed, each trial a request-like
// row. A trial's e2el is its total_time; a release that does not print
// it gives e2el from the speeds (prompt/prompt_tps + generated/generation_tps),
// said in the row's notes. A trial's ttft is its prefill time the same way.
func (b *mlxBench) record() (record, bool) {
	if len(b.trials) == 0 && len(b.averages) == 0 {
		return record{}, false
	}
	isl, osl := int64(b.params["prompt_tokens"]), int64(b.params["generation_tokens"])
	batch := int64(b.params["batch_size"])
	if batch <= 0 {
		batch = 1
	}
	c := results.Cell{Program: parserMLX, TestKind: "pg", ISL: isl, OSL: osl, Concurrency: batch, EngineVersion: "unknown"}
	c.BenchTest = fmt.Sprintf("pp%d+tg%d", isl, osl)
	if batch > 1 {
		c.BenchTest += fmt.Sprintf("/b%d", batch)
	}
	avg := func(k string) (float64, bool) {
		if v, ok := b.averages[k]; ok {
			return v, true
		}
		var xs []float64
		for _, t := range b.trials {
			if v, ok := t[k]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return 0, false
		}
		return stats.Mean(xs), true
	}
	if v, ok := avg("prompt_tps"); ok {
		c.PrefillTokS = results.Some(v)
	}
	if v, ok := avg("generation_tps"); ok {
		c.DecodeTokS, c.OutputTokS = results.Some(v), results.Some(v)
	}
	// Peak memory is the largest a trial reached; the printed average
	// only when there are no trials.
	var peak float64
	havePeak := false
	for _, t := range b.trials {
		if v, ok := t["peak_memory"]; ok && (!havePeak || v > peak) {
			peak, havePeak = v, true
		}
	}
	if !havePeak {
		peak, havePeak = b.averages["peak_memory"]
	}
	if havePeak && peak >= 0 && peak < 1e9 {
		c.PeakMemoryBytes = results.Some(int64(math.Round(peak * 1e9)))
	}
	var reqs []results.Request
	var ttfts, e2els []float64
	var total float64
	derived := false
	for i, t := range b.trials {
		r := results.Request{Seq: int64(i), InputTokens: isl * batch, OutputTokens: osl * batch, Status: results.StatusOK}
		var prefill *float64
		if tps := t["prompt_tps"]; tps > 0 && isl > 0 {
			prefill = results.Finite(float64(isl*batch) / tps * 1000)
			r.TTFTMs = prefill
		}
		if tt, ok := t["total_time"]; ok && tt >= 0 {
			r.E2ELMs = results.Finite(tt * 1000)
		} else if gtps := t["generation_tps"]; gtps > 0 && prefill != nil {
			r.E2ELMs = results.Finite(*prefill + float64(osl*batch)/gtps*1000)
			derived = true
		}
		if r.TTFTMs != nil {
			ttfts = append(ttfts, *r.TTFTMs)
		}
		if r.E2ELMs != nil {
			e2els = append(e2els, *r.E2ELMs)
			total += *r.E2ELMs / 1000
		}
		reqs = append(reqs, r)
	}
	c.Requests, c.Completed = int64(len(reqs)), int64(len(reqs))
	c.DurationS = total
	fillLatency(&c, ttfts, e2els)
	if derived {
		c.Notes = "e2el_ms from prompt_tps and generation_tps: this mlx_lm.benchmark prints no total_time"
	}
	extra := map[string]any{}
	for k, v := range b.params {
		if k != "prompt_tokens" && k != "generation_tokens" && k != "batch_size" {
			extra[k] = v
		}
	}
	for k, v := range b.averages {
		if k != "prompt_tps" && k != "generation_tps" && k != "peak_memory" {
			extra["avg_"+k] = v
		}
	}
	c.ExecExtra = extraJSON(extra)
	return record{id: c.BenchTest, cell: c, reqs: reqs}, true
}

// record is the summary's row, one request-like row with it: its ttft
// and e2el are what the speeds imply (generate prints no times).
func (g *mlxGenerate) record() record {
	c := results.Cell{Program: parserMLX, TestKind: "pg", ISL: g.promptTokens, OSL: g.genTokens, Concurrency: 1, EngineVersion: "unknown"}
	c.BenchTest = "generate"
	if g.haveCounts {
		c.BenchTest = fmt.Sprintf("generate/pp%d+tg%d", g.promptTokens, g.genTokens)
	}
	c.PrefillTokS = g.promptTPS
	c.DecodeTokS, c.OutputTokS = g.genTPS, g.genTPS
	if g.peakGB != nil && *g.peakGB >= 0 && *g.peakGB < 1e9 {
		c.PeakMemoryBytes = results.Some(int64(math.Round(*g.peakGB * 1e9)))
	}
	if !g.haveCounts {
		return record{id: c.BenchTest, cell: c}
	}
	r := results.Request{InputTokens: g.promptTokens, OutputTokens: g.genTokens, Status: results.StatusOK}
	if g.promptTPS != nil && *g.promptTPS > 0 {
		r.TTFTMs = results.Finite(float64(g.promptTokens) / *g.promptTPS * 1000)
		if g.genTPS != nil && *g.genTPS > 0 {
			r.E2ELMs = results.Finite(*r.TTFTMs + float64(g.genTokens) / *g.genTPS * 1000)
		}
	}
	var ttfts, e2els []float64
	if r.TTFTMs != nil {
		ttfts = append(ttfts, *r.TTFTMs)
	}
	if r.E2ELMs != nil {
		e2els = append(e2els, *r.E2ELMs)
		c.DurationS = *r.E2ELMs / 1000
	}
	c.Requests, c.Completed = 1, 1
	fillLatency(&c, ttfts, e2els)
	c.Notes = "ttft_ms and e2el_ms from the printed speeds: mlx_lm.generate prints no times"
	return record{id: c.BenchTest, cell: c, reqs: []results.Request{r}}
}

// fillLatency sets the cell's ttft and e2el distributions from its
// request-like rows.
func fillLatency(c *results.Cell, ttfts, e2els []float64) {
	if len(ttfts) > 0 {
		s := stats.Summarize(ttfts)
		c.TTFTMs, c.TTFTP50Ms, c.TTFTP90Ms = results.Finite(s.Mean), results.Finite(s.P50), results.Finite(s.P90)
		c.TTFTP95Ms, c.TTFTP99Ms, c.TTFTMaxMs = results.Finite(s.P95), results.Finite(s.P99), results.Finite(s.Max)
	}
	if len(e2els) > 0 {
		s := stats.Summarize(e2els)
		c.E2ELMs, c.E2ELP50Ms, c.E2ELP90Ms = results.Finite(s.Mean), results.Finite(s.P50), results.Finite(s.P90)
		c.E2ELP95Ms, c.E2ELP99Ms, c.E2ELMaxMs = results.Finite(s.P95), results.Finite(s.P99), results.Finite(s.Max)
	}
}
