package siyuan

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// A run is posted as ok only when its one failure was an earlier attempt
// of this very post; every other failure keeps it failed.
func TestPostedOnlyFailure(t *testing.T) {
	sweep := results.StageOutcome{Name: "sweep", Kind: "sweep", Status: "ok"}
	postFailed := results.StageOutcome{Name: "post", Kind: "post", Status: "failed", Reason: "posting to notes: sink notes failed: …"}
	pass := results.Verdict{Assertion: "ttft_p50_ms < 100", Passed: true, Outcome: results.OutcomePass}
	self := rundir.SinkRecord{Name: "notes", Kind: "siyuan", Status: "failed"}
	ok := func(name, kind string) rundir.SinkRecord {
		return rundir.SinkRecord{Name: name, Kind: kind, Status: "ok"}
	}
	for _, tc := range []struct {
		name     string
		status   string
		stages   []results.StageOutcome
		verdicts []results.Verdict
		sinks    []rundir.SinkRecord
		want     bool
	}{
		{"the post stage failed posting to this sink", "failed", []results.StageOutcome{sweep, postFailed}, []results.Verdict{pass}, []rundir.SinkRecord{ok("parquet", "parquet"), self}, true},
		{"this sink failed at the run's end (no post stage)", "failed", []results.StageOutcome{sweep}, []results.Verdict{pass}, []rundir.SinkRecord{self}, true},
		{"an optional webhook warned beside it", "failed", []results.StageOutcome{sweep, postFailed}, nil, []rundir.SinkRecord{self, {Name: "hook", Kind: "webhook", Status: "warned"}}, true},
		{"a check failed too", "failed", []results.StageOutcome{sweep, postFailed}, []results.Verdict{pass, {Assertion: "ttft_p50_ms < 1", Outcome: results.OutcomeFail}}, []rundir.SinkRecord{self}, false},
		{"a check could not be judged", "failed", []results.StageOutcome{sweep, postFailed}, []results.Verdict{{Assertion: "gpu_util > 0", Outcome: results.OutcomeError}}, []rundir.SinkRecord{self}, false},
		{"a check was inconclusive", "failed", []results.StageOutcome{sweep, postFailed}, []results.Verdict{{Assertion: "ttft_p50_ms < 10", Outcome: results.OutcomeInconclusive}}, []rundir.SinkRecord{self}, false},
		{"a metric regressed", "failed", []results.StageOutcome{sweep, postFailed}, []results.Verdict{{Level: levelRegression, Outcome: "regressed"}}, []rundir.SinkRecord{self}, false},
		{"a measuring stage ended in error", "failed", []results.StageOutcome{{Name: "sweep", Kind: "sweep", Status: "error"}, postFailed}, nil, []rundir.SinkRecord{self}, false},
		{"a measuring stage was skipped", "failed", []results.StageOutcome{{Name: "sweep", Kind: "sweep", Status: "skipped"}, postFailed}, nil, []rundir.SinkRecord{self}, false},
		{"the post stage also failed a webhook", "failed", []results.StageOutcome{sweep, postFailed}, nil, []rundir.SinkRecord{self, {Name: "hook", Kind: "webhook", Status: "failed"}}, false},
		{"another SiYuan sink failed, not this one", "failed", []results.StageOutcome{sweep, postFailed}, nil, []rundir.SinkRecord{ok("notes", "siyuan"), {Name: "team", Kind: "siyuan", Status: "failed"}}, false},
		{"a file sink failed", "failed", []results.StageOutcome{sweep}, nil, []rundir.SinkRecord{{Name: "json", Kind: "json", Status: "failed"}}, false},
		{"no account of the sinks (manifest unread)", "failed", []results.StageOutcome{sweep, postFailed}, nil, nil, false},
		{"interrupted", "interrupted", []results.StageOutcome{sweep, postFailed}, nil, []rundir.SinkRecord{self}, false},
		{"crashed", "crashed", []results.StageOutcome{sweep}, nil, []rundir.SinkRecord{self}, false},
		{"ok already", "ok", []results.StageOutcome{sweep}, nil, []rundir.SinkRecord{ok("notes", "siyuan")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := results.Run{RunID: "r1", Status: tc.status, Stages: tc.stages}
			if got := postedOnlyFailure(run, tc.verdicts, tc.sinks, "notes"); got != tc.want {
				t.Errorf("postedOnlyFailure = %v, want %v", got, tc.want)
			}
		})
	}
}

// The run as posted then: ok, its failed post stage marked as posted
// since (the reason kept), the other stages and the caller's run as they
// were.
func TestPostedRun(t *testing.T) {
	run := results.Run{RunID: "r1", Status: "failed", Stages: []results.StageOutcome{
		{Name: "sweep", Kind: "sweep", Status: "ok"},
		{Name: "post", Kind: "post", Status: "failed", Reason: "posting to notes: kernel down"},
	}}
	got := postedRun(run)
	if got.Status != "ok" || got.Stages[0].Status != "ok" || got.Stages[1].Status != repostedStatus || got.Stages[1].Reason != "posting to notes: kernel down" {
		t.Errorf("postedRun = %+v", got)
	}
	if run.Status != "failed" || run.Stages[1].Status != "failed" {
		t.Errorf("postedRun changed its argument: %+v", run)
	}
}
