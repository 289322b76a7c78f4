package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/benchrun/benchrun/internal/compare"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

const historyUsage = `usage: benchrun history RUNS_ROOT_OR_PLAN_DIR [--plan NAME] [--metric m,...] [--html FILE]

Per cell and metric, the series of values over the runs under the folder (by
run start), with the change points found in it (e-divisive means with a
t-test, as Apache Otava: window 50, p ≤ 0.001, magnitude ≥ 5%), as a table on
stdout and, with --html, as one self-contained page with a chart per metric.
Runs that failed their own checks (an assertion, a regression: exit 1 or 5)
are shown, marked ✗, and a value their baseline check called regressed is
marked !, so a nightly job's history shows the night it got slower;
--hide-failed leaves them out. Runs that did not measure (a stage failed,
interrupted, crashed), cells not ok and client-bound cells are left out and
counted.
`

// historyArgs are `benchrun history`'s flags.
type historyArgs struct {
	plan, metrics, htmlOut, format, from, to, ignore string
	window                                           int
	maxP, magnitude                                  float64
	hideFailed                                       bool
}

// historyFlags declares `benchrun history`'s flags.
func historyFlags(fs *flag.FlagSet) runFunc {
	var a historyArgs
	fs.StringVar(&a.plan, "plan", "", "only runs of this plan")
	fs.StringVar(&a.metrics, "metric", "", "metrics, comma-separated (default: ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2el_p50_ms,e2el_p99_ms,output_tok_s,req_s)")
	fs.StringVar(&a.htmlOut, "html", "", "also write a self-contained HTML page with one chart per metric to this file")
	fs.StringVar(&a.format, "format", "text", "stdout format: text, csv or json")
	fs.StringVar(&a.from, "from", "", "only runs started on or after this day (YYYY-MM-DD, UTC) or time (RFC3339)")
	fs.StringVar(&a.to, "to", "", "only runs started on or before this day or time")
	fs.StringVar(&a.ignore, "ignore", "", "cell-key parts that may differ within a series, comma-separated (as compare's --ignore)")
	fs.IntVar(&a.window, "window", 50, "change points: sliding window length")
	fs.Float64Var(&a.maxP, "p", 0.001, "change points: the p-value a change must be under")
	fs.Float64Var(&a.magnitude, "magnitude", 0.05, "change points: the relative change a change must exceed")
	fs.BoolVar(&a.hideFailed, "hide-failed", false, "leave out runs that failed their own checks (shown, marked ✗, by default)")
	return a.run
}

// run is `benchrun history`.
func (a *historyArgs) run(_ context.Context, pos []string, stdout, _ io.Writer) error {
	f, ms, cp, err := a.check()
	if err != nil {
		return fail(pipeline.ExitInvalid, err)
	}
	runs, err := regress.LoadHistory(pos[0], f, 0)
	if errors.Is(err, os.ErrNotExist) {
		return fail(pipeline.ExitInvalid, err)
	} else if err != nil {
		return err
	}
	if len(runs) == 0 {
		what := ""
		if a.plan != "" {
			what = " of plan " + a.plan
		}
		return failf(pipeline.ExitInvalid, "no runs%s under %s", what, pos[0])
	}
	if a.hideFailed {
		for _, r := range runs {
			if r.FailedChecks {
				r.FailedChecks, r.Cells = false, nil // left out, counted as "run failed"
			}
		}
	}
	var o regress.Options
	for _, x := range strings.Split(a.ignore, ",") {
		if x = strings.TrimSpace(x); x != "" {
			o.Ignore = append(o.Ignore, x)
		}
	}
	h := compare.History{Root: pos[0], Runs: runs, Series: regress.SeriesOf(runs, ms, o, cp)}
	switch a.format {
	case "csv":
		err = compare.WriteHistoryCSV(stdout, h)
	case "json":
		err = compare.WriteHistoryJSON(stdout, h)
	default:
		err = compare.WriteHistoryText(stdout, h)
	}
	if err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	if a.htmlOut != "" {
		return rundir.WriteFileAtomic(a.htmlOut, []byte(compare.HistoryHTML(h)))
	}
	return nil
}

// check reads the flags into the runs' filter, the metrics and the
// change-point settings; an error names the flag at fault.
func (a *historyArgs) check() (f rundir.Filter, ms []regress.Metric, cp regress.ChangePointOptions, err error) {
	switch a.format {
	case "text", "csv", "json":
	default:
		return f, nil, cp, fmt.Errorf("--format %q: give text, csv or json", a.format)
	}
	f = rundir.Filter{Plan: a.plan}
	if a.from != "" {
		if f.From, err = rundir.ParseFrom(a.from); err != nil {
			return f, nil, cp, fmt.Errorf("--from: %w", err)
		}
	}
	if a.to != "" {
		if f.To, err = rundir.ParseTo(a.to); err != nil {
			return f, nil, cp, fmt.Errorf("--to: %w", err)
		}
	}
	if a.metrics != "" {
		if ms, err = regress.SelectMetrics(strings.Split(a.metrics, ",")); err != nil {
			return f, nil, cp, fmt.Errorf("--metric: %w", err)
		}
	}
	// Change points need two segments of at least two runs to compare, a
	// p-value is a probability, and a magnitude a size (0: none): anything
	// else made every run of a flat series a change point.
	switch {
	case a.window < 4:
		return f, nil, cp, fmt.Errorf("--window %d: give at least 4 runs (two either side of a change)", a.window)
	case !(a.maxP > 0 && a.maxP < 1):
		return f, nil, cp, fmt.Errorf("--p %g: give a p-value between 0 and 1 (0.001 by default)", a.maxP)
	case !(a.magnitude >= 0):
		return f, nil, cp, fmt.Errorf("--magnitude %g: give a relative change of 0 (none) or more (0.05: 5%%, by default)", a.magnitude)
	}
	cp = regress.ChangePointOptions{Window: a.window, MaxP: a.maxP, MinMagnitude: a.magnitude}
	if a.magnitude == 0 {
		cp.MinMagnitude = -1 // ChangePointOptions: negative is none, 0 the default
	}
	return f, ms, cp, nil
}
