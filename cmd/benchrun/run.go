package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/livemetrics"
	"github.com/benchrun/benchrun/internal/supervise"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

// runFlags declares the run's flags (`benchrun PLAN`, `benchrun run
// PLAN`); the plan may stand anywhere among them: `benchrun plan.cue -t
// a=b` and `benchrun -t a=b plan.cue` are the same.
func runFlags(fs *flag.FlagSet) runFunc {
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	// Single-valued flags refuse to be given twice (flag keeps the last).
	out := onceString(fs, "out", "runs", "directory under which run directories are created")
	columns := onceString(fs, "columns", "", "comma-separated CSV columns for stdout (default: the seed bench columns)")
	output := onceString(fs, "output", "", "also write the stdout CSV, result.json and the reports to PREFIX.csv, PREFIX.json, PREFIX.md, PREFIX.html")
	var metadata stringList
	fs.Var(&metadata, "metadata", "stamp key=value on every row and in result.json (repeatable; overrides the plan's metadata)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	dryRun := fs.Bool("dry-run", false, "print the expanded DAG and every cell × ladder point with an estimate; run nothing")
	only := onceString(fs, "only", "", "run only these stages (comma-separated) and what they need")
	resume := onceString(fs, "resume", "", "continue the run in this run directory, skipping cells already finished ok")
	keep := fs.Bool("keep", false, "leave provisioned machines running: skip provision stages' teardown")
	baseline := onceString(fs, "baseline", "", "check every cell against its history in this runs folder (over the plan's baseline.runs; turns the check on)")
	inconclusive := onceString(fs, "inconclusive", "", "what a check the machine's own lateness could explain does to the exit code: tolerate (exit 0 when nothing else failed) or fail (exit 5); over the plan's inconclusive")
	shardFlag := onceString(fs, "shard", "", "send shard i/n (0-based) of every cell's load: ⌊C/n⌋ sessions (+1 for i < C mod n), rate λ/n on its own seed; merge the shards' run directories with benchrun merge")
	startAtFlag := onceString(fs, "start-at", "", "wait until this instant (RFC 3339, or @UNIX seconds) before the first cell, so that shards start together")
	coordinator := onceString(fs, "coordinator", "", "with --shard: join the coordinator at HOST:PORT, which starts every cell on all shards at one instant (lockstep) and measures each shard's clock offset")
	coordinate := onceString(fs, "coordinate", "", "with --shard 0/N: serve the coordinator on this address (\":7070\") for the other shards, and join it")
	metricsAddr := onceString(fs, "metrics-addr", "", "serve the client's own health as Prometheus metrics on HOST:PORT/metrics while the run runs (docs/METRICS.md, \"Live metrics\")")
	return func(ctx context.Context, pos []string, stdout, stderr io.Writer) error {
		plan := pos[0]
		switch *inconclusive {
		case "", engine.InconclusiveTolerate, engine.InconclusiveFail:
		default:
			return failf(pipeline.ExitInvalid, "--inconclusive %q: give tolerate or fail", *inconclusive)
		}
		shard, shards, err := parseShard(*shardFlag)
		if err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--shard: %w", err))
		}
		startAt, err := parseStartAt(*startAtFlag)
		if err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--start-at: %w", err))
		}
		if *resume == "" {
			if err := checkOutDir(*out); err != nil {
				return fail(pipeline.ExitInvalid, err)
			}
		}
		progress := stderr
		if *quiet {
			progress = io.Discard
		}

		g, err := loadGraphContext(ctx, plan, tags, registry())
		if err != nil {
			return exitWith(planErrorExit(stderr, err))
		}
		printWarnings(stderr, g)
		if *only != "" {
			if g, err = g.Only(strings.Split(*only, ",")); err != nil {
				printPlanError(stderr, err)
				return exitWith(pipeline.ExitInvalid)
			}
		}
		if shard, shards, startAt, err = shardOptions(stderr, g.Plan, *shardFlag, *startAtFlag, shard, shards, startAt, coordinator, coordinate); err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		if err := applyMetadata(g.Plan, metadata); err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--metadata: %w", err))
		}
		if *dryRun {
			return writeDryRun(stdout, stderr, g, *resume, tags, shards)
		}
		if err := setSinkFlags(g, *columns, *output); err != nil {
			return err
		}
		var live pipeline.Live // nil: no --metrics-addr
		var liveSrv *livemetrics.Server
		if *metricsAddr != "" {
			if liveSrv, err = livemetrics.Listen(*metricsAddr); err != nil {
				return fail(pipeline.ExitInvalid, fmt.Errorf("--metrics-addr %w", err))
			}
			defer liveSrv.Close()
			live = liveSrv
			fmt.Fprintf(progress, "benchrun: live metrics on http://%s%s\n", liveSrv.Addr(), livemetrics.Path)
		}
		var ri *pipeline.RunInfo
		if *resume != "" {
			// The run writes into RUN_DIR; cells already ok there are skipped.
			if ri, err = engine.ResumeRunInfo(*resume, g.Plan, tags, time.Now()); err != nil {
				return fail(pipeline.ExitInvalid, err)
			}
		} else if ri, err = engine.NewRunInfo(*out, g.Plan, tags, time.Now()); err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		supervise.AnnounceRunDir(ri.Dir)
		fmt.Fprintf(progress, "benchrun: plan %s, run %s\n", g.Plan.Name, ri.Dir)
		if liveSrv != nil {
			liveSrv.Run(g.Plan.Name, ri.ID)
		}
		sum, err := engine.Run(ctx, g, ri, engine.Options{
			Stdout:   stdout,
			Progress: progress,
			Keep:     *keep,
			Baseline: *baseline,
			// --inconclusive over the plan's inconclusive.
			Inconclusive: *inconclusive,
			Shard:        shard,
			Shards:       shards,
			StartAt:      startAt,
			// The plan's shard block fills what the flags leave unset.
			Coordinator: *coordinator,
			Coordinate:  *coordinate,
			Live:        live,
		})
		if err != nil {
			return err // its exit code with it (pipeline.ExitCode)
		}
		engine.PrintSummary(stderr, sum)
		return exitWith(sum.ExitCode)
	}
}

// writeDryRun prints the expanded plan and its estimate (the run's
// --dry-run); with resume, the cells already finished there are marked.
func writeDryRun(stdout, stderr io.Writer, g *pipeline.Graph, resume string, tags []string, shards int) error {
	var done func(string) bool
	if resume != "" {
		// Checked as the resume itself checks it (a run directory of
		// this plan, made with these -t values, no other writer), so
		// that a dry run refuses what the run would.
		ri, err := engine.ResumeRunInfo(resume, g.Plan, tags, time.Now())
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		ri.Close()
		cells, err := engine.DoneCells(resume)
		if err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--resume: %w", err))
		}
		done = func(id string) bool { return cells[id] }
	}
	if err := g.WriteDryRun(stdout, done); err != nil {
		return fail(pipeline.ExitInfra, err)
	}
	warnCapacity(stderr, g, shards)
	return nil
}

// setSinkFlags passes --columns and --output on: they are parameters of
// the registered sinks that take them.
func setSinkFlags(g *pipeline.Graph, columns, output string) error {
	if columns != "" {
		if err := g.SetSinkParam("columns", strings.Split(columns, ",")); err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--columns: %w", err))
		}
	}
	if output != "" {
		if err := g.SetSinkParam("prefix", output); err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--output: %w", err))
		}
	}
	return nil
}

// parseShard reads --shard i/n (0 <= i < n); "" is 0 of 1, unsharded.
func parseShard(v string) (int, int, error) {
	if v == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%q: want i/n with 0 <= i < n (0-based, e.g. 0/2 and 1/2)", v)
	}
	return i, n, nil
}

// parseStartAt reads --start-at: RFC 3339 or @ and Unix seconds
// (fractions allowed); "" is the zero time, start now.
func parseStartAt(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		f, err := strconv.ParseFloat(rest, 64)
		if err != nil || f <= 0 {
			return time.Time{}, fmt.Errorf("%q: want @ and Unix seconds, e.g. @1767225600", v)
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-01-01T00:00:00Z) or @UNIX: %w", v, err)
	}
	return t, nil
}

// shardOptions fills the shard settings the flags left unset from the
// plan's `shard` block (flags win), and checks that they fit together.
func shardOptions(warn io.Writer, p *schema.Plan, shardFlag, startAtFlag string, shard, shards int, startAt time.Time, coordinator, coordinate *string) (int, int, time.Time, error) {
	if ps := p.Shard; ps != nil {
		if shardFlag == "" {
			shard, shards = ps.Index, ps.Count
		}
		if startAtFlag == "" && ps.StartAt != "" {
			t, err := parseStartAt(ps.StartAt)
			if err != nil {
				return 0, 0, time.Time{}, fmt.Errorf("%s: shard.start_at: %w", ps.Pos, err)
			}
			startAt = t
		}
		if *coordinator == "" {
			*coordinator = ps.Coordinator
		}
		if *coordinate == "" {
			*coordinate = ps.Coordinate
		}
	}
	if shards <= 1 && (*coordinator != "" || *coordinate != "") {
		return 0, 0, time.Time{}, errors.New("--coordinator and --coordinate keep the shards of a sharded run in step: give --shard i/N (N > 1) too")
	}
	if *coordinate != "" && shard != 0 {
		return 0, 0, time.Time{}, fmt.Errorf("--coordinate: only shard 0 serves the coordinator (this is shard %d/%d): give the others --coordinator HOST:PORT", shard, shards)
	}
	if shards > 1 && *coordinator == "" && *coordinate == "" && startAt.IsZero() {
		// Allowed (each shard starts when it is ready), but the shards'
		// cells then overlap only by luck.
		fmt.Fprintf(warn, "benchrun: warning: shard %d/%d without --start-at or --coordinator: the shards start when each is ready, not together\n", shard, shards)
	}
	return shard, shards, startAt, nil
}
