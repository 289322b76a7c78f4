package sweep

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

func syntheticTrace(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../testdata/traces/mooncake-synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The Mooncake trace against the engine-mode simulator at time_scale 2:
// each request is sent at its recorded time halved, with the trace's own
// input and output lengths, and the simulator's block-hash prefix cache
// finds exactly the prompt blocks the trace says repeat (512 tokens per
// shared leading hash id; all but the last token for an exact repeat),
// nothing where no id repeats, and its /metrics counters agree.
//
// Against the generic simulator the answers do not say what was cached
// (the row's and the requests' cached_tokens are NULL, the hit rate is the
// server's counters'); against the vLLM personality they carry
// usage.prompt_tokens_details.cached_tokens, and every request row and the
// row's sums agree with the simulator.
func TestTraceReplayAgainstSimulator(t *testing.T) {
	for _, persona := range []string{sim.PersonaGeneric, sim.PersonaVLLM} {
		t.Run(persona, func(t *testing.T) { testTraceReplay(t, persona) })
	}
}

func testTraceReplay(t *testing.T, persona string) {
	// Arrival within 50 ms of the send is a claim about a quiet machine
	// (a busy one stalls the server's accept for longer): judged last,
	// against other processes' load. Sending on the trace's times is
	// behaviour, judged on any machine.
	machine := machinetest.Start()
	srv, url := startPersona(t, persona, func(c *sim.Config) { c.Mode = sim.ModeEngine })
	usage := persona == sim.PersonaVLLM // the answers say what was cached
	path := syntheticTrace(t)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0
		dataset: {path: %q, format: "mooncake", time_scale: 2}
		telemetry: {interval: "20ms"}`, url, path), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 1 {
		t.Fatalf("%d rows, want 1", len(c.cells))
	}
	row := c.cells[0]
	t.Logf("%s: %s %s; notes %q", row.CellID, row.Status, row.Reason, row.Notes)
	tr, err := loadgen.LoadTrace(loadgen.TraceSpec{Path: path, Format: loadgen.FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != results.StatusOK || row.CellID != "sweep/trace/x2" || row.Requests != 16 || row.Completed != 16 {
		t.Fatalf("%s: status %s (%s), %d requests, %d completed", row.CellID, row.Status, row.Reason, row.Requests, row.Completed)
	}
	if v(row.TimeScale) != 2 || row.Arrival != ArrivalTrace || math.Abs(row.Rate-2*tr.MeanRate()) > 1e-9 || row.ISL != 0 || row.OSL != 0 {
		t.Errorf("time_scale %v arrival %q rate %v isl/osl %d/%d", v(row.TimeScale), row.Arrival, row.Rate, row.ISL, row.OSL)
	}
	if !strings.Contains(row.Notes, "trace replay of mooncake-synthetic.jsonl (mooncake): 16 requests") || !strings.Contains(row.Notes, "17 of 44 hash-id blocks") {
		t.Errorf("notes %q", row.Notes)
	}
	// The scheduled-time rules of an open loop: send lag is small (its
	// median: a busy shared machine stalls a process for tens of ms now
	// and then, docs/SIM.md, and the lag shows it), and ttft_sched is ttft
	// plus it.
	if v(row.SendLagP50Ms) < 0 || v(row.SendLagP50Ms) > 10 || v(row.TTFTSchedP50Ms) < v(row.TTFTP50Ms) {
		t.Errorf("send lag p50 %.2f ms (max %.2f), ttft_sched p50 %.2f ttft p50 %.2f", v(row.SendLagP50Ms), v(row.SendLagMaxMs), v(row.TTFTSchedP50Ms), v(row.TTFTP50Ms))
	}
	sort.Slice(c.reqs, func(i, j int) bool { return c.reqs[i].Seq < c.reqs[j].Seq })
	wantCached := []int{0, 0, 1024, 512, 0, 1536, 1023, 0, 0, 512, 1024, 0, 1792, 512, 512, 0}
	planned := func(i int) time.Time { // the client's scheduled instant (wall clock)
		return c.reqs[i].SentAt.Add(-time.Duration(c.reqs[i].SendLagMs * float64(time.Millisecond)))
	}
	recs := make([]sim.RequestRecord, len(c.reqs))
	var offsets []time.Duration // received less the trace's time over 2
	var prompt, cached int
	for i, q := range c.reqs {
		line := tr.Requests[i]
		if q.Status != results.StatusOK || int(q.InputTokens) != line.InputLength || int(q.OutputTokens) != line.OutputLength {
			t.Errorf("request %d (line %d): %s, %d in / %d out; the trace says %d / %d", i, line.Line, q.Status, q.InputTokens, q.OutputTokens, line.InputLength, line.OutputLength)
		}
		// Planned at the trace's time over 2.
		if got, want := planned(i).Sub(planned(0)), line.At/2; got-want > time.Millisecond || want-got > time.Millisecond {
			t.Errorf("request %d (line %d) planned %v after the first, want %v (the trace's %v at time_scale 2)", i, line.Line, got, want, line.At)
		}
		rec, ok := srv.Record(q.ResponseID)
		if !ok {
			t.Fatalf("no simulator record of %s", q.ResponseID)
		}
		recs[i] = rec
		offsets = append(offsets, rec.Received.Sub(recs[0].Received)-line.At/2)
		if rec.CachedTokens != wantCached[i] {
			t.Errorf("request %d (line %d, hash ids %v): %d prompt tokens cached, want %d", i, line.Line, line.HashIDs, rec.CachedTokens, wantCached[i])
		}
		// The answer's usage said so too, and the request row keeps it
		// (NULL where the server does not say).
		if usage && (q.CachedTokens == nil || int(*q.CachedTokens) != rec.CachedTokens) || !usage && q.CachedTokens != nil {
			t.Errorf("request %d: cached_tokens %v in its row, the simulator's %d (usage carries it: %v)", i, v(q.CachedTokens), rec.CachedTokens, usage)
		}
		prompt += rec.PromptTokens
		cached += rec.CachedTokens
	}
	// And the simulator (its own clock) received each at the trace's time
	// over 2, give or take that request's send lag and the machine's
	// stalls (well under the trace's gaps of 125 ms and more), from a
	// common origin.
	sorted := slices.Clone(offsets)
	slices.Sort(sorted)
	origin := sorted[len(sorted)/2]
	var late []string
	for i, o := range offsets {
		lag := time.Duration(c.reqs[i].SendLagMs * float64(time.Millisecond))
		if d := o - origin; d > lag+50*time.Millisecond || d < -50*time.Millisecond {
			late = append(late, fmt.Sprintf("request %d (line %d) received %v off the trace's time over 2 (send lag %v)", i, tr.Requests[i].Line, d, lag))
		}
	}
	// The server's own counters over the window say the same, and so do
	// the row's sums of the answers' usage.
	want := float64(cached) / float64(prompt)
	if r := row.ServerPrefixCacheHitRate; r == nil || math.Abs(*r-want) > 0.005 {
		t.Errorf("prefix-cache hit rate from /metrics %v, want %.4f (%d of %d prompt tokens)", v(r), want, cached, prompt)
	}
	tol, wantSum := 0.005, int64(-1) // without usage: the counters', NULL
	if usage {
		tol, wantSum = 1e-9, int64(cached)
	}
	if r := row.PrefixCacheHitRate; r == nil || math.Abs(*r-want) > tol || v(row.CachedTokens) != wantSum {
		t.Errorf("row: prefix_cache_hit_rate %v cached_tokens %v, want %.4f and %d", v(r), v(row.CachedTokens), want, wantSum)
	}
	if len(late) > 0 {
		machine.Judge(t, "each request reaching the simulator within 50 ms of its send")
		t.Error(strings.Join(late, "\n"))
	}
}

// A plain trace: given prompts are sent as they are, lengths synthesized;
// requests and duration replay part of it; warm-up passes replay its
// first requests with other prompts (the timed pass finds nothing of them
// cached).
func TestPlainTraceReplay(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) { c.Mode = sim.ModeEngine })
	path, _ := filepath.Abs("../../testdata/traces/plain.jsonl")
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 1, requests: 3, calibrate: "off"
		dataset: {path: %q, format: "trace", time_scale: 4}`, url, path), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	row := c.cells[0]
	if row.Status != results.StatusOK || row.Requests != 3 || len(c.reqs) != 3 || row.CellID != "sweep/trace/x4" {
		t.Fatalf("%s: %s %s, %d requests", row.CellID, row.Status, row.Reason, row.Requests)
	}
	sort.Slice(c.reqs, func(i, j int) bool { return c.reqs[i].Seq < c.reqs[j].Seq })
	if c.reqs[1].InputTokens != 256 || c.reqs[0].OutputTokens != 32 || c.reqs[2].OutputTokens != 24 {
		t.Errorf("lengths: %d in, %d out, %d out", c.reqs[1].InputTokens, c.reqs[0].OutputTokens, c.reqs[2].OutputTokens)
	}
	rec, _ := srv.Record(c.reqs[1].ResponseID)
	if rec.CachedTokens != 0 {
		t.Errorf("the timed pass's synthesized prompt found %d tokens cached from the warm-up pass", rec.CachedTokens)
	}
}

// A broken line stops the stage before anything is sent, naming the
// file and line.
func TestBrokenTraceNamesFileAndLine(t *testing.T) {
	srv, url := startSim(t, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "prod.jsonl")
	src := `{"timestamp": 0, "input_length": 100, "output_length": 4, "hash_ids": [0]}
{"timestamp": 10, "input_length": 100, "output_length": 4, "hash_ids": [0]}
{"timestamp": 20, "input_length": 100, "output_length": 4, "hash_ids": [0, 1, 2]}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0
		dataset: {path: %q, format: "mooncake"}`, url, path), "")
	_, err := runStage(t, st, p)
	if err == nil || !strings.Contains(err.Error(), "stages.sweep.dataset: trace "+path+":3: ") || !strings.Contains(err.Error(), `"hash_ids" names 3 blocks`) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Records()); n != 0 {
		t.Errorf("%d requests sent before the trace was read", n)
	}
}

// A trace whose request cannot fit the context is refused before any
// request, naming the line.
func TestTraceOverTheContextIsRefused(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.MaxModelLen = 2048 })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off"
		dataset: {path: %q, format: "mooncake"}`, url, syntheticTrace(t)), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	r := c.cells[0]
	if r.Status != results.StatusError || !strings.Contains(r.Reason, "mooncake-synthetic.jsonl:6: input_length+output_length = 2120 does not fit the server's context of 2048") || len(c.reqs) != 0 {
		t.Errorf("%s %q, %d requests", r.Status, r.Reason, len(c.reqs))
	}
}

func TestTraceValidate(t *testing.T) {
	trace := `dataset: {path: "t.jsonl", format: "mooncake"}`
	for _, tc := range []struct{ cue, want string }{
		{trace + `, rates: [1]`, "stages.sweep.rates: a trace replay sends on the trace's own timestamps"},
		{trace + `, min_requests: 5`, "stages.sweep.min_requests: a trace replay sends the trace's requests, no more"},
		{trace + `, min_duration: "5s"`, "stages.sweep.min_duration:"},
		{trace + `, shared_prefix: 4`, "stages.sweep.shared_prefix: a trace's shared prefixes are its hash_ids"},
		{trace + `, turns: 3`, "stages.sweep.turns: a trace replays its requests one by one"},
		{trace + `, endpoint: "embeddings"`, "stages.sweep.endpoint: a trace replays generation requests"},
		{trace + `, ramp: {from: 1, duration: "1s"}`, "stages.sweep.ramp: a trace replay sends on the trace's own timestamps"},
		{`dataset: {path: "t.jsonl", format: "jsonl", time_scale: 2}`, "stages.sweep.dataset.time_scale: applies to a trace replay"},
		{`dataset: {path: "t.jsonl", block_tokens: 16}`, "stages.sweep.dataset.block_tokens: applies to a trace replay"},
		{trace + `, cells: [{isl: 1, osl: 1, server: {np: "2"}}]`, "stages.sweep.cells.0.server:"},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1"
			`+tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n  got  %v\n  want %s", tc.cue, err, tc.want)
		}
	}
	// A valid trace plan ignores the default cells (and their context
	// check against model.max_model_len).
	st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1", max_inflight: 8
		dataset: {path: "t.jsonl", format: "mooncake", time_scale: 0.5}`, `model: {name: "sim-llama", max_model_len: 1024}`)
	if err := st.Validate(check(t, p)); err != nil {
		t.Errorf("valid trace plan: %v", err)
	}
	steps := st.Plan()
	if len(steps) != 1 || steps[0].ID != "sweep/trace/x0.5" || steps[0].Label != "trace x0.5" {
		t.Errorf("plan: %+v", steps)
	}
}

// Cold prompts differ across repeats too: a repeated point (a search's
// probe, a trace replay) must not find the last repeat's prompts cached.
func TestColdPromptsDifferAcrossRepeats(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) { c.Mode = sim.ModeEngine })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, calibrate: "off", repeats: 2
		dataset: {path: %q, format: "mooncake", time_scale: 4}`, url, syntheticTrace(t)), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 2 || c.cells[1].CellID != "sweep/trace/x4/rep2" {
		t.Fatalf("%d rows", len(c.cells))
	}
	cached := map[string]int{}
	for _, q := range c.reqs {
		rec, _ := srv.Record(q.ResponseID)
		cached[q.CellID] += rec.CachedTokens
	}
	// Within a replay the trace's own sharing (8,447 tokens), nothing more.
	if cached["sweep/trace/x4/rep1"] != 8447 || cached["sweep/trace/x4/rep2"] != 8447 {
		t.Errorf("cached tokens per repeat %v, want the trace's own 8447 in each", cached)
	}
}

// TestCSVTraceReplay: a BurstGPT and an Azure trace fixture
// (internal/loadgen/testdata/traces) replay to ok rows, each request's
// input and output tokens the trace's (calibrated prompts, forced
// output), in the trace's time order, BurstGPT's failed row left out; a
// malformed row stops the stage before anything is sent, naming the file
// and line.
func TestCSVTraceReplay(t *testing.T) {
	for format, want := range map[string][][2]int64{
		"burstgpt": {{40, 12}, {32, 16}, {64, 8}, {16, 4}},
		"azure":    {{40, 12}, {64, 8}, {24, 6}, {16, 4}},
	} {
		t.Run(format, func(t *testing.T) {
			_, url := startSim(t, nil)
			path, _ := filepath.Abs("../../internal/loadgen/testdata/traces/" + format + ".csv")
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0
				dataset: {path: %q, format: %q, time_scale: 8}`, url, path, format), "")
			if err := st.Validate(check(t, p)); err != nil {
				t.Fatalf("vet: %v", err)
			}
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			row := c.cells[0]
			if row.Status != results.StatusOK || row.Completed != 4 || len(c.reqs) != 4 || row.CellID != "sweep/trace/x8" {
				t.Fatalf("%s: %s %s, %d completed", row.CellID, row.Status, row.Reason, row.Completed)
			}
			sort.Slice(c.reqs, func(i, j int) bool { return c.reqs[i].Seq < c.reqs[j].Seq })
			for i, q := range c.reqs {
				if q.Status != results.StatusOK || q.InputTokens != want[i][0] || q.OutputTokens != want[i][1] {
					t.Errorf("request %d: %s, %d in, %d out; want ok, %d, %d", i, q.Status, q.InputTokens, q.OutputTokens, want[i][0], want[i][1])
				}
			}
		})
	}
	srv, url := startSim(t, nil)
	path := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(path, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,40,4\n2023-11-16 18:15:47.00,forty,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, dataset: {path: %q, format: "azure"}`, url, path), "")
	if _, err := runStage(t, st, p); err == nil || !strings.Contains(err.Error(), "trace "+path+":3: ContextTokens \"forty\"") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Records()); n != 0 {
		t.Errorf("%d requests sent before the trace was read", n)
	}
}

// TestHFDatasetSweep: a Hugging Face dataset folder (a repository's
// layout, made for the test: a train and a test split in JSONL shards)
// runs to an ok row sending the train split's prompts, and only them;
// vet refuses split off format hf, at the field.
func TestHFDatasetSweep(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"data/train-00000-of-00001.jsonl": `{"id": 1, "text": "tell me a story about a cat"}` + "\n" + `{"id": 2, "text": "tell me a story about a dog"}` + "\n",
		"data/test-00000-of-00001.jsonl":  `{"id": 3, "text": "a prompt of the test split"}` + "\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, warmup: 0, requests: 6, concurrency: [2], cells: [{isl: 16, osl: 4}]
		dataset: {path: %q, format: "hf", split: "train"}`, url, dir), "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("vet: %v", err)
	}
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if row := c.cells[0]; row.Status != results.StatusOK || row.Completed != 6 {
		t.Fatalf("%s: %s %s, %d completed", row.CellID, row.Status, row.Reason, row.Completed)
	}
	for _, q := range c.reqs {
		rec, _ := srv.Record(q.ResponseID)
		if q.Status != results.StatusOK || rec.PromptTokens == 0 {
			t.Fatalf("request %d: %s %q", q.Seq, q.Status, q.Error)
		}
	}
	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: "http://x", dataset: {path: %q, format: "jsonl", split: "train"}`, dir), "")
	if err := st.Validate(check(t, p)); err == nil || !strings.Contains(err.Error(), "plan.cue:") || !strings.Contains(err.Error(), `stages.sweep.dataset.split: applies to a Hugging Face dataset (format hf), not format "jsonl"`) {
		t.Errorf("split off hf: err = %v", err)
	}
}
