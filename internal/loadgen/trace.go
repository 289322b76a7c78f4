package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Trace formats: timed request logs replayed on their own timing.
const (
	// FormatMooncake is the Mooncake trace release's JSONL (FAST '25,
	// kvcache-ai/Mooncake FAST25-release/traces): one request per line,
	// {"timestamp": ms, "input_length": n, "output_length": n,
	// "hash_ids": [...]}, each hash id naming one block of BlockTokens
	// prompt tokens (equal ids: equal blocks, so a prefix cache sees what
	// the production system saw).
	FormatMooncake = "mooncake"
	// FormatTrace is a plain JSONL trace: "timestamp" (ms) and either the
	// prompt text (the dataset's field, default "prompt") or
	// "input_length" (optionally "hash_ids", as Mooncake's), and
	// "output_length".
	FormatTrace = "trace"
)

// MooncakeBlockTokens is the tokens per hash id in the Mooncake trace
// release (its README: "block_size 512").
const MooncakeBlockTokens = 512

// maxTraceTokens bounds a line's input_length and output_length: past
// every model's context, and what a broken line would ask of memory.
const maxTraceTokens = 10_000_000

// maxTraceSpan bounds the recorded span of a trace (last timestamp less
// the first): 1,000 days, so every offset is a time.Duration.
const maxTraceSpan = 1000 * 24 * time.Hour

// IsTraceFormat reports whether a dataset format is a timed trace.
func IsTraceFormat(format string) bool {
	return format == FormatMooncake || format == FormatTrace || isCSVTrace(format)
}

// isCSVTrace says the format is a CSV trace (tracecsv.go).
func isCSVTrace(format string) bool { return format == FormatBurstGPT || format == FormatAzure }

// TraceSpec names a trace on disk.
type TraceSpec struct {
	Path string
	// Format is FormatMooncake, FormatTrace, FormatBurstGPT or FormatAzure.
	Format string
	// Field is the prompt field of a plain trace (default "prompt").
	Field string
	// BlockTokens is the tokens per hash id (default MooncakeBlockTokens).
	BlockTokens int
	// Limit keeps the first Limit requests in time order (0: all): a
	// trace's requests are its order, so they are never sampled.
	Limit int
}

// TraceRequest is one line of a trace.
type TraceRequest struct {
	// At is the request's time since the trace's first request.
	At time.Duration
	// Line is the line of the file it came from (1-based).
	Line int
	// InputLength is the prompt's tokens (0 when Prompt is given).
	InputLength int
	// OutputLength is the tokens to generate (max_tokens).
	OutputLength int
	// HashIDs name the prompt's blocks of BlockTokens tokens, in order;
	// the last block may be partial (input_length not a multiple), and
	// tokens past the last id are the request's own.
	HashIDs []int64
	// Prompt is the text a plain trace gives (sent as it is).
	Prompt string
}

// Trace is a timed request log, in time order.
type Trace struct {
	Path        string
	BlockTokens int
	Requests    []TraceRequest
	// index is each request's position in the whole trace (a shard's
	// view keeps the whole trace's, so its prompts are the same ones).
	index []int
}

// LoadTrace reads a trace file. Errors name the file and line.
func LoadTrace(spec TraceSpec) (*Trace, error) {
	f, err := openInput(spec.Path, "trace")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTrace(f, spec)
}

// ParseTrace reads a trace from r; spec.Path names it in errors.
func ParseTrace(r io.Reader, spec TraceSpec) (*Trace, error) {
	if !IsTraceFormat(spec.Format) {
		return nil, fmt.Errorf("trace %s: format %q: want %s, %s, %s or %s", spec.Path, spec.Format, FormatMooncake, FormatTrace, FormatBurstGPT, FormatAzure)
	}
	block := spec.BlockTokens
	if block <= 0 {
		block = MooncakeBlockTokens
	}
	var lines []tracedLine
	if isCSVTrace(spec.Format) {
		reqs, stamps, err := parseCSVTrace(r, spec)
		if err != nil {
			return nil, err
		}
		for i := range reqs {
			lines = append(lines, tracedLine{stamps[i], reqs[i]})
		}
	} else {
		var err error
		if lines, err = parseJSONLTrace(r, spec, block); err != nil {
			return nil, err
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("trace %s: no requests (format %s: %s)", spec.Path, spec.Format, map[bool]string{true: "a header row, then one request per row", false: "one JSON object per line"}[isCSVTrace(spec.Format)])
	}
	return timedTrace(spec, block, lines)
}

// tracedLine is a trace's request with its timestamp (ms, from the
// file's origin).
type tracedLine struct {
	ms float64
	TraceRequest
}

// parseJSONLTrace reads a Mooncake or plain JSONL trace's lines.
func parseJSONLTrace(r io.Reader, spec TraceSpec, block int) ([]tracedLine, error) {
	field := spec.Field
	if field == "" {
		field = "prompt"
	}
	var lines []tracedLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		at := fmt.Sprintf("trace %s:%d", spec.Path, n)
		q, ms, err := parseTraceLine(b, spec.Format, field, block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		q.Line = n
		lines = append(lines, tracedLine{ms, q})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("trace %s:%d: line longer than 256 MiB", spec.Path, n+1)
		}
		return nil, fmt.Errorf("trace %s: %w", spec.Path, err)
	}
	return lines, nil
}

// timedTrace orders a trace's requests in time and makes their times
// relative to the first.
func timedTrace(spec TraceSpec, block int, lines []tracedLine) (*Trace, error) {
	// Replayed in time order; requests at one instant keep the file's.
	slices.SortStableFunc(lines, func(a, b tracedLine) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	if spec.Limit > 0 && spec.Limit < len(lines) {
		lines = lines[:spec.Limit]
	}
	first := lines[0].ms
	t := &Trace{Path: spec.Path, BlockTokens: block, Requests: make([]TraceRequest, len(lines)), index: make([]int, len(lines))}
	for i, l := range lines {
		off := (l.ms - first) * float64(time.Millisecond)
		if off > float64(maxTraceSpan) {
			return nil, fmt.Errorf("trace %s:%d: timestamp %g ms is %.0f days after the first request's (%g ms): a trace spans at most %.0f days", spec.Path, l.Line, l.ms, (l.ms-first)/86400e3, first, maxTraceSpan.Hours()/24)
		}
		l.At = time.Duration(math.Round(off))
		t.Requests[i] = l.TraceRequest
		t.index[i] = i
	}
	return t, nil
}

// parseTraceLine reads one line's request and its timestamp (ms).
func parseTraceLine(b []byte, format, field string, block int) (TraceRequest, float64, error) {
	var q TraceRequest
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return q, 0, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := obj["timestamp"]
	if !ok {
		return q, 0, errors.New(`no "timestamp" (milliseconds since the trace's start)`)
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil || ms < 0 {
		return q, 0, fmt.Errorf(`"timestamp" is %s: want milliseconds, a number >= 0`, clip(raw))
	}
	whole := func(name string, required bool) (int, error) {
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			if required {
				return 0, fmt.Errorf("no %q (tokens)", name)
			}
			return 0, nil
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < 1 || f > maxTraceTokens {
			return 0, fmt.Errorf("%q is %s: want a whole number of tokens from 1 to %d", name, clip(raw), maxTraceTokens)
		}
		return int(f), nil
	}
	var err error
	if q.OutputLength, err = whole("output_length", true); err != nil {
		return q, 0, err
	}
	if format == FormatTrace {
		if raw, ok := obj[field]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &q.Prompt); err != nil {
				return q, 0, fmt.Errorf("field %q is %s: want the prompt as a string", field, clip(raw))
			}
			if strings.TrimSpace(q.Prompt) == "" {
				return q, 0, fmt.Errorf("field %q is an empty prompt", field)
			}
			if _, ok := obj["hash_ids"]; ok {
				return q, 0, fmt.Errorf(`both %q and "hash_ids": a given prompt is sent as it is, hash_ids describe a synthesized one; give one`, field)
			}
			return q, ms, nil
		}
	}
	required := "input_length"
	if format == FormatTrace {
		required = fmt.Sprintf("input_length (or the prompt field %q)", field)
	}
	if _, ok := obj["input_length"]; !ok {
		return q, 0, fmt.Errorf("no %s", required)
	}
	if q.InputLength, err = whole("input_length", true); err != nil {
		return q, 0, err
	}
	if raw, ok := obj["hash_ids"]; ok && string(raw) != "null" {
		var ids []json.Number
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&ids); err != nil {
			return q, 0, fmt.Errorf(`"hash_ids" is %s: want a list of block ids (whole numbers >= 0)`, clip(raw))
		}
		q.HashIDs = make([]int64, len(ids))
		for i, s := range ids {
			id, err := s.Int64()
			if err != nil || id < 0 {
				return q, 0, fmt.Errorf(`"hash_ids"[%d] is %s: want a whole number >= 0`, i, s)
			}
			q.HashIDs[i] = id
		}
		// The ids cover the prompt's blocks: every block, or every full
		// one (a trace that hashes only full blocks).
		full, all := q.InputLength/block, (q.InputLength+block-1)/block
		if len(ids) != full && len(ids) != all {
			want := fmt.Sprint(all)
			if full != all {
				want = fmt.Sprintf("%d or %d", full, all)
			}
			return q, 0, fmt.Errorf(`"hash_ids" names %d blocks, but input_length %d is %s blocks of %d tokens: set dataset.block_tokens to the trace's block size`, len(ids), q.InputLength, want, block)
		}
	}
	return q, ms, nil
}

// clip is a raw JSON value for an error message, at most 40 bytes.
func clip(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// Len is the number of requests.
func (t *Trace) Len() int { return len(t.Requests) }

// Span is the time from the first request to the last, as recorded.
func (t *Trace) Span() time.Duration {
	if len(t.Requests) == 0 {
		return 0
	}
	return t.Requests[len(t.Requests)-1].At
}

// MeanRate is the recorded arrival rate, requests per second: the
// intervals between requests over the span (0 when every request shares
// one instant).
func (t *Trace) MeanRate() float64 {
	if len(t.Requests) < 2 || t.Span() <= 0 {
		return 0
	}
	return float64(len(t.Requests)-1) / t.Span().Seconds()
}

// MaxOutput is the longest output_length.
func (t *Trace) MaxOutput() int {
	m := 0
	for _, q := range t.Requests {
		m = max(m, q.OutputLength)
	}
	return m
}

// Synthesized reports whether any request's prompt is built from its
// lengths (so prompts must be sized for the server).
func (t *Trace) Synthesized() bool {
	for _, q := range t.Requests {
		if q.Prompt == "" {
			return true
		}
	}
	return false
}

// Shard is shard i's part of the trace when n processes replay it
// (0 <= i < n): requests i, i+n, i+2n, ... at their own times, so the
// shards' sends interleave into the whole trace's.
func (t *Trace) Shard(i, n int) *Trace {
	if n <= 1 {
		return t
	}
	out := &Trace{Path: t.Path, BlockTokens: t.BlockTokens}
	for k := i; k < len(t.Requests); k += n {
		out.Requests = append(out.Requests, t.Requests[k])
		out.index = append(out.index, t.indexOf(k))
	}
	return out
}

func (t *Trace) indexOf(k int) int {
	if k < len(t.index) {
		return t.index[k]
	}
	return k
}

// Offsets are the send offsets at scale (2: twice as fast as recorded).
func (t *Trace) Offsets(scale float64) []time.Duration {
	if !(scale > 0) {
		scale = 1
	}
	out := make([]time.Duration, len(t.Requests))
	for i, q := range t.Requests {
		out[i] = time.Duration(math.Round(float64(q.At) / scale))
	}
	return out
}

// BlockStats counts the hash-id blocks and those repeating an earlier
// request's (what a prefix cache could serve, capacity permitting).
func (t *Trace) BlockStats() (blocks, repeated int) {
	seen := map[int64]bool{}
	for _, q := range t.Requests {
		for _, id := range q.HashIDs {
			blocks++
			if seen[id] {
				repeated++
			}
			seen[id] = true
		}
	}
	return blocks, repeated
}

// TracePrompt is request i's prompt, built for vocabulary v. A given
// prompt is returned as it is. Otherwise the prompt is the vocabulary's
// lead and input_length less the vocabulary's overhead in tokens: one
// block of BlockTokens tokens per hash id, drawn from (seed, salt, id)
// alone, so equal ids give byte-identical blocks in every request (a
// prefix cache hits where the trace's did) and distinct ids unrelated
// text; the last block is partial when input_length is not a multiple of
// the block, and tokens past the ids (a line without hash_ids) are drawn
// from the request's own position in the trace. The overhead comes off
// the end. A different salt (another pass or ladder point) changes every
// block, so one replay never warms the cache for the next.
func (t *Trace) TracePrompt(v *Vocab, seed, salt uint64, i int) string {
	q := t.Requests[i]
	if q.Prompt != "" {
		return q.Prompt
	}
	if v == nil {
		v = AssumedVocab()
	}
	left := v.WordsFor(q.InputLength)
	var b strings.Builder
	part := func(rng *rand.Rand, n int) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Text(rng, n))
	}
	for k, id := range q.HashIDs {
		if left <= 0 {
			break
		}
		n := min(t.BlockTokens, q.InputLength-k*t.BlockTokens, left)
		if n <= 0 {
			break
		}
		// Even stream keys for blocks, odd for a request's own tokens.
		part(rand.New(rand.NewPCG(seed^salt, mix64(uint64(id)<<1))), n)
		left -= n
	}
	if left > 0 {
		part(rand.New(rand.NewPCG(seed^salt, mix64(uint64(t.indexOf(i))<<1|1))), left)
	}
	return v.withLead(b.String())
}

// validateTrace reports a trace schedule that cannot run.
func (s Schedule) validateTrace() error {
	if len(s.Trace) == 0 {
		return errors.New("the trace has no requests")
	}
	for i, o := range s.Trace {
		if o < 0 || i > 0 && o < s.Trace[i-1] {
			return fmt.Errorf("trace offset %d (%v) is before the one ahead of it: offsets must not decrease", i, o)
		}
	}
	return nil
}

// splitTrace is shard i's part of a trace schedule: offsets i, i+n, ...
// (Trace.Shard's requests), unphased: the trace's own times interleave.
func (s Schedule) splitTrace(i, n int) Schedule {
	out := s
	out.Trace = nil
	for k := i; k < len(s.Trace); k += n {
		out.Trace = append(out.Trace, s.Trace[k])
	}
	if out.Trace == nil {
		out.Trace = []time.Duration{}
	}
	return out
}

// nextTrace is the next offset of a trace schedule; past its end, the
// longest duration (Run stops at the end first).
func (g *Generator) nextTrace() time.Duration {
	k := g.n
	g.n++
	if k >= len(g.s.Trace) {
		return math.MaxInt64
	}
	g.t = g.s.Trace[k]
	return g.t + g.s.Phase
}
