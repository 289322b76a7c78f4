package compare

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/rundir"
)

// History is what `benchrun history` shows: the runs found under Root
// and each cell's series of each metric over them, with change points.
type History struct {
	Root   string
	Runs   []*regress.Run
	Series []regress.Series
}

// runsLine says how many runs there are and how many were left out.
func (h History) runsLine() string {
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
		s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339), fmtNum(c.MeanBefore), fmtNum(c.MeanAfter), s.Metric.Unit, 100*c.Change(), dir, c.P)
}

// WriteHistoryText writes the runs line, then a table per cell: a row
// per run with each metric's value, change points marked.
func WriteHistoryText(w io.Writer, h History) error {
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
				cell := fmtNum(v)
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

// WriteHistoryCSV writes one row per cell, metric and run.
func WriteHistoryCSV(w io.Writer, h History) error {
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
				change, pv = csvNum(c.Change()), csvNum(c.P)
			}
			row := append(keyCols(s.Key), s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339Nano), csvNum(p.Value), strconv.FormatBool(isCP), change, pv, strconv.FormatBool(p.Failed), strconv.FormatBool(p.Regressed))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteHistoryJSON writes the root and each series as JSON.
func WriteHistoryJSON(w io.Writer, h History) error {
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

// HistoryHTML is one self-contained page: a chart per metric (a line per
// cell, change points marked), then each cell's table.
func HistoryHTML(h History) string {
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
				cell := fmtNum(v)
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
			line.Points = append(line.Points, chart.Point{X: unixSeconds(p.At), Y: p.Value, Tip: fmt.Sprintf("%s %s: %s", s.CellID, p.RunID, fmtNum(p.Value))})
		}
		c.Series = append(c.Series, line)
		for _, cp := range s.ChangePoints {
			p := s.Points[cp.Index]
			c.Marks = append(c.Marks, chart.Mark{X: unixSeconds(p.At), Y: p.Value, Tip: histChangeLine(s, cp)})
		}
		for _, p := range s.Points {
			if p.Regressed {
				c.Marks = append(c.Marks, chart.Mark{X: unixSeconds(p.At), Y: p.Value, Shape: chart.MarkAlert,
					Tip: fmt.Sprintf("%s %s regressed at run %s (%s): %s %s, called so by its baseline check", s.CellID, s.Metric.Name, p.RunID, p.At.UTC().Format(time.RFC3339), fmtNum(p.Value), s.Metric.Unit)})
			}
		}
	}
	return chart.Inline(c.SVG())
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
