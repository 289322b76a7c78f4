package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/parquet"
	"github.com/benchrun/benchrun/stages/launch"
)

// The stages in these tests are test kinds: the scheduler's semantics are
// what is under test, not what stages do. Where a semantic is about
// processes (timeouts, services dying), the stages run real processes.

const testKinds = `
#Step: {
	#StageBase
	kind: "step"
	// Sleep this long (or until cancelled).
	sleep: *"0s" | string
	// Fail the first N attempts.
	fail: *0 | int
	// Start this command in its own process group and wait for it.
	cmd?: [...string]
	// A value for when expressions (outputs.value).
	value?: int
}
#Measure: {
	#StageBase
	kind: "measure"
	sleep: *"0s" | string
}
`

type stepConfig struct {
	Sleep string   `json:"sleep"`
	Fail  int      `json:"fail"`
	Cmd   []string `json:"cmd"`
	Value *int     `json:"value"`
}

// recorder notes when each stage ran, for overlap and order checks.
type recorder struct {
	mu     sync.Mutex
	spans  map[string][2]time.Time
	tries  map[string]int
	pids   map[string]int
	starts []string
}

func newRecorder() *recorder {
	return &recorder{spans: map[string][2]time.Time{}, tries: map[string]int{}, pids: map[string]int{}}
}

type step struct {
	name string
	cfg  stepConfig
	rec  *recorder
}

func (s *step) Validate(*pipeline.Check) error { return nil }

func (s *step) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	s.rec.mu.Lock()
	s.rec.tries[s.name]++
	try := s.rec.tries[s.name]
	s.rec.starts = append(s.rec.starts, s.name)
	start := time.Now()
	s.rec.mu.Unlock()
	defer func() {
		s.rec.mu.Lock()
		s.rec.spans[s.name] = [2]time.Time{start, time.Now()}
		s.rec.mu.Unlock()
	}()
	if len(s.cfg.Cmd) > 0 {
		cmd := exec.CommandContext(ctx, s.cfg.Cmd[0], s.cfg.Cmd[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		s.rec.mu.Lock()
		s.rec.pids[s.name] = cmd.Process.Pid
		s.rec.mu.Unlock()
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.cfg.Cmd[0], err)
		}
	}
	d, _ := time.ParseDuration(s.cfg.Sleep)
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if try <= s.cfg.Fail {
		return nil, fmt.Errorf("attempt %d fails on purpose", try)
	}
	out := &pipeline.Outputs{Values: map[string]any{}}
	if s.cfg.Value != nil {
		out.Values["value"] = *s.cfg.Value
	}
	return out, nil
}

func testRegistry(rec *recorder) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	newStep := func(s *schema.Stage) (pipeline.Stage, error) {
		st := &step{name: s.Name, rec: rec}
		return st, s.Decode(&st.cfg)
	}
	reg.AddKind(pipeline.Kind{Name: "step", Doc: "test step", Schema: schema.KindSchema{Def: "#Step", Source: "package schema\n" + testKinds}, New: newStep})
	reg.AddKind(pipeline.Kind{Name: "measure", Doc: "test measuring step", Measuring: true, Schema: schema.KindSchema{Def: "#Measure", Source: "package schema\n"}, New: newStep})
	return reg
}

// runPlan writes src as dir/plan.cue, loads and builds it with reg, and
// runs it with opts under dir/runs: the one way the pipeline tests run a plan.
func runPlan(t *testing.T, ctx context.Context, dir string, reg *pipeline.Registry, src string, opts engine.Options) (*pipeline.Summary, *pipeline.RunInfo) {
	t.Helper()
	g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src)
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, g, ri, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return sum, ri
}

// run loads src as a plan, runs it and returns the summary by stage.
func run(t *testing.T, ctx context.Context, reg *pipeline.Registry, src string) (*pipeline.Summary, map[string]pipeline.StageResult) {
	t.Helper()
	sum, _ := runPlan(t, ctx, t.TempDir(), reg, src, engine.Options{FinallyTimeout: 5 * time.Second})
	by := map[string]pipeline.StageResult{}
	for _, s := range sum.Stages {
		by[s.Name] = s
	}
	return sum, by
}

func overlap(a, b [2]time.Time) bool { return a[0].Before(b[1]) && b[0].Before(a[1]) }

func TestIndependentStagesRunInParallelUnlessTheyShareALock(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "par"
stages: {
	a: {kind: "step", sleep: "300ms"}
	b: {kind: "step", sleep: "300ms"}
	c: {kind: "step", sleep: "200ms", resources: ["gpu:0"]}
	d: {kind: "step", sleep: "200ms", resources: ["gpu:0"]}
	m1: {kind: "measure", sleep: "150ms"}
	m2: {kind: "measure", sleep: "150ms"}
}`)
	if sum.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", sum.ExitCode, by)
	}
	if !overlap(rec.spans["a"], rec.spans["b"]) {
		t.Errorf("independent stages a and b did not run in parallel: %v %v", rec.spans["a"], rec.spans["b"])
	}
	if overlap(rec.spans["c"], rec.spans["d"]) {
		t.Errorf("c and d share gpu:0 but ran at once")
	}
	if overlap(rec.spans["m1"], rec.spans["m2"]) {
		t.Errorf("measuring stages must take the gpu lock by default, but m1 and m2 overlapped")
	}
}

// A measuring stage's default lock, "gpu", is every GPU: it must not
// overlap a stage on "gpu:0" or "gpu:1", while stages on different devices
// share nothing and run together.
func TestTheGPULockCoversEveryDevice(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "devices"
stages: {
	d0:  {kind: "step", sleep: "300ms", resources: ["gpu:0"]}
	d1:  {kind: "step", sleep: "300ms", resources: ["gpu:1"]}
	all: {kind: "measure", sleep: "150ms"}
	two: {kind: "step", sleep: "150ms", resources: ["gpu:1", "gpu"]}
}`)
	if sum.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", sum.ExitCode, by)
	}
	if !overlap(rec.spans["d0"], rec.spans["d1"]) {
		t.Errorf("stages on gpu:0 and gpu:1 did not run in parallel: %v %v", rec.spans["d0"], rec.spans["d1"])
	}
	for _, d := range []string{"d0", "d1", "two"} {
		if overlap(rec.spans["all"], rec.spans[d]) {
			t.Errorf("the measuring stage (lock gpu, every device) overlapped %s", d)
		}
	}
	for _, d := range []string{"d0", "d1"} {
		if overlap(rec.spans["two"], rec.spans[d]) {
			t.Errorf("a stage locking gpu and gpu:1 overlapped %s", d)
		}
	}
}

func TestFailureSkipsDependentsAndFinallyRuns(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "fail"
stages: {
	server: {kind: "step", fail: 1}
	health: {kind: "step", needs: ["server"]}
	sweep:  {kind: "step", needs: ["health"]}
	other:  {kind: "step"}
	post:   {kind: "step", needs: ["sweep"], finally: true}
}`)
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit = %d, want %d (infrastructure failed)", sum.ExitCode, pipeline.ExitInfra)
	}
	want := map[string]string{"server": "failed", "health": "skipped", "sweep": "skipped", "other": "ok", "post": "ok"}
	for name, status := range want {
		if by[name].Status != status {
			t.Errorf("%s: status %s (%s), want %s", name, by[name].Status, by[name].Reason, status)
		}
	}
	if r := by["health"].Reason; r != "skipped: needs server, which failed" {
		t.Errorf("health reason = %q", r)
	}
	if r := by["sweep"].Reason; r != "skipped: needs health, which was skipped" {
		t.Errorf("sweep reason = %q", r)
	}
	if len(sum.Stages) != 5 {
		t.Errorf("summary lists %d stages, want every one of 5", len(sum.Stages))
	}
}

func TestWhen(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "when"
stages: {
	probe:    {kind: "step", value: 2}
	big:      {kind: "step", when: "stages.probe.outputs.value > 4"}
	afterbig: {kind: "step", needs: ["big"]}
	rescue:   {kind: "step", needs: ["big"], when: "stages.big.status == \"skipped\""}
	guarded:  {kind: "step", needs: ["big"], when: "metadata.gpu == \"a100\""}
	small:    {kind: "step", when: "stages.probe.outputs.value <= 4 && stages.probe.status == \"ok\""}
	tagged:   {kind: "step", when: "metadata.gpu == \"h100\""}
}
metadata: {gpu: "a100"}`)
	if sum.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", sum.ExitCode, by)
	}
	want := map[string]string{"probe": "ok", "big": "skipped", "afterbig": "skipped", "rescue": "ok", "guarded": "skipped", "small": "ok", "tagged": "skipped"}
	for name, status := range want {
		if by[name].Status != status {
			t.Errorf("%s: status %s (%s), want %s", name, by[name].Status, by[name].Reason, status)
		}
	}
	if r := by["big"].Reason; r != `skipped: when "stages.probe.outputs.value > 4" is false` {
		t.Errorf("big reason = %q", r)
	}
	if r := by["afterbig"].Reason; r != "skipped: needs big, which was skipped" {
		t.Errorf("afterbig reason = %q", r)
	}
	// A `when` that does not read the skipped stage does not override the
	// skip: only one that reads its status decides.
	if r := by["guarded"].Reason; r != "skipped: needs big, which was skipped" {
		t.Errorf("guarded reason = %q", r)
	}
}

func TestStageTimeoutKillsItsProcesses(t *testing.T) {
	rec := newRecorder()
	start := time.Now()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "timeout"
stages: {
	slow: {kind: "step", cmd: ["sleep", "30"], timeout: "300ms"}
	next: {kind: "step", needs: ["slow"]}
}`)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the run took %s; the timeout did not stop the stage", took)
	}
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit = %d, want %d", sum.ExitCode, pipeline.ExitInfra)
	}
	r := by["slow"].Reason
	if by["slow"].Status != "failed" || !strings.Contains(r, "timed out after 300ms") || !strings.Contains(r, "processes killed") {
		t.Errorf("slow: %s %q, want failed with a reason saying it timed out and its processes were killed", by["slow"].Status, r)
	}
	if pid := rec.pids["slow"]; pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the stage's process %d is still alive after its timeout", pid)
	}
	if by["next"].Status != "skipped" {
		t.Errorf("next: %s, want skipped", by["next"].Status)
	}
}

func TestPlanTimeoutStopsTheRunAndFinallyStillRuns(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "plantimeout"
timeout: "300ms"
stages: {
	slow:  {kind: "step", sleep: "20s"}
	later: {kind: "step", needs: ["slow"]}
	post:  {kind: "step", needs: ["slow"], finally: true}
}`)
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit = %d, want %d", sum.ExitCode, pipeline.ExitInfra)
	}
	if !strings.Contains(by["slow"].Reason, "plan timeout 300ms exceeded") {
		t.Errorf("slow reason = %q, want the plan timeout named", by["slow"].Reason)
	}
	if by["post"].Status != "ok" || by["later"].Status != "skipped" {
		t.Errorf("post %s, later %s; want ok and skipped", by["post"].Status, by["later"].Status)
	}
}

func TestRetryWithBackoff(t *testing.T) {
	rec := newRecorder()
	start := time.Now()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "retry"
stages: {
	flaky: {kind: "step", fail: 2, retry: {attempts: 3, backoff: "100ms"}}
	never: {kind: "step", fail: 5, retry: {attempts: 2, backoff: "10ms"}}
}`)
	if by["flaky"].Status != "ok" || by["flaky"].Attempts != 3 {
		t.Errorf("flaky: %s after %d attempts, want ok after 3", by["flaky"].Status, by["flaky"].Attempts)
	}
	// Backoff doubles: 100ms, then 200ms.
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("three attempts took %s, want at least the 300ms of backoff", took)
	}
	if by["never"].Status != "failed" || by["never"].Attempts != 2 || sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("never: %s after %d attempts (exit %d), want failed after 2 (exit 3)", by["never"].Status, by["never"].Attempts, sum.ExitCode)
	}
}

func TestRetryOnAMeasuringStageIsAVetError(t *testing.T) {
	reg := testRegistry(newRecorder())
	p, err := schema.LoadSource("plan.cue", []byte(`
name: "r"
stages: m: {kind: "measure", retry: {attempts: 2}}`), reg.LoadOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Build(p, reg)
	if err == nil || !strings.Contains(err.Error(), "plan.cue:3:30: stages.m.retry: retry is not allowed on a measuring stage") {
		t.Fatalf("err = %v", err)
	}
}

func TestInterruptStopsNewWorkAndRunsFinally(t *testing.T) {
	rec := newRecorder()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("interrupted by test")) })
	start := time.Now()
	sum, by := run(t, ctx, testRegistry(rec), `
name: "int"
stages: {
	slow:  {kind: "step", cmd: ["sleep", "30"]}
	later: {kind: "step", needs: ["slow"]}
	post:  {kind: "step", needs: ["slow"], finally: true}
}`)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("interrupt took %s to stop the run", took)
	}
	if sum.ExitCode != pipeline.ExitInterrupted || !sum.Interrupted {
		t.Errorf("exit = %d, want 130", sum.ExitCode)
	}
	if by["slow"].Status != "failed" || by["later"].Status != "skipped" || by["post"].Status != "ok" {
		t.Errorf("slow %s, later %s, post %s; want failed, skipped, ok", by["slow"].Status, by["later"].Status, by["post"].Status)
	}
	if pid := rec.pids["slow"]; pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the interrupted stage's process %d is still alive", pid)
	}
}

// A stage still waiting for a lock when the run is interrupted never
// started: it is skipped with the reason, not reported as failed.
func TestInterruptSkipsAStageWaitingForItsLock(t *testing.T) {
	rec := newRecorder()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("interrupted by test")) })
	sum, by := run(t, ctx, testRegistry(rec), `
name: "lockwait"
stages: {
	first:  {kind: "measure", sleep: "20s"}
	second: {kind: "measure", sleep: "20s"}
}`)
	if sum.ExitCode != pipeline.ExitInterrupted {
		t.Errorf("exit = %d, want 130", sum.ExitCode)
	}
	// Either may win the lock; the other waits.
	holder, waiter := "first", "second"
	if by["second"].Status == "failed" {
		holder, waiter = "second", "first"
	}
	if by[holder].Status != "failed" {
		t.Errorf("%s: %s %q, want failed (cancelled while measuring)", holder, by[holder].Status, by[holder].Reason)
	}
	if s := by[waiter]; s.Status != "skipped" || s.Reason != "not started: interrupted by test" {
		t.Errorf("%s: %s %q, want skipped: not started: interrupted by test", waiter, s.Status, s.Reason)
	}
	if rec.tries[waiter] != 0 {
		t.Errorf("%s ran %d times after the interrupt", waiter, rec.tries[waiter])
	}
}

func TestOnlyKeepsWhatTheSelectedStagesNeed(t *testing.T) {
	reg := testRegistry(newRecorder())
	p, err := schema.LoadSource("plan.cue", []byte(`
name: "only"
stages: {
	server: {kind: "step"}
	health: {kind: "step", needs: ["server"]}
	sweep:  {kind: "step", needs: ["health"]}
	other:  {kind: "step"}
	post:   {kind: "step", finally: true, needs: ["sweep"]}
}`), reg.LoadOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Build(p, reg)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := g.Only([]string{"health"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range sub.Nodes {
		names = append(names, n.Spec.Name)
	}
	if got := strings.Join(names, ","); got != "server,health" {
		t.Errorf("--only health kept %s, want server,health", got)
	}
	if _, err := g.Only([]string{"", " "}); err == nil || !strings.Contains(err.Error(), "--only names no stage") {
		t.Errorf("--only naming nothing: err = %v", err)
	}
	if _, err := g.Only([]string{"helth"}); err == nil || !strings.Contains(err.Error(), "--only helth: no such stage (stages: server, health, sweep, other, post)") {
		t.Errorf("unknown stage: err = %v", err)
	}
}

// waiter blocks until cancelled: a dependent that would run for ever if
// the death of its service went unnoticed.
type waiter struct{}

func (waiter) Validate(*pipeline.Check) error { return nil }
func (waiter) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(20 * time.Second):
		return &pipeline.Outputs{}, nil
	}
}

func TestAServiceThatDiesFailsItsDependentAtOnce(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(launch.Kind)
	reg.AddKind(pipeline.Kind{Name: "wait", Schema: schema.KindSchema{Def: "#Wait", Source: "package schema\n#Wait: {#StageBase, kind: \"wait\", target: string}"},
		New: func(*schema.Stage) (pipeline.Stage, error) { return waiter{}, nil }})
	start := time.Now()
	sum, by := run(t, context.Background(), reg, `
name: "died"
model: {name: "m"}
stages: {
	server: {kind: "launch", cmd: ["sh", "-c", "echo booting; sleep 1; echo 'fatal: out of memory'; exit 7"]}
	bench:  {kind: "wait", target: "server"}
}`)
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("the dependent ran %s; it was not failed when its server died", took)
	}
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit = %d, want 3", sum.ExitCode)
	}
	r := by["bench"].Reason
	if by["bench"].Status != "failed" || !strings.Contains(r, "server died") || !strings.Contains(r, "exit status 7") || !strings.Contains(r, "fatal: out of memory") {
		t.Errorf("bench: %s %q, want failed with the exit status and the last log lines", by["bench"].Status, r)
	}
	if by["server"].Status != "failed" {
		t.Errorf("server: %s %q, want failed (a crashed server is not a success)", by["server"].Status, by["server"].Reason)
	}
}

func TestCellDoneReadsTheResumedRunsParquet(t *testing.T) {
	var nilEnv *pipeline.Env
	if nilEnv.CellDone("x") {
		t.Fatal("a nil Env reports a done cell")
	}
	dir := t.TempDir()
	p, err := schema.LoadSource(filepath.Join(dir, "plan.cue"), []byte(`name: "res"
stages: s: {kind: "probe"}`), resumeRegistry(nil).LoadOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	ri, err := engine.NewRunInfo(dir, p, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A first attempt: its manifest, and cells written as the Parquet sink does.
	if _, err := engine.Run(context.Background(), mustBuild(t, p, resumeRegistry(nil)), ri, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ri.Dir, "cells"), 0o755); err != nil {
		t.Fatal(err)
	}
	rows := []results.Cell{{CellID: "s/128:128/c1", Status: "ok"}, {CellID: "s/128:128/c4", Status: "error"}}
	if err := parquet.WriteFile(filepath.Join(ri.Dir, "cells", "part-00001.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(filepath.Join(ri.Dir, "cells", "part-00002.parquet"), []results.Cell{{CellID: "s/2048:128/c1", Status: "ok"}}); err != nil {
		t.Fatal(err)
	}

	seen := map[string]bool{}
	reg := resumeRegistry(seen)
	ri2, err := engine.ResumeRunInfo(ri.Dir, p, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ri2.ID != ri.ID || ri2.Dir != ri.Dir {
		t.Errorf("resumed run %s in %s, want %s in %s", ri2.ID, ri2.Dir, ri.ID, ri.Dir)
	}
	if _, err := engine.Run(context.Background(), mustBuild(t, p, reg), ri2, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"s/128:128/c1": true, "s/128:128/c4": false, "s/2048:128/c1": true, "s/9:9/c1": false}
	for id, done := range want {
		if seen[id] != done {
			t.Errorf("CellDone(%s) = %v, want %v", id, seen[id], done)
		}
	}
	other, _ := schema.LoadSource("other.cue", []byte(`name: "other"
stages: {}`), reg.LoadOptions(nil))
	if _, err := engine.ResumeRunInfo(ri.Dir, other, nil, time.Now()); err == nil || !strings.Contains(err.Error(), `the run is of plan "res", not "other"`) {
		t.Errorf("resuming another plan's run: %v", err)
	}
}

type probe struct{ seen map[string]bool }

func (probe) Validate(*pipeline.Check) error { return nil }
func (p probe) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	for _, id := range []string{"s/128:128/c1", "s/128:128/c4", "s/2048:128/c1", "s/9:9/c1"} {
		if p.seen != nil {
			p.seen[id] = env.CellDone(id)
		}
	}
	return nil, nil
}

func resumeRegistry(seen map[string]bool) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "probe", Schema: schema.KindSchema{Def: "#Probe", Source: "package schema\n#Probe: {#StageBase, kind: \"probe\"}"},
		New: func(*schema.Stage) (pipeline.Stage, error) { return probe{seen: seen}, nil }})
	return reg
}

func mustBuild(t *testing.T, p *schema.Plan, reg *pipeline.Registry) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Build(p, reg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestResumeRefusesOtherTagValues(t *testing.T) {
	dir := t.TempDir()
	p, err := schema.LoadSource(filepath.Join(dir, "plan.cue"), []byte(`name: "res"
stages: s: {kind: "probe"}`), resumeRegistry(nil).LoadOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	ri, err := engine.NewRunInfo(dir, p, []string{"file=q4.gguf"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), mustBuild(t, p, resumeRegistry(nil)), ri, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	_, err = engine.ResumeRunInfo(ri.Dir, p, []string{"file=q8.gguf"}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "the run was made with -t file=q4.gguf but this resume gives -t file=q8.gguf") {
		t.Errorf("resuming with another -t value: err = %v", err)
	}
	if _, err := engine.ResumeRunInfo(ri.Dir, p, nil, time.Now()); err == nil || !strings.Contains(err.Error(), "this resume gives no -t values") {
		t.Errorf("resuming without the run's -t values: err = %v", err)
	}
	if _, err := engine.ResumeRunInfo(ri.Dir, p, []string{"file=q4.gguf", "file=q4.gguf"}, time.Now()); err != nil {
		t.Errorf("resuming with the same -t values: %v", err)
	}
}

// A plan that measures, whose every measuring stage a `when` skipped (a
// mistyped tag), measured nothing: exit 3 saying so, never 0. One
// measuring stage that ran is enough to judge the run as usual.
func TestEveryMeasuringStageSkippedIsNotGreen(t *testing.T) {
	rec := newRecorder()
	sum, by := run(t, context.Background(), testRegistry(rec), `
name: "skipped"
stages: {
	setup: {kind: "step"}
	m1:    {kind: "measure", needs: ["setup"], when: "metadata.gpu == \"h10O\""}
	m2:    {kind: "measure", needs: ["m1"]}
}
metadata: {gpu: "h100"}`)
	if by["m1"].Status != "skipped" || by["m2"].Status != "skipped" {
		t.Fatalf("m1 %s, m2 %s: want both skipped", by["m1"].Status, by["m2"].Status)
	}
	if sum.ExitCode != pipeline.ExitInfra || !strings.Contains(sum.Reason, "nothing was measured: every measuring stage was skipped: m1 (skipped: when") {
		t.Fatalf("exit %d, reason %q; want 3 and nothing measured", sum.ExitCode, sum.Reason)
	}
	sum, _ = run(t, context.Background(), testRegistry(newRecorder()), `
name: "one-ran"
stages: {
	m1: {kind: "measure", when: "metadata.gpu == \"h10O\""}
	m2: {kind: "measure"}
}
metadata: {gpu: "h100"}`)
	if sum.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d (%s) with one measuring stage run", sum.ExitCode, sum.Reason)
	}
}
