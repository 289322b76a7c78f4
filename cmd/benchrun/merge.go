package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/benchrun/benchrun/internal/merge"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
)

// mergeFlags declares `benchrun merge`'s flags: it joins the run
// directories of a sharded run (--shard i/n) into one, recomputing every
// cell from the shards' pooled request rows, and judges the merged run
// as a run is judged (engine.JudgeDir): the plan's row, stage and run
// assertions and its baseline, with the verdicts in the assertions table,
// the outcome in the manifest, and a run's exit code (1: a check failed).
func mergeFlags(fs *flag.FlagSet) runFunc {
	out := onceString(fs, "out", "", "the merged run directory to write (new, or empty)")
	lag := fs.Float64("send-lag-threshold-ms", 5, "flag a cell where a shard's send_lag p99 exceeds this")
	late := fs.Float64("start-threshold-ms", 100, "flag a cell where a shard's first send came this much after the earliest shard's (beyond its planned phase)")
	baseline := onceString(fs, "baseline", "", "check every merged cell against its history in this runs folder (over the plan's baseline.runs; turns the check on)")
	return func(ctx context.Context, dirs []string, stdout, stderr io.Writer) error {
		if *out == "" {
			return errUsage
		}
		res, err := merge.Merge(dirs, *out, merge.Options{SendLagThresholdMs: *lag, StartThresholdMs: *late})
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		for _, c := range res.Info.Cells {
			for _, s := range c.Shards {
				if s.Flag != "" {
					fmt.Fprintf(stderr, "benchrun merge: %s %s: shard %d/%d %s\n", c.Stage, c.CellID, s.Shard, s.Shards, s.Flag)
				}
			}
		}
		fmt.Fprintf(stderr, "benchrun merge: %d cells from %d shards into %s\n", len(res.Cells), len(dirs), res.Dir)
		sum, err := judgeMerged(ctx, res, dirs, *baseline, stderr)
		if err != nil {
			// The rows are written; the run could not be judged, which is
			// not a pass.
			fmt.Fprintln(stderr, "benchrun merge: the merged run is not judged:", err)
			fmt.Fprintln(stdout, res.Dir)
			return exitWith(pipeline.ExitInfra)
		}
		engine.PrintSummary(stderr, sum)
		if sum.ExitCode != pipeline.ExitOK && sum.Reason != "" {
			fmt.Fprintf(stderr, "benchrun merge: %s\n", sum.Reason)
		}
		fmt.Fprintln(stdout, res.Dir)
		return exitWith(sum.ExitCode)
	}
}

// judgeMerged judges the merged run with the plan the shards ran (as
// shard 0 stored it, loaded with its tags), as the pipeline judges a run
// at its end; the verdicts go to the merged run's assertions table.
func judgeMerged(ctx context.Context, res *merge.Result, dirs []string, baseline string, stderr io.Writer) (*pipeline.Summary, error) {
	shard0 := dirs[0]
	run, err := rundir.Open(res.Dir)
	if err != nil {
		return nil, err
	}
	if len(run.PlanCUE) == 0 || run.Manifest == nil {
		return nil, errors.New("the shards stored no plan.cue")
	}
	g, err := loadGraphContext(ctx, filepath.Join(res.Dir, rundir.PlanFile), run.Manifest.Tags, registry())
	if err != nil {
		return nil, fmt.Errorf("loading the stored plan: %w", err)
	}
	return engine.JudgeDir(ctx, g, res.Dir, engine.JudgeOptions{
		Baseline:    baseline,
		HistoryRoot: mergedHistoryRoot(res.Dir, shard0),
		Failure:     shardsFailure(dirs),
		Progress:    stderr,
		Store: func(rows []results.Verdict) error {
			if len(rows) == 0 {
				return nil
			}
			return rundir.WriteFile(filepath.Join(res.Dir, results.TableAssertions, rundir.PartName(1, 1)), rows)
		},
	})
}

// mergedHistoryRoot is where a merged run's baseline history is when
// neither the plan's baseline.runs nor --baseline says: the runs folder
// the merged run is filed under when --out is one of its run=ID folders
// ("", a run's own rule); else the runs folder its shards were filed
// under (where their earlier runs and merges are: shard runs themselves
// are left out of a history); else the folder --out is in.
func mergedHistoryRoot(out, shard0 string) string {
	hive := func(dir string) bool { return strings.HasPrefix(filepath.Base(filepath.Clean(dir)), "run=") }
	switch {
	case hive(out):
		return ""
	case hive(shard0):
		return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Clean(shard0))))
	default:
		return filepath.Dir(filepath.Clean(out))
	}
}

// shardsFailure says why the merged run failed because a shard did: a
// shard run that did not end ok, other than by its own checks failing
// (exit 1: its assertions judged its part of the load, which the merged
// run judges again on the whole). "" when none did.
func shardsFailure(dirs []string) string {
	var why []string
	for _, d := range dirs {
		m, err := rundir.ReadManifest(d)
		if err != nil {
			why = append(why, fmt.Sprintf("shard %s: %v", d, err))
			continue
		}
		if m.Status == rundir.RunOK || m.Status == rundir.RunFailed && m.ExitCode != nil && *m.ExitCode == pipeline.ExitAssertion {
			continue
		}
		reason := m.Reason
		if reason == "" {
			reason = m.Status
		}
		why = append(why, fmt.Sprintf("shard %s %s: %s", d, m.Status, reason))
	}
	return strings.Join(why, "; ")
}
