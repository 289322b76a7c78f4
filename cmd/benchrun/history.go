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

// runHistory is `benchrun history`.
func runHistory(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	plan := fs.String("plan", "", "only runs of this plan")
	metrics := fs.String("metric", "", "metrics, comma-separated (default: ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2el_p50_ms,e2el_p99_ms,output_tok_s,req_s)")
	htmlOut := fs.String("html", "", "also write a self-contained HTML page with one chart per metric to this file")
	format := fs.String("format", "text", "stdout format: text, csv or json")
	from := fs.String("from", "", "only runs started on or after this day (YYYY-MM-DD, UTC) or time (RFC3339)")
	to := fs.String("to", "", "only runs started on or before this day or time")
	ignore := fs.String("ignore", "", "cell-key parts that may differ within a series, comma-separated (as compare's --ignore)")
	window := fs.Int("window", 50, "change points: sliding window length")
	maxP := fs.Float64("p", 0.001, "change points: the p-value a change must be under")
	magnitude := fs.Float64("magnitude", 0.05, "change points: the relative change a change must exceed")
	hideFailed := fs.Bool("hide-failed", false, "leave out runs that failed their own checks (shown, marked ✗, by default)")
	fs.Usage = func() {
		fmt.Fprint(stderr, historyUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return pipeline.ExitOK
		}
		return pipeline.ExitInvalid
	}
	if len(pos) != 1 {
		fs.Usage()
		return pipeline.ExitInvalid
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "benchrun history: "+format+"\n", a...)
		return pipeline.ExitInvalid
	}
	switch *format {
	case "text", "csv", "json":
	default:
		return bad("--format %q: give text, csv or json", *format)
	}
	f := rundir.Filter{Plan: *plan}
	if *from != "" {
		if f.From, err = rundir.ParseFrom(*from); err != nil {
			return bad("--from: %v", err)
		}
	}
	if *to != "" {
		if f.To, err = rundir.ParseTo(*to); err != nil {
			return bad("--to: %v", err)
		}
	}
	var ms []regress.Metric
	if *metrics != "" {
		if ms, err = regress.SelectMetrics(strings.Split(*metrics, ",")); err != nil {
			return bad("--metric: %v", err)
		}
	}
	// Change points need two segments of at least two runs to compare, a
	// p-value is a probability, and a magnitude a size (0: none): anything
	// else made every run of a flat series a change point.
	if *window < 4 {
		return bad("--window %d: give at least 4 runs (two either side of a change)", *window)
	}
	if !(*maxP > 0 && *maxP < 1) {
		return bad("--p %g: give a p-value between 0 and 1 (0.001 by default)", *maxP)
	}
	if !(*magnitude >= 0) {
		return bad("--magnitude %g: give a relative change of 0 (none) or more (0.05: 5%%, by default)", *magnitude)
	}
	if *magnitude == 0 {
		*magnitude = -1 // ChangePointOptions: negative is none, 0 the default
	}
	runs, err := regress.LoadHistory(pos[0], f, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return bad("%v", err)
		}
		fmt.Fprintf(stderr, "benchrun history: %v\n", err)
		return pipeline.ExitInfra
	}
	if len(runs) == 0 {
		what := ""
		if *plan != "" {
			what = " of plan " + *plan
		}
		return bad("no runs%s under %s", what, pos[0])
	}
	if *hideFailed {
		for _, r := range runs {
			if r.FailedChecks {
				r.FailedChecks, r.Cells = false, nil // left out, counted as "run failed"
			}
		}
	}
	var o regress.Options
	for _, x := range strings.Split(*ignore, ",") {
		if x = strings.TrimSpace(x); x != "" {
			o.Ignore = append(o.Ignore, x)
		}
	}
	series := regress.SeriesOf(runs, ms, o, regress.ChangePointOptions{Window: *window, MaxP: *maxP, MinMagnitude: *magnitude})
	h := compare.History{Root: pos[0], Runs: runs, Series: series}
	switch *format {
	case "csv":
		err = compare.WriteHistoryCSV(stdout, h)
	case "json":
		err = compare.WriteHistoryJSON(stdout, h)
	default:
		err = compare.WriteHistoryText(stdout, h)
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun history: writing: %v\n", err)
		return pipeline.ExitInfra
	}
	if *htmlOut != "" {
		if err := rundir.WriteFileAtomic(*htmlOut, []byte(compare.HistoryHTML(h))); err != nil {
			fmt.Fprintf(stderr, "benchrun history: %v\n", err)
			return pipeline.ExitInfra
		}
	}
	return pipeline.ExitOK
}
