package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
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
	h := historyData{Root: pos[0], Runs: runs, Series: series}
	switch *format {
	case "csv":
		err = writeHistoryCSV(stdout, h)
	case "json":
		err = writeHistoryJSON(stdout, h)
	default:
		err = writeHistoryText(stdout, h)
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun history: writing: %v\n", err)
		return pipeline.ExitInfra
	}
	if *htmlOut != "" {
		if err := rundir.WriteFileAtomic(*htmlOut, []byte(historyHTML(h))); err != nil {
			fmt.Fprintf(stderr, "benchrun history: %v\n", err)
			return pipeline.ExitInfra
		}
	}
	return pipeline.ExitOK
}

type historyData struct {
	Root   string
	Runs   []*regress.Run
	Series []regress.Series
}

// runsLine says how many runs there are and how many were left out.
func (h historyData) runsLine() string {
	excluded := map[string]int{}
	ok, failed := 0, 0
	for _, r := range h.Runs {
		switch {
		case r.Status == rundir.RunOK:
			ok++
		case r.FailedChecks:
			ok++
			failed++
		default:
			excluded["run "+r.Status]++
		}
	}
	s := fmt.Sprintf("%d runs under %s", ok, h.Root)
	if failed > 0 {
		s += fmt.Sprintf(", %d of them failed their own checks (✗; a value their baseline check called regressed: !)", failed)
	}
	if e := regress.DescribeExcluded(excluded); e != "" {
		s += " (left out: " + e + ")"
	}
	return s
}

// histCellGroup is a cell's series, in metric order.
type histCellGroup struct {
	key    regress.Key
	series []regress.Series
}

func histGroupByCell(ss []regress.Series) []histCellGroup {
	var out []histCellGroup
	idx := map[regress.Key]int{}
	for _, s := range ss {
		i, ok := idx[s.Key]
		if !ok {
			i = len(out)
			idx[s.Key] = i
			out = append(out, histCellGroup{key: s.Key})
		}
		out[i].series = append(out[i].series, s)
	}
	return out
}

// row is one run of a cell's table.
type histRow struct {
	at        time.Time
	run       string
	failed    bool
	vals      []float64
	marks     []bool
	regressed []bool
}

func histRows(g histCellGroup) []histRow {
	var rows []histRow
	idx := map[string]int{}
	for mi, s := range g.series {
		cps := map[int]bool{}
		for _, c := range s.ChangePoints {
			cps[c.Index] = true
		}
		for pi, p := range s.Points {
			i, ok := idx[p.RunID]
			if !ok {
				i = len(rows)
				idx[p.RunID] = i
				r := histRow{at: p.At, run: p.RunID, failed: p.Failed, vals: make([]float64, len(g.series)), marks: make([]bool, len(g.series)), regressed: make([]bool, len(g.series))}
				for j := range r.vals {
					r.vals[j] = math.NaN()
				}
				rows = append(rows, r)
			}
			rows[i].vals[mi], rows[i].marks[mi], rows[i].regressed[mi] = p.Value, cps[pi], p.Regressed
		}
	}
	slices.SortStableFunc(rows, func(a, b histRow) int { return a.at.Compare(b.at) })
	return rows
}

// histChangeLine describes one change point.
func histChangeLine(s regress.Series, c regress.ChangePoint) string {
	p := s.Points[c.Index]
	dir := "better"
	if s.Metric.Better.Worse(c.Change()) {
		dir = "worse"
	}
	return fmt.Sprintf("%s changed at run %s (%s): %s → %s %s (%+.1f%%, %s), p=%.2g",
		s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339), cmpNum(c.MeanBefore), cmpNum(c.MeanAfter), s.Metric.Unit, 100*c.Change(), dir, c.P)
}

func writeHistoryText(w io.Writer, h historyData) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nchange points (◆): e-divisive means with a t-test, as Apache Otava\n", h.runsLine())
	for _, g := range histGroupByCell(h.Series) {
		fmt.Fprintf(&b, "\n%s\n", g.key)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		head := "  started\trun"
		for _, s := range g.series {
			head += "\t" + s.Metric.Name + " " + s.Metric.Better.Arrow()
		}
		fmt.Fprintln(tw, head)
		for _, r := range histRows(g) {
			line := "  " + r.at.UTC().Format(time.RFC3339) + "\t" + r.run
			if r.failed {
				line += " ✗"
			}
			for i, v := range r.vals {
				cell := cmpNum(v)
				if r.regressed[i] {
					cell += " !"
				}
				if r.marks[i] {
					cell += " ◆"
				}
				line += "\t" + cell
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
		var excl map[string]int
		for _, s := range g.series {
			for _, c := range s.ChangePoints {
				fmt.Fprintf(&b, "  ◆ %s\n", histChangeLine(s, c))
			}
			for k, n := range s.Excluded {
				if !strings.HasPrefix(k, "run ") && (excl == nil || excl[k] < n) {
					if excl == nil {
						excl = map[string]int{}
					}
					excl[k] = n
				}
			}
		}
		if e := regress.DescribeExcluded(excl); e != "" {
			fmt.Fprintf(&b, "  left out: %s\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeHistoryCSV(w io.Writer, h historyData) error {
	cw := newCSVWriter(w)
	if err := cw.Write([]string{"cell_id", "plan", "stage", "endpoint", "model_digest", "engine", "engine_version", "hardware", "metadata", "metric", "run_id", "started_at", "value", "change_point", "change", "p", "run_failed", "regressed"}); err != nil {
		return err
	}
	for _, s := range h.Series {
		cps := map[int]regress.ChangePoint{}
		for _, c := range s.ChangePoints {
			cps[c.Index] = c
		}
		for i, p := range s.Points {
			c, isCP := cps[i]
			change, pv := "", ""
			if isCP {
				change, pv = cmpCSVNum(c.Change()), cmpCSVNum(c.P)
			}
			row := append(cmpKeyCols(s.Key), s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339Nano), cmpCSVNum(p.Value), strconv.FormatBool(isCP), change, pv, strconv.FormatBool(p.Failed), strconv.FormatBool(p.Regressed))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeHistoryJSON(w io.Writer, h historyData) error {
	type js struct {
		regress.Series
		Metric string `json:"metric"`
		Better string `json:"better"`
	}
	var out []js
	for _, s := range h.Series {
		out = append(out, js{Series: s, Metric: s.Metric.Name, Better: s.Metric.Better.String()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"root": h.Root, "series": out})
}

// historyHTML is one self-contained page: a chart per metric (a line per
// cell, change points marked), then each cell's table.
func historyHTML(h historyData) string {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>benchrun history</title><style>" + compareCSS +
		" td.cp{font-weight:600;color:#c81e1e}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>benchrun history</h1>\n<p>%s</p>\n<p class=\"method\">Change points (red rings) are e-divisive means with a t-test, as Apache Otava; a red cross marks a night whose baseline check called the value regressed.</p>\n", e(h.runsLine()))
	// One chart per metric, in the order metrics first appear.
	var names []string
	byMetric := map[string][]regress.Series{}
	for _, s := range h.Series {
		if _, ok := byMetric[s.Metric.Name]; !ok {
			names = append(names, s.Metric.Name)
		}
		byMetric[s.Metric.Name] = append(byMetric[s.Metric.Name], s)
	}
	for _, n := range names {
		ss := byMetric[n]
		fmt.Fprintf(&b, "<h2>%s</h2>\n%s\n", e(n), historyChart(n+" ("+ss[0].Metric.Unit+", "+ss[0].Metric.Better.String()+" is better)", ss))
	}
	for _, g := range histGroupByCell(h.Series) {
		fmt.Fprintf(&b, "<h2>%s</h2>\n<div class=\"key\">%s</div>\n<table><tr><th>started</th><th>run</th>", e(g.key.CellID), e(g.key.String()))
		for _, s := range g.series {
			fmt.Fprintf(&b, "<th>%s %s</th>", e(s.Metric.Name), s.Metric.Better.Arrow())
		}
		b.WriteString("</tr>\n")
		for _, r := range histRows(g) {
			run := r.run
			if r.failed {
				run += " ✗"
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td>", e(r.at.UTC().Format(time.RFC3339)), e(run))
			for i, v := range r.vals {
				cell := cmpNum(v)
				if r.regressed[i] {
					cell += " !"
				}
				if r.marks[i] {
					fmt.Fprintf(&b, "<td class=\"n cp\">%s ◆</td>", e(cell))
				} else {
					fmt.Fprintf(&b, "<td class=\"n\">%s</td>", e(cell))
				}
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n<ul>\n")
		for _, s := range g.series {
			for _, c := range s.ChangePoints {
				fmt.Fprintf(&b, "<li>%s</li>\n", e(histChangeLine(s, c)))
			}
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// historyChart draws a metric's series over time with the report's line
// chart (internal/chart), change points ringed in red and the values a
// night's baseline check called regressed crossed in red.
func historyChart(title string, ss []regress.Series) string {
	c := &chart.Line{Title: title, XLabel: "run start (UTC)", TimeX: true, FitY: true, Empty: "no values", Width: 760, Height: 360}
	for i, s := range ss {
		line := chart.Series{Name: s.CellID, Color: chart.Palette[i%len(chart.Palette)]}
		for _, p := range s.Points {
			line.Points = append(line.Points, chart.Point{X: unixSeconds(p.At), Y: p.Value, Tip: fmt.Sprintf("%s %s: %s", s.CellID, p.RunID, cmpNum(p.Value))})
		}
		c.Series = append(c.Series, line)
		for _, cp := range s.ChangePoints {
			p := s.Points[cp.Index]
			c.Marks = append(c.Marks, chart.Mark{X: unixSeconds(p.At), Y: p.Value, Tip: histChangeLine(s, cp)})
		}
		for _, p := range s.Points {
			if p.Regressed {
				c.Marks = append(c.Marks, chart.Mark{X: unixSeconds(p.At), Y: p.Value, Shape: chart.MarkAlert,
					Tip: fmt.Sprintf("%s %s regressed at run %s (%s): %s %s, called so by its baseline check", s.CellID, s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339), cmpNum(p.Value), s.Metric.Unit)})
			}
		}
	}
	return chart.Inline(c.SVG())
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
