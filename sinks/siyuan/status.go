package siyuan

import (
	"slices"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// postStageKind is the kind of the stage that drives remote sinks (the
// post stage's package is a stage kind, which a sink does not import).
const postStageKind = "post"

// repostedStatus is what the document says of a post stage whose earlier
// attempt of this post failed: the document is that post, made since.
const repostedStatus = "failed, posted since"

// postedOnlyFailure reports whether the run failed only because an
// earlier attempt of this very post failed, so the document (the post,
// now made) is titled and marked by what the run measured and judged,
// not "(failed)" beside "all 12 checks passed" (issue 46). The rule,
// each part needed, anything else keeping the run's own status:
//
//   - the run's status is failed (an interrupted or crashed run is
//     never completed by a post);
//   - no check counts against it (failedCheck, the same test as the
//     summary's "all N checks passed": a failed, unjudgeable or
//     inconclusive check, or a regression, keeps it failed);
//   - every stage ended ok but the post stages, which failed: a stage
//     that failed, skipped or ended in error did not measure all it
//     should, and a post stage fails only through its sinks;
//   - the run's sinks' accounts say this sink (self) failed and no other
//     did: a post stage that also drove a webhook that failed, or a
//     file sink that failed, is a failure this post does not undo.
//
// sinks are the accounts as the manifest records them.
func postedOnlyFailure(run results.Run, verdicts []results.Verdict, sinks []rundir.SinkRecord, self string) bool {
	if run.Status != pipeline.RunFailed || slices.ContainsFunc(verdicts, failedCheck) {
		return false
	}
	for _, s := range run.Stages {
		if s.Status != results.StatusOK && (s.Kind != postStageKind || s.Status != pipeline.StatusFailed) {
			return false
		}
	}
	selfFailed := false
	for _, r := range sinks {
		if r.Status != pipeline.SinkFailed {
			continue
		}
		if r.Name != self || r.Kind != Kind.Name {
			return false
		}
		selfFailed = true
	}
	return selfFailed
}

// postedRun is run as this post shows it when postedOnlyFailure: ok, its
// failed post stages marked as posted since (their reason still says
// what failed then).
func postedRun(run results.Run) results.Run {
	run.Status = results.StatusOK
	run.Stages = slices.Clone(run.Stages)
	for i, s := range run.Stages {
		if s.Kind == postStageKind && s.Status == pipeline.StatusFailed {
			run.Stages[i].Status = repostedStatus
		}
	}
	return run
}

// sinkRecords are the run's sinks' accounts: the summary's, else the
// manifest's (a replay, `benchrun post RUN_DIR`, hands Stop the outcome
// the manifest records without them), read through internal/rundir. A
// manifest that cannot be read gives none: the run keeps its status.
func (o *Sink) sinkRecords(sum *pipeline.Summary) []rundir.SinkRecord {
	if len(sum.Sinks) > 0 {
		return sum.Sinks
	}
	if o.env.Run == nil || o.env.Run.Dir == "" {
		return nil
	}
	m, err := rundir.ReadManifest(o.env.Run.Dir)
	if err != nil {
		return nil
	}
	return m.Sinks
}
