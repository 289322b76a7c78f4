package exec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/exec"
)

// The test binary is also the benchmark program the stage runs: with
// EXEC_TEST_PROGRAM set it prints a fixture as llama-bench would, fails,
// or hangs (with a child that ignores SIGINT and SIGTERM), and never runs
// the tests.
func TestMain(m *testing.M) {
	if prog := os.Getenv("EXEC_TEST_PROGRAM"); prog != "" {
		os.Exit(program(prog))
	}
	os.Exit(m.Run())
}

func program(prog string) int {
	switch prog {
	case "print": // a fixture on stdout, a log line on stderr
		b, err := os.ReadFile(os.Getenv("EXEC_TEST_FIXTURE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Fprintln(os.Stderr, "llama_model_loader: loaded meta data with 27 key-value pairs")
		os.Stdout.Write(b)
		return 0
	case "print-clean": // print, where benchrun's environment did not come along
		if os.Getenv(sshKeyEnv) != "" {
			fmt.Fprintln(os.Stderr, "benchrun's environment reached the machine")
			return 4
		}
		return program("print")
	case "usage": // a bad flag: twenty-odd lines of usage, exit 2
		fmt.Fprintln(os.Stderr, "error: unknown argument: --flsh-attn")
		for i := range 24 {
			fmt.Fprintf(os.Stderr, "  -option%d   what option %d does\n", i, i)
		}
		return 2
	case "fail":
		fmt.Println("[")
		fmt.Fprintln(os.Stderr, "main: error: failed to load model 'models/missing.gguf'")
		return 1
	case "env":
		fmt.Printf("{\"name\": \"env\", \"cuda\": %q, \"order\": %q, \"mine\": %q, \"req_s\": 1}\n", os.Getenv("CUDA_VISIBLE_DEVICES"), os.Getenv("CUDA_DEVICE_ORDER"), os.Getenv("MINE"))
		return 0
	case "hang":
		// A child that ignores SIGINT and SIGTERM: only SIGKILL to the
		// group ends it.
		child := osexec.Command("/bin/sh", "-c", `trap "" INT TERM; while :; do sleep 0.05; done`)
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		pids := fmt.Sprintf("%d %d\n", os.Getpid(), child.Process.Pid)
		if err := os.WriteFile(os.Getenv("EXEC_TEST_PIDS"), []byte(pids), 0o644); err != nil {
			return 2
		}
		fmt.Println("running test pp512")
		select {}
	}
	return 3
}

func self(t *testing.T) string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// price is a stage kind for these tests that hands on a machine's price,
// as a provision stage does.
var price = pipeline.Kind{
	Name:   "price",
	Schema: schema.KindSchema{Def: "#Price", Source: "package schema\n#Price: {\n\t#StageBase\n\tkind: \"price\"\n\tcost_per_hour: number\n}\n"},
	New: func(s *schema.Stage) (pipeline.Stage, error) {
		var cfg struct {
			Cost float64 `json:"cost_per_hour"`
		}
		if err := s.Decode(&cfg); err != nil {
			return nil, err
		}
		return priceStage(cfg.Cost), nil
	},
}

type priceStage float64

func (p priceStage) Validate(*pipeline.Check) error { return nil }
func (p priceStage) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	v := float64(p)
	return &pipeline.Outputs{CostPerHour: &v}, nil
}

func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(exec.Kind)
	reg.AddKind(price)
	return reg
}

func plan(stage string) string {
	return "name: \"exec-test\"\nmodel: {name: \"stories\"}\nstages: {\n" + stage + "\n}\n"
}

// A real program prints llama-bench JSON: one row per test through the
// pipeline (stamped, judged, stored), its repetitions as request rows,
// the assertions judged on them, the cost filled from the machine's
// price, and its stdout and stderr in <stage>.log.
func TestRunsLlamaBench(t *testing.T) {
	src := plan(fmt.Sprintf(`pod: {kind: "price", cost_per_hour: 1.8}
	bench: {
		kind: "exec", needs: ["pod"], parser: "llama-bench"
		cmd: [%q, "-o", "json"]
		env: {EXEC_TEST_PROGRAM: "print", EXEC_TEST_FIXTURE: %q}
		assert: ["prefill_tok_s == nil || prefill_tok_s > 1000", "completed == 3", "e2el_p50_ms > 0"]
	}`, self(t), fixture(t, "llama-bench-cpu.json")))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	if st := rec.Stage("bench"); st.Status != pipeline.StatusOK {
		t.Fatalf("bench: %s %s\n%s", st.Status, st.Reason, rec.Progress)
	}
	if rec.Summary.ExitCode != pipeline.ExitOK {
		t.Errorf("exit %d\n%s", rec.Summary.ExitCode, rec.Progress)
	}
	pp, ok := rec.Cell("bench/pp64")
	if !ok {
		t.Fatalf("no bench/pp64 row: %+v", rec.Cells)
	}
	tg, _ := rec.Cell("bench/tg32")
	if pp.Status != "ok" || pp.RunID == "" || pp.Plan != "exec-test" || pp.Model != "stories" || pp.Engine != "llama.cpp" || pp.Program != "llama-bench" {
		t.Errorf("pp row identity: %+v", pp)
	}
	if pp.PrefillTokS == nil || *pp.PrefillTokS < 1000 || tg.DecodeTokS == nil {
		t.Errorf("speeds: pp %v tg %v", pp.PrefillTokS, tg.DecodeTokS)
	}
	if pp.CostUSD == nil || pp.TokensPerDollar != nil || tg.CostUSD == nil || tg.TokensPerDollar == nil {
		t.Errorf("cost: pp %v/%v tg %v/%v; want both costed, tokens per dollar for the tg row (output tokens)", pp.CostUSD, pp.TokensPerDollar, tg.CostUSD, tg.TokensPerDollar)
	} else if want := 1.8 * tg.DurationS / 3600; *tg.CostUSD != want || *tg.TokensPerDollar != 96/want {
		t.Errorf("tg cost %v tokens/$ %v; want %v and %v", *tg.CostUSD, *tg.TokensPerDollar, want, 96/want)
	}
	n := 0
	for _, r := range rec.Requests {
		if r.CellID == "bench/tg32" {
			n++
			if r.OutputTokens != 32 || r.E2ELMs == nil || r.RunID != pp.RunID {
				t.Errorf("request %+v", r)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d request rows for tg32, want 3 (one per repetition)", n)
	}
	var verdicts int
	for _, v := range rec.Verdicts {
		verdicts++
		if !v.Passed {
			t.Errorf("verdict %+v", v)
		}
	}
	if verdicts != 6 {
		t.Errorf("%d verdicts, want 3 assertions × 2 rows", verdicts)
	}
	log, _ := os.ReadFile(filepath.Join(rec.Dir, "bench.log"))
	if !strings.Contains(string(log), "llama_model_loader") || !strings.Contains(string(log), `"avg_ts"`) {
		t.Errorf("bench.log lacks stderr or stdout:\n%s", log)
	}
}

// Assertions read exec rows as sweep rows: a prefill-only stage (the
// seed's pp tests) asserts prefill_tok_s plainly; one that does not hold
// fails the run (exit 1).
func TestAssertionOnExecRows(t *testing.T) {
	src := plan(fmt.Sprintf(`prefill: {
		kind: "exec", parser: "llama-bench", cmd: ["/bin/sh", "-c", "head -1 %s"]
		assert: ["prefill_tok_s > 1000", {name: "too fast", expr: "prefill_tok_s > 100000"}]
	}`, fixture(t, "llama-bench-cpu.jsonl")))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	if rec.Summary.ExitCode != pipeline.ExitAssertion {
		t.Errorf("exit %d, want %d\n%s", rec.Summary.ExitCode, pipeline.ExitAssertion, rec.Progress)
	}
	if len(rec.Cells) != 1 || rec.Cells[0].CellID != "prefill/pp64" {
		t.Fatalf("rows %+v", rec.Cells)
	}
	var passed, failed []string
	for _, v := range rec.Verdicts {
		if v.Passed {
			passed = append(passed, v.Assertion)
		} else {
			failed = append(failed, v.Assertion)
		}
	}
	if len(passed) != 1 || len(failed) != 1 || failed[0] != "prefill_tok_s > 100000" {
		t.Errorf("passed %v, failed %v", passed, failed)
	}
}

// errorRow runs the plan and returns its one error row.
func errorRow(t *testing.T, ctx context.Context, src string) (*pipelinetest.Recording, string) {
	t.Helper()
	rec := pipelinetest.Run(t, ctx, pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	c, ok := rec.Cell("bench/run")
	if !ok || c.Status != "error" {
		t.Fatalf("no error row bench/run: %+v\n%s", rec.Cells, rec.Progress)
	}
	return rec, c.Reason
}

// A program that exits non-zero: an error row with the exit status and
// the output's tail, the stage in status error, exit 3.
func TestProgramFails(t *testing.T) {
	rec, reason := errorRow(t, context.Background(), plan(fmt.Sprintf(`bench: {kind: "exec", parser: "llama-bench", cmd: [%q], env: {EXEC_TEST_PROGRAM: "fail"}}`, self(t))))
	if !strings.Contains(reason, "exit status 1") || !strings.Contains(reason, "failed to load model") {
		t.Errorf("reason %q: want the exit status and the log's tail", reason)
	}
	if st := rec.Stage("bench"); st.Status != pipeline.StatusError || !strings.Contains(st.Reason, "1 of 1 cells error") {
		t.Errorf("stage %s %q", st.Status, st.Reason)
	}
	if rec.Summary.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit %d, want %d", rec.Summary.ExitCode, pipeline.ExitInfra)
	}
}

// A program that is not installed, and one that prints nothing parseable.
func TestNotInstalledAndUnparseable(t *testing.T) {
	_, reason := errorRow(t, context.Background(), plan(`bench: {kind: "exec", parser: "llama-bench", cmd: ["llama-bench-not-installed-here", "-o", "json"]}`))
	if !strings.Contains(reason, "llama-bench-not-installed-here is not installed") {
		t.Errorf("reason %q", reason)
	}
	rec, reason := errorRow(t, context.Background(), plan(`bench: {kind: "exec", parser: "mlx-lm", cmd: ["/bin/sh", "-c", "echo 'Traceback (most recent call last):'; echo \"ModuleNotFoundError: No module named 'mlx'\""]}`))
	if !strings.Contains(reason, "printed nothing parseable as mlx-lm output") || !strings.Contains(reason, "No module named 'mlx'") {
		t.Errorf("reason %q", reason)
	}
	if rec.Summary.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit %d", rec.Summary.ExitCode)
	}
}

// pidsOf waits for the hanging program to write its pids.
func pidsOf(t *testing.T, path string) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		return pids
	}
	t.Fatal("the program never wrote its pids")
	return nil
}

// gone fails the test for each of pids still running now.
func gone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if !testkit.Gone(pid) {
			t.Errorf("process %d is still there", pid)
		}
	}
}

// A program that hangs past the stage's timeout: killed with its whole
// group (its child ignores SIGINT and SIGTERM), an error row that says so
// with the output's tail, the stage failed.
func TestHangsPastTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	rec, reason := errorRow(t, context.Background(), plan(fmt.Sprintf(`bench: {kind: "exec", parser: "llama-bench", cmd: [%q], timeout: "1s", stop_grace: "100ms", env: {EXEC_TEST_PROGRAM: "hang", EXEC_TEST_PIDS: %q}}`, self(t), pidFile)))
	if !strings.Contains(reason, "timed out after 1s") || !strings.Contains(reason, "running test pp512") {
		t.Errorf("reason %q: want the timeout and the tail", reason)
	}
	if st := rec.Stage("bench"); st.Status != pipeline.StatusFailed {
		t.Errorf("stage %s %q", st.Status, st.Reason)
	}
	gone(t, pidsOf(t, pidFile))
}

// An interrupt kills the program and its group; nothing is left behind.
func TestInterrupted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var pids []int
	go func() {
		pids = pidsOf(t, pidFile)
		cancel(errors.New("interrupted (test)"))
	}()
	src := plan(fmt.Sprintf(`bench: {kind: "exec", parser: "llama-bench", cmd: [%q], stop_grace: "100ms", env: {EXEC_TEST_PROGRAM: "hang", EXEC_TEST_PIDS: %q}}`, self(t), pidFile))
	rec := pipelinetest.Run(t, ctx, pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	if rec.Summary.ExitCode != pipeline.ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", rec.Summary.ExitCode, pipeline.ExitInterrupted, rec.Progress)
	}
	if len(rec.Cells) != 0 {
		t.Errorf("rows after an interrupt: %+v", rec.Cells)
	}
	gone(t, pids)
}

// gpus, env and the generic jsonl parser: the program sees the devices as
// launch gives them (by index here: no NVML), its fields mapped by the plan.
func TestGPUsAndGenericFields(t *testing.T) {
	src := plan(fmt.Sprintf(`bench: {
		kind: "exec", parser: "jsonl", cmd: [%q], gpus: [1], env: {EXEC_TEST_PROGRAM: "env", MINE: "${stage}-x"}
		fields: {name: "cell_id", cuda: "devices", order: "backends", mine: "model_type"}
	}`, self(t)))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	c, ok := rec.Cell("bench/env")
	if !ok || c.Status != "ok" {
		t.Fatalf("rows %+v\n%s", rec.Cells, rec.Progress)
	}
	if c.Devices != "1" || c.Backends != "PCI_BUS_ID" || c.ModelType != "bench-x" || c.Program != "jsonl" {
		t.Errorf("row: devices %q order %q mine %q", c.Devices, c.Backends, c.ModelType)
	}
}

// What vet refuses, at the plan's file:line:col.
func TestVet(t *testing.T) {
	for _, tc := range []struct{ name, stage, want string }{
		{"bad parser", `bench: {kind: "exec", parser: "llama", cmd: ["llama-bench"]}`, `parser`},
		{"unknown column", `bench: {kind: "exec", parser: "json", cmd: ["x"], fields: {tps: "decode_toks"}}`, `stages.bench.fields.tps: "decode_toks" is not a column of benchrun's rows (docs/RESULTS.md lists them); did you mean "decode_tok_s"?`},
		{"own column", `bench: {kind: "exec", parser: "csv", cmd: ["x"], fields: {id: "run_id"}}`, `stages.bench.fields.id: run_id is benchrun's own column`},
		{"two to one", `bench: {kind: "exec", parser: "csv", cmd: ["x"], fields: {a: "isl", b: "isl"}}`, `stages.bench.fields.b: a is mapped to isl already`},
		{"fields for llama-bench", `bench: {kind: "exec", parser: "llama-bench", cmd: ["x"], fields: {a: "isl"}}`, `stages.bench.fields: the llama-bench parser maps the program's fields itself`},
		{"empty command", `bench: {kind: "exec", parser: "json", cmd: [""]}`, `stages.bench.cmd: the command is empty`},
		{"retry", `bench: {kind: "exec", parser: "json", cmd: ["x"], retry: {attempts: 2}}`, `retry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.cue")
			if err := os.WriteFile(path, []byte(plan(tc.stage)), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := schema.Load(path, registry().LoadOptions(nil))
			if err == nil {
				_, err = pipeline.Build(p, registry())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
				t.Fatalf("got %v, want an error at plan.cue:LINE:COL containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "plan.cue:5:") && !strings.Contains(err.Error(), "plan.cue:4:") {
				t.Errorf("%v: not at the stage's line", err)
			}
		})
	}
}

// llama-bench without -o json/jsonl prints a table: vet warns.
func TestWarnsWithoutJSONOutput(t *testing.T) {
	g := pipelinetest.LoadPlan(t, registry(), plan(`bench: {kind: "exec", parser: "llama-bench", cmd: ["llama-bench", "-m", "x.gguf"]}`))
	ws := g.Warnings
	if len(ws) != 1 || !strings.Contains(ws[0].Error(), `add "-o", "jsonl"`) {
		t.Errorf("warnings %v", ws)
	}
	g = pipelinetest.LoadPlan(t, registry(), plan(`bench: {kind: "exec", parser: "llama-bench", cmd: ["llama-bench", "-o", "jsonl"]}`))
	if ws := g.Warnings; len(ws) != 0 {
		t.Errorf("warnings %v", ws)
	}
}

// A program that finished some tests and then failed keeps them: their
// rows, then the error row.
func TestFailsAfterSomeTests(t *testing.T) {
	rec, reason := errorRow(t, context.Background(), plan(fmt.Sprintf(`bench: {kind: "exec", parser: "llama-bench", cmd: ["/bin/sh", "-c", "head -1 %s; echo 'ggml_cuda: out of memory' >&2; exit 2"]}`, fixture(t, "llama-bench-cpu.jsonl"))))
	if c, ok := rec.Cell("bench/pp64"); !ok || c.Status != "ok" {
		t.Errorf("the finished test's row: %+v", rec.Cells)
	}
	if !strings.Contains(reason, "exit status 2") || !strings.Contains(reason, "out of memory") {
		t.Errorf("reason %q", reason)
	}
	if st := rec.Stage("bench"); st.Status != pipeline.StatusError || !strings.Contains(st.Reason, "1 of 2 cells error") {
		t.Errorf("stage %s %q", st.Status, st.Reason)
	}
}

// A program that measured nothing is never green: a record carrying an
// error, `null` or `{}`, a record of names only, or a status benchrun does
// not know gives an error row with the program's words, the stage ends
// error and the run exits 3.
func TestRecordsThatMeasuredNothing(t *testing.T) {
	for _, tc := range []struct {
		name, parser, out, want string
	}{
		{"error string", "jsonl", `{"name": "a", "error": "CUDA out of memory"}`, "CUDA out of memory"},
		{"error object", "json", `{"name": "a", "error": {"message": "model not found", "code": 404}}`, "model not found"},
		{"null", "json", `null`, "measured nothing"},
		{"empty object", "json", `{}`, "measured nothing"},
		{"names only", "csv", "name,isl,osl,concurrency\na,128,128,4\n", "measured nothing"},
		{"unknown status", "jsonl", `{"name": "a", "req_s": 3, "status": "partial"}`, `status "partial" is not one of ok, error, skipped`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			if err := os.WriteFile(path, []byte(tc.out), 0o644); err != nil {
				t.Fatal(err)
			}
			src := plan(fmt.Sprintf(`bench: {
		kind: "exec", parser: %q, cmd: [%q]
		env: {EXEC_TEST_PROGRAM: "print", EXEC_TEST_FIXTURE: %q}
	}`, tc.parser, self(t), path))
			rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
			if len(rec.Cells) == 0 {
				t.Fatalf("no row\n%s", rec.Progress)
			}
			for _, c := range rec.Cells {
				if c.Status != "error" || !strings.Contains(c.Reason, tc.want) {
					t.Errorf("row %s: %s %q; want error with %q", c.CellID, c.Status, c.Reason, tc.want)
				}
			}
			if st := rec.Stage("bench"); st.Status == pipeline.StatusOK || rec.Summary.ExitCode == pipeline.ExitOK {
				t.Errorf("stage %s, exit %d; want the stage not ok and a non-zero exit\n%s", st.Status, rec.Summary.ExitCode, rec.Progress)
			}
		})
	}
}

// cancelOnCell cancels the run's context at the first row it receives: an
// interrupt that comes while the program's records are being stored.
type cancelOnCell struct {
	cancel context.CancelFunc
	cells  int
}

func (c *cancelOnCell) Name() string                  { return "cancel-on-cell" }
func (c *cancelOnCell) Start(*pipeline.SinkEnv) error { return nil }
func (c *cancelOnCell) Stop(*pipeline.Summary) error  { return nil }
func (c *cancelOnCell) Cell(results.Cell, results.Requests) error {
	c.cells++
	c.cancel()
	return nil
}

// An interrupt while thousands of records are being stored stops the
// storing (the rows stored so far stay) instead of waiting for all of them.
func TestInterruptStopsStoringRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "{\"name\": \"t%d\", \"req_s\": %d}\n", i, i+1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := plan(fmt.Sprintf(`bench: {
		kind: "exec", parser: "jsonl", cmd: [%q]
		env: {EXEC_TEST_PROGRAM: "print", EXEC_TEST_FIXTURE: %q}
	}`, self(t), path))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := &cancelOnCell{cancel: cancel}
	rec := pipelinetest.Run(t, ctx, pipelinetest.LoadPlan(t, registry(), src), engine.Options{Sinks: pipelinetest.UseSinks(stop)})
	if n := len(rec.Cells); n == 0 || n > 10 {
		t.Errorf("%d of 2000 rows stored after an interrupt at the first: want the storing stopped", n)
	}
	if rec.Summary.ExitCode != pipeline.ExitInterrupted {
		t.Errorf("exit %d, want 130", rec.Summary.ExitCode)
	}
}

// A program that fails with its usage: the row's reason is one line (the
// error and the log's last line), the usage stays in the log.
func TestFailureReasonIsOneLine(t *testing.T) {
	src := plan(fmt.Sprintf(`bench: {kind: "exec", parser: "json", cmd: [%q], env: {EXEC_TEST_PROGRAM: "usage"}}`, self(t)))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	c, ok := rec.Cell("bench/run")
	if !ok {
		t.Fatalf("no bench/run row: %+v", rec.Cells)
	}
	if c.Status != "error" || strings.Contains(c.Reason, "\n") || !strings.Contains(c.Reason, "unknown argument: --flsh-attn") || strings.Count(c.Reason, "what option") > 1 {
		t.Errorf("reason %q: want one line with the error", c.Reason)
	}
	b, _ := os.ReadFile(filepath.Join(rec.Dir, "bench.log"))
	if !strings.Contains(string(b), "-option23") {
		t.Errorf("the usage is not in the log:\n%s", b)
	}
}

// llama-bench rows at two depths share isl, osl and concurrency: the run
// tells the sinks its rows are named tests, so that the table for people
// shows bench_test (tg32 and tg32@d512), and the rows' ids differ.
func TestLlamaBenchDepthsAreTold(t *testing.T) {
	var recs []map[string]any
	b, err := os.ReadFile(fixture(t, "llama-bench-cpu.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range slices.Clone(recs) {
		if r["n_gen"].(float64) > 0 {
			deep := maps.Clone(r)
			deep["n_depth"] = 512
			recs = append(recs, deep)
		}
	}
	out, _ := json.Marshal(recs)
	path := filepath.Join(t.TempDir(), "depths.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	src := plan(fmt.Sprintf(`bench: {
		kind: "exec", parser: "llama-bench"
		cmd: [%q, "-o", "json"]
		env: {EXEC_TEST_PROGRAM: "print", EXEC_TEST_FIXTURE: %q}
	}`, self(t), path))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, registry(), src), engine.Options{})
	if rec.Env == nil || !rec.Env.NamedTests {
		t.Errorf("the sinks were not told the rows are named tests (env %+v)", rec.Env)
	}
	var tests []string
	for _, c := range rec.Cells {
		tests = append(tests, c.CellID+"="+c.BenchTest)
	}
	slices.Sort(tests)
	if want := []string{"bench/pp64=pp64", "bench/tg32=tg32", "bench/tg32@d512=tg32@d512"}; !slices.Equal(tests, want) {
		t.Errorf("rows %v, want %v", tests, want)
	}
}
