package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/safetext"
	"github.com/benchrun/benchrun/pipeline"
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

// compareFlags are compare's and history's shared options.
type compareFlags struct {
	format     string
	metrics    string
	ignore     string
	by         string
	correction string
	html       string
	alpha      float64
	seed       uint64
	resamples  int
}

// runCompare is `benchrun compare`: a benchstat-like table of each
// matching cell's metrics, old against new (internal/regress).
func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf compareFlags
	fs.StringVar(&cf.format, "format", "text", "output format: text, markdown, csv, json or html (one self-contained page)")
	fs.StringVar(&cf.metrics, "metric", "", "metrics to compare, comma-separated (default: ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2el_p50_ms,e2el_p99_ms,output_tok_s,req_s)")
	fs.StringVar(&cf.ignore, "ignore", "", "cell-key parts that may differ, comma-separated: plan, stage, endpoint, model_digest, engine, engine_version, hardware, metadata, or a metadata key (metadata.KEY where KEY is also a part's name, e.g. metadata.engine)")
	fs.StringVar(&cf.by, "by", "", "compare the variants of this metadata key within the runs given (e.g. quant), or of a column: engine, engine_version, model, model_digest, hardware or plan (metadata.KEY for a metadata key of a column's name)")
	fs.StringVar(&cf.html, "html", "", "also write a self-contained HTML page to this file: each variant's latency-throughput curves (the Pareto front ringed), TTFT and ITL per load level, and the verdicts")
	fs.StringVar(&cf.correction, "correction", "bh", "multiple-comparison correction over every cell × metric: bh (Benjamini–Hochberg), holm or none")
	fs.Float64Var(&cf.alpha, "alpha", 0.05, "two-sided level of the intervals (0.05: 95%)")
	fs.Uint64Var(&cf.seed, "seed", 0, "bootstrap seed (the same runs and seed give the same intervals)")
	fs.IntVar(&cf.resamples, "resamples", 1000, "bootstrap resamples")
	inconclusive := fs.String("inconclusive", pipeline.InconclusiveTolerate, "what a change the machine's own lateness could explain does to the exit code: tolerate (exit 0 when nothing regressed) or fail (exit 5)")
	fs.Usage = func() {
		fmt.Fprint(stderr, compareUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return pipeline.ExitOK
		}
		return pipeline.ExitInvalid
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "benchrun compare: "+format+"\n", a...)
		return pipeline.ExitInvalid
	}
	switch {
	case cf.by == "" && len(pos) < 2:
		fs.Usage()
		return pipeline.ExitInvalid
	case cf.by != "" && len(pos) == 0:
		fs.Usage()
		return pipeline.ExitInvalid
	}
	if !cmpValidFormat(cf.format) {
		return bad("--format %q: give text, markdown, csv, json or html", cf.format)
	}
	if *inconclusive != pipeline.InconclusiveTolerate && *inconclusive != pipeline.InconclusiveFail {
		return bad("--inconclusive %q: give tolerate or fail", *inconclusive)
	}
	o, err := cf.options()
	if err != nil {
		return bad("%v", err)
	}
	sides, comps, code := cmpSides(cf, pos, stderr)
	if code != 0 {
		return code
	}
	matched := false
	for i := range comps {
		oc := o
		oc.Ignore = append(slices.Clone(o.Ignore), comps[i].Ignore...)
		comps[i].Report = regress.CompareRuns(comps[i].Old, comps[i].New, oc)
		if len(comps[i].Report.Verdicts) > 0 || len(comps[i].Report.Skipped) > 0 {
			matched = true
		}
	}
	if err := cmpWrite(stdout, cf.format, comps); err != nil {
		fmt.Fprintf(stderr, "benchrun compare: writing: %v\n", err)
		return pipeline.ExitInfra
	}
	if cf.html != "" {
		if err := cmpWritePageFile(cf.html, cmpPage{By: cf.by, Sides: sides, Comps: comps, Options: o}); err != nil {
			fmt.Fprintf(stderr, "benchrun compare: %v\n", err)
			return pipeline.ExitInfra
		}
	}
	if !matched {
		why, hint := "no cell matches", ""
		for _, c := range comps {
			if c.Report.NoMatch != "" {
				why, hint = c.Report.NoMatch, cmpNoMatchHint(c.Report, o.Ignore)
				break
			}
		}
		fmt.Fprintf(stderr, "benchrun compare: %s%s\n", why, hint)
		return pipeline.ExitInvalid
	}
	inconclusives := 0
	for _, c := range comps {
		if n := c.Report.Count(regress.Regressed); n > 0 {
			return pipeline.ExitAssertion
		}
		inconclusives += c.Report.Count(regress.Inconclusive)
	}
	if inconclusives > 0 && *inconclusive == pipeline.InconclusiveFail {
		return pipeline.ExitInconclusive
	}
	return pipeline.ExitOK
}

// cmpNoMatchHint is the flag that makes the nearest pair of cells of a
// report without a match comparable: every part in which they differ,
// named at once beside the parts already ignored (given), so the next
// try is the last one (naming one part at a time took one try per part
// for two engines' runs: plan, engine, engine_version, metadata.engine).
// It is "" when the nearest cells are other cells (their cell ids
// differ): no flag makes those one measurement.
func cmpNoMatchHint(rep *regress.Report, given []string) string {
	isCellID := func(d regress.FieldDiff) bool { return d.Field == "cell_id" }
	// The pair Explain words the message from: the fewest differing
	// parts, another cell id counting as far.
	var diffs []regress.FieldDiff
	best := -1
	for _, u := range rep.OnlyNew {
		if u.Nearest == nil {
			continue
		}
		score := len(u.Diffs)
		if slices.ContainsFunc(u.Diffs, isCellID) {
			score += 100
		}
		if best < 0 || score < best {
			best, diffs = score, u.Diffs
		}
	}
	if len(diffs) == 0 || slices.ContainsFunc(diffs, isCellID) {
		return ""
	}
	names := slices.Clone(given)
	for _, d := range diffs {
		// A metadata key keeps its prefix where a column has its name
		// (metadata.engine); any other goes bare, as --ignore takes it.
		name := strings.TrimPrefix(d.Field, "metadata.")
		if slices.Contains(regress.KeyFields, name) {
			name = d.Field
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return fmt.Sprintf(" (--ignore %s compares them anyway)", strings.Join(names, ","))
}

func (cf compareFlags) options() (regress.Options, error) {
	var o regress.Options
	if cf.metrics != "" {
		ms, err := regress.SelectMetrics(strings.Split(cf.metrics, ","))
		if err != nil {
			return o, fmt.Errorf("--metric: %w", err)
		}
		o.Metrics = ms
	}
	c, ok := regress.ParseCorrection(cf.correction)
	if !ok {
		return o, fmt.Errorf("--correction %q: give bh, holm or none", cf.correction)
	}
	o.Correction = c
	if !(cf.alpha > 0 && cf.alpha < 1) {
		return o, fmt.Errorf("--alpha %v: give a level between 0 and 1, such as 0.05", cf.alpha)
	}
	o.Alpha, o.Seed, o.Resamples = cf.alpha, cf.seed, cf.resamples
	for _, f := range strings.Split(cf.ignore, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.Ignore = append(o.Ignore, f)
		}
	}
	return o, nil
}

// cmpSide is one variant: its label and its runs.
type cmpSide struct {
	Label string
	Runs  []*regress.Run
}

// cmpSides loads the runs the arguments name and pairs them: OLD against
// NEW; each variant against the first (the baseline); or, with --by, each
// value of the key against the first value seen. sides are the variants
// as the page draws them, labelled. A code other than 0 is the exit code
// of a failure, said on stderr.
func cmpSides(cf compareFlags, pos []string, stderr io.Writer) (sides []cmpSide, comps []cmpComparison, code int) {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "benchrun compare: "+format+"\n", a...)
		return pipeline.ExitInvalid
	}
	load := func(args []string) ([]*regress.Run, int) {
		var runs []*regress.Run
		for _, a := range args {
			dirs, err := cmpResolveRuns(a, stderr)
			if err != nil {
				return nil, bad("%v", err)
			}
			for _, d := range dirs {
				r, err := regress.Load(d, true)
				if err != nil {
					fmt.Fprintf(stderr, "benchrun compare: %v\n", err)
					return nil, pipeline.ExitInfra
				}
				runs = append(runs, r)
			}
		}
		return runs, 0
	}
	if cf.by != "" {
		runs, code := load(pos)
		if code != 0 {
			return nil, nil, code
		}
		values, variants := regress.SplitBy(runs, cf.by)
		if len(values) < 2 {
			return nil, nil, bad("--by %s: the runs given have %d value of %s (%s); give runs of at least two variants", cf.by, len(values), cf.by, strings.Join(cmpQuoteAll(values), ", "))
		}
		for _, v := range values {
			sides = append(sides, cmpSide{Label: cmpOrNone(v), Runs: variants[v]})
		}
		for _, v := range values[1:] {
			c := cmpComparison{
				Title: fmt.Sprintf("%s: %s → %s", cf.by, cmpOrNone(values[0]), cmpOrNone(v)),
				Old:   variants[values[0]], New: variants[v], By: cf.by, Baseline: values[0], Variant: v,
			}
			if cf.by == "engine" {
				c.Ignore = cmpEngineIgnores(c, stderr)
			}
			comps = append(comps, c)
		}
		return sides, comps, 0
	}
	labels := cmpArgLabels(pos)
	for i, a := range pos {
		runs, code := load([]string{a})
		if code != 0 {
			return nil, nil, code
		}
		sides = append(sides, cmpSide{Label: labels[i], Runs: runs})
	}
	if len(sides) == 2 {
		return sides, []cmpComparison{{Old: sides[0].Runs, New: sides[1].Runs}}, 0
	}
	for _, s := range sides[1:] {
		comps = append(comps, cmpComparison{
			Title: fmt.Sprintf("%s → %s", sides[0].Label, s.Label),
			Old:   sides[0].Runs, New: s.Runs, Baseline: sides[0].Label, Variant: s.Label,
		})
	}
	return sides, comps, 0
}

// cmpEngineIgnores is what else necessarily differs between two engines'
// runs, which --by engine lets differ beside the engine and its version
// (regress.SplitBy): a metadata key `engine` (plans label their rows
// with the engine they serve) and, when each side's runs are of one plan
// and the two plans are not the same, the plan's name (a plan written
// per engine, llama-q4 against vllm, or one named after its engine).
// Where the plans are shared (plan x and y run on both engines) the name
// stays in the key, so that x is compared with x. A plan ignored is said
// on stderr: the cells compared then come from two plans.
func cmpEngineIgnores(c cmpComparison, stderr io.Writer) []string {
	ignore := []string{"metadata.engine"}
	oldPlans, newPlans := cmpPlans(c.Old), cmpPlans(c.New)
	if len(oldPlans) == 1 && len(newPlans) == 1 && oldPlans[0] != newPlans[0] {
		ignore = append(ignore, "plan")
		fmt.Fprintf(stderr, "benchrun compare: --by engine: %s's runs are of plan %s, %s's of plan %s: their cells are compared across the two plans\n",
			cmpOrNone(c.Baseline), oldPlans[0], cmpOrNone(c.Variant), newPlans[0])
	}
	return ignore
}

// cmpPlans is the plan names of runs' cells, in the order first seen.
func cmpPlans(runs []*regress.Run) []string {
	var plans []string
	for _, r := range runs {
		for _, c := range r.Cells {
			if !slices.Contains(plans, c.Plan) {
				plans = append(plans, c.Plan)
			}
		}
	}
	return plans
}

// cmpArgLabels names each argument's variant: the name of its run
// directory (less the hive's "run=") or folder, or of the folder a glob
// lies under. Where two names are alike, the arguments themselves are the
// labels, numbered where those are alike too.
func cmpArgLabels(args []string) []string {
	labels := make([]string, len(args))
	for i, a := range args {
		labels[i] = cmpArgLabel(a)
	}
	if !cmpUnique(labels) {
		copy(labels, args)
	}
	if !cmpUnique(labels) {
		for i := range labels {
			labels[i] = fmt.Sprintf("%s #%d", labels[i], i+1)
		}
	}
	return labels
}

func cmpArgLabel(arg string) string {
	p := filepath.ToSlash(arg)
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		j := strings.LastIndex(p[:i], "/")
		if j < 0 {
			return arg
		}
		p = p[:j]
	}
	base := path.Base(strings.TrimRight(p, "/"))
	if base == "." || base == "/" || base == ".." || base == "" {
		return arg
	}
	if id, ok := strings.CutPrefix(base, "run="); ok && id != "" {
		return id
	}
	return base
}

func cmpUnique(xs []string) bool {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

func cmpValidFormat(f string) bool {
	switch f {
	case "text", "markdown", "md", "csv", "json", "html":
		return true
	}
	return false
}

// cmpResolveRuns turns one OLD/NEW argument into run directories: a run
// directory, a glob of them (matches that are no run are left out), or a
// folder of runs (every run under it, said on stderr).
func cmpResolveRuns(arg string, stderr io.Writer) ([]string, error) {
	if strings.ContainsAny(arg, "*?[") {
		matches, err := filepath.Glob(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		var dirs []string
		for _, m := range matches {
			if _, err := rundir.Open(m); err == nil {
				dirs = append(dirs, m)
			}
		}
		if len(dirs) == 0 {
			return nil, fmt.Errorf("%s matches no run directory", arg)
		}
		return dirs, nil
	}
	_, err := rundir.Open(arg)
	if err == nil {
		return []string{arg}, nil
	}
	var nr *rundir.NotRunError
	if errors.As(err, &nr) && len(nr.Below) > 0 {
		entries, ferr := rundir.Find(arg, rundir.Filter{})
		if ferr != nil {
			return nil, ferr
		}
		var dirs []string
		for _, e := range entries {
			dirs = append(dirs, e.Dir)
		}
		fmt.Fprintf(stderr, "benchrun: %s: %d runs under it, pooled as repeats\n", arg, len(dirs))
		return dirs, nil
	}
	return nil, err
}

// cmpComparison is one table set: old against new (or a variant against the
// baseline variant).
type cmpComparison struct {
	Title    string
	Old, New []*regress.Run
	By       string
	Baseline string
	Variant  string
	// Ignore is the key parts this comparison lets differ beyond the
	// --ignore flag's (--by engine: what differs with the engine).
	Ignore []string
	Report *regress.Report
}

func cmpOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func cmpQuoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

func cmpWrite(w io.Writer, format string, comps []cmpComparison) error {
	switch format {
	case "json":
		return cmpWriteJSON(w, comps)
	case "csv":
		return cmpWriteCSV(w, comps)
	case "html":
		return cmpWriteHTML(w, comps)
	case "markdown", "md":
		return cmpWriteText(w, comps, true)
	}
	return cmpWriteText(w, comps, false)
}

// Cells of the tables, as text.

func cmpNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// cmpChange is the change column: the percent change when decided, ~
// when not (benchstat's mark), ? when there is no reference.
func cmpChange(v regress.Verdict) string {
	switch {
	case math.IsNaN(v.Change):
		return "?"
	case !v.Outcome.Decided():
		return "~"
	}
	return fmt.Sprintf("%+.2f%%", 100*v.Change)
}

func cmpInterval(v regress.Verdict) string {
	if math.IsNaN(v.Low) || math.IsNaN(v.High) {
		return "–"
	}
	if v.Ratio {
		return fmt.Sprintf("[%.3f, %.3f]", v.Low, v.High)
	}
	return fmt.Sprintf("[%s, %s]", cmpNum(v.Low), cmpNum(v.High))
}

// cmpP is the p column: the p-value the verdict was gated on, after the
// family's correction (a verdict and its column never disagree: changed
// means p ≤ alpha here). The Mann–Whitney p of the request samples, shown
// but not gated on, is in the CSV and JSON (mwu_p).
func cmpP(v regress.Verdict) string {
	if math.IsNaN(v.PAdjusted) {
		return "–"
	}
	return fmt.Sprintf("p=%.3f", v.PAdjusted)
}

func cmpVerdict(v regress.Verdict) string {
	s := string(v.Outcome)
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return s
}

func cmpRunList(runs []string) string {
	switch len(runs) {
	case 0:
		return "no runs"
	case 1:
		return "1 run (" + runs[0] + ")"
	case 2, 3:
		return fmt.Sprintf("%d runs (%s)", len(runs), strings.Join(runs, ", "))
	}
	return fmt.Sprintf("%d runs (%s … %s)", len(runs), runs[0], runs[len(runs)-1])
}

// cmpByCell groups a report's verdicts by cell key, in order.
func cmpByCell(rep *regress.Report) ([]regress.Key, map[regress.Key][]regress.Verdict) {
	var keys []regress.Key
	m := map[regress.Key][]regress.Verdict{}
	for _, v := range rep.Verdicts {
		if _, ok := m[v.Key]; !ok {
			keys = append(keys, v.Key)
		}
		m[v.Key] = append(m[v.Key], v)
	}
	return keys, m
}

func cmpMethodLine(rep *regress.Report) string {
	return fmt.Sprintf("%.0f%% intervals of new/old; a change counts past each metric's threshold and floor, after %s over %d comparisons (α = %g); ~ = not decided",
		100*(1-rep.Alpha), rep.Correction, rep.Comparisons, rep.Alpha)
}

func cmpUnmatchedLine(side, other string, u regress.Unmatched) string {
	s := fmt.Sprintf("only in %s: %s", side, u.Key)
	if u.Nearest != nil && len(u.Diffs) > 0 {
		var ds []string
		for _, d := range u.Diffs {
			ds = append(ds, d.String())
		}
		s += fmt.Sprintf(" (nearest in %s: %s)", other, strings.Join(ds, ", "))
	}
	return s
}

func cmpTotals(rep *regress.Report) string {
	s := fmt.Sprintf("%d regressed, %d improved, %d same, %d unknown",
		rep.Count(regress.Regressed), rep.Count(regress.Improved), rep.Count(regress.Same), rep.Count(regress.Unknown))
	if n := rep.Count(regress.Inconclusive); n > 0 {
		s += fmt.Sprintf(", %d inconclusive (the machine's lateness could explain them)", n)
	}
	return s
}

func cmpWriteText(w io.Writer, comps []cmpComparison, markdown bool) error {
	var b strings.Builder
	for ci, c := range comps {
		rep := c.Report
		if ci > 0 {
			b.WriteString("\n")
		}
		if markdown {
			title := c.Title
			if title == "" {
				title = "benchrun compare"
			}
			fmt.Fprintf(&b, "## %s\n\nold: %s · new: %s\n\n%s\n", title, cmpRunList(rep.RunsOld), cmpRunList(rep.RunsNew), cmpMethodLine(rep))
		} else {
			if c.Title != "" {
				fmt.Fprintf(&b, "%s\n", c.Title)
			}
			fmt.Fprintf(&b, "old: %s\nnew: %s\n%s\n", cmpRunList(rep.RunsOld), cmpRunList(rep.RunsNew), cmpMethodLine(rep))
		}
		keys, cells := cmpByCell(rep)
		for _, k := range keys {
			if markdown {
				fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| metric | old | new | change | interval | p | n | verdict |\n| --- | ---: | ---: | ---: | --- | --- | --- | --- |\n", k.CellID, cmpMDEsc(k.String()))
				for _, v := range cells[k] {
					fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d+%d | %s |\n", v.Metric, cmpNum(v.Old), cmpNum(v.New), cmpChange(v), cmpInterval(v), cmpP(v), v.N, v.NNew, cmpMDEsc(cmpVerdict(v)))
				}
				continue
			}
			fmt.Fprintf(&b, "\n%s\n", k)
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  metric\told\tnew\tchange\tinterval\tp\tn\tverdict")
			for _, v := range cells[k] {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d+%d\t%s\n", v.Metric, cmpNum(v.Old), cmpNum(v.New), cmpChange(v), cmpInterval(v), cmpP(v), v.N, v.NNew, cmpVerdict(v))
			}
			tw.Flush()
		}
		if len(rep.Summaries) > 0 {
			if markdown {
				b.WriteString("\n### geomean\n\n| metric | cells | old | new | change |\n| --- | ---: | ---: | ---: | ---: |\n")
				for _, s := range rep.Summaries {
					fmt.Fprintf(&b, "| %s | %d | %s | %s | %+.2f%% |\n", s.Metric, s.Cells, cmpNum(s.Old), cmpNum(s.New), 100*s.Change)
				}
			} else {
				b.WriteString("\ngeomean\n")
				tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
				for _, s := range rep.Summaries {
					fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.2f%%\t(%s)\n", s.Metric, cmpNum(s.Old), cmpNum(s.New), 100*s.Change, cmpPlural(s.Cells, "cell"))
				}
				tw.Flush()
			}
		}
		var notes []string
		for _, u := range rep.OnlyOld {
			notes = append(notes, cmpUnmatchedLine("old", "new", u))
		}
		for _, u := range rep.OnlyNew {
			notes = append(notes, cmpUnmatchedLine("new", "old", u))
		}
		if rep.NoMatch != "" {
			notes = append(notes, rep.NoMatch)
		}
		for _, s := range rep.Skipped {
			if s.Metric != "" {
				notes = append(notes, fmt.Sprintf("not compared: %s of %s: %s", s.Metric, s.Key.CellID, s.Reason))
			} else {
				notes = append(notes, fmt.Sprintf("not compared: %s: %s", s.Key, s.Reason))
			}
		}
		if e := regress.DescribeExcluded(rep.Excluded); e != "" {
			notes = append(notes, "excluded: "+e)
		}
		notes = append(notes, cmpTotals(rep))
		b.WriteString("\n")
		for _, n := range notes {
			if markdown {
				fmt.Fprintf(&b, "- %s\n", cmpMDEsc(n))
			} else {
				fmt.Fprintf(&b, "%s\n", n)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cmpPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func cmpMDEsc(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// cmpCSVHeader is the compare CSV's header: one row per verdict, and one per
// cell present on one side only (outcome "only old" / "only new").
var cmpCSVHeader = []string{"by", "baseline", "variant", "cell_id", "plan", "stage", "endpoint", "model_digest", "engine", "engine_version", "hardware", "metadata",
	"metric", "unit", "better", "method", "old", "new", "change", "low", "high", "level", "p", "p_adjusted", "mwu_p", "n_old", "n_new", "outcome", "reason"}

func cmpCSVNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 8, 64)
}

func cmpKeyCols(k regress.Key) []string {
	return []string{k.CellID, k.Plan, k.Stage, k.Endpoint, k.ModelDigest, k.Engine, k.EngineVersion, k.Hardware, k.MetaString()}
}

// csvWriter writes CSV records whose text fields are kept from reading as
// formulas (safetext.CSVField): server text (an engine version, a
// reason) reaches them. Numbers, written by cmpCSVNum, keep their sign.
type csvWriter struct{ *csv.Writer }

func newCSVWriter(w io.Writer) csvWriter { return csvWriter{csv.NewWriter(w)} }

func (c csvWriter) Write(rec []string) error {
	out := make([]string, len(rec))
	for i, f := range rec {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			out[i] = f // a number, sign and all
			continue
		}
		out[i] = safetext.CSVField(f)
	}
	return c.Writer.Write(out)
}

func cmpWriteCSV(w io.Writer, comps []cmpComparison) error {
	cw := newCSVWriter(w)
	if err := cw.Write(cmpCSVHeader); err != nil {
		return err
	}
	for _, c := range comps {
		pre := []string{c.By, c.Baseline, c.Variant}
		for _, v := range c.Report.Verdicts {
			row := append(append(append([]string{}, pre...), cmpKeyCols(v.Key)...),
				v.Metric, v.Unit, v.Better.String(), v.Method, cmpCSVNum(v.Old), cmpCSVNum(v.New), cmpCSVNum(v.Change), cmpCSVNum(v.Low), cmpCSVNum(v.High), cmpCSVNum(v.Level),
				cmpCSVNum(v.P), cmpCSVNum(v.PAdjusted), cmpCSVNum(v.MWU), strconv.Itoa(v.N), strconv.Itoa(v.NNew), string(v.Outcome), v.Reason)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		for _, u := range c.Report.OnlyOld {
			if err := cw.Write(cmpOnlyRow(pre, u, "only old")); err != nil {
				return err
			}
		}
		for _, u := range c.Report.OnlyNew {
			if err := cw.Write(cmpOnlyRow(pre, u, "only new")); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func cmpOnlyRow(pre []string, u regress.Unmatched, outcome string) []string {
	row := append(append([]string{}, pre...), cmpKeyCols(u.Key)...)
	for len(row) < len(cmpCSVHeader)-2 {
		row = append(row, "")
	}
	var ds []string
	for _, d := range u.Diffs {
		ds = append(ds, d.String())
	}
	return append(row, outcome, strings.Join(ds, "; "))
}

type cmpJSONReport struct {
	*regress.Report
	By       string         `json:"by,omitempty"`
	Baseline *string        `json:"baseline,omitempty"`
	Variant  *string        `json:"variant,omitempty"`
	Counts   map[string]int `json:"counts"`
}

func cmpWriteJSON(w io.Writer, comps []cmpComparison) error {
	var reps []cmpJSONReport
	for _, c := range comps {
		jr := cmpJSONReport{Report: c.Report, Counts: map[string]int{}}
		if c.By != "" || c.Variant != "" {
			jr.By, jr.Baseline, jr.Variant = c.By, &c.Baseline, &c.Variant
		}
		for _, o := range []regress.Outcome{regress.Regressed, regress.Improved, regress.Same, regress.Unknown, regress.Inconclusive} {
			jr.Counts[string(o)] = c.Report.Count(o)
		}
		reps = append(reps, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(reps) == 1 && reps[0].By == "" {
		return enc.Encode(reps[0])
	}
	return enc.Encode(map[string]any{"comparisons": reps})
}

// compareCSS styles the HTML page: inline, no external reference.
const compareCSS = `body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#1f2933}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{padding:.25em .7em;border-bottom:1px solid #e4e7eb;text-align:left;vertical-align:top;white-space:nowrap}td:last-child{white-space:normal}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.regressed td{background:#fde2e1}tr.improved td{background:#e3f9e5}
tr.unknown td,tr.insufficient td{color:#52606d}.key{color:#52606d;font-size:.9em}p.method{color:#52606d}`

func cmpWriteHTML(w io.Writer, comps []cmpComparison) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>benchrun compare</title><style>" + compareCSS + "</style></head><body>\n")
	e := html.EscapeString
	for _, c := range comps {
		rep := c.Report
		title := c.Title
		if title == "" {
			title = "benchrun compare"
		}
		fmt.Fprintf(&b, "<h1>%s</h1>\n<p>old: %s<br>new: %s</p>\n<p class=\"method\">%s</p>\n", e(title), e(cmpRunList(rep.RunsOld)), e(cmpRunList(rep.RunsNew)), e(cmpMethodLine(rep)))
		keys, cells := cmpByCell(rep)
		for _, k := range keys {
			fmt.Fprintf(&b, "<h2>%s</h2>\n<div class=\"key\">%s</div>\n<table>", e(k.CellID), e(k.String()))
			cmpHTMLVerdictRows(&b, cells[k])
		}
		cmpHTMLNotes(&b, rep, "h2")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cmpHTMLVerdictRows writes a cell's verdicts as the rows of its table,
// from the header on, and closes the table.
func cmpHTMLVerdictRows(b *strings.Builder, vs []regress.Verdict) {
	e := html.EscapeString
	b.WriteString("<tr><th>metric</th><th>old</th><th>new</th><th>change</th><th>interval</th><th>p</th><th>n</th><th>verdict</th></tr>\n")
	for _, v := range vs {
		class := strings.Fields(string(v.Outcome))[0]
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%d+%d</td><td>%s</td></tr>\n",
			class, e(v.Metric), e(cmpNum(v.Old)), e(cmpNum(v.New)), e(cmpChange(v)), e(cmpInterval(v)), e(cmpP(v)), v.N, v.NNew, e(cmpVerdict(v)))
	}
	b.WriteString("</table>\n")
}

// cmpHTMLNotes writes a report's geometric means (under a heading of the
// given level) and its notes: the cells on one side only, what was left
// out, and the totals.
func cmpHTMLNotes(b *strings.Builder, rep *regress.Report, heading string) {
	e := html.EscapeString
	if len(rep.Summaries) > 0 {
		fmt.Fprintf(b, "<%s>geomean</%s>\n<table><tr><th>metric</th><th>cells</th><th>old</th><th>new</th><th>change</th></tr>\n", heading, heading)
		for _, s := range rep.Summaries {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%+.2f%%</td></tr>\n", e(s.Metric), s.Cells, e(cmpNum(s.Old)), e(cmpNum(s.New)), 100*s.Change)
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<ul>\n")
	for _, u := range rep.OnlyOld {
		fmt.Fprintf(b, "<li>%s</li>\n", e(cmpUnmatchedLine("old", "new", u)))
	}
	for _, u := range rep.OnlyNew {
		fmt.Fprintf(b, "<li>%s</li>\n", e(cmpUnmatchedLine("new", "old", u)))
	}
	if rep.NoMatch != "" {
		fmt.Fprintf(b, "<li>%s</li>\n", e(rep.NoMatch))
	}
	if x := regress.DescribeExcluded(rep.Excluded); x != "" {
		fmt.Fprintf(b, "<li>excluded: %s</li>\n", e(x))
	}
	fmt.Fprintf(b, "<li><strong>%s</strong></li>\n</ul>\n", e(cmpTotals(rep)))
}
