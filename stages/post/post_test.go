package post_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks"
	"github.com/benchrun/benchrun/stages"
)

// probe is a remote sink kind for these tests: each sink it builds records
// what it receives (pipelinetest.RecordingSink) where the test can read it, and
// `fail: true` makes its Stop fail (permanently) as a kernel refusing the
// post would.
type probeBox struct {
	mu    sync.Mutex
	built map[string][]*probeSink // by sink name, in the order New built them
}

type probeSink struct {
	*pipelinetest.RecordingSink
	fail bool
}

func (p *probeSink) Stop(sum *pipeline.Summary) error {
	_ = p.RecordingSink.Stop(sum)
	if p.fail {
		return errors.New("the probe refuses the post")
	}
	return nil
}

func (b *probeBox) kind() pipeline.SinkKind {
	return pipeline.SinkKind{
		Name:   "probe",
		Remote: true,
		Schema: schema.KindSchema{Def: "#Probe", Source: "package schema\n#Probe: {\n\t#SinkBase\n\tkind: \"probe\"\n\tfail?: bool\n}\n"},
		New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
			var cfg struct {
				Fail bool `json:"fail"`
			}
			if err := spec.Decode(&cfg); err != nil {
				return nil, err
			}
			s := &probeSink{RecordingSink: pipelinetest.NewRecordingSink(), fail: cfg.Fail}
			s.SinkName = spec.Name
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.built == nil {
				b.built = map[string][]*probeSink{}
			}
			b.built[spec.Name] = append(b.built[spec.Name], s)
			return s, nil
		},
	}
}

// started are the probe sinks named name that got a Start call: the ones
// driven (New also runs when the plan is built, without driving them).
func (b *probeBox) started(name string) []*pipelinetest.Recording {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*pipelinetest.Recording
	for _, s := range b.built[name] {
		if r := s.Snapshot(); len(r.Calls) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func registry(b *probeBox) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	sinks.Builtin(reg)
	reg.AddSink(b.kind())
	return reg
}

const postPlan = `
name: "post"
model: {name: "sim-llama"}
sinks: [{kind: "probe", name: "notes"}, {kind: "probe", name: "hook", optional: true, fail: %[3]v}]
stages: {
	sweep: {
		kind: "sweep", target: %[1]q
		cells: [{isl: 16, osl: 4}], concurrency: [1, 2], requests: 2, warmup: 0
		assert: [%[2]q]
	}
	post: {kind: "post", needs: ["sweep"], finally: true, sinks: ["notes", "hook"]}
}
`

// The post stage runs after the run is judged and posts it whole: every
// cell row with its requests, the row and stage verdicts, and the outcome
// (an assertion that failed makes the posted status failed, exit 1). The
// sinks it names get nothing live. An optional sink that fails warns; the
// manifest records both sinks' accounts.
func TestPostsTheJudgedRun(t *testing.T) {
	url := pipelinetest.Sim(t)
	b := &probeBox{}
	g := pipelinetest.LoadPlan(t, registry(b), fmt.Sprintf(postPlan, url, `count(rows, .status == "ok") > 5`, true))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := pipelinetest.Run(t, ctx, g, engine.Options{})
	if st := rec.Stage("post"); st.Status != pipeline.StatusOK {
		t.Fatalf("post: %s %s\n%s", st.Status, st.Reason, rec.Progress)
	}
	if rec.Summary.ExitCode != pipeline.ExitAssertion {
		t.Errorf("exit %d, want %d (the stage assertion fails; an optional sink's failure is a warning)", rec.Summary.ExitCode, pipeline.ExitAssertion)
	}
	notes := b.started("notes")
	if len(notes) != 1 {
		t.Fatalf("notes driven %d times, want once (by the post stage, not live)", len(notes))
	}
	got := notes[0]
	if got.Calls[0] != "start" || got.Calls[len(got.Calls)-1] != "stop" || len(got.Cells) != 2 || len(got.Requests) != 4 {
		t.Errorf("notes got calls %v, %d cells, %d requests; want start, the 2 cells with their 4 requests, stop", got.Calls, len(got.Cells), len(got.Requests))
	}
	if got.Env == nil || !got.Env.Replay || got.Env.HistoryRoot == "" {
		t.Errorf("env %+v: want a replay with the history root", got.Env)
	}
	var stageVerdict bool
	for _, v := range got.Verdicts {
		if v.Level == pipeline.LevelStage && !v.Passed {
			stageVerdict = true
		}
	}
	if !stageVerdict {
		t.Errorf("verdicts %+v: want the failed stage-level assertion", got.Verdicts)
	}
	if s := got.Summary; s == nil || s.Status != pipeline.RunFailed || s.ExitCode != pipeline.ExitAssertion || len(s.Failed) != 1 || hasStage(s, "post") {
		t.Errorf("posted summary %+v: want status failed, exit 1, the one failed check, and no post stage in it", s)
	}
	m, err := rundir.ReadManifest(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, s := range m.Sinks {
		status[s.Name] = s.Status
	}
	if status["notes"] != pipeline.SinkOK || status["hook"] != pipeline.SinkWarned {
		t.Errorf("manifest sinks %v: want notes ok, hook warned", status)
	}
	if !strings.Contains(rec.Progress, "hook") {
		t.Errorf("no warning about the hook sink in the progress:\n%s", rec.Progress)
	}
}

// A post stage that is not `finally` does not post a run whose stage it
// needs failed, and its sinks stay pending in the manifest (benchrun post
// can post them later); a finally one posts it, marked failed.
func TestPostAfterAFailedStage(t *testing.T) {
	dead := "http://127.0.0.1:1" // nothing listens there: the health check fails
	for _, finally := range []bool{false, true} {
		t.Run(fmt.Sprint("finally=", finally), func(t *testing.T) {
			b := &probeBox{}
			src := strings.Replace(fmt.Sprintf(postPlan, dead, `status == "ok"`, false), "finally: true", fmt.Sprintf("finally: %v", finally), 1)
			src = strings.Replace(src, "sweep: {\n", fmt.Sprintf("health: {kind: \"health\", target: %q, within: \"300ms\"}\n\tsweep: {\n\t\tneeds: [\"health\"]\n", dead), 1)
			g := pipelinetest.LoadPlan(t, registry(b), src)
			rec := pipelinetest.Run(t, context.Background(), g, engine.Options{})
			m, err := rundir.ReadManifest(rec.Dir)
			if err != nil {
				t.Fatal(err)
			}
			notes := b.started("notes")
			if !finally {
				if st := rec.Stage("post"); st.Status != pipeline.StatusSkipped || len(notes) != 0 {
					t.Errorf("post %s, notes driven %d times; want skipped and never", st.Status, len(notes))
				}
				for _, s := range m.Sinks {
					if s.Name == "notes" && s.Status != pipeline.SinkPending {
						t.Errorf("notes in the manifest: %+v, want pending", s)
					}
				}
				return
			}
			if len(notes) != 1 || notes[0].Summary == nil || notes[0].Summary.Status != pipeline.RunFailed || notes[0].Summary.Reason == "" {
				t.Fatalf("notes %+v: want one post of a failed run, with its reason", notes)
			}
		})
	}
}

// An interrupted run is posted by a finally post stage, marked
// interrupted, with the rows finished before the interrupt.
func TestPostAnInterruptedRun(t *testing.T) {
	url := pipelinetest.Sim(t, func(c *sim.Config) { c.TTFT = 300 * time.Millisecond })
	b := &probeBox{}
	g := pipelinetest.LoadPlan(t, registry(b), fmt.Sprintf(postPlan, url, `status == "ok"`, false))
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(900 * time.Millisecond) // inside the first cell's 2 requests
		cancel(errors.New("interrupted (test)"))
	}()
	rec := pipelinetest.Run(t, ctx, g, engine.Options{})
	notes := b.started("notes")
	if len(notes) != 1 || notes[0].Summary == nil || notes[0].Summary.Status != pipeline.RunInterrupted {
		t.Fatalf("notes %+v: want one post marked interrupted\n%s", notes, rec.Progress)
	}
	if rec.Summary.ExitCode != pipeline.ExitInterrupted {
		t.Errorf("exit %d, want %d", rec.Summary.ExitCode, pipeline.ExitInterrupted)
	}
}

// A required sink whose post fails fails the post stage (exit 3), after
// the other sinks posted.
func TestPostRequiredSinkFails(t *testing.T) {
	url := pipelinetest.Sim(t)
	b := &probeBox{}
	src := strings.Replace(fmt.Sprintf(postPlan, url, `status == "ok"`, false), `{kind: "probe", name: "notes"}`, `{kind: "probe", name: "notes", fail: true}`, 1)
	g := pipelinetest.LoadPlan(t, registry(b), src)
	rec := pipelinetest.Run(t, context.Background(), g, engine.Options{})
	if st := rec.Stage("post"); st.Status != pipeline.StatusFailed || !strings.Contains(st.Reason, "refuses the post") {
		t.Errorf("post %s (%s), want failed with the sink's reason", st.Status, st.Reason)
	}
	if rec.Summary.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit %d, want %d", rec.Summary.ExitCode, pipeline.ExitInfra)
	}
	if hook := b.started("hook"); len(hook) != 1 || hook[0].Summary == nil {
		t.Errorf("hook driven %d times, want once: every sink runs", len(hook))
	}
}

// What vet refuses, at the plan position.
func TestPostVet(t *testing.T) {
	b := &probeBox{}
	for _, tc := range []struct{ name, stages, want string }{
		{"unknown sink", `post: {kind: "post", sinks: ["nope"]}`, `stages.post.sinks[0]: the plan has no sink named "nope"`},
		{"file sink", `post: {kind: "post", sinks: ["csv"]}`, `"csv" is a csv sink, which writes files`},
		{"listed twice", `post: {kind: "post", sinks: ["notes", "notes"]}`, `stages.post.sinks[1]: "notes" is listed twice`},
		{"waited for", `post: {kind: "post", sinks: ["notes"]}, after: {kind: "post", sinks: ["hook"], needs: ["post"]}, x: {kind: "health", target: "http://127.0.0.1:1", needs: ["post"]}`, `stages.x.needs: post (kind post) runs after every other stage`},
		{"two posters", `post: {kind: "post", sinks: ["notes"]}, again: {kind: "post", sinks: ["notes"]}`, `posts to "notes" already`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: \"v\"\nmodel: {name: \"m\"}\nsinks: [{kind: \"probe\", name: \"notes\"}, {kind: \"probe\", name: \"hook\"}, {kind: \"csv\"}]\nstages: {" + tc.stages + "}\n"
			p, err := schema.Load(writePlan(t, src), registry(b).LoadOptions(nil))
			if err == nil {
				_, err = pipeline.Build(p, registry(b))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
				t.Errorf("got %v, want an error at plan.cue:LINE:COL containing %q", err, tc.want)
			}
		})
	}
}

func hasStage(s *pipeline.Summary, name string) bool {
	for _, st := range s.Stages {
		if st.Name == name {
			return true
		}
	}
	return false
}

func writePlan(t *testing.T, src string) string {
	t.Helper()
	path := t.TempDir() + "/plan.cue"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
