// Package compare renders `benchrun compare` and `benchrun history`:
// the runs an argument names, paired into comparisons; their verdicts as
// text, markdown, CSV, JSON or HTML tables; the page that draws the
// variants against each other (page.go); and the history of each cell's
// metrics over many runs (history.go). The statistics are
// internal/regress's; the command line and the exit codes are the CLI's.
package compare

import (
	"encoding/csv"
	"encoding/json"
	"errors"
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
)

// Args are the options of `benchrun compare` that shape the comparison
// (the output's format and files are the command's own).
type Args struct {
	Metrics    string // comma-separated metric names; "" is regress's defaults
	Ignore     string // comma-separated cell-key parts that may differ
	By         string // a metadata key or column whose values are the variants
	Correction string
	Alpha      float64
	Seed       uint64
	Resamples  int
}

// ArgError is a failure of the arguments given (exit 2), not of reading
// the runs they name.
type ArgError struct{ Err error }

func (e *ArgError) Error() string { return e.Err.Error() }
func (e *ArgError) Unwrap() error { return e.Err }

func argErrorf(format string, a ...any) error { return &ArgError{fmt.Errorf(format, a...)} }

// Compare runs each comparison: its old runs against its new ones under
// o, letting differ the key parts it lets differ beyond o's. matched
// says whether any cell of any comparison found its counterpart.
func Compare(comps []Comparison, o regress.Options) (matched bool) {
	for i := range comps {
		oc := o
		oc.Ignore = append(slices.Clone(o.Ignore), comps[i].Ignore...)
		comps[i].Report = regress.CompareRuns(comps[i].Old, comps[i].New, oc)
		if len(comps[i].Report.Verdicts) > 0 || len(comps[i].Report.Skipped) > 0 {
			matched = true
		}
	}
	return matched
}

// NoMatch says why no cell matched, with the --ignore that would let the
// nearest cells match (NoMatchHint) beside the parts already ignored.
func NoMatch(comps []Comparison, ignored []string) string {
	for _, c := range comps {
		if c.Report.NoMatch != "" {
			return c.Report.NoMatch + NoMatchHint(c.Report, ignored)
		}
	}
	return "no cell matches"
}

// Count is how many verdicts of the comparisons have the outcome.
func Count(comps []Comparison, o regress.Outcome) int {
	n := 0
	for _, c := range comps {
		n += c.Report.Count(o)
	}
	return n
}

// NoMatchHint is the flag that makes the nearest pair of cells of a
// report without a match comparable: every part in which they differ,
// named at once beside the parts already ignored (given), so the next
// try is the last one (naming one part at a time took one try per part
// for two engines' runs: plan, engine, engine_version, metadata.engine).
// It is "" when the nearest cells are other cells (their cell ids
// differ): no flag makes those one measurement.
func NoMatchHint(rep *regress.Report, given []string) string {
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

// Options are the regress options the arguments ask for; an error names
// the flag at fault.
func (cf Args) Options() (regress.Options, error) {
	var o regress.Options
	if cf.Metrics != "" {
		ms, err := regress.SelectMetrics(strings.Split(cf.Metrics, ","))
		if err != nil {
			return o, fmt.Errorf("--metric: %w", err)
		}
		o.Metrics = ms
	}
	c, ok := regress.ParseCorrection(cf.Correction)
	if !ok {
		return o, fmt.Errorf("--correction %q: give bh, holm or none", cf.Correction)
	}
	o.Correction = c
	if !(cf.Alpha > 0 && cf.Alpha < 1) {
		return o, fmt.Errorf("--alpha %v: give a level between 0 and 1, such as 0.05", cf.Alpha)
	}
	o.Alpha, o.Seed, o.Resamples = cf.Alpha, cf.Seed, cf.Resamples
	for _, f := range strings.Split(cf.Ignore, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.Ignore = append(o.Ignore, f)
		}
	}
	return o, nil
}

// Side is one variant: its label and its runs.
type Side struct {
	Label string
	Runs  []*regress.Run
}

// Load loads the runs the arguments name and pairs them: OLD against
// NEW; each variant against the first (the baseline); or, with --by, each
// value of the key against the first value seen. sides are the variants
// as the page draws them, labelled. What it notes for people (a folder's
// runs pooled, plans compared across) goes to stderr; an *ArgError is the
// arguments' fault, any other error the runs'.
func Load(by string, pos []string, stderr io.Writer) (sides []Side, comps []Comparison, err error) {
	load := func(args []string) ([]*regress.Run, error) {
		var runs []*regress.Run
		for _, a := range args {
			dirs, err := resolveRuns(a, stderr)
			if err != nil {
				return nil, &ArgError{err}
			}
			for _, d := range dirs {
				r, err := regress.Load(d, true)
				if err != nil {
					return nil, err
				}
				runs = append(runs, r)
			}
		}
		return runs, nil
	}
	if by != "" {
		runs, err := load(pos)
		if err != nil {
			return nil, nil, err
		}
		values, variants := regress.SplitBy(runs, by)
		if len(values) < 2 {
			return nil, nil, argErrorf("--by %s: the runs given have %d value of %s (%s); give runs of at least two variants", by, len(values), by, strings.Join(quoteAll(values), ", "))
		}
		for _, v := range values {
			sides = append(sides, Side{Label: orNone(v), Runs: variants[v]})
		}
		for _, v := range values[1:] {
			c := Comparison{
				Title: fmt.Sprintf("%s: %s → %s", by, orNone(values[0]), orNone(v)),
				Old:   variants[values[0]], New: variants[v], By: by, Baseline: values[0], Variant: v,
			}
			if by == "engine" {
				c.Ignore = engineIgnores(c, stderr)
			}
			comps = append(comps, c)
		}
		return sides, comps, nil
	}
	labels := argLabels(pos)
	for i, a := range pos {
		runs, err := load([]string{a})
		if err != nil {
			return nil, nil, err
		}
		sides = append(sides, Side{Label: labels[i], Runs: runs})
	}
	if len(sides) == 2 {
		return sides, []Comparison{{Old: sides[0].Runs, New: sides[1].Runs}}, nil
	}
	for _, s := range sides[1:] {
		comps = append(comps, Comparison{
			Title: fmt.Sprintf("%s → %s", sides[0].Label, s.Label),
			Old:   sides[0].Runs, New: s.Runs, Baseline: sides[0].Label, Variant: s.Label,
		})
	}
	return sides, comps, nil
}

// engineIgnores is what else necessarily differs between two engines'
// runs, which --by engine lets differ beside the engine and its version
// (regress.SplitBy): a metadata key `engine` (plans label their rows
// with the engine they serve) and, when each side's runs are of one plan
// and the two plans are not the same, the plan's name (a plan written
// per engine, llama-q4 against vllm, or one named after its engine).
// Where the plans are shared (plan x and y run on both engines) the name
// stays in the key, so that x is compared with x. A plan ignored is said
// on stderr: the cells compared then come from two plans.
func engineIgnores(c Comparison, stderr io.Writer) []string {
	ignore := []string{"metadata.engine"}
	oldPlans, newPlans := planNames(c.Old), planNames(c.New)
	if len(oldPlans) == 1 && len(newPlans) == 1 && oldPlans[0] != newPlans[0] {
		ignore = append(ignore, "plan")
		fmt.Fprintf(stderr, "benchrun compare: --by engine: %s's runs are of plan %s, %s's of plan %s: their cells are compared across the two plans\n",
			orNone(c.Baseline), oldPlans[0], orNone(c.Variant), newPlans[0])
	}
	return ignore
}

// planNames is the plan names of runs' cells, in the order first seen.
func planNames(runs []*regress.Run) []string {
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

// argLabels names each argument's variant: the name of its run
// directory (less the hive's "run=") or folder, or of the folder a glob
// lies under. Where two names are alike, the arguments themselves are the
// labels, numbered where those are alike too.
func argLabels(args []string) []string {
	labels := make([]string, len(args))
	for i, a := range args {
		labels[i] = argLabel(a)
	}
	if !unique(labels) {
		copy(labels, args)
	}
	if !unique(labels) {
		for i := range labels {
			labels[i] = fmt.Sprintf("%s #%d", labels[i], i+1)
		}
	}
	return labels
}

func argLabel(arg string) string {
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

func unique(xs []string) bool {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

// ValidFormat says whether Write writes the format.
func ValidFormat(f string) bool {
	switch f {
	case "text", "markdown", "md", "csv", "json", "html":
		return true
	}
	return false
}

// resolveRuns turns one OLD/NEW argument into run directories: a run
// directory, a glob of them (matches that are no run are left out), or a
// folder of runs (every run under it, said on stderr).
func resolveRuns(arg string, stderr io.Writer) ([]string, error) {
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

// Comparison is one table set: old against new (or a variant against the
// baseline variant).
type Comparison struct {
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

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

// Write writes the comparisons' verdicts as text (the default),
// markdown, csv, json or html.
func Write(w io.Writer, format string, comps []Comparison) error {
	switch format {
	case "json":
		return writeJSON(w, comps)
	case "csv":
		return writeCSV(w, comps)
	case "html":
		return writeHTML(w, comps)
	case "markdown", "md":
		return writeText(w, comps, true)
	}
	return writeText(w, comps, false)
}

// Cells of the tables, as text.

func fmtNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// fmtChange is the change column: the percent change when decided, ~
// when not (benchstat's mark), ? when there is no reference.
func fmtChange(v regress.Verdict) string {
	switch {
	case math.IsNaN(v.Change):
		return "?"
	case !v.Outcome.Decided():
		return "~"
	}
	return fmt.Sprintf("%+.2f%%", 100*v.Change)
}

func fmtInterval(v regress.Verdict) string {
	if math.IsNaN(v.Low) || math.IsNaN(v.High) {
		return "–"
	}
	if v.Ratio {
		return fmt.Sprintf("[%.3f, %.3f]", v.Low, v.High)
	}
	return fmt.Sprintf("[%s, %s]", fmtNum(v.Low), fmtNum(v.High))
}

// fmtP is the p column: the p-value the verdict was gated on, after the
// family's correction (a verdict and its column never disagree: changed
// means p ≤ alpha here). The Mann–Whitney p of the request samples, shown
// but not gated on, is in the CSV and JSON (mwu_p).
func fmtP(v regress.Verdict) string {
	if math.IsNaN(v.PAdjusted) {
		return "–"
	}
	return fmt.Sprintf("p=%.3f", v.PAdjusted)
}

func fmtVerdict(v regress.Verdict) string {
	s := string(v.Outcome)
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return s
}

func runList(runs []string) string {
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

// byCell groups a report's verdicts by cell key, in order.
func byCell(rep *regress.Report) ([]regress.Key, map[regress.Key][]regress.Verdict) {
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

func methodLine(rep *regress.Report) string {
	return fmt.Sprintf("%.0f%% intervals of new/old; a change counts past each metric's threshold and floor, after %s over %d comparisons (α = %g); ~ = not decided",
		100*(1-rep.Alpha), rep.Correction, rep.Comparisons, rep.Alpha)
}

func unmatchedLine(side, other string, u regress.Unmatched) string {
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

func totals(rep *regress.Report) string {
	s := fmt.Sprintf("%d regressed, %d improved, %d same, %d unknown",
		rep.Count(regress.Regressed), rep.Count(regress.Improved), rep.Count(regress.Same), rep.Count(regress.Unknown))
	if n := rep.Count(regress.Inconclusive); n > 0 {
		s += fmt.Sprintf(", %d inconclusive (the machine's lateness could explain them)", n)
	}
	return s
}

func writeText(w io.Writer, comps []Comparison, markdown bool) error {
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
			fmt.Fprintf(&b, "## %s\n\nold: %s · new: %s\n\n%s\n", title, runList(rep.RunsOld), runList(rep.RunsNew), methodLine(rep))
		} else {
			if c.Title != "" {
				fmt.Fprintf(&b, "%s\n", c.Title)
			}
			fmt.Fprintf(&b, "old: %s\nnew: %s\n%s\n", runList(rep.RunsOld), runList(rep.RunsNew), methodLine(rep))
		}
		keys, cells := byCell(rep)
		for _, k := range keys {
			if markdown {
				fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| metric | old | new | change | interval | p | n | verdict |\n| --- | ---: | ---: | ---: | --- | --- | --- | --- |\n", k.CellID, mdEscape(k.String()))
				for _, v := range cells[k] {
					fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d+%d | %s |\n", v.Metric, fmtNum(v.Old), fmtNum(v.New), fmtChange(v), fmtInterval(v), fmtP(v), v.N, v.NNew, mdEscape(fmtVerdict(v)))
				}
				continue
			}
			fmt.Fprintf(&b, "\n%s\n", k)
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  metric\told\tnew\tchange\tinterval\tp\tn\tverdict")
			for _, v := range cells[k] {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d+%d\t%s\n", v.Metric, fmtNum(v.Old), fmtNum(v.New), fmtChange(v), fmtInterval(v), fmtP(v), v.N, v.NNew, fmtVerdict(v))
			}
			tw.Flush()
		}
		if len(rep.Summaries) > 0 {
			if markdown {
				b.WriteString("\n### geomean\n\n| metric | cells | old | new | change |\n| --- | ---: | ---: | ---: | ---: |\n")
				for _, s := range rep.Summaries {
					fmt.Fprintf(&b, "| %s | %d | %s | %s | %+.2f%% |\n", s.Metric, s.Cells, fmtNum(s.Old), fmtNum(s.New), 100*s.Change)
				}
			} else {
				b.WriteString("\ngeomean\n")
				tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
				for _, s := range rep.Summaries {
					fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.2f%%\t(%s)\n", s.Metric, fmtNum(s.Old), fmtNum(s.New), 100*s.Change, plural(s.Cells, "cell"))
				}
				tw.Flush()
			}
		}
		var notes []string
		for _, u := range rep.OnlyOld {
			notes = append(notes, unmatchedLine("old", "new", u))
		}
		for _, u := range rep.OnlyNew {
			notes = append(notes, unmatchedLine("new", "old", u))
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
		notes = append(notes, totals(rep))
		b.WriteString("\n")
		for _, n := range notes {
			if markdown {
				fmt.Fprintf(&b, "- %s\n", mdEscape(n))
			} else {
				fmt.Fprintf(&b, "%s\n", n)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// csvHeader is the compare CSV's header: one row per verdict, and one per
// cell present on one side only (outcome "only old" / "only new").
var csvHeader = []string{"by", "baseline", "variant", "cell_id", "plan", "stage", "endpoint", "model_digest", "engine", "engine_version", "hardware", "metadata",
	"metric", "unit", "better", "method", "old", "new", "change", "low", "high", "level", "p", "p_adjusted", "mwu_p", "n_old", "n_new", "outcome", "reason"}

func csvNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 8, 64)
}

func keyCols(k regress.Key) []string {
	return []string{k.CellID, k.Plan, k.Stage, k.Endpoint, k.ModelDigest, k.Engine, k.EngineVersion, k.Hardware, k.MetaString()}
}

// csvWriter writes CSV records whose text fields are kept from reading as
// formulas (safetext.CSVField): server text (an engine version, a
// reason) reaches them. Numbers, written by csvNum, keep their sign.
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

func writeCSV(w io.Writer, comps []Comparison) error {
	cw := newCSVWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, c := range comps {
		pre := []string{c.By, c.Baseline, c.Variant}
		for _, v := range c.Report.Verdicts {
			row := append(append(append([]string{}, pre...), keyCols(v.Key)...),
				v.Metric, v.Unit, v.Better.String(), v.Method, csvNum(v.Old), csvNum(v.New), csvNum(v.Change), csvNum(v.Low), csvNum(v.High), csvNum(v.Level),
				csvNum(v.P), csvNum(v.PAdjusted), csvNum(v.MWU), strconv.Itoa(v.N), strconv.Itoa(v.NNew), string(v.Outcome), v.Reason)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		for _, u := range c.Report.OnlyOld {
			if err := cw.Write(onlyRow(pre, u, "only old")); err != nil {
				return err
			}
		}
		for _, u := range c.Report.OnlyNew {
			if err := cw.Write(onlyRow(pre, u, "only new")); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func onlyRow(pre []string, u regress.Unmatched, outcome string) []string {
	row := append(append([]string{}, pre...), keyCols(u.Key)...)
	for len(row) < len(csvHeader)-2 {
		row = append(row, "")
	}
	var ds []string
	for _, d := range u.Diffs {
		ds = append(ds, d.String())
	}
	return append(row, outcome, strings.Join(ds, "; "))
}

type jsonReport struct {
	*regress.Report
	By       string         `json:"by,omitempty"`
	Baseline *string        `json:"baseline,omitempty"`
	Variant  *string        `json:"variant,omitempty"`
	Counts   map[string]int `json:"counts"`
}

func writeJSON(w io.Writer, comps []Comparison) error {
	var reps []jsonReport
	for _, c := range comps {
		jr := jsonReport{Report: c.Report, Counts: map[string]int{}}
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

func writeHTML(w io.Writer, comps []Comparison) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>benchrun compare</title><style>" + compareCSS + "</style></head><body>\n")
	e := html.EscapeString
	for _, c := range comps {
		rep := c.Report
		title := c.Title
		if title == "" {
			title = "benchrun compare"
		}
		fmt.Fprintf(&b, "<h1>%s</h1>\n<p>old: %s<br>new: %s</p>\n<p class=\"method\">%s</p>\n", e(title), e(runList(rep.RunsOld)), e(runList(rep.RunsNew)), e(methodLine(rep)))
		keys, cells := byCell(rep)
		for _, k := range keys {
			fmt.Fprintf(&b, "<h2>%s</h2>\n<div class=\"key\">%s</div>\n<table>", e(k.CellID), e(k.String()))
			htmlVerdictRows(&b, cells[k])
		}
		htmlNotes(&b, rep, "h2")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlVerdictRows writes a cell's verdicts as the rows of its table,
// from the header on, and closes the table.
func htmlVerdictRows(b *strings.Builder, vs []regress.Verdict) {
	e := html.EscapeString
	b.WriteString("<tr><th>metric</th><th>old</th><th>new</th><th>change</th><th>interval</th><th>p</th><th>n</th><th>verdict</th></tr>\n")
	for _, v := range vs {
		class := strings.Fields(string(v.Outcome))[0]
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%d+%d</td><td>%s</td></tr>\n",
			class, e(v.Metric), e(fmtNum(v.Old)), e(fmtNum(v.New)), e(fmtChange(v)), e(fmtInterval(v)), e(fmtP(v)), v.N, v.NNew, e(fmtVerdict(v)))
	}
	b.WriteString("</table>\n")
}

// htmlNotes writes a report's geometric means (under a heading of the
// given level) and its notes: the cells on one side only, what was left
// out, and the totals.
func htmlNotes(b *strings.Builder, rep *regress.Report, heading string) {
	e := html.EscapeString
	if len(rep.Summaries) > 0 {
		fmt.Fprintf(b, "<%s>geomean</%s>\n<table><tr><th>metric</th><th>cells</th><th>old</th><th>new</th><th>change</th></tr>\n", heading, heading)
		for _, s := range rep.Summaries {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%+.2f%%</td></tr>\n", e(s.Metric), s.Cells, e(fmtNum(s.Old)), e(fmtNum(s.New)), 100*s.Change)
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<ul>\n")
	for _, u := range rep.OnlyOld {
		fmt.Fprintf(b, "<li>%s</li>\n", e(unmatchedLine("old", "new", u)))
	}
	for _, u := range rep.OnlyNew {
		fmt.Fprintf(b, "<li>%s</li>\n", e(unmatchedLine("new", "old", u)))
	}
	if rep.NoMatch != "" {
		fmt.Fprintf(b, "<li>%s</li>\n", e(rep.NoMatch))
	}
	if x := regress.DescribeExcluded(rep.Excluded); x != "" {
		fmt.Fprintf(b, "<li>excluded: %s</li>\n", e(x))
	}
	fmt.Fprintf(b, "<li><strong>%s</strong></li>\n</ul>\n", e(totals(rep)))
}
