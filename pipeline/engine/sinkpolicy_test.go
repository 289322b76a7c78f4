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
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

// flakySink fails as its plan entry says: "never", "always" (a full
// disk), "transient-once" (a reset connection, then fine) or "start".
type flakySink struct {
	mode  string
	log   *[]string
	name  string
	cells int
}

func (s *flakySink) Name() string { return s.name }
func (s *flakySink) Start(*pipeline.SinkEnv) error {
	if s.mode == "start" {
		return errors.New("cannot open flaky.out: permission denied")
	}
	return nil
}
func (s *flakySink) Stop(*pipeline.Summary) error { return nil }
func (s *flakySink) Cell(c results.Cell, _ results.Requests) error {
	*s.log = append(*s.log, s.name+":"+c.CellID)
	switch s.mode {
	case "always":
		return fmt.Errorf("write flaky.out: %w", syscall.ENOSPC)
	case "transient-once":
		s.cells++
		if s.cells == 1 {
			return fmt.Errorf("post to the notebook: %w", syscall.ECONNRESET)
		}
	}
	return nil
}

// policyRegistry has the one-row stage and two sink kinds: "flaky", and
// "store", a durable one registered after it (order of rows is the
// registry's property, not the registration order).
func policyRegistry(log *[]string) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "emit", Doc: "emits a row", Measuring: true,
		Schema: schema.KindSchema{Def: "#Emit", Source: "package schema\n#Emit: {#StageBase, kind: \"emit\"}"},
		New:    func(*schema.Stage) (pipeline.Stage, error) { return oneRowStage{}, nil }})
	reg.AddSink(pipeline.SinkKind{Name: "flaky", Doc: "fails on demand", Writes: "flaky.out",
		Schema: schema.KindSchema{Def: "#Flaky", Source: "package schema\n#Flaky: {#SinkBase, kind: \"flaky\", fail: *\"never\" | \"always\" | \"transient-once\" | \"start\"}"},
		New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
			var cfg struct {
				Fail string `json:"fail"`
			}
			if err := spec.Decode(&cfg); err != nil {
				return nil, err
			}
			return &flakySink{mode: cfg.Fail, log: log, name: spec.Name}, nil
		}})
	reg.AddSink(pipeline.SinkKind{Name: "store", Doc: "the record", Default: true, Durable: true,
		Schema: schema.KindSchema{Def: "#Store", Source: "package schema\n#Store: {#SinkBase, kind: \"store\"}"},
		New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
			return &flakySink{mode: "never", log: log, name: "store"}, nil
		}})
	return reg
}

func sinkRecords(t *testing.T, dir string) map[string]pipeline.SinkRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sinks []pipeline.SinkRecord `json:"sinks"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]pipeline.SinkRecord{}
	for _, r := range m.Sinks {
		out[r.Name] = r
	}
	return out
}

// The pipeline, not the sink, owns the failure policy: a required sink
// that fails makes the run exit 3 and says what was not written; an
// optional one gives a warning; a transient failure is retried with
// backoff; and every sink's account lands in the manifest.
func TestSinkFailurePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, entry  string
		exit         int
		reason       string // in the summary's reason
		progress     string // on the progress writer
		status       string // the flaky sink's manifest record
		retries      int
		waits        []time.Duration
		failuresSeen int
	}{
		{name: "required fails", entry: `{kind: "flaky", fail: "always"}`, exit: pipeline.ExitInfra,
			reason: "sink flaky failed: flaky.out not written in full: cell e/1: write flaky.out: no space left on device", status: pipeline.SinkFailed, failuresSeen: 1},
		{name: "optional fails", entry: `{kind: "flaky", fail: "always", optional: true}`, exit: pipeline.ExitOK,
			progress: "warning: optional sink flaky: cell e/1 failed: write flaky.out: no space left on device (the run goes on without it)", status: pipeline.SinkWarned, failuresSeen: 1},
		{name: "transient once, retried", entry: `{kind: "flaky", fail: "transient-once", retry: {attempts: 3, backoff: "50ms"}}`, exit: pipeline.ExitOK,
			progress: "↻ sink flaky: cell e/1 failed (attempt 1/3): post to the notebook: connection reset by peer; retrying in 50ms", status: pipeline.SinkOK, retries: 1, waits: []time.Duration{50 * time.Millisecond}},
		{name: "no retry when attempts is 1", entry: `{kind: "flaky", fail: "transient-once", retry: {attempts: 1}}`, exit: pipeline.ExitInfra,
			reason: "connection reset by peer", status: pipeline.SinkFailed, failuresSeen: 1},
		{name: "a permanent failure is not retried", entry: `{kind: "flaky", fail: "always", retry: {attempts: 5}}`, exit: pipeline.ExitInfra,
			reason: "no space left on device", status: pipeline.SinkFailed, failuresSeen: 1},
		{name: "required cannot start", entry: `{kind: "flaky", fail: "start"}`, exit: pipeline.ExitInfra,
			reason: "sink flaky could not start (flaky.out not written): cannot open flaky.out: permission denied", status: pipeline.SinkFailed, failuresSeen: 1},
		{name: "optional cannot start", entry: `{kind: "flaky", fail: "start", optional: true}`, exit: pipeline.ExitOK,
			progress: "optional sink flaky: start failed", status: pipeline.SinkWarned, failuresSeen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			engine.SetSinkSleep(t, func(d time.Duration) { waits = append(waits, d) })
			var log []string
			reg := policyRegistry(&log)
			dir := t.TempDir()
			path := filepath.Join(dir, "plan.cue")
			src := "name: \"p\"\nmodel: {name: \"m\"}\nsinks: [" + tc.entry + "]\nstages: e: {kind: \"emit\"}\n"
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := schema.Load(path, reg.LoadOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			g, err := pipeline.Build(p, reg)
			if err != nil {
				t.Fatal(err)
			}
			ri, err := engine.NewRunInfo(filepath.Join(dir, "runs"), p, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var progress bytes.Buffer
			sum, err := engine.Run(context.Background(), g, ri, engine.Options{Progress: &progress})
			code, reason := pipeline.ExitCode(err), ""
			if err != nil {
				reason = err.Error()
			} else {
				code, reason = sum.ExitCode, sum.Reason
			}
			if code != tc.exit {
				t.Fatalf("exit %d (%s), want %d\n%s", code, reason, tc.exit, progress.String())
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q, want it to say %q", reason, tc.reason)
			}
			if !strings.Contains(progress.String(), tc.progress) {
				t.Errorf("progress does not say %q:\n%s", tc.progress, progress.String())
			}
			rec := sinkRecords(t, ri.Dir)["flaky"]
			if rec.Status != tc.status || rec.Retries != tc.retries || rec.Failures != tc.failuresSeen || rec.Required == strings.Contains(tc.entry, "optional") {
				t.Errorf("manifest record %+v, want status %s, %d retries, %d failures", rec, tc.status, tc.retries, tc.failuresSeen)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.waits) {
				t.Errorf("waited %v between attempts, want %v", waits, tc.waits)
			}
			if store := sinkRecords(t, ri.Dir)["store"]; store.Status != pipeline.SinkOK || !store.Durable || store.Calls < 1 {
				t.Errorf("durable sink record %+v", store)
			}
		})
	}
}

// Rows reach durable sinks first because the kind says it is durable,
// not because of the order kinds were registered or listed in.
func TestDurableSinksGetRowsFirst(t *testing.T) {
	var log []string
	reg := policyRegistry(&log)
	sum, _ := runPlan(t, context.Background(), t.TempDir(), reg, "name: \"p\"\nmodel: {name: \"m\"}\nsinks: [{kind: \"flaky\"}]\nstages: e: {kind: \"emit\"}\n",
		engine.Options{})
	if sum.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d: %s", sum.ExitCode, sum.Reason)
	}
	if got := strings.Join(log, " "); got != "store:e/1 flaky:e/1" {
		t.Fatalf("rows reached the sinks as %q, want the durable store first", got)
	}
}
