package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

const syntheticTrace = "../../testdata/traces/mooncake-synthetic.jsonl"

func TestLoadMooncakeTrace(t *testing.T) {
	tr, err := LoadTrace(TraceSpec{Path: syntheticTrace, Format: FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 16 || tr.BlockTokens != 512 || tr.Span() != 3400*time.Millisecond {
		t.Fatalf("%d requests, blocks of %d, span %v", tr.Len(), tr.BlockTokens, tr.Span())
	}
	q := tr.Requests[2]
	if q.Line != 3 || q.At != 250*time.Millisecond || q.InputLength != 1800 || q.OutputLength != 16 || len(q.HashIDs) != 4 {
		t.Errorf("line 3: %+v", q)
	}
	if r := tr.MeanRate(); math.Abs(r-15/3.4) > 1e-9 {
		t.Errorf("mean rate %v, want 15/3.4 s", r)
	}
	if got := tr.Offsets(2)[2]; got != 125*time.Millisecond {
		t.Errorf("offset at time_scale 2: %v, want 125ms", got)
	}
	blocks, repeated := tr.BlockStats()
	if blocks != 44 || repeated != 17 {
		t.Errorf("blocks %d, repeated %d", blocks, repeated)
	}
	if tr.MaxOutput() != 24 || !tr.Synthesized() {
		t.Errorf("max output %d, synthesized %v", tr.MaxOutput(), tr.Synthesized())
	}
}

func TestParseTraceSortsAndLimits(t *testing.T) {
	src := `{"timestamp": 1700000002000, "input_length": 10, "output_length": 1}
{"timestamp": 1700000000000, "input_length": 20, "output_length": 2}

{"timestamp": 1700000000000, "input_length": 30, "output_length": 3}
`
	tr, err := ParseTrace(strings.NewReader(src), TraceSpec{Path: "t.jsonl", Format: FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	// Epoch timestamps: offsets from the first; ties keep the file's order.
	var lines []int
	for _, q := range tr.Requests {
		lines = append(lines, q.Line)
	}
	if len(lines) != 3 || lines[0] != 2 || lines[1] != 4 || lines[2] != 1 || tr.Requests[2].At != 2*time.Second {
		t.Fatalf("order %v, last at %v", lines, tr.Requests[2].At)
	}
	tr, err = ParseTrace(strings.NewReader(src), TraceSpec{Path: "t.jsonl", Format: FormatMooncake, Limit: 2})
	if err != nil || tr.Len() != 2 || tr.Requests[1].Line != 4 {
		t.Fatalf("limit 2: %v %+v", err, tr)
	}
}

func TestPlainTrace(t *testing.T) {
	tr, err := LoadTrace(TraceSpec{Path: "../../testdata/traces/plain.jsonl", Format: FormatTrace})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 4 || tr.Requests[0].Prompt == "" || tr.Requests[1].InputLength != 256 || tr.Requests[1].At != 120500*time.Microsecond {
		t.Fatalf("%+v", tr.Requests)
	}
	if p := tr.TracePrompt(nil, 1, 2, 0); p != tr.Requests[0].Prompt {
		t.Errorf("a given prompt is sent as it is: %q", p)
	}
	if n := len(strings.Fields(tr.TracePrompt(nil, 1, 2, 1))); n != 256 {
		t.Errorf("request 2: %d words, want 256", n)
	}
	// A custom prompt field.
	tr, err = ParseTrace(strings.NewReader(`{"timestamp": 0, "text": "hi there", "output_length": 4}`), TraceSpec{Path: "x", Format: FormatTrace, Field: "text"})
	if err != nil || tr.Requests[0].Prompt != "hi there" {
		t.Fatalf("%v %+v", err, tr)
	}
}

// Every broken line is refused with the file and line named, and what
// is wrong in words.
func TestParseTraceErrorsNameFileAndLine(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}`
	for _, tc := range []struct {
		format, line, want string
	}{
		{FormatMooncake, `{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]`, "not a JSON object"},
		{FormatMooncake, `[1, 2]`, "not a JSON object"},
		{FormatMooncake, `{"input_length": 600, "output_length": 4}`, `no "timestamp"`},
		{FormatMooncake, `{"timestamp": -1, "input_length": 600, "output_length": 4}`, `"timestamp" is -1`},
		{FormatMooncake, `{"timestamp": "soon", "input_length": 600, "output_length": 4}`, `"timestamp" is "soon"`},
		{FormatMooncake, `{"timestamp": 5, "output_length": 4}`, "no input_length"},
		{FormatMooncake, `{"timestamp": 5, "input_length": 6.5, "output_length": 4}`, `"input_length" is 6.5`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 0, "output_length": 4}`, `"input_length" is 0`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 600}`, `no "output_length"`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 600, "output_length": 99999999999}`, `"output_length" is 99999999999`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 2, 3]}`, `"hash_ids" names 3 blocks, but input_length 600 is 1 or 2 blocks of 512 tokens: set dataset.block_tokens`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, -2]}`, `"hash_ids"[1] is -2`},
		{FormatMooncake, `{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": "1,2"}`, `"hash_ids" is "1,2"`},
		{FormatTrace, `{"timestamp": 5, "output_length": 4}`, `no input_length (or the prompt field "prompt")`},
		{FormatTrace, `{"timestamp": 5, "prompt": 7, "output_length": 4}`, `field "prompt" is 7`},
		{FormatTrace, `{"timestamp": 5, "prompt": " ", "output_length": 4}`, `empty prompt`},
		{FormatTrace, `{"timestamp": 5, "prompt": "hi", "output_length": 4, "hash_ids": [1]}`, `both "prompt" and "hash_ids"`},
		{FormatMooncake, `{"timestamp": 1e20, "input_length": 600, "output_length": 4}`, "a trace spans at most 1000 days"},
	} {
		src := ok + "\n\n" + tc.line + "\n" + ok + "\n"
		_, err := ParseTrace(strings.NewReader(src), TraceSpec{Path: "data/trace.jsonl", Format: tc.format})
		if err == nil {
			t.Errorf("%s: accepted", tc.line)
			continue
		}
		if !strings.HasPrefix(err.Error(), "trace data/trace.jsonl:3: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n  got  %v\n  want trace data/trace.jsonl:3: ...%s...", tc.line, err, tc.want)
		}
	}
	if _, err := ParseTrace(strings.NewReader("\n\n"), TraceSpec{Path: "e.jsonl", Format: FormatMooncake}); err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Errorf("empty trace: %v", err)
	}
	if _, err := LoadTrace(TraceSpec{Path: "no/such.jsonl", Format: FormatMooncake}); err == nil || !strings.Contains(err.Error(), "no/such.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

// Equal hash ids give byte-identical blocks of exactly BlockTokens
// tokens; distinct ids and a request's own tokens are unrelated text; the
// prompt is input_length tokens with the vocabulary's lead and overhead;
// another salt changes every block.
func TestTracePromptBlocks(t *testing.T) {
	tr, err := LoadTrace(TraceSpec{Path: syntheticTrace, Format: FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	v := AssumedVocab()
	words := func(i int, salt uint64) []string { return strings.Fields(tr.TracePrompt(v, 7, salt, i)) }
	for i, q := range tr.Requests {
		if n := len(words(i, 1)); n != q.InputLength {
			t.Errorf("request %d: %d tokens, want input_length %d", i, n, q.InputLength)
		}
	}
	a, b := words(0, 1), words(2, 1) // [0 1 2] and [0 1 5 6]
	if strings.Join(a[:1024], " ") != strings.Join(b[:1024], " ") {
		t.Error("requests sharing hash ids 0, 1 differ in their first 1024 tokens")
	}
	if a[1024] == b[1024] && a[1025] == b[1025] && a[1026] == b[1026] {
		t.Error("blocks 2 and 5 start alike")
	}
	if strings.Join(words(2, 1), " ") != strings.Join(words(12, 1), " ") {
		t.Error("an exact repeat (same ids, same length) is not the same prompt")
	}
	if strings.Join(a[:8], " ") == strings.Join(words(0, 2)[:8], " ") {
		t.Error("another salt gives the same first block")
	}
	// A calibrated vocabulary: the lead, and the overhead off the end.
	cv := &Vocab{Words: words0(), Lead: "the", Overhead: 3}
	p := strings.Fields(tr.TracePrompt(cv, 7, 1, 0))
	if len(p) != 1+1200-3 || p[0] != "the" {
		t.Fatalf("calibrated: %d words, first %q", len(p), p[0])
	}
	p2 := strings.Fields(tr.TracePrompt(cv, 7, 1, 2))
	if strings.Join(p[:1025], " ") != strings.Join(p2[:1025], " ") {
		t.Error("calibrated: the shared blocks differ")
	}
	// Without hash ids, the request's own text, distinct per request.
	tr2, _ := ParseTrace(strings.NewReader(`{"timestamp": 0, "input_length": 40, "output_length": 1}
{"timestamp": 1, "input_length": 40, "output_length": 1}`), TraceSpec{Path: "x", Format: FormatMooncake})
	if tr2.TracePrompt(v, 1, 1, 0) == tr2.TracePrompt(v, 1, 1, 1) {
		t.Error("two requests without hash ids got one prompt")
	}
}

func words0() []string { return append([]string(nil), words...) }

func TestTraceShardAndSchedule(t *testing.T) {
	tr, err := LoadTrace(TraceSpec{Path: syntheticTrace, Format: FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	a, b := tr.Shard(0, 2), tr.Shard(1, 2)
	if a.Len() != 8 || b.Len() != 8 || b.Requests[0].Line != 2 || a.Requests[1].Line != 3 {
		t.Fatalf("shards %d and %d requests", a.Len(), b.Len())
	}
	// A shard's prompts are the whole trace's.
	if b.TracePrompt(nil, 1, 1, 1) != tr.TracePrompt(nil, 1, 1, 3) {
		t.Error("shard 1's second request is not the trace's fourth")
	}
	s := Schedule{Trace: tr.Offsets(1)}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	sp := s.Split(1, 2)
	if len(sp.Trace) != 8 || sp.Trace[1] != 500*time.Millisecond {
		t.Errorf("split: %v", sp.Trace)
	}
	g := s.NewGenerator()
	for i := range 16 {
		if o := g.Next(); o != tr.Requests[i].At {
			t.Fatalf("offset %d: %v, want %v", i, o, tr.Requests[i].At)
		}
	}
	if g.Next() != math.MaxInt64 {
		t.Error("past the end: want the longest duration")
	}
	if err := (Schedule{Trace: []time.Duration{2, 1}}).Validate(); err == nil {
		t.Error("decreasing offsets accepted")
	}
	if err := (Load{Schedule: &Schedule{Trace: []time.Duration{0}}}).Validate(); err != nil {
		t.Errorf("a trace stops at its end: %v", err)
	}
	if err := (Load{Schedule: &Schedule{Trace: []time.Duration{0}}, MinRequests: 2}).Validate(); err == nil {
		t.Error("min_requests past the trace accepted")
	}
}

// FuzzParseTrace: any input is a trace or an error, never a panic; a
// trace's requests are in time order with valid lengths, and hash ids
// that fit their input_length.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 1200, "output_length": 12, "hash_ids": [0, 1, 2]}`), false)
	f.Add([]byte("{\"timestamp\": 5, \"prompt\": \"hi\", \"output_length\": 1}\n{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1}"), true)
	f.Add([]byte(`{"timestamp": 1e300, "input_length": 1, "output_length": 1}`), false)
	f.Add([]byte(`{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [9223372036854775807]}`), false)
	f.Add([]byte("\n\n{}\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, plain bool) {
		format := FormatMooncake
		if plain {
			format = FormatTrace
		}
		tr, err := ParseTrace(strings.NewReader(string(data)), TraceSpec{Path: "f", Format: format, BlockTokens: 4})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace f") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		for i, q := range tr.Requests {
			if q.At < 0 || i > 0 && q.At < tr.Requests[i-1].At || q.Line < 1 {
				t.Fatalf("request %d: at %v line %d", i, q.At, q.Line)
			}
			if q.OutputLength < 1 || q.Prompt == "" && (q.InputLength < 1 || len(q.HashIDs) > (q.InputLength+3)/4) {
				t.Fatalf("request %d: %+v", i, q)
			}
			if q.InputLength <= 4096 {
				p := tr.TracePrompt(nil, 1, 1, i)
				if q.Prompt == "" && len(strings.Fields(p)) != q.InputLength {
					t.Fatalf("request %d: %d words for input_length %d", i, len(strings.Fields(p)), q.InputLength)
				}
			}
		}
		if err := (Schedule{Trace: tr.Offsets(1)}).Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
