package validate_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/sweep"
	"github.com/benchrun/benchrun/stages/validate"
	"github.com/benchrun/benchrun/stages/warmup"
)

func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(sweep.Kind)
	reg.AddKind(warmup.Kind)
	reg.AddKind(validate.Kind)
	return reg
}

// corpus is the shipped corpus's glob (testdata/docs at the repository
// root), absolute so a plan in a temporary folder finds it.
func corpus(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/docs")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "*")
}

// corpusTokens are the shipped documents' prompt tokens as the simulator
// counts them (its generic tokenizer), README left out as the stage's
// default exclude leaves it.
func corpusTokens(t *testing.T) []int {
	t.Helper()
	files, _ := filepath.Glob(corpus(t))
	var out []int
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "README") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, simtest.CompletionPromptTokens("", strings.TrimSpace(string(b))))
	}
	if len(out) < 3 {
		t.Fatalf("the corpus has %d documents", len(out))
	}
	return out
}

// fixedSim serves the simulator in fixed mode with a TTFT and ITL long
// enough that a shared machine's scheduling noise is small beside them.
func fixedSim(t *testing.T, edits ...func(*sim.Config)) string {
	return pipelinetest.Sim(t, append([]func(*sim.Config){func(c *sim.Config) { c.TTFT, c.ITL = 40*time.Millisecond, 4*time.Millisecond }}, edits...)...)
}

func plan(url, extra string, docs string) string {
	return fmt.Sprintf(`
name: "v"
model: {name: "sim-llama"}
stages: {
	sweep: {kind: "sweep", target: %q, cells: [{isl: 128, osl: 16}, {isl: 64, osl: 16}], concurrency: [1, 2], requests: 8, warmup: 1, telemetry: {gpu: "off", host: "off", metrics: "off"}}
	realworld: {kind: "validate", target: %q, needs: ["sweep"], against: "sweep", documents: %q
		%s}
}`, url, url, docs, extra)
}

func validateRow(t *testing.T, rec *pipelinetest.Recording) results.Cell {
	t.Helper()
	for _, c := range rec.Cells {
		if c.Stage == "realworld" {
			return c
		}
	}
	t.Fatalf("no validate row; progress:\n%s", rec.Progress)
	return results.Cell{}
}

func near(t *testing.T, name string, got *float64, want, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is NULL; want %.3f", name, want)
		return
	}
	if math.Abs(*got-want) > tol*want {
		t.Errorf("%s = %.4f; want %.4f ± %.0f%%", name, *got, want, 100*tol)
	}
}

// In fixed mode the simulator's first token comes TTFT after the request
// whatever the prompt, and every next one ITL later: at the same osl and
// concurrency the documents decode exactly as the synthetic cell does
// (ratio 1 for decode, ttft, tpot, itl, e2el), and prefill tokens/s grows
// with the prompt: its ratio is the documents' mean tokens / the cell's
// isl, the documents' tokens counted by the simulator's own tokenizer.
func TestRatiosOnTheCorpusAgainstFixedSimulator(t *testing.T) {
	machine := machinetest.Start()
	url := fixedSim(t)
	g := pipelinetest.LoadPlan(t, registry(), plan(url, `band: [0.5, 1.5]`, corpus(t)))
	rec := pipelinetest.Run(t, context.Background(), g, engine.Options{})
	row := validateRow(t, rec)
	if row.Status != results.StatusOK {
		t.Fatalf("validate row %s: %s\n%s", row.Status, row.Reason, rec.Progress)
	}
	toks := corpusTokens(t)
	mean := 0.0
	for _, n := range toks {
		mean += float64(n)
	}
	mean /= float64(len(toks))
	if row.Documents != int64(len(toks)) || row.AgainstCellID != "sweep/128:128/c1" && row.AgainstCellID != "sweep/128:16/c1" {
		t.Errorf("documents %d against %q; want %d against the sweep's first cell at c=1", row.Documents, row.AgainstCellID, len(toks))
	}
	// Every document the same number of times (8 requests, 4 documents).
	near(t, "effective_isl", row.EffectiveISL, mean, 0.001)
	near(t, "synthetic_effective_isl", row.SyntheticEffectiveISL, 128, 0.001)
	if row.Requests%int64(len(toks)) != 0 || row.Requests < 8 {
		t.Errorf("requests %d: want whole rounds of the %d documents, at least 8", row.Requests, len(toks))
	}
	// The ratios divide two timed passes: each is measured (not NULL)
	// always; within 15% of the simulator's is a quiet machine's claim,
	// judged last.
	var off []string
	ratio := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s is NULL; want %.3f", name, want)
		} else if math.Abs(*got-want) > 0.15*want {
			off = append(off, fmt.Sprintf("%s = %.4f; want %.4f ± 15%%", name, *got, want))
		}
	}
	for _, m := range []struct {
		name string
		v    *float64
	}{{"decode_tok_s_ratio", row.DecodeTokSRatio}, {"output_tok_s_ratio", row.OutputTokSRatio}, {"req_s_ratio", row.ReqSRatio},
		{"ttft_ratio", row.TTFTRatio}, {"tpot_ratio", row.TPOTRatio}, {"itl_ratio", row.ITLRatio}, {"e2el_ratio", row.E2ELRatio}} {
		ratio(m.name, m.v, 1)
	}
	ratio("prefill_tok_s_ratio", row.PrefillTokSRatio, mean/128)
	ratio("total_tok_s_ratio", row.TotalTokSRatio, (mean+16)/(128+16))
	defer func() {
		if len(off) > 0 && !t.Failed() {
			t.Log(strings.Join(off, "\n"))
			machine.Judge(t, "the documents' ratios within 15% of the fixed simulator's")
			t.Fatal(strings.Join(off, "; "))
		}
	}()
	// The band [0.5, 1.5] holds the decode ratio: a passing verdict.
	var band []results.Verdict
	for _, v := range rec.Verdicts {
		if v.Stage == "realworld" && strings.Contains(v.Assertion, "decode_tok_s_ratio") {
			band = append(band, v)
		}
	}
	if len(band) != 1 || !band[0].Passed {
		t.Fatalf("band verdicts %+v; want one passing", band)
	}
	if !strings.Contains(band[0].Pos, "plan.cue:") {
		t.Errorf("band verdict at %q; want the band's place in the plan", band[0].Pos)
	}
	if len(rec.Requests) == 0 {
		t.Error("no request rows")
	}
}

// The default band is the seed's 0.3–0.9×: on a simulator that decodes
// documents as fast as synthetic prompts the decode ratio is 1, outside it,
// and the band's verdict fails the run (exit 1), beside the plan's own
// assertions, which the band adds to rather than replaces.
func TestDefaultBandFailsWhenItExcludesTheRatio(t *testing.T) {
	url := fixedSim(t)
	g := pipelinetest.LoadPlan(t, registry(), plan(url, `cell: "64:16", concurrency: 2, assert: ["status == \"ok\""]`, corpus(t)))
	rec := pipelinetest.Run(t, context.Background(), g, engine.Options{})
	row := validateRow(t, rec)
	if row.AgainstCellID != "sweep/64:16/c2" {
		t.Errorf("against %q; want sweep/64:16/c2", row.AgainstCellID)
	}
	near(t, "decode_tok_s_ratio", row.DecodeTokSRatio, 1, 0.15)
	var failed, own int
	for _, v := range rec.Verdicts {
		if v.Stage != "realworld" {
			continue
		}
		if v.Assertion == "decode_tok_s_ratio >= 0.3 && decode_tok_s_ratio <= 0.9" && !v.Passed {
			failed++
		}
		if v.Assertion == `status == "ok"` && v.Passed {
			own++
		}
	}
	if failed != 1 || own != 1 {
		t.Fatalf("failed band verdicts %d, passing own %d; want 1 and 1: %+v", failed, own, rec.Verdicts)
	}
	if rec.Summary.ExitCode != pipeline.ExitAssertion {
		t.Errorf("exit %d; want %d (an assertion failed)", rec.Summary.ExitCode, pipeline.ExitAssertion)
	}
}

// A synthetic cell that failed (refused: it does not fit the server's
// context) leaves nothing to compare with: an error row saying so, no
// ratio, no request sent, and the band cannot be evaluated.
func TestFailedSyntheticCellIsAnErrorRow(t *testing.T) {
	url := fixedSim(t, func(c *sim.Config) { c.MaxModelLen = 100 })
	src := strings.Replace(plan(url, `band: [0.5, 1.5]`, corpus(t)), "{isl: 64, osl: 16}", "{isl: 32, osl: 16}", 1)
	g := pipelinetest.LoadPlan(t, registry(), src)
	rec := pipelinetest.Run(t, context.Background(), g, engine.Options{})
	row := validateRow(t, rec)
	if row.Status != results.StatusError || !strings.Contains(row.Reason, "sweep/128:16/c1") || !strings.Contains(row.Reason, "no ratio") {
		t.Fatalf("row %s %q; want an error naming the failed synthetic cell", row.Status, row.Reason)
	}
	if row.DecodeTokSRatio != nil || row.TTFTRatio != nil || row.Requests != 0 {
		t.Errorf("ratios %v %v, %d requests: want none", row.DecodeTokSRatio, row.TTFTRatio, row.Requests)
	}
	for _, r := range rec.Requests {
		if r.Stage == "realworld" {
			t.Fatal("documents were sent against a failed synthetic cell")
		}
	}
	for _, v := range rec.Verdicts {
		if v.Stage == "realworld" && (v.Passed || v.Error == "") {
			t.Errorf("band verdict %+v: want one that could not be evaluated", v)
		}
	}
}

// Documents from a JSONL field, and an embeddings sweep: the band's default
// column is total_tok_s_ratio (input tokens/s), decode has no ratio.
func TestEmbeddingsFromJSONL(t *testing.T) {
	url := pipelinetest.Sim(t)
	dir := t.TempDir()
	var b strings.Builder
	for _, d := range []string{"When in the Course of human events", "Four score and seven years ago our fathers brought forth on this continent a new nation", "Call me Ishmael"} {
		fmt.Fprintf(&b, "{\"text\": %q}\n", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "docs.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`
name: "v"
model: {name: "sim-llama"}
stages: {
	sweep: {kind: "sweep", target: %q, endpoint: "embeddings", cells: [{isl: 32, osl: 1}], concurrency: [2], requests: 8, warmup: 0, telemetry: {gpu: "off", host: "off", metrics: "off"}}
	realworld: {kind: "validate", target: %q, needs: ["sweep"], against: "sweep", documents: %q, field: "text", band: [0.01, 100]}
}`, url, url, filepath.Join(dir, "*.jsonl"))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	row := validateRow(t, rec)
	if row.Status != results.StatusOK || row.Documents != 3 || row.Endpoint != "embeddings" {
		t.Fatalf("row %s %q, %d documents, endpoint %s", row.Status, row.Reason, row.Documents, row.Endpoint)
	}
	if row.TotalTokSRatio == nil || row.DecodeTokSRatio != nil {
		t.Errorf("total_tok_s_ratio %v decode_tok_s_ratio %v: want the first only", row.TotalTokSRatio, row.DecodeTokSRatio)
	}
	var band int
	for _, v := range rec.Verdicts {
		if v.Stage == "realworld" && strings.HasPrefix(v.Assertion, "total_tok_s_ratio >=") && v.Passed {
			band++
		}
	}
	if band != 1 {
		t.Errorf("want one passing band verdict on total_tok_s_ratio: %+v", rec.Verdicts)
	}
}

// vet: `against` naming no stage, or a stage that applies no known load,
// is an error at the field's position; so are a cell and a concurrency
// the sweep does not measure, and a sweep not in needs.
func TestVetErrors(t *testing.T) {
	cases := []struct{ name, stages, want string }{
		{"missing", `realworld: {kind: "validate", target: "http://127.0.0.1:1", against: "nope", documents: "*.md"}`,
			`stages.realworld.against: no stage named "nope"`},
		{"not a sweep", `warm: {kind: "warmup", target: "http://127.0.0.1:1", concurrency: 1, requests: 1}
	realworld: {kind: "validate", target: "http://127.0.0.1:1", needs: ["warm"], against: "warm", documents: "*.md"}`,
			"stages.realworld.against: stages.warm applies no known load (it is not a sweep)"},
		{"cell", `sweep: {kind: "sweep", target: "http://127.0.0.1:1", cells: [{isl: 128, osl: 16}]}
	realworld: {kind: "validate", target: "http://127.0.0.1:1", needs: ["sweep"], against: "sweep", cell: "64:64", documents: "*.md"}`,
			"stages.realworld.cell: stages.sweep has no cell 64:64 (its cells: 128:16)"},
		{"concurrency", `sweep: {kind: "sweep", target: "http://127.0.0.1:1", concurrency: [1, 4]}
	realworld: {kind: "validate", target: "http://127.0.0.1:1", needs: ["sweep"], against: "sweep", concurrency: 2, documents: "*.md"}`,
			"stages.realworld.concurrency: stages.sweep measures no point at concurrency 2"},
		{"needs", `sweep: {kind: "sweep", target: "http://127.0.0.1:1"}
	realworld: {kind: "validate", target: "http://127.0.0.1:1", against: "sweep", documents: "*.md"}`,
			"stages.realworld.against: stages.sweep must run first: add it to needs"},
		{"band", `sweep: {kind: "sweep", target: "http://127.0.0.1:1"}
	realworld: {kind: "validate", target: "http://127.0.0.1:1", needs: ["sweep"], against: "sweep", documents: "*.md", band: [0.9, 0.3]}`,
			"stages.realworld.band: [0.9, 0.3]: the low end is above the high end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: \"v\"\nmodel: {name: \"m\"}\nstages: {\n\t" + c.stages + "\n}\n"
			path := filepath.Join(t.TempDir(), "plan.cue")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := schema.Load(path, registry().LoadOptions(nil))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			_, err = pipeline.Build(p, registry())
			if err == nil {
				t.Fatalf("no vet error; want %q", c.want)
			}
			// file:line:col of the field the error is about.
			field := strings.SplitN(strings.TrimPrefix(c.want, "stages.realworld."), ":", 2)[0]
			line, col := 0, 0
			for i, l := range strings.Split(src, "\n") {
				if strings.Contains(l, `kind: "validate"`) {
					line = i + 1
					if k := strings.Index(l, field+":"); k >= 0 {
						col = k + 1
					}
				}
			}
			pos := fmt.Sprintf("plan.cue:%d:%d: ", line, col)
			if !strings.Contains(err.Error(), pos+c.want) {
				t.Fatalf("vet error:\n%v\nwant %q", err, pos+c.want)
			}
		})
	}
}

// TestValidateOverAPIs: against a sweep over the Responses or the
// Messages API the documents go over the same API (the simulator's
// response ids say which answered: resp_ and msg_), every request ok,
// and the row's ratios are measured.
func TestValidateOverAPIs(t *testing.T) {
	url := pipelinetest.Sim(t, func(c *sim.Config) { c.TTFT, c.ITL = 5*time.Millisecond, time.Millisecond })
	for ep, prefix := range map[string]string{"responses": "resp_", "messages": "msg_"} {
		src := fmt.Sprintf(`
name: "v"
model: {name: "sim-llama"}
stages: {
	sweep: {kind: "sweep", target: %q, endpoint: %q, cells: [{isl: 64, osl: 8}], concurrency: [1], requests: 4, warmup: 0, telemetry: {gpu: "off", host: "off", metrics: "off"}}
	realworld: {kind: "validate", target: %q, needs: ["sweep"], against: "sweep", documents: %q, band: [0.01, 100]}
}`, url, ep, url, corpus(t))
		rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
		row := validateRow(t, rec)
		if row.Status != results.StatusOK || row.Endpoint != ep || row.DecodeTokSRatio == nil || row.TTFTRatio == nil {
			t.Fatalf("%s: validate row %s (%s), endpoint %s, decode ratio %v, ttft ratio %v\n%s", ep, row.Status, row.Reason, row.Endpoint, row.DecodeTokSRatio, row.TTFTRatio, rec.Progress)
		}
		n := 0
		for _, q := range rec.Requests {
			if q.Stage != "realworld" {
				continue
			}
			n++
			if q.Status != results.StatusOK || !strings.HasPrefix(q.ResponseID, prefix) {
				t.Fatalf("%s: request %d: %s %q, id %q: want ok, answered by the %s API", ep, q.Seq, q.Status, q.Error, q.ResponseID, ep)
			}
		}
		if n == 0 || int64(n) != row.Requests {
			t.Errorf("%s: %d request rows, the row says %d", ep, n, row.Requests)
		}
	}
}
