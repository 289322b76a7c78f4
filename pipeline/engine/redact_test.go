package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/redact/redacttest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

const leakyKind = `package schema
#Leaky: {
	#StageBase
	kind: "leaky"
	target: string
	api_key_env?: string
	headers?: [string]: string
}
`

// leaky is a stage that repeats, as a gateway's errors do, the credentials
// it was configured with, everywhere a stage can write: its log (the key
// split across two writes), progress, a cell row, its requests, samples,
// and its error. It registers nothing itself: the pipeline knows the
// plan's secrets.
type leaky struct{}

func (leaky) Validate(*pipeline.Check) error { return nil }

func (leaky) Run(_ context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	said := fmt.Sprintf("invalid key Bearer %s (x-token %s) for %s", os.Getenv("LEAKY_KEY"), os.Getenv("LEAKY_TOKEN"), env.Stage.Target)
	key := os.Getenv("LEAKY_KEY")
	fmt.Fprintf(env.Log, "server said: Bearer %s", key[:5])
	fmt.Fprintf(env.Log, "%s\n%s\n", key[5:], said)
	fmt.Fprintf(env.Progress, "  %s: %s\n", env.Stage.Name, said)
	// A launched server writes its own output straight into a log file.
	if err := os.WriteFile(filepath.Join(env.Dir, env.Stage.Name+".server-1.log"), []byte("argv: --api-key "+key+"\n"), 0o644); err != nil {
		return nil, err
	}
	c := results.Cell{Stage: env.Stage.Name, CellID: env.Stage.Name + "/8:8/c1", ISL: 8, OSL: 8, Concurrency: 1,
		Status: results.StatusError, Reason: said, Notes: "note: " + said, Metadata: map[string]string{"echo": said}, StartedAt: time.Now()}
	reqs := []results.Request{{Seq: 0, Status: results.StatusError, Error: "HTTP 401: " + said}}
	if err := env.Emit(c, results.AsRequests(reqs)); err != nil {
		return nil, err
	}
	if err := env.EmitSamples([]results.Sample{{Stage: env.Stage.Name, Source: "prometheus", Device: env.Stage.Target, Metric: "m", Labels: map[string]string{"x": said}}}); err != nil {
		return nil, err
	}
	return nil, errors.New("gave up: " + said)
}

type everything struct {
	mu   sync.Mutex
	seen []string
}

func (e *everything) add(v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, fmt.Sprintf("%+v", v))
}

func (e *everything) Name() string                  { return "everything" }
func (e *everything) Start(*pipeline.SinkEnv) error { return nil }
func (e *everything) Stop(sum *pipeline.Summary) error {
	e.add(sum.Reason)
	e.add(sum.Stages)
	e.add(pipeline.RunRecord(sum.Run, sum))
	return nil
}
func (e *everything) Cell(c results.Cell, in results.Requests) error {
	reqs, _ := results.CollectRequests(in)
	e.add(c)
	e.add(reqs)
	return nil
}
func (e *everything) Verdicts(_ results.Cell, rows []results.Verdict) error {
	e.add(rows)
	return nil
}
func (e *everything) Samples(rows []results.Sample) error {
	e.add(rows)
	return nil
}

// TestSecretsRedactedInProcess: the secrets a plan sends (an api_key_env
// key, a header value from the environment, a target URL's password)
// reach no output, log, progress line, manifest or plan copy; and a
// resume of the run compares plans with the password masked on both
// sides, so it is not refused for it.
func TestSecretsRedactedInProcess(t *testing.T) {
	const key, token, password = "sk-inproc-424242", "tok-inproc-777", "pw-inproc-31337"
	t.Setenv("LEAKY_KEY", key)
	t.Setenv("LEAKY_TOKEN", token)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Cleanup(redacttest.Reset)
	dir := t.TempDir()
	src := `name: "leaky"
model: {name: "m"}
stages: {
	leak: {kind: "leaky", target: "http://bench:` + password + `@127.0.0.1:9", api_key_env: "LEAKY_KEY", headers: {"X-Token": "${LEAKY_TOKEN}"}, assert: ["status == \"ok\""]}
}
`
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "leaky", Doc: "repeats its credentials", Measuring: true,
		Schema: schema.KindSchema{Def: "#Leaky", Source: leakyKind},
		New:    func(*schema.Stage) (pipeline.Stage, error) { return leaky{}, nil }})
	out := &everything{}
	var progress lockedBuffer
	sum, ri := runPlan(t, context.Background(), dir, reg, src, engine.Options{Sinks: pipelinetest.UseSinks(out), Progress: &progress})
	var buf strings.Builder
	engine.PrintSummary(&buf, sum)

	texts := map[string]string{"progress": progress.String(), "summary": buf.String()}
	out.mu.Lock()
	texts["outputs"] = strings.Join(out.seen, "\n")
	out.mu.Unlock()
	for _, f := range []string{"leak.log", "leak.server-1.log", "manifest.json", "plan.cue", "plan.json"} {
		b, err := os.ReadFile(filepath.Join(ri.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	for where, text := range texts {
		for _, s := range []string{key, token, password} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q:\n%s", where, s, text)
			}
		}
	}
	for _, where := range []string{"progress", "summary", "outputs", "leak.log", "manifest.json"} {
		if !strings.Contains(texts[where], "Bearer [REDACTED] (x-token [REDACTED])") {
			t.Errorf("%s does not show the masked credentials:\n%s", where, texts[where])
		}
	}
	if texts["leak.server-1.log"] != "argv: --api-key [REDACTED]\n" {
		t.Errorf("a log the stage wrote directly is not scrubbed at the end of the run: %q", texts["leak.server-1.log"])
	}
	if !strings.Contains(texts["leak.log"], "server said: Bearer [REDACTED]\n") {
		t.Errorf("the key written in two pieces is not masked in the log:\n%s", texts["leak.log"])
	}
	for _, f := range []string{"plan.cue", "plan.json"} {
		if !strings.Contains(texts[f], "http://bench:xxxxx@127.0.0.1:9") {
			t.Errorf("%s: want the target URL with its password masked:\n%s", f, texts[f])
		}
	}

	// The plan is unchanged: a resume is not refused for the password
	// plan.json no longer shows.
	g, err := pipeline.Build(ri.Plan, reg)
	if err != nil {
		t.Fatal(err)
	}
	ri2, err := engine.ResumeRunInfo(ri.Dir, ri.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer ri2.Close()
	if err := engine.CheckResume(g, ri2); err != nil {
		t.Errorf("resume of the same plan refused: %v", err)
	}
}
