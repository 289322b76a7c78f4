package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// byID indexes rows by cell id.
func byID(cells []results.Cell) map[string]results.Cell {
	out := map[string]results.Cell{}
	for _, c := range cells {
		out[c.CellID] = c
	}
	return out
}

// The batch ladder over the simulator: one row per batch, embeddings/s
// exactly batch × req/s (every completed request carried batch vectors),
// the vectors' length, and isl per input whatever the batch.
func TestEmbeddingsBatchLadder(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "embeddings", stream: false,
		cells: [{isl: 16, osl: 1}], batch: [1, 4, 8], concurrency: [2], requests: 6, warmup: 0`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	if len(rows) != 3 {
		t.Fatalf("%d rows: %v", len(c.cells), rows)
	}
	for _, b := range []int{1, 4, 8} {
		r, ok := rows[fmt.Sprintf("sweep/16:1/c2/b%d", b)]
		if !ok || r.Status != results.StatusOK {
			t.Fatalf("b%d: %+v", b, r)
		}
		if r.Batch != int64(b) || v(r.Dimensions) != 384 || v(r.EffectiveISL) != 16 {
			t.Errorf("b%d: batch %d dimensions %d effective_isl %.1f", b, r.Batch, v(r.Dimensions), v(r.EffectiveISL))
		}
		if got, want := v(r.EmbeddingsS), float64(b)*v(r.ReqS); math.Abs(got-want) > 1e-9*want || got <= 0 {
			t.Errorf("b%d: embeddings_s %.3f, want batch × req_s = %.3f", b, got, want)
		}
		if got, want := v(r.InputTokS), 16*v(r.EmbeddingsS); math.Abs(got-want) > 1e-6*want {
			t.Errorf("b%d: input_tok_s %.3f, want 16 × embeddings_s = %.3f", b, got, want)
		}
		if v(r.E2ELP50Ms) <= 0 || v(r.E2ELP99Ms) < v(r.E2ELP50Ms) || r.CosineMin != nil {
			t.Errorf("b%d: e2el p50 %.2f p99 %.2f cosine_min %v", b, v(r.E2ELP50Ms), v(r.E2ELP99Ms), r.CosineMin)
		}
	}
	if n := len(c.reqs); n != 18 {
		t.Errorf("%d request rows, want 18", n)
	}
}

// A bad vector fails its request, and the row says what was wrong with it.
func TestEmbeddingsBadVectorsFailTheirRequests(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct{ fault, dims, want string }{
		{"embed-zero", "", "all 384 elements are zero"},
		{"embed-nan", "", "element 192 is not finite"},
		{"embed-dim=10", "", "10 dimensions, want 384"},
		{"embed-dim=10", "dimensions: 8", "bad embedding 4 of 4: 10 dimensions, want 8"},
		{"none", "dimensions: 8", ""},
	} {
		t.Run(tc.fault+tc.dims, func(t *testing.T) {
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "embeddings", stream: false, %s
				cells: [{isl: 8, osl: 1}], batch: [4], concurrency: [1], requests: 3, warmup: 0,
				headers: {"X-Sim-Fault": %q}`, url, tc.dims, tc.fault), "")
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			r := c.cells[0]
			if tc.want == "" {
				if r.Status != results.StatusOK || v(r.Dimensions) != 8 {
					t.Fatalf("%s %q dimensions %d", r.Status, r.Reason, v(r.Dimensions))
				}
				return
			}
			if r.Status != results.StatusError || r.Failed != 3 || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("%s failed %d %q; want every request failed with %q", r.Status, r.Failed, r.Reason, tc.want)
			}
			if r.EmbeddingsS == nil || *r.EmbeddingsS != 0 || !strings.Contains(c.reqs[0].Error, tc.want) {
				t.Fatalf("embeddings_s %v, request error %q", r.EmbeddingsS, c.reqs[0].Error)
			}
		})
	}
}

// recordVectors asks the simulator for the texts' vectors and writes
// them beside the texts as a JSONL dataset, each perturbed by noise.
func recordVectors(t *testing.T, url string, texts []string, noise float64) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"input": texts})
	resp, err := http.Post(url+"/v1/embeddings", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) != len(texts) {
		t.Fatalf("recording: %v %d", err, len(out.Data))
	}
	var lines bytes.Buffer
	for i, d := range out.Data {
		for j := range d.Embedding {
			// A fixed pattern, not random: the test is the same every run.
			d.Embedding[j] += noise * math.Sin(float64(7*j+i))
		}
		l, _ := json.Marshal(map[string]any{"text": texts[i], "vector": d.Embedding})
		lines.Write(append(l, '\n'))
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The quality check: vectors against references recorded from the same
// simulator are cosine 1; against perturbed ones lower, and the plan's
// assertion cosine_min > 0.99 fails on them.
func TestEmbeddingsCosineAgainstReferences(t *testing.T) {
	_, url := startSim(t, nil)
	texts := []string{"the quick brown fox", "jumps over the lazy dog", "a quantized model that got faster", "but wrong", "is caught"}
	gate, err := pipeline.CompileAssertion(schema.Assertion{Expr: "cosine_min > 0.99"}, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		noise    float64
		min, max float64
		pass     bool
	}{{0, 0.99999, 1.00001, true}, {0.05, 0.3, 0.99, false}} {
		path := recordVectors(t, url, texts, tc.noise)
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "embeddings", stream: false,
			cells: [{isl: 8, osl: 1}], batch: [2], concurrency: [1], requests: 5, warmup: 0,
			dataset: {path: %q, field: "text"}`, url, path), "")
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		r := c.cells[0]
		if r.Status != results.StatusOK || v(r.CosineMin) < tc.min || v(r.CosineMin) > tc.max || v(r.CosineMean) < v(r.CosineMin) {
			t.Fatalf("noise %g: %s %q cosine_min %.5f mean %.5f, want min in [%g, %g]", tc.noise, r.Status, r.Reason, v(r.CosineMin), v(r.CosineMean), tc.min, tc.max)
		}
		if got := gate.Judge(r); got.Passed != tc.pass {
			t.Errorf("noise %g: cosine_min > 0.99 passed=%v, want %v (%.5f)", tc.noise, got.Passed, tc.pass, v(r.CosineMin))
		}
	}
}

// llama-server started without --embeddings answers 501 (its own
// message); the row says which flags to add. Started with it, it embeds.
func TestLlamaServerWithoutEmbeddingsNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		edit func(*sim.Config)
		want string
	}{
		{nil, "--embeddings --pooling mean"},
		{func(c *sim.Config) { c.Embeddings, c.Pooling = true, "none" }, "Pooling type 'none' is not OAI compatible"},
		{func(c *sim.Config) { c.Embeddings = true }, ""},
	} {
		_, url := startPersona(t, sim.PersonaLlamaServer, tc.edit)
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "embeddings", stream: false,
			cells: [{isl: 8, osl: 1}], batch: [2], concurrency: [1], requests: 2, warmup: 0`, url), "")
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		r := c.cells[0]
		if tc.want == "" {
			if r.Status != results.StatusOK {
				t.Fatalf("with --embeddings: %s %q", r.Status, r.Reason)
			}
			continue
		}
		if r.Status != results.StatusError || !strings.Contains(r.Reason, tc.want) || !strings.Contains(r.Reason, "llama-server needs --embeddings") {
			t.Fatalf("%s %q; want the reason to name %q and the flags", r.Status, r.Reason, tc.want)
		}
	}
}

// Images cost the simulator ceil(W/28)·ceil(H/28) prompt tokens each and
// MediaTokenTime per token in TTFT: effective_isl carries them exactly,
// the simulator plans each request's first token images × tokens ×
// MediaTokenTime later than a text request's, and the client never reads
// a first token earlier than the simulator planned it (ground truth from
// the simulator's records, joined by response id; how much later a busy
// machine makes it is the accuracy benchmarks' to measure).
func TestImagesPricedInTTFTAndUsage(t *testing.T) {
	const perToken = 50 * time.Microsecond
	srv, url := startSim(t, func(c *sim.Config) { c.MediaTokenTime = perToken })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat",
		cells: [{isl: 32, osl: 4}], images: [0, 1, 4], image_resolution: ["256x256", "512x512"],
		concurrency: [1], requests: 4, warmup: 1`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (images 0 once, 1 and 4 at two sizes): %v", len(rows), rows)
	}
	base := rows["sweep/32:4/c1/img0"]
	if base.Status != results.StatusOK || v(base.EffectiveISL) != 32 {
		t.Fatalf("img0: %s %q isl %.1f", base.Status, base.Reason, v(base.EffectiveISL))
	}
	// The simulator's plan for each cell's requests, and the client's
	// first tokens against it.
	planned := map[string][]time.Duration{}
	for _, q := range c.reqs {
		rec, ok := srv.Record(q.ResponseID)
		if !ok || q.TTFTMs == nil {
			t.Fatalf("request %s of %s: no simulator record or no ttft", q.ResponseID, q.CellID)
		}
		planned[q.CellID] = append(planned[q.CellID], rec.PlannedTTFT)
		if *q.TTFTMs < ms(rec.PlannedTTFT) {
			t.Errorf("%s request %s: ttft %.3f ms, earlier than the simulator planned (%.3f ms)", q.CellID, q.ResponseID, *q.TTFTMs, ms(rec.PlannedTTFT))
		}
	}
	basePlan := planned[base.CellID]
	if len(basePlan) == 0 || slices.Min(basePlan) != slices.Max(basePlan) {
		t.Fatalf("img0's planned first-token delays %v: want one fixed delay", basePlan)
	}
	for _, tc := range []struct {
		id     string
		tokens int
	}{
		{"sweep/32:4/c1/img1@256x256", 100}, {"sweep/32:4/c1/img4@256x256", 400},
		{"sweep/32:4/c1/img1@512x512", 361}, {"sweep/32:4/c1/img4@512x512", 1444},
	} {
		r := rows[tc.id]
		if r.Status != results.StatusOK || v(r.EffectiveISL) != float64(32+tc.tokens) {
			t.Errorf("%s: %s %q effective_isl %.1f, want %d", tc.id, r.Status, r.Reason, v(r.EffectiveISL), 32+tc.tokens)
			continue
		}
		want := basePlan[0] + time.Duration(tc.tokens)*perToken
		for _, got := range planned[tc.id] {
			if got != want {
				t.Errorf("%s: the simulator planned the first token at %v, want %v (text's %v + %d tokens × %v)", tc.id, got, want, basePlan[0], tc.tokens, perToken)
			}
		}
		if len(planned[tc.id]) != int(r.Requests) {
			t.Errorf("%s: %d requests joined to the simulator's records, want %d", tc.id, len(planned[tc.id]), r.Requests)
		}
	}
}

// The real-time factor of a transcription sweep over the simulator,
// whose processing time is TTFT + seconds × AudioSecondTime.
func TestTranscriptionsRealTimeFactor(t *testing.T) {
	const perSecond = 20 * time.Millisecond
	_, url := startSim(t, func(c *sim.Config) { c.AudioSecondTime = perSecond })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "transcriptions",
		audio_seconds: [1, 4], concurrency: [1], requests: 3, warmup: 1`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	for _, secs := range []float64{1, 4} {
		r, ok := rows[fmt.Sprintf("sweep/audio%gs/c1", secs)]
		if !ok || r.Status != results.StatusOK {
			t.Fatalf("%gs: %+v", secs, r)
		}
		want := (5*time.Millisecond + time.Duration(secs*float64(perSecond))).Seconds() / secs
		if got := v(r.RealTimeFactor); got < want || got > want+0.01/secs {
			t.Errorf("%gs: real_time_factor %.4f, want %.4f (+ at most 10 ms)", secs, got, want)
		}
		if r.AudioSeconds != secs || v(r.AudioSPerS) <= 0 {
			t.Errorf("%gs: audio_seconds %g audio_s_per_s %.2f", secs, r.AudioSeconds, v(r.AudioSPerS))
		}
	}
}
