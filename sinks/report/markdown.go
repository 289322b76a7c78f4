package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// Markdown renders report.md. chartDir is where the charts' SVG files are,
// relative to the report ("charts/").
func Markdown(d Data, charts []Chart, chartDir string) []byte {
	var b bytes.Buffer
	r := d.Run
	fmt.Fprintf(&b, "# benchrun: %s\n\n", mdText(r.Plan))
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", mdText(r.Description))
	}
	failed, inconclusive := countFailed(d.Verdicts), countInconclusive(d.Verdicts)
	incl := ""
	if inconclusive > 0 {
		incl = fmt.Sprintf(", %d inconclusive (the machine's own lateness could explain them)", inconclusive)
	}
	fmt.Fprintf(&b, "**%s**: %d cell rows, %d assertion checks, %d failed%s.\n\n", strings.ToUpper(orDash(r.Status)), len(d.Cells), len(d.Verdicts), failed, incl)

	b.WriteString("| run | |\n| --- | --- |\n")
	for _, kv := range runFacts(r, d.Cells) {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], mdCell(kv[1]))
	}
	b.WriteString("\n")

	if len(charts) > 0 {
		b.WriteString("## Charts\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "![%s](%s%s.svg)\n\n", mdText(c.Title), chartDir, c.Name)
		}
	}

	load, programs := splitProgramRows(d.Cells)
	if len(load) > 0 || len(programs) == 0 {
		b.WriteString("## Cells\n\n")
		markdownCells(&b, cellColumns(load), load)
	}
	if len(programs) > 0 {
		b.WriteString("## Benchmark programs\n\n")
		markdownCells(&b, programColumns(programs), programs)
	}

	for _, sec := range variantSections(d.Cells, r.Stages) {
		markdownVariants(&b, sec)
	}

	if tables := turnTables(d); len(tables) > 0 {
		fmt.Fprintf(&b, "\n## TTFT by turn\n\n%s\n", mdText(turnIntro))
		for _, t := range tables {
			fmt.Fprintf(&b, "\n### %s\n\n| turn | requests | prompt | history | cached | TTFT p50 | TTFT p99 |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", mdText(t.Label))
			for _, r := range t.Rows {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Turn, r.Requests, r.Prompt, r.History, r.Cached, r.P50, r.P99)
			}
		}
	}

	markdownTelemetry(&b, telemetryTables(d.Cells))

	if reps := repeatRows(d.Cells); len(reps) > 0 {
		b.WriteString("\n## Repeats\n\nEach point measured `repeats` times: the mean, its 95% interval (Student t) and the coefficient of variation, over the ok repeats.\n\n")
		b.WriteString("| point | metric | n | mean | 95% interval | CV |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
		for _, r := range reps {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", mdCell(r.Point), r.Metric, r.N, r.Mean, mdCell(r.Interval), r.CV)
		}
	}

	b.WriteString("\n## Assertions\n\n")
	if len(d.Verdicts) == 0 {
		b.WriteString("No assertions were checked.\n")
	} else {
		fmt.Fprintf(&b, "%d checks, %d failed%s.\n\n| outcome | cell | assertion | values | where |\n| --- | --- | --- | --- | --- |\n", len(d.Verdicts), failed, incl)
		current := currentMeasurements(d.Cells)
		for _, v := range failedFirst(d.Verdicts) {
			mark := "✓ pass"
			switch v.Outcome {
			case results.OutcomeFail:
				mark = "✗ **fail**"
			case results.OutcomeError:
				mark = "✗ **error**"
			case results.OutcomeInconclusive:
				mark = "? **inconclusive**"
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", mark, mdCell(verdictCell(v, current)), strings.ReplaceAll(v.Assertion, "|", `\|`), mdCell(verdictText(v)), mdCell(v.Pos))
		}
	}

	if len(r.Stages) > 0 {
		b.WriteString("\n## Stages\n\n| stage | kind | status | duration | reason |\n| --- | --- | --- | ---: | --- |\n")
		for _, s := range r.Stages {
			fmt.Fprintf(&b, "| %s | %s | %s | %.1f s | %s |\n", mdCell(s.Name), mdCell(s.Kind), mdCell(s.Status), s.DurationS, mdCell(firstLine(s.Reason)))
		}
	}
	fmt.Fprintf(&b, "\n---\nbenchrun %s · regenerate with `benchrun report <run dir>` · columns: docs/RESULTS.md\n", mdText(orDash(r.BenchrunVersion)))
	return b.Bytes()
}

// markdownCells writes a table of cell rows, then the reasons of those
// that have one.
func markdownCells(b *bytes.Buffer, cols []cellColumn, cells []results.Cell) {
	b.WriteString("|")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c.Head)
	}
	b.WriteString("\n|")
	for _, c := range cols {
		if c.Num {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	dash := false
	for _, cell := range cells {
		b.WriteString("|")
		for _, c := range cols {
			v := c.value(cell)
			dash = dash || c.Num && v == "–"
			fmt.Fprintf(b, " %s |", mdCell(v))
		}
		b.WriteString("\n")
	}
	if dash {
		fmt.Fprintf(b, "\n%s\n", mdText(notMeasured))
	}
	for _, cell := range cells {
		if cell.Reason != "" {
			fmt.Fprintf(b, "\n- %s: %s", mdText(runview.CellLabel(cell)), mdText(cell.Reason))
		}
	}
	b.WriteString("\n")
}

// markdownTelemetry writes the "Memory, utilisation and energy" section.
func markdownTelemetry(b *bytes.Buffer, tables []telemTable) {
	if len(tables) == 0 {
		return
	}
	b.WriteString("\n## Memory, utilisation and energy\n")
	for _, t := range tables {
		fmt.Fprintf(b, "\n### Stage %s\n\n", mdText(orDash(t.Stage)))
		for _, l := range t.Unmeasured {
			fmt.Fprintf(b, "- %s\n", mdText(l))
		}
		if len(t.Heads) == 0 {
			continue
		}
		if len(t.Unmeasured) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("| isl:osl | load |")
		for _, h := range t.Heads {
			fmt.Fprintf(b, " %s |", mdCell(h))
		}
		b.WriteString("\n| --- | --- |")
		b.WriteString(strings.Repeat(" ---: |", len(t.Heads)))
		b.WriteString("\n")
		for _, r := range t.Rows {
			fmt.Fprintf(b, "| %s | %s |", r.Shape, mdCell(r.Load))
			for _, v := range r.Values {
				fmt.Fprintf(b, " %s |", mdCell(v))
			}
			b.WriteString("\n")
		}
		if t.Dash != "" {
			fmt.Fprintf(b, "\n%s\n", mdText(t.Dash))
		}
	}
}

// markdownVariants writes one "Variants by <key>" section.
func markdownVariants(b *bytes.Buffer, s variantSection) {
	fmt.Fprintf(b, "\n## Variants by %s\n\n%s\n\n", mdText(s.Key), mdText(variantIntro(s)))
	b.WriteString("| isl:osl | load |")
	for _, o := range s.Others {
		fmt.Fprintf(b, " %s |", mdCell(o))
	}
	for _, v := range s.Values {
		for _, m := range s.Metrics {
			fmt.Fprintf(b, " %s %s |", mdCell(v), m)
		}
	}
	b.WriteString("\n| --- | --- |")
	b.WriteString(strings.Repeat(" --- |", len(s.Others)))
	b.WriteString(strings.Repeat(" ---: |", len(s.Values)*len(s.Metrics)))
	b.WriteString("\n")
	for _, r := range s.Rows {
		fmt.Fprintf(b, "| %s | %s |", r.Shape, mdCell(r.Load))
		for _, o := range r.Others {
			fmt.Fprintf(b, " %s |", mdCell(o))
		}
		for _, g := range r.Groups {
			for _, v := range g {
				fmt.Fprintf(b, " %s |", v)
			}
		}
		b.WriteString("\n")
	}
	if s.Paired {
		fmt.Fprintf(b, "\n%s\n", mdText(pairedNote))
	}
}

// runFacts is the run's header table, shared by both reports; the model
// served and its digest come from the rows where they say (runview.ServedFacts).
func runFacts(r results.Run, cells []results.Cell) [][2]string {
	facts := [][2]string{{"run id", r.RunID}, {"plan", r.Plan}, {"status", orDash(r.Status)}}
	if r.ExitCode != nil {
		facts[2][1] += fmt.Sprintf(" (exit %d)", *r.ExitCode)
	}
	if !r.StartedAt.IsZero() {
		s := r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
		if r.FinishedAt != nil {
			s += fmt.Sprintf(", %s", r.FinishedAt.Sub(r.StartedAt).Round(100*time.Millisecond))
		}
		facts = append(facts, [2]string{"started", s})
	}
	facts = append(facts, [2]string{"model", orDash(r.Model)})
	facts = append(facts, runview.ServedFacts(r, cells)...)
	var md []string
	for _, k := range sortedKeys(r.Metadata) {
		md = append(md, k+"="+r.Metadata[k])
	}
	if len(md) > 0 {
		facts = append(facts, [2]string{"metadata", strings.Join(md, ", ")})
	}
	if len(r.Tags) > 0 {
		facts = append(facts, [2]string{"tags", strings.Join(r.Tags, ", ")})
	}
	facts = append(facts, [2]string{"hardware", orDash(r.Hardware)}, [2]string{"host", orDash(r.Hostname)})
	return facts
}

// cellColumn is one column of the cells table in both reports.
type cellColumn struct {
	Head  string
	Num   bool
	value func(results.Cell) string
}

// notMeasured explains the "–" of a metric that was not measured (null).
const notMeasured = "– not measured (null: no sample, e.g. every request of the cell failed, or no c=1 row to compare with)"

// cellColumns are the cells table's columns; tokens per joule sits beside
// the output throughput when some row measured it (a run without GPU
// telemetry keeps the table as it was, not a column of dashes).
func cellColumns(cells []results.Cell) []cellColumn {
	// A latency of a row without a completed request is not measured:
	// null since schema version 3, a 0 in files written before.
	latency := func(head string, f func(results.Cell) *float64) cellColumn {
		return cellColumn{head, true, func(c results.Cell) string { p := f(c); return num(results.ValueOr(p, 0), p != nil && c.Completed > 0) }}
	}
	// A rate or ratio is shown whenever measured: a 0 req/s is a value.
	metric := func(head string, f func(results.Cell) *float64) cellColumn {
		return cellColumn{head, true, func(c results.Cell) string { p := f(c); return num(results.ValueOr(p, 0), p != nil) }}
	}
	// A column the catalogue labels is headed by its label.
	labelled := func(column string, show func(string, func(results.Cell) *float64) cellColumn) cellColumn {
		col := results.MustLookup(column)
		return show(col.Label, func(c results.Cell) *float64 { return col.Float(&c) })
	}
	cols := []cellColumn{
		{"stage", false, func(c results.Cell) string { return c.Stage }},
		{"isl:osl", false, func(c results.Cell) string { return fmt.Sprintf("%d:%d", c.ISL, c.OSL) }},
		{"load", false, runview.LoadLabel},
		{"status", false, func(c results.Cell) string { return c.Status }},
		{"requests", true, func(c results.Cell) string {
			if c.Failed > 0 {
				return fmt.Sprintf("%d (%d failed)", c.Requests, c.Failed)
			}
			return fmt.Sprint(c.Requests)
		}},
		labelled(results.ColTTFTP50Ms, latency),
		labelled(results.ColTTFTP99Ms, latency),
		labelled(results.ColITLP50Ms, latency),
		labelled(results.ColITLP99Ms, latency),
		labelled(results.ColTPOTMs, latency),
		labelled(results.ColE2ELP99Ms, latency),
		labelled(results.ColReqS, metric),
		labelled(results.ColOutputTokS, metric),
		metric("speedup", func(c results.Cell) *float64 { return c.SpeedupVsC1 }),
		metric("batch eff.", func(c results.Cell) *float64 { return c.BatchingEfficiency }),
	}
	if measuredTPJ(cells) {
		i := slices.IndexFunc(cols, func(c cellColumn) bool { return c.Head == results.LabelOf(results.ColOutputTokS) })
		tpj := cellColumn{"tok/J", true, func(c results.Cell) string {
			if c.TokensPerJoule == nil || !finite(*c.TokensPerJoule) {
				return "–"
			}
			return telemNum(*c.TokensPerJoule)
		}}
		cols = slices.Insert(cols, i+1, tpj)
	}
	cols = insertMeasured(cols, cells, results.ColTTFTP99Ms, metric,
		// A thinking model's columns, beside the TTFT they split: when its
		// first answer token came and how many requests answered at all.
		results.ColTTFOP99Ms, results.ColReasoningTokensMean, results.ColAnsweredPct)
	cols = insertMeasured(cols, cells, results.ColOutputTokS, metric,
		// The answers' validity under tools or a response_format.
		results.ColToolArgsValidPct, results.ColStructuredValidPct)
	if slices.ContainsFunc(cells, func(c results.Cell) bool { return c.PrefixCacheHitRate != nil }) {
		// Beside the TTFT it explains, when some row measured it.
		i := slices.IndexFunc(cols, func(c cellColumn) bool { return c.Head == results.LabelOf(results.ColTTFTP99Ms) })
		cols = slices.Insert(cols, i+1, metric("prefix hit", func(c results.Cell) *float64 { return c.PrefixCacheHitRate }))
	}
	return cols
}

// insertMeasured puts, after the column headed by after's label, each of
// columns that some row measured (a run that asked for none keeps its
// table as it was, not a column of dashes), headed by its catalogue label.
func insertMeasured(cols []cellColumn, cells []results.Cell, after string, show func(string, func(results.Cell) *float64) cellColumn, columns ...string) []cellColumn {
	i := slices.IndexFunc(cols, func(c cellColumn) bool { return c.Head == results.LabelOf(after) })
	for _, name := range columns {
		col := results.MustLookup(name)
		if !slices.ContainsFunc(cells, func(c results.Cell) bool { return col.Float(&c) != nil }) {
			continue
		}
		i++
		cols = slices.Insert(cols, i, show(col.Label, func(c results.Cell) *float64 { return col.Float(&c) }))
	}
	return cols
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// mdText escapes the characters Markdown would interpret in running text.
func mdText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// mdCell is mdText for a table cell: no pipes, no line breaks.
func mdCell(s string) string {
	s = strings.ReplaceAll(mdText(s), "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
