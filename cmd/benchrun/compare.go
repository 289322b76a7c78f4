package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/internal/compare"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
)

const compareUsage = `usage: benchrun compare OLD NEW [flags]
       benchrun compare BASELINE VARIANT... [flags]
       benchrun compare --by KEY RUNS... [flags]

OLD and NEW are each a run directory, a glob of run directories (quote it),
or a folder of runs; several runs a side pool as repeats. Given three or
more, each is a variant (engines, quants, versions), the first the
baseline that every other is compared against, labelled by its run
directory's or folder's name. Cells are compared when they match on plan,
stage, cell id, endpoint, model digest, engine and version, hardware and
metadata (--ignore lets parts differ). --by KEY compares the variants of a
metadata key within the runs given (the first value seen is the baseline),
or of a column: engine (with what differs with it: its version, a
metadata key engine, and the plan's name where each engine's runs are of
a plan of its own), engine_version, model, model_digest, hardware or
plan; the values label the variants. When no cell matches, compare names
every part in which the nearest cells differ and the --ignore that lets
them all differ. --html FILE also writes one self-contained page: per
stage and shape, each variant's latency against throughput across its
load levels (the Pareto front ringed), TTFT and ITL per load level, and
the verdicts beside them. A
change the machine's own lateness could explain (one side's machine ran
tasks later than the other's, measured in each run) is inconclusive, not
regressed. Exit 1 when any metric regressed, 5 when none did but one was
inconclusive and --inconclusive is fail, 0 otherwise, 2 on bad arguments
or when no cell matches.
`

// compareFlags declares `benchrun compare`'s flags: a benchstat-like
// table of each matching cell's metrics, old against new
// (internal/compare, internal/regress).
func compareFlags(fs *flag.FlagSet) runFunc {
	var cf compare.Args
	var format, htmlOut string
	fs.StringVar(&format, "format", "text", "output format: text, markdown, csv, json or html (one self-contained page)")
	fs.StringVar(&cf.Metrics, "metric", "", "metrics to compare, comma-separated (default: ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2el_p50_ms,e2el_p99_ms,output_tok_s,req_s)")
	fs.StringVar(&cf.Ignore, "ignore", "", "cell-key parts that may differ, comma-separated: plan, stage, endpoint, model_digest, engine, engine_version, hardware, metadata, or a metadata key (metadata.KEY where KEY is also a part's name, e.g. metadata.engine)")
	fs.StringVar(&cf.By, "by", "", "compare the variants of this metadata key within the runs given (e.g. quant), or of a column: engine, engine_version, model, model_digest, hardware or plan (metadata.KEY for a metadata key of a column's name)")
	fs.StringVar(&htmlOut, "html", "", "also write a self-contained HTML page to this file: each variant's latency-throughput curves (the Pareto front ringed), TTFT and ITL per load level, and the verdicts")
	fs.StringVar(&cf.Correction, "correction", "bh", "multiple-comparison correction over every cell × metric: bh (Benjamini–Hochberg), holm or none")
	fs.Float64Var(&cf.Alpha, "alpha", 0.05, "two-sided level of the intervals (0.05: 95%)")
	fs.Uint64Var(&cf.Seed, "seed", 0, "bootstrap seed (the same runs and seed give the same intervals)")
	fs.IntVar(&cf.Resamples, "resamples", 1000, "bootstrap resamples")
	inconclusive := fs.String("inconclusive", engine.InconclusiveTolerate, "what a change the machine's own lateness could explain does to the exit code: tolerate (exit 0 when nothing regressed) or fail (exit 5)")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		if cf.By == "" && len(pos) < 2 {
			return errUsage // OLD and NEW, or a baseline and its variants
		}
		if !compare.ValidFormat(format) {
			return failf(pipeline.ExitInvalid, "--format %q: give text, markdown, csv, json or html", format)
		}
		if *inconclusive != engine.InconclusiveTolerate && *inconclusive != engine.InconclusiveFail {
			return failf(pipeline.ExitInvalid, "--inconclusive %q: give tolerate or fail", *inconclusive)
		}
		o, err := cf.Options()
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		sides, comps, err := compare.Load(cf.By, pos, stderr)
		if _, ok := errors.AsType[*compare.ArgError](err); ok {
			return fail(pipeline.ExitInvalid, err)
		} else if err != nil {
			return err
		}
		matched := compare.Compare(comps, o)
		if err := compare.Write(stdout, format, comps); err != nil {
			return fmt.Errorf("writing: %w", err)
		}
		if htmlOut != "" {
			if err := compare.WritePageFile(htmlOut, compare.Page{By: cf.By, Sides: sides, Comps: comps, Options: o}); err != nil {
				return err
			}
		}
		switch {
		case !matched:
			return fail(pipeline.ExitInvalid, errors.New(compare.NoMatch(comps, o.Ignore)))
		case compare.Count(comps, regress.Regressed) > 0:
			return exitWith(pipeline.ExitAssertion)
		case compare.Count(comps, regress.Inconclusive) > 0 && *inconclusive == engine.InconclusiveFail:
			return exitWith(pipeline.ExitInconclusive)
		}
		return nil
	}
}
