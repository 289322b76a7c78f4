package siyuan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// levelRegression is the level of a verdict that compares a cell with its
// history (pipeline.LevelRegression; not imported, so that the document
// stays a pure function of rows).
const levelRegression = "regression"

// ChartRef is one chart already uploaded to the notebook's assets: the
// title to show and the asset path the kernel answered (succMap), written
// as ![Title](Path).
type ChartRef struct {
	Title string
	Path  string
}

// Document is everything the posted note shows; the sink fills it from the rows it received.
type Document struct {
	Run      results.Run       // the run record (id, plan, model, engine, hardware, started/finished, metadata...)
	Status   string            // "ok", "failed", "interrupted", "crashed", "error"
	Reason   string            // why the run did not end ok
	Cells    []results.Cell    // each cell's current row
	Verdicts []results.Verdict // each cell's latest verdicts (row, stage, run and regression levels)
	Charts   []ChartRef        // charts already uploaded: {Title, Path} where Path is the asset path to write in ![title](path)
	RunDir   string
	Compare  *Comparison // nil when the sink was not asked to compare
}

// Markdown is the note: a summary line, per stage the prefill, generation,
// batch throughput and memory tables, the checks, key takeaways, the
// charts, the comparison with earlier runs and where the run is. It is a
// pure function of d (maps are read in key order), so posting the same
// run twice writes the same bytes and the golden files pin it.
func (d Document) Markdown() string {
	var b strings.Builder
	d.writeSummary(&b)
	if len(d.Cells) == 0 {
		b.WriteString("No cell was measured.\n\n")
	}
	for _, st := range stagesOf(d.Cells) {
		writeStage(&b, st.name, st.cells, len(d.Cells) > len(st.cells))
	}
	d.writeChecks(&b)
	b.WriteString("## Key takeaways\n\n")
	for _, t := range takeaways(d) {
		fmt.Fprintf(&b, "- %s\n", t)
	}
	b.WriteString("\n")
	if len(d.Charts) > 0 {
		b.WriteString("## Charts\n\n")
		for _, c := range d.Charts {
			// One paragraph per image: SiYuan has no image block, an
			// image is an inline element of its paragraph.
			fmt.Fprintf(&b, "![%s](%s)\n\n", mdText(c.Title), linkDest(c.Path))
		}
	}
	if d.Compare != nil {
		d.Compare.writeMarkdown(&b, d.Verdicts)
	}
	b.WriteString("---\n\n")
	if d.RunDir != "" {
		fmt.Fprintf(&b, "Run directory: %s\n\n", mdCode(d.RunDir))
	}
	fmt.Fprintf(&b, "Run %s, plan %s, written by benchrun %s (columns: docs/RESULTS.md).\n", mdCode(dashIfEmpty(d.Run.RunID)), mdText(dashIfEmpty(d.Run.Plan)), mdText(dashIfEmpty(d.benchrunVersion())))
	return b.String()
}

// status is the document's status, the run record's when the sink gave none.
func (d Document) status() string { return cmp.Or(d.Status, d.Run.Status) }

// writeSummary writes the one summary line (a failed or interrupted run
// says so first), then the stages that did not end ok.
func (d Document) writeSummary(b *strings.Builder) {
	var parts []string
	st := d.status()
	head := "**ok**"
	if st != results.StatusOK {
		word := map[string]string{"failed": "Run failed", "interrupted": "Run interrupted", "crashed": "Run crashed", "error": "Run ended in error"}[st]
		if word == "" {
			word = "Run " + st
			if st == "" {
				word = "Run status unknown"
			}
		}
		head = "**" + mdText(word) + "**"
		if r := firstLineOf(d.Reason); r != "" {
			head += ": " + mdText(r)
		}
	}
	parts = append(parts, head, checksSummary(d.Verdicts))
	if model := d.model(); model != "" {
		if q := d.meta("quant"); q != "" {
			model += " (" + q + ")"
		}
		parts = append(parts, "model "+mdText(model))
	}
	// What the rows say was served, the plan's model.file only where they
	// say nothing of the file (a launch cmd's -m other.gguf is not the
	// plan's file), as the report's header says it.
	for _, f := range runview.ServedFacts(d.Run, d.Cells) {
		switch f[0] {
		case "served":
			parts = append(parts, "served "+mdText(f[1]))
		case "plan's model.file":
			parts = append(parts, "plan's model.file "+mdText(f[1]))
		}
	}
	if e := d.engines(); e != "" {
		parts = append(parts, "engine "+mdText(e))
	}
	if h := d.hardware(); h != "" {
		parts = append(parts, mdText(h))
	}
	if t := d.started(); !t.IsZero() {
		parts = append(parts, t.UTC().Format("2006-01-02 15:04 UTC"))
	}
	fmt.Fprintf(b, "%s\n\n", strings.Join(parts, " · "))
	var bad []string
	for _, s := range d.Run.Stages {
		if s.Status != results.StatusOK {
			line := fmt.Sprintf("- stage %s: %s", mdText(s.Name), mdText(s.Status))
			if r := firstLineOf(s.Reason); r != "" {
				line += " (" + mdText(r) + ")"
			}
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(b, "%s\n\n", strings.Join(bad, "\n"))
	}
}

// failedCheck says whether a verdict counts against the run: a failed or
// unjudgeable check of severity fail (warn verdicts are reported only),
// or a regression.
func failedCheck(v results.Verdict) bool {
	return !v.Passed && v.Outcome != results.OutcomeWarn
}

// checksSummary is the verdict part of the summary line: how many checks
// failed, how many metrics regressed.
func checksSummary(vs []results.Verdict) string {
	var n, failed, warned, reg, regressed int
	for _, v := range vs {
		switch {
		case v.Level == levelRegression:
			reg++
			if v.Outcome == "regressed" {
				regressed++
			}
		default:
			n++
			if v.Outcome == results.OutcomeWarn {
				warned++
			} else if failedCheck(v) {
				failed++
			}
		}
	}
	var parts []string
	switch {
	case n == 0 && reg == 0:
		return "no checks"
	case n == 0:
	case failed == 0:
		parts = append(parts, fmt.Sprintf("all %d checks passed", n))
	default:
		parts = append(parts, fmt.Sprintf("%d of %d checks failed", failed, n))
	}
	if warned > 0 {
		parts = append(parts, fmt.Sprintf("%d warned", warned))
	}
	switch {
	case reg == 0:
	case regressed == 0:
		parts = append(parts, fmt.Sprintf("no regression in %d history checks", reg))
	default:
		parts = append(parts, fmt.Sprintf("**regressed**: %d of %d history checks", regressed, reg))
	}
	return strings.Join(parts, ", ")
}

func (d Document) model() string {
	if d.Run.Model != "" {
		return d.Run.Model
	}
	for _, c := range d.Cells {
		if c.Model != "" {
			return c.Model
		}
	}
	return ""
}

// meta is a metadata value of the run, else of the first cell with it.
func (d Document) meta(key string) string {
	if v := d.Run.Metadata[key]; v != "" {
		return v
	}
	for _, c := range d.Cells {
		if v := c.Metadata[key]; v != "" {
			return v
		}
	}
	return ""
}

// engines lists the engines the cells measured with their versions, in
// the order met: "vllm 0.11.0", "llama.cpp b6500, vllm 0.11.0".
func (d Document) engines() string {
	var out []string
	for _, c := range d.Cells {
		if c.Engine == "" {
			continue
		}
		e := c.Engine
		switch c.EngineVersion {
		case "":
		case "unknown":
			e += " (version unknown)"
		default:
			e += " " + c.EngineVersion
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}

func (d Document) hardware() string {
	if d.Run.Hardware != "" {
		return d.Run.Hardware
	}
	for _, c := range d.Cells {
		if c.Hardware != "" {
			return c.Hardware
		}
	}
	return ""
}

func (d Document) benchrunVersion() string {
	if d.Run.BenchrunVersion != "" {
		return d.Run.BenchrunVersion
	}
	for _, c := range d.Cells {
		if c.BenchrunVersion != "" {
			return c.BenchrunVersion
		}
	}
	return ""
}

// started is the run's start, else its first cell's.
func (d Document) started() time.Time {
	if !d.Run.StartedAt.IsZero() {
		return d.Run.StartedAt
	}
	var t time.Time
	for _, c := range d.Cells {
		if !c.StartedAt.IsZero() && (t.IsZero() || c.StartedAt.Before(t)) {
			t = c.StartedAt
		}
	}
	return t
}

type stageCells struct {
	name  string
	cells []results.Cell
}

// stagesOf groups cells by stage, stages and cells in the order met.
func stagesOf(cells []results.Cell) []stageCells {
	var out []stageCells
	for _, c := range cells {
		i := slices.IndexFunc(out, func(s stageCells) bool { return s.name == c.Stage })
		if i < 0 {
			out = append(out, stageCells{name: c.Stage})
			i = len(out) - 1
		}
		out[i].cells = append(out[i].cells, c)
	}
	return out
}

// metricOf is a float column as the tables show it: its catalogue label
// as the head, its value as it is.
func metricOf(column string, format func(float64) string) docMetric {
	col := results.MustLookup(column)
	return docMetric{column, col.Label, func(c results.Cell) *float64 { return col.Float(&c) }, format}
}

// gibOf is a byte count column in GiB, headed by its catalogue label.
func gibOf(column string, get func(results.Cell) *int64) docMetric {
	return docMetric{column, results.LabelOf(column), func(c results.Cell) *float64 { return gib(get(c)) }, runview.ShortNum}
}

// docMetric is one nullable cell column as the tables show it.
type docMetric struct {
	column string // the results column, for WhyNull
	head   string
	get    func(results.Cell) *float64
	format func(float64) string
}

var (
	mTTFTP50  = metricOf(results.ColTTFTP50Ms, runview.ShortNum)
	mTTFTP99  = metricOf(results.ColTTFTP99Ms, runview.ShortNum)
	mPrefill  = metricOf(results.ColPrefillTokS, runview.ShortNum)
	mDecode   = metricOf(results.ColDecodeTokS, runview.ShortNum)
	mITLP50   = metricOf(results.ColITLP50Ms, runview.ShortNum)
	mITLP99   = metricOf(results.ColITLP99Ms, runview.ShortNum)
	mTPOTP50  = metricOf(results.ColTPOTP50Ms, runview.ShortNum)
	mOutput   = metricOf(results.ColOutputTokS, runview.ShortNum)
	mReqS     = metricOf(results.ColReqS, runview.ShortNum)
	mSpeedup  = metricOf(results.ColSpeedupVsC1, func(v float64) string { return runview.ShortNum(v) + "×" })
	mEff      = metricOf(results.ColBatchingEfficiency, pctOf)
	mClient   = metricOf(results.ColClientCPUUtil, runview.ShortNum)
	prefillMs = []docMetric{mTTFTP50, mTTFTP99, mPrefill}
	genMs     = []docMetric{mDecode, mITLP50, mITLP99, mTPOTP50}
	batchMs   = []docMetric{mOutput, mReqS, mSpeedup, mEff}
)

// writeStage writes one measuring stage's tables. A cell that did not end
// ok shows its status in place of every number (what it measured is not
// a measurement of the point), its reason once, under the stage heading.
func writeStage(b *strings.Builder, name string, cells []results.Cell, several bool) {
	if several || name != "" {
		fmt.Fprintf(b, "## Stage %s\n\n", mdText(dashIfEmpty(name)))
	} else {
		b.WriteString("## Results\n\n")
	}
	var notOK []string
	for _, c := range cells {
		if c.Status != results.StatusOK {
			line := fmt.Sprintf("- %s: **%s**", mdText(pointLabel(c)), mdText(dashIfEmpty(c.Status)))
			if r := firstLineOf(c.Reason); r != "" {
				line += ": " + mdText(r)
			}
			notOK = append(notOK, line)
		}
	}
	if len(notOK) > 0 {
		fmt.Fprintf(b, "Cells that did not end ok (no numbers shown for them):\n\n%s\n\n", strings.Join(notOK, "\n"))
	}
	sections := []struct {
		title string
		ms    []docMetric
	}{
		{"Prefill", prefillMs},
		{"Generation", genMs},
		{"Batch throughput", batchMs},
	}
	for _, s := range sections {
		fmt.Fprintf(b, "### %s\n\n", s.title)
		ms := s.ms
		if s.title == "Batch throughput" {
			switch {
			case !slices.ContainsFunc(cells, func(c results.Cell) bool { return c.Rate == 0 }):
				// Every point is open loop: the speedup columns would be
				// all dashes.
				ms = []docMetric{mOutput, mReqS}
				b.WriteString("Speedup and batching efficiency are not shown: they compare a concurrency ladder with its c=1 point, and every point here is an open loop (a request rate).\n\n")
			case hasLadder(cells):
				b.WriteString("Speedup and batching efficiency compare each point with the same cell at concurrency 1 (efficiency = speedup / concurrency).\n\n")
			}
		}
		metricTable(cells, ms, "–").write(b)
		writeNulls(b, cells, ms)
	}
	b.WriteString("### Memory and utilisation\n\n")
	if writeTelemetry(b, cells) {
		return
	}
	b.WriteString("Memory and GPU utilisation were not measured for this run: the cell rows have no GPU or host memory columns.")
	if !slices.ContainsFunc(cells, func(c results.Cell) bool { return c.Status == results.StatusOK && c.ClientCPUUtil != nil }) {
		b.WriteString(" benchrun's own CPU use was not measured either.\n\n")
		return
	}
	b.WriteString(" What the rows do measure is benchrun's own CPU use, in cores: a client using nearly all of the machine's cores limits what it can measure.\n\n")
	metricTable(cells, []docMetric{mClient}, "not measured").write(b)
}

// The telemetry columns of the memory section, by the source that fills
// them: a source is measured or not as a whole (no NVML on the machine, no
// metrics endpoint, a server benchrun did not launch), so each gets its
// own table, and one that measured nothing at any point of the stage is a
// line saying so, with the reason the rows' notes give, instead of a
// table of "not measured".
type telemetrySource struct {
	name  string
	intro string
	// src names the source in the rows' notes (results.TelemetryWhy).
	src results.TelemetrySource
	ms  []docMetric
}

// gib reads a byte count in GiB.
func gib(p *int64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p) / (1 << 30)
	return &v
}

var telemetrySources = []telemetrySource{
	{"GPU", "GPU (NVML) over each point's timed window, summed or peaked over the server's devices:", results.GPUTelemetry, []docMetric{
		gibOf(results.ColGPUMemPeakBytes, func(c results.Cell) *int64 { return c.GPUMemPeakBytes }),
		metricOf(results.ColGPUUtilMean, runview.ShortNum),
		metricOf(results.ColGPUUtilP95, runview.ShortNum),
		metricOf(results.ColPowerWMean, runview.ShortNum),
		metricOf(results.ColPowerWMax, runview.ShortNum),
		metricOf(results.ColEnergyJ, runview.ShortNum),
		metricOf(results.ColTokensPerJoule, runview.ShortNum),
	}},
	{"Server metrics", "The server's own metrics: queue and KV-cache peaks over the window, counts during it:", results.ServerMetrics, []docMetric{
		metricOf(results.ColServerRunningPeak, countNum),
		metricOf(results.ColServerWaitingPeak, countNum),
		metricOf(results.ColServerParkWaits, countNum),
		metricOf(results.ColServerQueueMeanMs, runview.ShortNum),
		metricOf(results.ColKVCacheUsagePeak, pctOf),
		metricOf(results.ColServerPreemptions, countNum),
	}},
	{"Server CPU and memory", "The server's process tree on this host:", results.ServerProcess, []docMetric{
		metricOf(results.ColServerCPUUtil, runview.ShortNum),
		gibOf(results.ColServerRSSPeakBytes, func(c results.Cell) *int64 { return c.ServerRSSPeakBytes }),
	}},
}

// countNum formats a count or a peak of a count (requests, preemptions):
// whole numbers without decimals, "8" not "8.00".
func countNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return runview.ShortNum(v)
}

// writeTelemetry writes the memory section's telemetry tables and says
// whether it wrote any: false when every telemetry column of every point
// is NULL (then the section keeps its "not measured" sentence).
func writeTelemetry(b *strings.Builder, cells []results.Cell) bool {
	measured := func(src telemetrySource) bool {
		return slices.ContainsFunc(cells, func(c results.Cell) bool {
			return slices.ContainsFunc(src.ms, func(m docMetric) bool { return m.get(c) != nil })
		})
	}
	if !slices.ContainsFunc(telemetrySources, measured) {
		return false
	}
	var missing []string
	for _, src := range telemetrySources {
		if !measured(src) {
			line := "- " + mdText(src.name) + ": not measured"
			if why := telemetryWhy(cells, src); why != "" {
				line += " (" + mdText(why) + ")"
			}
			missing = append(missing, line)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(b, "%s\n\n", strings.Join(missing, "\n"))
	}
	for _, src := range telemetrySources {
		if measured(src) {
			fmt.Fprintf(b, "%s\n\n", mdText(src.intro))
			metricTable(cells, src.ms, "not measured").write(b)
		}
	}
	if slices.ContainsFunc(cells, func(c results.Cell) bool { return c.ClientCPUUtil != nil }) {
		b.WriteString("benchrun's own CPU use, in cores (a client using nearly all of the machine's cores limits what it can measure):\n\n")
		metricTable(cells, []docMetric{mClient}, "not measured").write(b)
	}
	return true
}

// telemetryWhy is the reason the rows' notes give for src not being
// measured, its own note only (runview.TelemetryWhy).
func telemetryWhy(cells []results.Cell, src telemetrySource) string {
	return runview.TelemetryWhy(cells, src.src)
}

// hasLadder says whether some closed-loop cell was measured at more than
// one concurrency, so that speedup and efficiency mean something.
func hasLadder(cells []results.Cell) bool {
	for _, l := range ladders(cells) {
		if len(l.points) > 1 && l.points[0].Rate == 0 {
			return true
		}
	}
	return false
}

// idColumns identify a point in every table, repeated in each part of a
// split one.
var idColumns = []mdColumn{{head: "ISL", num: true}, {head: "OSL", num: true}, {head: "load"}}

func idValues(c results.Cell) []string {
	return []string{strconv.FormatInt(c.ISL, 10), strconv.FormatInt(c.OSL, 10), mdText(runview.LoadLabel(c))}
}

// metricTable is a table of cells × metrics: null prints null (a dash
// where a footnote says why, "not measured" where nothing else would), 0
// prints 0, a cell that did not end ok its status.
func metricTable(cells []results.Cell, ms []docMetric, null string) mdTable {
	t := mdTable{ids: idColumns}
	for _, m := range ms {
		t.cols = append(t.cols, mdColumn{head: m.head, num: true})
	}
	for _, c := range cells {
		row := idValues(c)
		for _, m := range ms {
			switch p := m.get(c); {
			case c.Status != results.StatusOK:
				row = append(row, "*"+mdText(dashIfEmpty(c.Status))+"*")
			case p == nil:
				row = append(row, null)
			default:
				row = append(row, m.format(*p))
			}
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// writeNulls says why the dashes of a table's ok rows are there
// (results.WhyNull): one line per reason and set of points, naming the
// metrics it left unmeasured.
func writeNulls(b *strings.Builder, cells []results.Cell, ms []docMetric) {
	ok := 0
	for _, c := range cells {
		if c.Status == results.StatusOK {
			ok++
		}
	}
	type nulls struct {
		why    string
		points []string
	}
	var lines []nulls
	heads := map[string][]string{} // by why and points
	keyOf := func(n nulls) string { return n.why + "\x00" + strings.Join(n.points, "\x00") }
	for _, m := range ms {
		byWhy := map[string][]string{}
		var whys []string
		for _, c := range cells {
			if c.Status != results.StatusOK || m.get(c) != nil {
				continue
			}
			why := results.WhyNull(c, m.column)
			if _, seen := byWhy[why]; !seen {
				whys = append(whys, why)
			}
			byWhy[why] = append(byWhy[why], pointLabel(c))
		}
		for _, why := range whys {
			n := nulls{why, byWhy[why]}
			k := keyOf(n)
			if _, seen := heads[k]; !seen {
				lines = append(lines, n)
			}
			heads[k] = append(heads[k], m.head)
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("– not measured:\n\n")
	for _, n := range lines {
		where := "every point"
		if len(n.points) < ok || ok == 1 {
			where = strings.Join(n.points, ", ")
		}
		fmt.Fprintf(b, "- %s at %s: %s\n", mdText(strings.Join(heads[keyOf(n)], ", ")), mdText(where), mdText(n.why))
	}
	b.WriteString("\n")
}

// pointLabel names a cell for people: "128:128 c=4".
func pointLabel(c results.Cell) string {
	return fmt.Sprintf("%d:%d %s", c.ISL, c.OSL, runview.LoadLabel(c))
}

// stagePointLabel is pointLabel with the stage, for sections that mix
// stages.
func stagePointLabel(c results.Cell) string {
	if c.Stage == "" {
		return pointLabel(c)
	}
	return c.Stage + " " + pointLabel(c)
}

// writeChecks writes the assertion verdicts (failures first) and the
// regression verdicts (regressions first).
func (d Document) writeChecks(b *strings.Builder) {
	b.WriteString("## Checks\n\n")
	var asserts, regs []results.Verdict
	for _, v := range d.Verdicts {
		if v.Level == levelRegression {
			regs = append(regs, v)
		} else {
			asserts = append(asserts, v)
		}
	}
	if len(asserts) == 0 && len(regs) == 0 {
		b.WriteString("This run checked no assertions and no regressions against history.\n\n")
		return
	}
	b.WriteString("### Assertions\n\n")
	if len(asserts) == 0 {
		b.WriteString("The plan asserts nothing.\n\n")
	} else {
		shown, rest := listedFirst(asserts, func(v results.Verdict) bool { return v.Outcome == results.OutcomePass })
		if len(shown) == 0 {
			writeRest(b, rest, "passed", true)
		} else {
			t := mdTable{ids: []mdColumn{{head: "check"}, {head: "cell"}}, cols: []mdColumn{{head: "outcome"}, {head: "values"}}}
			for _, v := range shown {
				vals := formatValues(v)
				if v.Error != "" {
					vals = mdText(firstLineOf(v.Error))
				}
				t.rows = append(t.rows, []string{checkName(v), mdText(dashIfEmpty(v.Cell)), outcomeMark(v), vals})
			}
			t.write(b)
			writeRest(b, rest, "passed", false)
		}
	}
	if len(regs) > 0 {
		b.WriteString("### Regressions against history\n\n")
		shown, rest := listedFirst(regs, func(v results.Verdict) bool { return v.Outcome == "same" || v.Outcome == "insufficient data" })
		if len(shown) == 0 {
			writeRest(b, rest, "", true)
			return
		}
		t := mdTable{ids: []mdColumn{{head: "metric"}, {head: "cell"}}, cols: []mdColumn{{head: "outcome"}, {head: "old", num: true}, {head: "new", num: true}, {head: "change", num: true}, {head: "confirmed"}, {head: "first", num: true}}}
		for _, v := range shown {
			vals := v.Values
			t.rows = append(t.rows, []string{mdText(cmp.Or(v.Name, strings.TrimPrefix(v.Assertion, "regression of "))), mdText(dashIfEmpty(v.Cell)), outcomeMark(v),
				numText(vals["old"]), numText(vals["new"]), pctText(vals["change_pct"]), mdText(dashIfEmpty(confirmWord(vals["confirm"]))), numText(vals["first"])})
		}
		t.write(b)
		writeRest(b, rest, "", false)
	}
}

// maxListed bounds the verdicts listed one by one: beyond it the expected
// ones (passes, unchanged metrics) are counted instead, so a sweep of
// hundreds of cells keeps a page a person reads; the others are always
// listed.
const maxListed = 30

// listedFirst orders verdicts worst first (stable in run order) and splits off
// the expected ones when there are more than maxListed.
func listedFirst(vs []results.Verdict, expected func(results.Verdict) bool) (shown, rest []results.Verdict) {
	vs = slices.Clone(vs)
	rank := func(v results.Verdict) int {
		switch {
		case expected(v):
			return 3
		case failedCheck(v):
			return 0
		case v.Outcome == results.OutcomeWarn:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(vs, func(a, b results.Verdict) int { return cmp.Compare(rank(a), rank(b)) })
	if len(vs) <= maxListed {
		return vs, nil
	}
	for _, v := range vs {
		if expected(v) {
			rest = append(rest, v)
		} else {
			shown = append(shown, v)
		}
	}
	return shown, rest
}

// writeRest counts the verdicts not listed, by check and outcome. all:
// none was listed (every one was expected), which the line says first
// rather than leave a table of no rows above it.
func writeRest(b *strings.Builder, rest []results.Verdict, word string, all bool) {
	if len(rest) == 0 {
		return
	}
	type key struct{ check, outcome string }
	var keys []key
	n := map[key]int{}
	for _, v := range rest {
		k := key{checkName(v), cmp.Or(word, v.Outcome)}
		if _, ok := n[k]; !ok {
			keys = append(keys, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s on %d cells", k.check, mdText(k.outcome), n[k]))
	}
	if all {
		what := word
		if what == "" {
			what = "as expected"
			if len(keys) == 1 || !slices.ContainsFunc(keys[1:], func(k key) bool { return k.outcome != keys[0].outcome }) {
				what = mdText(keys[0].outcome)
			}
		}
		fmt.Fprintf(b, "All %d checks %s, not listed one by one: %s.\n\n", len(rest), what, strings.Join(parts, "; "))
		return
	}
	fmt.Fprintf(b, "Not listed: %s.\n\n", strings.Join(parts, "; "))
}

// checkName is a verdict's check as the plan wrote it: its name, else the
// expression.
func checkName(v results.Verdict) string {
	if v.Level == levelRegression {
		return mdText(cmp.Or(v.Assertion, "regression of "+v.Name))
	}
	if v.Name != "" {
		return mdText(v.Name)
	}
	return mdCode(v.Assertion)
}

func outcomeMark(v results.Verdict) string {
	switch {
	case v.Outcome == results.OutcomePass:
		return "✓ pass"
	case v.Outcome == "same", v.Outcome == "improved":
		return "✓ " + v.Outcome
	case failedCheck(v):
		return "✗ **" + mdText(dashIfEmpty(v.Outcome)) + "**"
	}
	return "! " + mdText(dashIfEmpty(v.Outcome))
}

// confirmWord shortens a regression verdict's confirm value
// ("confirmed: both measurements regressed") to its first word.
func confirmWord(s string) string {
	w, _, _ := strings.Cut(s, ":")
	return w
}

// formatValues is a verdict's values as the report lists them
// (runview.FormatValues), escaped.
func formatValues(v results.Verdict) string { return mdText(runview.FormatValues(v)) }

// numText is a value written as text: a number shortened, anything else
// escaped, "" as a dash.
func numText(s string) string {
	if s == "" {
		return "–"
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return runview.ShortNum(f)
	}
	return mdText(s)
}

// pctText writes a change in pctOf ("-12.5" → "-12.5%").
func pctText(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return numText(s)
	}
	return signedPct(f / 100)
}

// pctOf writes a ratio as a percentage: 0.711 → "71%".
func pctOf(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// signedPct writes a relative change with its sign: 0.052 → "+5.2%".
func signedPct(f float64) string {
	p := 100 * f
	prec := 1
	if math.Abs(p) >= 100 {
		prec = 0
	}
	s := strconv.FormatFloat(p, 'f', prec, 64)
	if p >= 0 && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	if s == "-0.0" || s == "+0.0" {
		s = "0.0"
	}
	return s + "%"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// escaper escapes what SiYuan's markdown (Lute) would read as markup in
// running text: CommonMark's emphasis, code, links and HTML, and
// SiYuan's own inline syntax: $math$, #tags#, ==mark==, ^sup^, ~sub~ and
// ((block refs)); a lone "=" or "(" is no markup and stays as it is, so
// "c=4" reads as written. A pipe and a line break would end a table
// cell, so they are escaped too (a pipe is harmless in a paragraph).
var escaper = strings.NewReplacer(
	"==", `\=\=`, "((", `\(\(`,
	`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`,
	"$", `\$`, "#", `\#`, "^", `\^`, "~", `\~`, "|", `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText escapes s for running text and table cells.
func mdText(s string) string { return escaper.Replace(s) }

// mdCode writes s as a code span (a plan's expression, a path), long
// enough a fence for the backticks it holds; a pipe inside a table cell
// is escaped even in a code span (GFM), so one with a pipe is written as
// escaped text instead, which reads the same.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if strings.Contains(s, "|") || s == "" {
		return mdText(s)
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// linkDest writes an image's asset path as a link destination: in angle
// brackets when it holds a space or a bracket (the kernel keeps spaces in
// asset names), which CommonMark allows and a bare destination does not.
func linkDest(p string) string {
	if strings.ContainsAny(p, " ()<>\n") {
		return "<" + strings.NewReplacer("<", "%3C", ">", "%3E", "\n", "").Replace(p) + ">"
	}
	return p
}

// mdColumn is one column of a table.
type mdColumn struct {
	head string
	num  bool // right-aligned
}

// mdTable is a markdown table whose rows are already markdown (escaped).
// ids are the identifying columns, repeated in each part when the table
// is split.
type mdTable struct {
	ids  []mdColumn
	cols []mdColumn
	rows [][]string // len(ids)+len(cols) each
}

// maxColumns bounds a table's width: a note is read in a window beside
// others, and SiYuan scrolls a wider table sideways, hiding the columns
// that identify a row. A wider table is split into parts of about equal
// width, each repeating the identifying columns.
const maxColumns = 8

func (t mdTable) write(b *strings.Builder) {
	per := max(1, maxColumns-len(t.ids))
	parts := (len(t.cols) + per - 1) / per
	if parts == 0 {
		parts = 1
	}
	size := (len(t.cols) + parts - 1) / parts
	for p := 0; p < parts; p++ {
		lo, hi := p*size, min((p+1)*size, len(t.cols))
		cols := append(slices.Clone(t.ids), t.cols[lo:hi]...)
		b.WriteString("|")
		for _, c := range cols {
			fmt.Fprintf(b, " %s |", mdText(c.head))
		}
		b.WriteString("\n|")
		for _, c := range cols {
			if c.num {
				b.WriteString(" ---: |")
			} else {
				b.WriteString(" --- |")
			}
		}
		b.WriteString("\n")
		for _, r := range t.rows {
			b.WriteString("|")
			vals := append(slices.Clone(r[:len(t.ids)]), r[len(t.ids)+lo:len(t.ids)+hi]...)
			for _, v := range vals {
				fmt.Fprintf(b, " %s |", cmp.Or(v, " "))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
}

// Knee rule: along a ladder (one cell's points in load order), the knee
// is the first point where adding load stopped buying throughput but
// still cost latency: output tok/s grew by less than kneeGain over the
// previous point while TTFT p99 or ITL p99 grew by more than
// kneeLatency. Past it a deployment pays in tail latency for little
// throughput, so it is the load to run at or below. Only two measured
// consecutive points are compared: a point whose throughput or both p99s
// are null says nothing, and no knee is made up from it.
const (
	kneeGain    = 0.10
	kneeLatency = 0.50
)

// ladder is one cell's points in load order: the same stage, shape,
// repeat and loop (closed: concurrency, open: rate and arrival).
type ladder struct {
	points []results.Cell
}

// ladders groups the ok cells into ladders, in the order their first
// point was met, points ordered by load.
func ladders(cells []results.Cell) []ladder {
	type key struct {
		stage    string
		isl, osl int64
		repeat   int64
		open     bool
		arrival  string
	}
	var keys []key
	by := map[key][]results.Cell{}
	for _, c := range cells {
		if c.Status != results.StatusOK {
			continue
		}
		k := key{c.Stage, c.ISL, c.OSL, c.Repeat, c.Rate > 0, c.Arrival}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], c)
	}
	out := make([]ladder, 0, len(keys))
	for _, k := range keys {
		pts := by[k]
		slices.SortStableFunc(pts, func(a, b results.Cell) int {
			return cmp.Or(cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.Concurrency, b.Concurrency))
		})
		out = append(out, ladder{points: pts})
	}
	return out
}

// knee is where a ladder's latency degrades: at point At, from point From.
type knee struct {
	From, At      results.Cell
	Gain          float64 // output tok/s growth from From to At
	Metric        string  // the p99 that grew: "TTFT p99" or "ITL p99"
	Growth        float64 // its growth
	Before, After float64 // its values
}

// relGrowth is cur/prev - 1, false when either is null or prev is not > 0.
func relGrowth(prev, cur *float64) (float64, bool) {
	if prev == nil || cur == nil || *prev <= 0 {
		return 0, false
	}
	return *cur / *prev - 1, true
}

// kneeOf applies the knee rule to one ladder.
func kneeOf(l ladder) (knee, bool) {
	for i := 1; i < len(l.points); i++ {
		a, b := l.points[i-1], l.points[i]
		gain, ok := relGrowth(a.OutputTokS, b.OutputTokS)
		if !ok || gain >= kneeGain {
			continue
		}
		// The p99 that grew most names the knee.
		best := knee{From: a, At: b, Gain: gain, Growth: math.Inf(-1)}
		for _, m := range []docMetric{mTTFTP99, mITLP99} {
			if g, ok := relGrowth(m.get(a), m.get(b)); ok && g > kneeLatency && g > best.Growth {
				best.Metric, best.Growth, best.Before, best.After = strings.TrimSuffix(m.head, " ms"), g, *m.get(a), *m.get(b)
			}
		}
		if best.Metric != "" {
			return best, true
		}
	}
	return knee{}, false
}

// bestPoint is the ok cell of the highest output tok/s (the first of
// equals, in run order).
func bestPoint(cells []results.Cell) (results.Cell, bool) {
	var best results.Cell
	found := false
	for _, c := range cells {
		if c.Status != results.StatusOK || c.OutputTokS == nil {
			continue
		}
		if !found || *c.OutputTokS > *best.OutputTokS {
			best, found = c, true
		}
	}
	return best, found
}

// maxTakeawayItems bounds the failed checks and regressions named one by
// one; more are counted.
const maxTakeawayItems = 5

// takeaways are the conclusions the rows support, each from measured
// values only: the best throughput point, each ladder's knee, the
// failed checks and by how much, the regressions, the cells that did not
// end ok. A conclusion whose data is missing is left out, not guessed.
func takeaways(d Document) []string {
	var out []string
	// A point is named with its stage only when the run has several.
	label := pointLabel
	if len(stagesOf(d.Cells)) > 1 {
		label = stagePointLabel
	}
	if c, ok := bestPoint(d.Cells); ok {
		s := fmt.Sprintf("Best throughput: %s output tok/s at %s", runview.ShortNum(*c.OutputTokS), mdText(label(c)))
		var lat []string
		for _, m := range []docMetric{mTTFTP99, mITLP99} {
			if p := m.get(c); p != nil {
				lat = append(lat, fmt.Sprintf("%s %s ms", strings.TrimSuffix(m.head, " ms"), runview.ShortNum(*p)))
			}
		}
		if len(lat) > 0 {
			s += ", with " + strings.Join(lat, " and ")
		}
		out = append(out, s+".")
	}
	knees, flat := 0, 0
	for _, l := range ladders(d.Cells) {
		k, ok := kneeOf(l)
		if !ok {
			if measuredSteps(l) > 0 {
				flat++
			}
			continue
		}
		knees++
		out = append(out, fmt.Sprintf("Knee at %s: from %s, output tok/s %s while %s grew %s (%s → %s ms); run at %s or below for tail latency.",
			mdText(label(k.At)), mdText(runview.LoadLabel(k.From)), signedPct(k.Gain), k.Metric, signedPct(k.Growth), runview.ShortNum(k.Before), runview.ShortNum(k.After), mdText(runview.LoadLabel(k.From))))
	}
	if knees == 0 && flat > 0 {
		out = append(out, fmt.Sprintf("No knee in the ladders measured: no step gained under %.0f%% throughput while a p99 latency grew over %.0f%%.", 100*kneeGain, 100*kneeLatency))
	}
	var failed, regressed []results.Verdict
	for _, v := range d.Verdicts {
		switch {
		case v.Level == levelRegression && v.Outcome == "regressed":
			regressed = append(regressed, v)
		case v.Level != levelRegression && failedCheck(v):
			failed = append(failed, v)
		}
	}
	for i, v := range failed {
		if i == maxTakeawayItems {
			out = append(out, fmt.Sprintf("%d more checks failed (see Checks).", len(failed)-i))
			break
		}
		out = append(out, failedTakeaway(v))
	}
	for i, v := range regressed {
		if i == maxTakeawayItems {
			out = append(out, fmt.Sprintf("%d more metrics regressed (see Checks).", len(regressed)-i))
			break
		}
		out = append(out, regressionTakeaway(v))
	}
	notOK := 0
	for _, c := range d.Cells {
		if c.Status != results.StatusOK {
			notOK++
		}
	}
	if notOK > 0 {
		out = append(out, fmt.Sprintf("%d of %d cells did not end ok; their rows are not measurements of their points.", notOK, len(d.Cells)))
	}
	if len(out) == 0 {
		out = append(out, "None: no cell measured output throughput and no check failed.")
	}
	return out
}

// measuredSteps counts a ladder's steps the knee rule could judge.
func measuredSteps(l ladder) int {
	n := 0
	for i := 1; i < len(l.points); i++ {
		if _, ok := relGrowth(l.points[i-1].OutputTokS, l.points[i].OutputTokS); ok {
			n++
		}
	}
	return n
}

// failedTakeaway says which check failed where, and by how much when its
// values say.
func failedTakeaway(v results.Verdict) string {
	where := mdText(dashIfEmpty(v.Cell))
	if v.Outcome == results.OutcomeError {
		s := fmt.Sprintf("Check %s could not be judged at %s", checkName(v), where)
		if v.Error != "" {
			s += ": " + mdText(firstLineOf(v.Error))
		}
		return s + "."
	}
	s := fmt.Sprintf("Check %s failed at %s", checkName(v), where)
	if lhs, rhs, miss, op, ok := runview.CheckMargin(v); ok && miss >= 0 {
		dir := "over"
		if op == ">" || op == ">=" {
			dir = "under"
		}
		return s + fmt.Sprintf(": %s against a limit of %s, %s %s it.", runview.ShortNum(lhs), runview.ShortNum(rhs), strings.TrimPrefix(signedPct(miss), "+"), dir)
	}
	if len(v.Values) > 0 {
		s += " (" + formatValues(v) + ")"
	}
	return s + "."
}

// regressionTakeaway names a regressed metric with its change.
func regressionTakeaway(v results.Verdict) string {
	vals := v.Values
	s := fmt.Sprintf("%s regressed at %s: %s → %s", mdText(cmp.Or(v.Name, strings.TrimPrefix(v.Assertion, "regression of "))), mdText(dashIfEmpty(v.Cell)), numText(vals["old"]), numText(vals["new"]))
	if c := vals["change_pct"]; c != "" {
		s += " (" + pctText(c) + ")"
	}
	switch w := confirmWord(vals["confirm"]); w {
	case "confirmed":
		s += ", confirmed by a second measurement"
		if f := vals["first"]; f != "" {
			s += " (first " + numText(f) + ")"
		}
	case "":
	default:
		s += ", " + mdText(w)
	}
	return s + "."
}
