package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/merge"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/sinks/parquet"
)

// runMerge joins the run directories of a sharded run (--shard i/n) into
// one, recomputing every cell from the shards' pooled request rows, and
// judges the plan's row assertions on the merged rows.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := onceString(fs, "out", "", "the merged run directory to write (new, or empty)")
	lag := fs.Float64("send-lag-threshold-ms", 5, "flag a cell where a shard's send_lag p99 exceeds this")
	late := fs.Float64("start-threshold-ms", 100, "flag a cell where a shard's first send came this much after the earliest shard's (beyond its planned phase)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun merge RUN_DIR... --out DIR")
		fs.PrintDefaults()
	}
	var dirs, rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "-"):
			rest = append(rest, a)
			if !strings.Contains(a, "=") && flagTakesValue(fs, a) && i+1 < len(args) && a != "-h" && a != "--help" && a != "-help" {
				rest = append(rest, args[i+1])
				i++
			}
		default:
			dirs = append(dirs, a)
		}
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return pipeline.ExitOK
		}
		return pipeline.ExitInvalid
	}
	dirs = append(dirs, fs.Args()...)
	if len(dirs) == 0 || *out == "" {
		fs.Usage()
		return pipeline.ExitInvalid
	}
	res, err := merge.Merge(dirs, *out, merge.Options{SendLagThresholdMs: *lag, StartThresholdMs: *late})
	if err != nil {
		fmt.Fprintln(stderr, "benchrun merge:", err)
		return pipeline.ExitInvalid
	}
	code := pipeline.ExitOK
	for _, c := range res.Info.Cells {
		for _, s := range c.Shards {
			if s.Flag != "" {
				fmt.Fprintf(stderr, "benchrun merge: %s %s: shard %d/%d %s\n", c.Stage, c.CellID, s.Shard, s.Shards, s.Flag)
			}
		}
	}
	failed, err := judgeMerged(ctx, res, stderr)
	if err != nil {
		// The rows are written; only the judging could not run.
		fmt.Fprintln(stderr, "benchrun merge: assertions not judged:", err)
	} else if failed > 0 {
		code = pipeline.ExitAssertion
	}
	fmt.Fprintf(stderr, "benchrun merge: %d cells from %d shards into %s\n", len(res.Cells), len(dirs), res.Dir)
	fmt.Fprintln(stdout, res.Dir)
	return code
}

// judgeMerged runs the plan's row assertions (the plan the shards ran, as
// shard 0 stored it) on the merged rows and writes their verdicts.
func judgeMerged(ctx context.Context, res *merge.Result, stderr io.Writer) (int, error) {
	run, err := rundir.Open(res.Dir)
	if err != nil {
		return 0, err
	}
	if len(run.PlanCUE) == 0 || run.Manifest == nil {
		return 0, errors.New("the shards stored no plan.cue")
	}
	g, err := loadGraphContext(ctx, filepath.Join(res.Dir, rundir.PlanFile), run.Manifest.Tags, registry())
	if err != nil {
		return 0, fmt.Errorf("loading the stored plan: %w", err)
	}
	asserts := map[string][]*pipeline.Assertion{}
	for _, n := range g.Nodes {
		for _, a := range n.Spec.Assert {
			ca, err := pipeline.CompileAssertion(a, n.Spec.Name)
			if err != nil {
				return 0, err
			}
			asserts[n.Spec.Name] = append(asserts[n.Spec.Name], ca)
		}
		if n.Kind.Measuring {
			for _, a := range g.Plan.Assert {
				ca, err := pipeline.CompileAssertion(a, "")
				if err != nil {
					return 0, err
				}
				asserts[n.Spec.Name] = append(asserts[n.Spec.Name], ca)
			}
		}
	}
	now := time.Now().UTC()
	var rows []results.Verdict
	failed := 0
	for _, c := range res.Cells {
		for _, a := range asserts[c.Stage] {
			if a.Level != pipeline.LevelRow {
				continue // stage and run levels: not judged on merged rows yet
			}
			v := a.JudgeRow(c, res.Requests[c.Stage+"\x00"+c.CellID], nil)
			row := results.Verdict{
				RunID: c.RunID, Plan: c.Plan, Stage: c.Stage, CellID: c.CellID, Cell: v.Cell,
				JudgedAt: now, Assertion: v.Assertion, Name: v.Name, Severity: v.Severity, Level: v.Level,
				Pos: v.Pos, Scope: "stage", Passed: v.Passed, Values: v.Values, Error: v.Error,
			}
			if a.Stage == "" {
				row.Scope = "plan"
			}
			switch {
			case !v.Passed && v.Severity == pipeline.SeverityWarn:
				row.Outcome = results.OutcomeWarn
			case v.Error != "":
				row.Outcome = results.OutcomeError
			case v.Passed:
				row.Outcome = results.OutcomePass
			default:
				row.Outcome = results.OutcomeFail
			}
			if v.Fails() {
				failed++
				fmt.Fprintf(stderr, "benchrun merge: ✗ %s %s: %s %s\n", c.Stage, c.CellID, v.Assertion, v.FormatValues())
			}
			rows = append(rows, row)
		}
	}
	if len(rows) > 0 {
		if err := parquet.WriteFile(filepath.Join(res.Dir, results.TableAssertions, parquet.PartName(1, 1)), rows); err != nil {
			return failed, err
		}
	}
	return failed, nil
}
