package exec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// record is one row a parser read from a program's output: the program's
// columns with the common ones they mean (isl, prefill_tok_s, ...), its
// repetitions as request rows, and the part of the cell id after the
// stage's name.
type record struct {
	id        string
	cell      results.Cell
	reqs      []results.Request
	modelFile string // the model file the program names: the model column's fallback
}

// parseLlamaBench reads llama-bench's `-o json` (one array of objects)
// or `-o jsonl` (one object a line) output, whichever it is: the first
// character that is not blank tells. Lines before the records that are
// not JSON (a wrapper's banner) are skipped in JSON lines. The records it
// read are returned with the error of a record it could not, so a
// program cut short keeps the tests it finished.
func parseLlamaBench(out []byte) ([]record, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, errors.New("no output on stdout")
	}
	var objs []map[string]any
	var perr error
	if start, ok := arrayStart(trimmed); ok {
		objs, perr = jsonArray(trimmed[start:], "llama-bench JSON")
		if len(objs) == 0 && perr != nil {
			// A line of a log that began with '[' ("[INFO] ..."), not
			// -o json: the records may be JSON lines after it.
			if lines, lerr := jsonLines(trimmed, "llama-bench JSON lines"); len(lines) > 0 {
				objs, perr = lines, lerr
			}
		}
	} else {
		objs, perr = jsonLines(trimmed, "llama-bench JSON lines")
	}
	var recs []record
	for _, m := range objs {
		recs = append(recs, llamaRecord(m))
	}
	disambiguate(recs, llamaKeyProps)
	if len(recs) == 0 && perr == nil {
		perr = errors.New("no llama-bench records (JSON with -o json or -o jsonl) on stdout")
	}
	return recs, perr
}

// arrayStart finds where `-o json`'s array begins: the first line that
// starts with '[' or '{' decides between an array and JSON lines (lines
// before it, a wrapper's banner, are not records).
func arrayStart(b []byte) (int, bool) {
	off := 0
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		t := bytes.TrimLeft(line, " \t\r")
		if len(t) > 0 && (t[0] == '[' || t[0] == '{') {
			return off + len(line) - len(t), t[0] == '['
		}
		off += len(line)
	}
	return 0, false
}

// jsonArray decodes an array of objects. A cut-short array (a program
// killed half way) still gives the complete objects before the cut, with
// the error; an element that is not an object is an error naming it.
func jsonArray(b []byte, what string) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // [
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out []map[string]any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return out, fmt.Errorf("%s: after %d complete records: %w", what, len(out), err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return out, fmt.Errorf("%s: element %d is a %s, not an object", what, len(out), jsonKind(v))
		}
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil { // ]
		return out, fmt.Errorf("%s: after %d complete records: %w", what, len(out), err)
	}
	return out, nil
}

// jsonLines decodes every line that starts with '{'; other lines (a
// program's log on stdout) are skipped. A '{' line that is not a JSON
// object is an error naming it, returned with the objects before it.
func jsonLines(b []byte, what string) ([]map[string]any, error) {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return out, fmt.Errorf("%s: line %d: %w", what, n, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: line %d: %w", what, n+1, err)
	}
	return out, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// llamaKeyProps are the settings that tell two records of one test apart
// (llama.cpp's compare-llama-bench.py groups by them), in the order a
// cell id names them when it must.
var llamaKeyProps = []string{"model_filename", "model_type", "n_gpu_layers", "n_threads", "n_batch", "n_ubatch",
	"type_k", "type_v", "flash_attn", "split_mode", "main_gpu", "tensor_split", "devices", "backends",
	"cpu_mask", "cpu_strict", "poll", "no_kv_offload", "use_mmap", "load_mode", "embeddings", "n_cpu_moe", "tensor_buft_overrides"}

// llamaRecord maps one llama-bench record onto a row. Known fields go to
// their columns (a field of an unexpected type stays in exec_extra);
// everything else is kept in exec_extra.
func llamaRecord(m map[string]any) record {
	f := newFieldTaker(m)
	c := results.Cell{Program: parserLlamaBench, Concurrency: 1}
	f.str("build_commit", &c.BuildCommit)
	c.BuildNumber = f.integer("build_number")
	f.str("cpu_info", &c.CPUInfo)
	f.str("gpu_info", &c.GPUInfo)
	f.str("backends", &c.Backends)
	if c.Backends == "" {
		c.Backends = oldBackends(m)
	}
	f.str("model_type", &c.ModelType)
	c.ModelSizeBytes = f.integer("model_size")
	c.ModelNParams = f.integer("model_n_params")
	c.NBatch = f.integer("n_batch")
	c.NUBatch = f.integer("n_ubatch")
	c.NThreads = f.integer("n_threads")
	f.str("type_k", &c.TypeK)
	f.str("type_v", &c.TypeV)
	c.NGPULayers = f.integer("n_gpu_layers")
	f.str("split_mode", &c.SplitMode)
	f.str("devices", &c.Devices)
	if v, ok := f.take("flash_attn"); ok {
		if s, ok := flashAttn(v); ok {
			c.FlashAttn = s
		} else {
			f.untake("flash_attn", v)
		}
	}
	nPrompt := f.integer("n_prompt")
	nGen := f.integer("n_gen")
	c.NDepth = f.integer("n_depth")
	c.AvgNs = f.integer(results.ColAvgNs)
	c.StddevNs = f.integer("stddev_ns")
	// The speed columns keep llama-bench's own names.
	c.AvgTS = f.number(results.ColAvgTS)
	c.StddevTS = f.number(results.ColStddevTS)
	var testTime time.Time
	if v, ok := f.take("test_time"); ok {
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			f.untake("test_time", v)
		} else {
			testTime = t.UTC()
		}
	}
	var samplesNs, samplesTs []float64
	if v, ok := f.take("samples_ns"); ok {
		if samplesNs, ok = asFloats(v); !ok {
			f.untake("samples_ns", v)
		}
	}
	if v, ok := f.take("samples_ts"); ok {
		if samplesTs, ok = asFloats(v); !ok {
			f.untake("samples_ts", v)
		}
	}
	modelFile, _ := m["model_filename"].(string) // kept in exec_extra too: no column holds it
	if why := impossibleLlama(nPrompt, nGen, c.NDepth, c.AvgTS, c.StddevTS, c.AvgNs, testTime, samplesNs, samplesTs, m["test_time"]); why != "" {
		// Stored as the program printed it (exec_extra), measured as
		// nothing: an error row that names the value.
		c.Status, c.Reason = results.StatusError, "llama-bench printed an impossible value: "+why
		c.AvgTS, c.StddevTS, c.AvgNs, c.StddevNs = nil, nil, nil, nil
		c.ISL, c.OSL = results.ValueOr(nPrompt, 0), results.ValueOr(nGen, 0)
		c.TestKind, c.BenchTest = llamaTest(max(c.ISL, 0), max(c.OSL, 0), max(results.ValueOr(c.NDepth, 0), 0))
		c.ExecExtra = extraJSON(m)
		return record{id: c.BenchTest, cell: c, modelFile: modelFile}
	}

	np, ng := results.ValueOr(nPrompt, 0), results.ValueOr(nGen, 0)
	c.ISL, c.OSL = np, ng
	c.TestKind, c.BenchTest = llamaTest(np, ng, results.ValueOr(c.NDepth, 0))
	// The program's speed is the common column of the same meaning.
	if c.AvgTS != nil {
		v := *c.AvgTS
		c.TotalTokS = results.Some(v)
		switch c.TestKind {
		case "pp":
			c.PrefillTokS = results.Some(v)
		case "tg":
			c.DecodeTokS = results.Some(v)
			c.OutputTokS = results.Some(v)
		}
	}
	c.StartedAt = testTime
	c.EngineVersion = llamaVersion(c.BuildNumber, c.BuildCommit)

	reqs := llamaRepetitions(&c, samplesNs, samplesTs, np, ng, testTime)
	c.ExecExtra = extraJSON(f.extra)
	return record{id: c.BenchTest, cell: c, reqs: reqs, modelFile: modelFile}
}

// fieldTaker reads a record's known fields; extra is what is left, every
// field not taken or taken in a form no release wrote.
type fieldTaker struct {
	m, extra map[string]any
}

func newFieldTaker(m map[string]any) *fieldTaker {
	extra := make(map[string]any, len(m))
	for k, v := range m {
		extra[k] = v
	}
	return &fieldTaker{m: m, extra: extra}
}

func (f *fieldTaker) take(k string) (any, bool) {
	v, ok := f.m[k]
	if ok {
		delete(f.extra, k)
	}
	return v, ok
}

// untake puts a value back: a known field in a form no release wrote.
func (f *fieldTaker) untake(k string, v any) { f.extra[k] = v }

func (f *fieldTaker) str(k string, dst *string) {
	if v, ok := f.take(k); ok {
		if s, ok := asString(v); ok {
			*dst = s
		} else {
			f.untake(k, v)
		}
	}
}

func (f *fieldTaker) integer(k string) *int64 {
	v, ok := f.take(k)
	if !ok {
		return nil
	}
	if n, ok := asInt(v); ok {
		return &n
	}
	f.untake(k, v)
	return nil
}

func (f *fieldTaker) number(k string) *float64 {
	v, ok := f.take(k)
	if !ok {
		return nil
	}
	if x, ok := asFloat(v); ok {
		return &x
	}
	f.untake(k, v)
	return nil
}

// llamaRepetitions returns each repetition as a request-like row, so
// quantiles and the regression engine's per-request tests work on them
// as on a sweep's requests, and sets c's request counts, duration and
// end-to-end latencies from them. A repetition's time is samples_ns, or,
// from a release without it, what samples_ts implies (ts = tokens/t).
func llamaRepetitions(c *results.Cell, samplesNs, samplesTs []float64, np, ng int64, testTime time.Time) []results.Request {
	times := samplesNs
	if len(times) == 0 && len(samplesTs) > 0 && np+ng > 0 {
		for _, ts := range samplesTs {
			if ts > 0 {
				times = append(times, float64(np+ng)/ts*1e9)
			}
		}
	}
	var reqs []results.Request
	var e2el []float64
	var total float64
	for i, ns := range times {
		ms := ns / 1e6
		e2el = append(e2el, ms)
		reqs = append(reqs, results.Request{
			Seq: int64(i), SentAt: testTime.Add(time.Duration(total)), E2ELMs: results.Finite(ms),
			InputTokens: np, OutputTokens: ng, Status: results.StatusOK,
		})
		total += ns
	}
	c.Requests, c.Completed = int64(len(reqs)), int64(len(reqs))
	c.DurationS = total / 1e9
	if len(e2el) > 0 {
		s := stats.Summarize(e2el)
		c.E2ELMs, c.E2ELP50Ms, c.E2ELP90Ms = results.Finite(s.Mean), results.Finite(s.P50), results.Finite(s.P90)
		c.E2ELP95Ms, c.E2ELP99Ms, c.E2ELMaxMs = results.Finite(s.P95), results.Finite(s.P99), results.Finite(s.Max)
	} else if c.AvgNs != nil {
		c.E2ELMs = results.Some(float64(*c.AvgNs) / 1e6)
	}
	return reqs
}

// maxSampleNs bounds one repetition's time: a day. A sample past it (a
// 1e18 ns "sample") is a corrupt record, not a slow test.
const maxSampleNs = 24 * 3600 * 1e9

// impossibleLlama says what in a llama-bench record cannot be a
// measurement ("" when nothing): negative token counts, depth or speeds,
// a sample of no time or over a day, or a test time before llama.cpp.
func impossibleLlama(nPrompt, nGen, depth *int64, avgTS, stddevTS *float64, avgNs *int64, testTime time.Time, samplesNs, samplesTs []float64, rawTime any) string {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"n_prompt", nPrompt}, {"n_gen", nGen}, {"n_depth", depth}, {results.ColAvgNs, avgNs}} {
		if f.v != nil && *f.v < 0 {
			return fmt.Sprintf("%s %d is negative", f.name, *f.v)
		}
	}
	if avgNs != nil && float64(*avgNs) > maxSampleNs {
		return fmt.Sprintf("avg_ns %d is over a day", *avgNs)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{results.ColAvgTS, avgTS}, {results.ColStddevTS, stddevTS}} {
		if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return fmt.Sprintf("%s %v is not a speed", f.name, *f.v)
		}
	}
	for _, ns := range samplesNs {
		if ns <= 0 || ns > maxSampleNs {
			return fmt.Sprintf("a sample of %g ns (samples_ns) is not a repetition's time", ns)
		}
	}
	for _, ts := range samplesTs {
		if ts < 0 || math.IsInf(ts, 0) || math.IsNaN(ts) {
			return fmt.Sprintf("a sample of %g tokens/s (samples_ts) is not a speed", ts)
		}
	}
	if rawTime != nil && !testTime.IsZero() && testTime.Year() < 2000 {
		return fmt.Sprintf("test_time %v is not a time this program ran", rawTime)
	}
	return ""
}

// llamaTest is the test's kind and name as llama.cpp's compare script
// writes it: pp512, tg128, pp512+tg128, with @d<depth> when the KV cache
// was filled first.
func llamaTest(np, ng, depth int64) (kind, name string) {
	switch {
	case np > 0 && ng > 0:
		kind, name = "pg", fmt.Sprintf("pp%d+tg%d", np, ng)
	case np > 0:
		kind, name = "pp", fmt.Sprintf("pp%d", np)
	case ng > 0:
		kind, name = "tg", fmt.Sprintf("tg%d", ng)
	default:
		name = "pp0+tg0"
	}
	if depth > 0 {
		name += fmt.Sprintf("@d%d", depth)
	}
	return kind, name
}

// llamaVersion is the engine_version of a llama-bench row: llama.cpp's
// own "b6500 (3f545bec)" form, "unknown" when the build says neither.
func llamaVersion(number *int64, commit string) string {
	var parts []string
	if number != nil && *number > 0 {
		parts = append(parts, fmt.Sprintf("b%d", *number))
	}
	if commit != "" && commit != "unknown" {
		if len(parts) > 0 {
			commit = "(" + commit + ")"
		}
		parts = append(parts, commit)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, " ")
}

// oldBackends names the backends of a release from before the backends
// field, which wrote one bool per backend (cuda, metal, vulkan, ...).
func oldBackends(m map[string]any) string {
	var out []string
	for _, b := range []struct{ key, name string }{{"cuda", "CUDA"}, {"vulkan", "Vulkan"}, {"kompute", "Kompute"}, {"metal", "Metal"}, {"sycl", "SYCL"}, {"opencl", "OpenCL"}, {"blas", "BLAS"}} {
		if v, ok := m[b.key].(bool); ok && v {
			out = append(out, b.name)
		}
	}
	return strings.Join(out, ",")
}

// disambiguate makes the ids of records of the same test unique, so that
// a run with `-t 4,8` or `-fa 0,1` gives one cell per combination and the
// same combination the same id in every run: it appends the settings
// whose values differ among them (pp512/n_threads=4), then #2, #3 if some
// are still the same.
func disambiguate(recs []record, props []string) {
	groups := map[string][]int{}
	for i, r := range recs {
		groups[r.id] = append(groups[r.id], i)
	}
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		var differ []string
		for _, p := range props {
			seen := map[string]bool{}
			for _, i := range idx {
				seen[propValue(recs[i], p)] = true
			}
			if len(seen) > 1 {
				differ = append(differ, p)
			}
		}
		for _, i := range idx {
			id := recs[i].id
			for _, p := range differ {
				id += "/" + p + "=" + propValue(recs[i], p)
			}
			recs[i].id = id
		}
	}
	seen := map[string]int{}
	for i := range recs {
		seen[recs[i].id]++
		if n := seen[recs[i].id]; n > 1 {
			recs[i].id = fmt.Sprintf("%s#%d", recs[i].id, n)
		}
	}
}

// propValue is a setting's value as a record has it: the column's, else
// exec_extra's.
func propValue(r record, p string) string {
	c := r.cell
	ip := func(v *int64) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(*v)
	}
	switch p {
	case "model_filename":
		return r.modelFile
	case "model_type":
		return c.ModelType
	case "n_gpu_layers":
		return ip(c.NGPULayers)
	case "n_threads":
		return ip(c.NThreads)
	case "n_batch":
		return ip(c.NBatch)
	case "n_ubatch":
		return ip(c.NUBatch)
	case "type_k":
		return c.TypeK
	case "type_v":
		return c.TypeV
	case "flash_attn":
		return c.FlashAttn
	case "split_mode":
		return c.SplitMode
	case "devices":
		return c.Devices
	case "backends":
		return c.Backends
	}
	if c.ExecExtra == "" {
		return ""
	}
	var m map[string]any
	if json.Unmarshal([]byte(c.ExecExtra), &m) != nil {
		return ""
	}
	if v, ok := m[p]; ok {
		return fmt.Sprint(v)
	}
	return ""
}
