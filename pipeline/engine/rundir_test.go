package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/parquet"
)

// The tests of this file are about the run directory across attempts:
// one writer at a time, a resume that refuses another configuration, a
// manifest finished on every way out (and a crashed attempt called so),
// and a resume that starts nothing it has no work for.

const rundirKinds = `
#Cells: {
	#StageBase
	kind: "cells"
	// Cell names; the stage's cell ids are <stage>/<name>.
	ids: [...string]
	// Cells whose ttft_ms is 500 instead of 10.
	slow: [...string]
	// Free text: measuring stages compare it on resume.
	note: *"" | string
}
#Knob: {
	#StageBase
	kind: "knob"
	ms: *5 | int
	// Block until the test releases it.
	block: *false | bool
	// Panic instead of running.
	panic: *false | bool
}
`

type cellsConfig struct {
	IDs  []string `json:"ids"`
	Slow []string `json:"slow"`
}

// cellsStage is a measuring kind that lists its cells (a Planner, as a
// sweep is) and emits an ok row with two requests for each cell not done.
type cellsStage struct {
	name string
	cfg  cellsConfig
	rec  *attemptLog
}

func (c *cellsStage) Validate(*pipeline.Check) error { return nil }

func (c *cellsStage) Plan() []pipeline.PlannedStep {
	var out []pipeline.PlannedStep
	for _, id := range c.cfg.IDs {
		out = append(out, pipeline.PlannedStep{ID: c.name + "/" + id, Label: id, Requests: 2})
	}
	return out
}

func (c *cellsStage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	c.rec.started(c.name)
	for _, id := range c.cfg.IDs {
		cid := c.name + "/" + id
		if env.CellDone(cid) {
			continue
		}
		ttft := 10.0
		for _, s := range c.cfg.Slow {
			if s == id {
				ttft = 500
			}
		}
		row := results.Cell{Stage: c.name, CellID: cid, Status: results.StatusOK, TTFTMs: results.Some(ttft), Requests: 2, StartedAt: time.Now()}
		if err := env.Emit(row, results.AsRequests([]results.Request{{Seq: 0, TTFTMs: results.Some(ttft), Status: "ok"}, {Seq: 1, TTFTMs: results.Some(ttft), Status: "ok"}})); err != nil {
			return nil, err
		}
	}
	return &pipeline.Outputs{}, nil
}

type knobConfig struct {
	Block bool `json:"block"`
	Panic bool `json:"panic"`
}

// knob stands for a server: it records that it ran; it can block until
// released (a run still going) or panic (a bug).
type knob struct {
	name string
	cfg  knobConfig
	rec  *attemptLog
}

func (k *knob) Validate(*pipeline.Check) error { return nil }

func (k *knob) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	k.rec.started(k.name)
	if k.cfg.Panic {
		panic("knob exploded")
	}
	if k.cfg.Block {
		select {
		case <-k.rec.release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return &pipeline.Outputs{}, nil
}

// attemptLog counts stage starts across attempts.
type attemptLog struct {
	mu      sync.Mutex
	starts  map[string]int
	running chan string
	release chan struct{}
}

func newAttemptLog() *attemptLog {
	return &attemptLog{starts: map[string]int{}, running: make(chan string, 16), release: make(chan struct{})}
}

func (a *attemptLog) started(name string) {
	a.mu.Lock()
	a.starts[name]++
	a.mu.Unlock()
	a.running <- name
}

func (a *attemptLog) count(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.starts[name]
}

func rundirRegistry(rec *attemptLog) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	src := "package schema\n" + rundirKinds
	reg.AddKind(pipeline.Kind{Name: "cells", Measuring: true, Schema: schema.KindSchema{Def: "#Cells", Source: src},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			st := &cellsStage{name: s.Name, rec: rec}
			return st, s.Decode(&st.cfg)
		}})
	reg.AddKind(pipeline.Kind{Name: "knob", Schema: schema.KindSchema{Def: "#Knob", Source: "package schema\n"},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			st := &knob{name: s.Name, rec: rec}
			return st, s.Decode(&st.cfg)
		}})
	return reg
}

// loadPlan loads src as dir/plan.cue (a resume loads the same file anew).
func loadPlan(t *testing.T, reg *pipeline.Registry, dir, src string) *pipeline.Graph {
	t.Helper()
	return pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src)
}

// resumeRun resumes the run in runDir with g and runs it, returning the
// summary, the progress text and the error of either step.
func resumeRun(t *testing.T, g *pipeline.Graph, runDir string, outs ...pipeline.Sink) (*pipeline.Summary, string, error) {
	t.Helper()
	ri, err := engine.ResumeRunInfo(runDir, g.Plan, nil, time.Now())
	if err != nil {
		return nil, "", err
	}
	var progress bytes.Buffer
	sum, err := engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(outs...), Progress: &progress, FinallyTimeout: 5 * time.Second})
	return sum, progress.String(), err
}

// manifestOf reads manifest.json as plain JSON, so the test reads what a
// user reads.
func manifestOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const knobPlan = `name: "res"
stages: {
	server: {kind: "knob", ms: %d, block: %v, description: %q}
}`

// Two writers on one run directory overwrote each other's part files: a
// resume while the run (or another resume) still writes is refused, naming
// the writer, and it is accepted once the writer is done.
func TestOneWriterPerRunDirectory(t *testing.T) {
	rec := newAttemptLog()
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, fmt.Sprintf(knobPlan, 5, true, ""))
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := engine.Run(context.Background(), g, ri, engine.Options{})
		done <- err
	}()
	<-rec.running // the first attempt is in its server stage

	host, _ := os.Hostname()
	for i := range 2 {
		_, err := engine.ResumeRunInfo(ri.Dir, g.Plan, nil, time.Now())
		want := fmt.Sprintf("is in use by another benchrun (pid %d on %s, attempt 1, since ", os.Getpid(), host)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("resume %d while the run writes: err = %v; want it refused with %q", i+1, err, want)
		}
	}
	close(rec.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, _, err := resumeRun(t, g, ri.Dir); err != nil { // the release is closed: it runs through
		t.Fatalf("resume after the run ended: %v", err)
	}
}

// A resume with an edited plan mixed two configurations in one run: what
// is left to run must be configured as the run was, and the refusal shows
// each difference. A description is not configuration.
func TestResumeRefusesAnEditedPlan(t *testing.T) {
	rec := newAttemptLog()
	close(rec.release)
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, fmt.Sprintf(knobPlan, 5, false, "first"))
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), g, ri, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(ri.Dir, "manifest.json"))

	_, _, err = resumeRun(t, loadPlan(t, reg, dir, fmt.Sprintf(knobPlan, 80, true, "first")), ri.Dir)
	for _, want := range []string{"resuming would mix two configurations in one run", "stages.server.ms: 5 → 80", "stages.server.block: false → true", "start a new run"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resume with an edited plan: err = %v; want %q", err, want)
		}
	}
	if code := pipeline.ExitCode(err); code != pipeline.ExitInvalid {
		t.Errorf("exit code %d, want 2", code)
	}
	if after, _ := os.ReadFile(filepath.Join(ri.Dir, "manifest.json")); !bytes.Equal(before, after) {
		t.Errorf("a refused resume rewrote the manifest:\n%s", after)
	}
	if _, _, err := resumeRun(t, loadPlan(t, reg, dir, fmt.Sprintf(knobPlan, 5, false, "edited words")), ri.Dir); err != nil {
		t.Errorf("resume with only the description changed: %v", err)
	}
}

const sweepPlan = `name: "res"
stages: {
	server: {kind: "knob"}
	sweep:  {kind: "cells", needs: ["server"], ids: ["a", "b"], slow: ["b"], note: %q, assert: ["ttft_ms < 100"]}
	post:   {kind: "knob", needs: ["sweep"], finally: true}
}`

// A resume with every cell done still started the server: what has
// nothing left to do is skipped ("nothing left to resume"), finally stages
// still run, and the run exits with its verdict (an assertion that failed
// on a done cell still fails it). Nor does a stage with nothing left have
// its configuration compared.
func TestResumeWithNothingLeftStartsNothing(t *testing.T) {
	rec := newAttemptLog()
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, fmt.Sprintf(sweepPlan, ""))
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(parquet.New())})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ExitCode != pipeline.ExitAssertion || rec.count("server") != 1 || rec.count("sweep") != 1 {
		t.Fatalf("first attempt: exit %d, server ran %d times, sweep %d", sum.ExitCode, rec.count("server"), rec.count("sweep"))
	}

	sum, progress, err := resumeRun(t, loadPlan(t, reg, dir, fmt.Sprintf(sweepPlan, "a note")), ri.Dir, parquet.New())
	if err != nil {
		t.Fatal(err)
	}
	if n := rec.count("server"); n != 1 {
		t.Errorf("the resume started the server (%d starts in all): nothing was left to measure", n)
	}
	if n := rec.count("sweep"); n != 1 {
		t.Errorf("the resume ran the sweep again (%d runs in all)", n)
	}
	if n := rec.count("post"); n != 2 {
		t.Errorf("the finally stage ran %d times in two attempts, want 2", n)
	}
	for _, s := range sum.Stages {
		want := "skipped"
		if s.Name == "post" {
			want = "ok"
		}
		if s.Status != want || (want == "skipped" && s.Reason != "skipped: nothing left to resume") {
			t.Errorf("stage %s: %s %q; want %s (nothing left to resume)", s.Name, s.Status, s.Reason, want)
		}
	}
	if !strings.Contains(progress, "- server skipped: nothing left to resume") {
		t.Errorf("progress does not say why the server was not started:\n%s", progress)
	}
	if sum.ExitCode != pipeline.ExitAssertion || len(sum.Failed) != 1 || sum.Failed[0].CellID != "sweep/b" {
		t.Errorf("resume of a run that failed an assertion: exit %d, failed %+v; want exit 1 with the failure on sweep/b", sum.ExitCode, sum.Failed)
	}
	if m := manifestOf(t, ri.Dir); m["status"] != "failed" || m["exit_code"] != 1.0 {
		t.Errorf("manifest after the resume: status %v, exit %v; want failed, 1", m["status"], m["exit_code"])
	}
}

// failingStart is an output that cannot start (a full disk, a bad prefix).
type failingStart struct{}

func (failingStart) Name() string                              { return "broken" }
func (failingStart) Start(*pipeline.SinkEnv) error             { return errors.New("no space left on device") }
func (failingStart) Cell(results.Cell, results.Requests) error { return nil }
func (failingStart) Stop(*pipeline.Summary) error              { return nil }

// The manifest stayed "running" after a failure before the first stage:
// every way out of a run finishes it, with the reason.
func TestManifestFinishedWhenTheRunFailsBeforeItsFirstStage(t *testing.T) {
	rec := newAttemptLog()
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, fmt.Sprintf(knobPlan, 5, false, ""))
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(failingStart{})})
	if err == nil || pipeline.ExitCode(err) != pipeline.ExitInfra {
		t.Fatalf("run with an output that cannot start: %v", err)
	}
	m := manifestOf(t, ri.Dir)
	if m["status"] != "failed" || m["exit_code"] != 3.0 || !strings.Contains(fmt.Sprint(m["reason"]), "sink broken could not start (its output not written): no space left on device") || m["finished_at"] == nil {
		t.Errorf("manifest: status %v, exit %v, reason %v, finished %v; want failed, 3, the output's error, a finish time", m["status"], m["exit_code"], m["reason"], m["finished_at"])
	}
}

// A stage that panics hung the run (its result never came back); now it
// fails that stage like any error, its dependents are skipped, finally
// stages run and the manifest is finished.
func TestAPanickingStageFailsAndTheRunFinishes(t *testing.T) {
	rec := newAttemptLog()
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, `name: "res"
stages: {
	server: {kind: "knob", panic: true}
	sweep:  {kind: "cells", needs: ["server"], ids: ["a"]}
	post:   {kind: "knob", needs: ["sweep"], finally: true}
}`)
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		sum *pipeline.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := engine.Run(context.Background(), g, ri, engine.Options{FinallyTimeout: 5 * time.Second})
		done <- result{sum, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s of a stage's panic")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	by := map[string]pipeline.StageResult{}
	for _, s := range res.sum.Stages {
		by[s.Name] = s
	}
	if s := by["server"]; s.Status != "failed" || !strings.Contains(s.Reason, "stage server crashed: panic: knob exploded") {
		t.Errorf("server: %s %q; want failed with the panic", s.Status, s.Reason)
	}
	if by["sweep"].Status != "skipped" || by["post"].Status != "ok" || res.sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("sweep %s, post %s, exit %d; want skipped, ok, 3", by["sweep"].Status, by["post"].Status, res.sum.ExitCode)
	}
	if log, _ := os.ReadFile(filepath.Join(ri.Dir, "server.log")); !strings.Contains(string(log), "goroutine") {
		t.Errorf("server.log lacks the panic's stack:\n%s", log)
	}
	if m := manifestOf(t, ri.Dir); m["status"] != "failed" || !strings.Contains(fmt.Sprint(m["reason"]), "stage server failed: stage server crashed: panic") {
		t.Errorf("manifest: status %v, reason %v", m["status"], m["reason"])
	}
}

// An attempt that never finished (SIGKILL, a power cut) left its
// manifest "running" for ever. The resume that finds it so, with nobody
// holding the run directory, records it as crashed, says so, and removes
// the temporary files it left.
func TestResumeRecordsACrashedAttempt(t *testing.T) {
	rec := newAttemptLog()
	close(rec.release)
	reg := rundirRegistry(rec)
	dir := t.TempDir()
	g := loadPlan(t, reg, dir, fmt.Sprintf(sweepPlan, ""))
	ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(parquet.New())}); err != nil {
		t.Fatal(err)
	}
	// Make it look killed: the manifest as it is while the run runs, one
	// cell lost, and temporary files of writes that never got renamed.
	m := manifestOf(t, ri.Dir)
	m["status"] = "running"
	delete(m, "exit_code")
	delete(m, "finished_at")
	if as, ok := m["attempts"].([]any); ok {
		a := as[0].(map[string]any)
		a["status"] = "running"
		delete(a, "exit_code")
		delete(a, "finished_at")
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(ri.Dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	parts, _ := filepath.Glob(filepath.Join(ri.Dir, "cells", "*.parquet"))
	if len(parts) != 2 {
		t.Fatalf("cell parts %v", parts)
	}
	if err := os.Remove(parts[1]); err != nil {
		t.Fatal(err)
	}
	temps := []string{filepath.Join("cells", ".part-00009.parquet.tmp-1234"), filepath.Join("requests", ".part-001-00009.parquet.tmp-99"), ".manifest.json.tmp-5678"}
	for _, f := range temps {
		if err := os.WriteFile(filepath.Join(ri.Dir, f), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sum, progress, err := resumeRun(t, loadPlan(t, reg, dir, fmt.Sprintf(sweepPlan, "")), ri.Dir, parquet.New())
	if err != nil {
		t.Fatal(err)
	}
	if sum.ExitCode != pipeline.ExitAssertion {
		t.Errorf("exit %d, want 1 (sweep/b is slow)", sum.ExitCode)
	}
	if !strings.Contains(progress, "attempt 1 (pid ") || !strings.Contains(progress, "crashed: it never finished") {
		t.Errorf("the resume does not say the attempt before it crashed:\n%s", progress)
	}
	if !strings.Contains(progress, "removed 3 temporary files") {
		t.Errorf("the resume does not say it removed the temporary files:\n%s", progress)
	}
	for _, f := range temps {
		if _, err := os.Stat(filepath.Join(ri.Dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the resume (%v)", f, err)
		}
	}
	m = manifestOf(t, ri.Dir)
	as, _ := m["attempts"].([]any)
	if len(as) != 2 {
		t.Fatalf("manifest attempts: %v; want two", m["attempts"])
	}
	first, second := as[0].(map[string]any), as[1].(map[string]any)
	if first["status"] != "crashed" || !strings.Contains(fmt.Sprint(first["reason"]), "no benchrun held the run directory") {
		t.Errorf("attempt 1: %v; want crashed with the reason", first)
	}
	if second["attempt"] != 2.0 || second["status"] != "failed" || second["exit_code"] != 1.0 || second["pid"] != float64(os.Getpid()) {
		t.Errorf("attempt 2: %v; want attempt 2, failed, exit 1, this pid", second)
	}
	if m["status"] != "failed" {
		t.Errorf("manifest status %v, want failed (the run's latest verdict)", m["status"])
	}
	// The re-measured cell's rows carry attempt 2, in parts named for it.
	if parts, _ := filepath.Glob(filepath.Join(ri.Dir, "*", "part-002-*.parquet")); len(parts) != 4 {
		t.Errorf("attempt 2's part files: %v; want its cell, requests, slices and assertions parts", parts)
	}
	cells, err := resultstest.ReadTable[results.Cell](ri.Dir, results.TableCells)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := resultstest.ReadTable[results.Request](ri.Dir, results.TableRequests)
	vs, _ := resultstest.ReadTable[results.Verdict](ri.Dir, results.TableAssertions)
	got := map[string]int64{}
	for _, c := range cells {
		got["cell "+c.CellID] = c.Attempt
	}
	for _, q := range reqs {
		got["request "+q.CellID] = q.Attempt
	}
	for _, v := range vs {
		got["verdict "+v.CellID] = v.Attempt
	}
	want := map[string]int64{"cell sweep/a": 1, "cell sweep/b": 2, "request sweep/a": 1, "request sweep/b": 2, "verdict sweep/a": 1, "verdict sweep/b": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attempts by row: %v, want %v", got, want)
	}
}
