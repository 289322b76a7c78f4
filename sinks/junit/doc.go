package junit

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// What a testcase shows: a verdict's outcome mapped onto the four results
// a JUnit reader knows.
const (
	resultOK      = ""
	resultFailure = "failure"
	resultError   = "error"
	resultSkipped = "skipped"
)

// Outcomes beyond results.Outcome*: the regression checks' (a metric worse
// than its history; too few earlier runs to judge), and a check not run.
const (
	outcomeRegressed        = "regressed"
	outcomeSame             = "same"
	outcomeImproved         = "improved"
	outcomeSkipped          = "skipped"
	outcomeInsufficientData = "insufficient data"
	outcomeWarn             = "warn"
)

// runSuite names the suite of what belongs to no stage: whether the run
// finished, verdicts of the run's rows that name no stage.
const runSuite = "benchrun"

// Testcase names of what is not a verdict.
const (
	caseCell  = "cell measured"
	caseStage = "stage completes"
	caseRun   = "run completes"
)

// testsuites is the document: its root and one suite per stage.
type testsuites struct {
	name   string
	time   float64
	suites []*testsuite
}

type testsuite struct {
	name      string
	pkg       string
	timestamp string
	hostname  string
	time      float64
	props     [][2]string
	cases     []testcase
}

type testcase struct {
	name, classname string
	time            float64
	result          string // resultOK, resultFailure, resultError, resultSkipped
	typ, message    string // the result element's attributes
	body            string // its text
	out             string // <system-out>: a warning's note
}

// classify maps a verdict's outcome: pass, and a regression check's same
// or improved, are ok; fail and regressed a failure; error an error; warn
// ok with a note; inconclusive (the machine's lateness could explain it),
// skipped, insufficient data and any outcome this benchrun does not know
// skipped (never a pass). Rows without an outcome (older files) read
// their passed column.
func classify(v results.Verdict) (result string, warn bool) {
	outcome := strings.ToLower(strings.TrimSpace(v.Outcome))
	if outcome == "" {
		outcome = results.OutcomeFail
		if v.Passed {
			outcome = results.OutcomePass
		}
	}
	switch outcome {
	case results.OutcomePass, outcomeSame, outcomeImproved:
		return resultOK, false
	case results.OutcomeFail, outcomeRegressed:
		return resultFailure, false
	case results.OutcomeError:
		return resultError, false
	case outcomeWarn:
		return resultOK, true
	default: // skipped, insufficient data, unknown
		return resultSkipped, false
	}
}

// caseName is a verdict's testcase name: the check's name when the plan
// gives one, else the assertion's text ("regression of ttft_p50_ms" for a
// baseline check); a check of a cell's earlier measurement kept beside
// the current one (a failure the re-measurement does not undo) says which.
func caseName(v results.Verdict, current int64) string {
	name := v.Assertion
	if v.Name != "" && v.Level != "regression" {
		name = v.Name
	}
	if m := results.MeasurementOf(v.Measurement); v.Measurement > 0 && m < current {
		name += fmt.Sprintf(" (measurement %d)", m)
	}
	return name
}

// formatValues writes a verdict's values as `name=value` pairs, by name.
func formatValues(vals map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		parts = append(parts, k+"="+vals[k])
	}
	return strings.Join(parts, " ")
}

// verdictCase is the testcase of one verdict.
func verdictCase(v results.Verdict, classname string, secs float64, current int64, inconclusiveFails bool) testcase {
	tc := testcase{name: caseName(v, current), classname: classname, time: secs}
	result, warn := classify(v)
	if v.Outcome == results.OutcomeInconclusive && inconclusiveFails && v.Severity != "warn" {
		result = resultFailure // the run exits 5 on it (a warning never fails it)
	}
	if result == resultOK && !warn {
		return tc
	}
	outcome := v.Outcome
	if outcome == "" {
		outcome = results.OutcomeFail
	}
	var msg []string
	switch {
	case v.Error != "":
		msg = append(msg, "could not be evaluated: "+firstLine(v.Error))
	case outcome == results.OutcomeInconclusive:
		msg = append(msg, "inconclusive: "+v.Explained)
	case outcome == results.OutcomeFail || warn:
		msg = append(msg, "does not hold")
	default:
		msg = append(msg, outcome)
	}
	if vals := formatValues(v.Values); vals != "" {
		msg = append(msg, vals)
	}
	message := strings.Join(msg, ": ")
	if v.Pos != "" {
		message += " (" + v.Pos + ")"
	}

	var body strings.Builder
	line := func(k, val string) {
		if val != "" {
			fmt.Fprintf(&body, "%-10s %s\n", k+":", val)
		}
	}
	line("check", v.Name)
	line("assertion", v.Assertion)
	line("outcome", outcome)
	line("severity", v.Severity)
	line("cell", cellOf(v))
	line("values", formatValues(v.Values))
	line("error", v.Error)
	line("why", v.Explained)
	line("at", v.Pos)
	line("scope", v.Scope)

	if warn {
		tc.out = "warning: " + message + "\n\n" + body.String()
		return tc
	}
	tc.result, tc.typ, tc.message, tc.body = result, outcome, message, body.String()
	return tc
}

func cellOf(v results.Verdict) string {
	switch {
	case v.Cell != "" && v.CellID != "":
		return fmt.Sprintf("%s (%s, attempt %d)", v.Cell, v.CellID, results.AttemptOf(v.Attempt))
	case v.Cell != "":
		return v.Cell
	}
	return v.CellID
}

// cellCase is the testcase of a cell row that is not ok: an error (the
// measurement failed), or skipped for a cell the stage did not measure.
func cellCase(c results.Cell, classname string) testcase {
	tc := testcase{name: caseCell, classname: classname, time: c.DurationS}
	reason := c.Reason
	if reason == "" {
		reason = "status " + c.Status
	}
	var body strings.Builder
	fmt.Fprintf(&body, "%-10s %s (%s, attempt %d)\n", "cell:", pipeline.CellLabel(c), c.CellID, results.AttemptOf(c.Attempt))
	fmt.Fprintf(&body, "%-10s %s\n", "status:", c.Status)
	if c.Reason != "" {
		fmt.Fprintf(&body, "%-10s %s\n", "reason:", c.Reason)
	}
	fmt.Fprintf(&body, "%-10s %d sent, %d completed, %d failed\n", "requests:", c.Requests, c.Completed, c.Failed)
	tc.message, tc.body = firstLine(reason), body.String()
	if c.Status == results.StatusSkipped {
		tc.result, tc.typ = resultSkipped, "cell skipped"
	} else {
		tc.result, tc.typ = resultError, "cell error"
	}
	return tc
}

// className is a cell's testcase class: the stage and the cell label,
// dot-separated ("sweep.128:128.c=4"), which readers that split a class
// at its last dot show as the cell's shape and its load; what else its id
// holds (a repeat, server variables) follows, so that no two cells share
// a class.
func className(c results.Cell) string {
	return classOf(pipeline.CellLabel(c), c.CellID)
}

// classOf is className from a cell's label and id.
func classOf(label, cellID string) string {
	cls := strings.ReplaceAll(label, " ", ".")
	if parts := strings.Split(cellID, "/"); len(parts) > 3 {
		cls += "." + strings.Join(parts[3:], ".")
	}
	return cls
}

// runStatus is how the run ended: the summary's status when it has one (a
// replay's, from the manifest), else derived as the manifest's is; running
// before the end.
func runStatus(sum *pipeline.Summary) string {
	switch {
	case sum == nil:
		return pipeline.RunRunning
	case sum.Status != "":
		return sum.Status
	case sum.Interrupted:
		return pipeline.RunInterrupted
	case sum.ExitCode == pipeline.ExitOK:
		return pipeline.RunOK
	}
	return pipeline.RunFailed
}

// document builds the file's content from the entries and, at the end,
// the run's summary; rec is the run's record (pipeline.RunRecord: its
// identity, first start, tags and metadata, redacted). Everything it reads is what a replay reads too: the
// rows, the run's identity, start and end, its status and its stages (the
// summary's reason, which a replay lacks, is not read).
func document(rec results.Run, entries []*entry, sum *pipeline.Summary) *testsuites {
	start := rec.StartedAt.Round(0).UTC() // the run's first start, a resumed run's too
	status := runStatus(sum)
	var stages []pipeline.StageResult
	inconclusiveFails := false
	if sum != nil {
		stages = sum.Stages
		inconclusiveFails = sum.ExitCode == pipeline.ExitInconclusive
	}

	plan := rec.Plan
	doc := &testsuites{name: strings.TrimSpace("benchrun " + plan)}
	pkg := plan
	if pkg == "" {
		pkg = runSuite
	}
	hostname := rec.Hostname
	if hostname == "" {
		hostname = "unknown"
	}
	set := &suiteSet{
		byName:   map[string]*testsuite{},
		template: testsuite{pkg: pkg, timestamp: start.UTC().Format("2006-01-02T15:04:05"), hostname: hostname, props: runProperties(rec, status)},
	}

	set.addEntries(entries, inconclusiveFails)
	set.addFailedStages(stages)

	// Whether the run finished: never green for a run that did not.
	if why := unfinished(status, stages, set.byName, set.order); why != "" {
		s := set.of(runSuite)
		s.cases = append(s.cases, testcase{
			name: caseRun, classname: runSuite, result: resultError, typ: "run " + status,
			message: firstLine(why), body: why + "\n",
		})
	}

	doc.suites = set.sorted(stages)
	// A suite's time is its stage's, once the summary has it; the time
	// its cells measured until then.
	for _, st := range stages {
		if s := set.byName[suiteName(st.Name)]; s != nil && st.DurationS > 0 {
			s.time = finite(st.DurationS)
		}
	}
	switch {
	case sum != nil && !sum.FinishedAt.IsZero() && status != pipeline.RunRunning && status != pipeline.RunCrashed:
		doc.time = sum.FinishedAt.Round(0).Sub(start).Seconds()
	default:
		for _, s := range doc.suites {
			doc.time += s.time
		}
	}
	return doc
}

// runProperties are every suite's properties: the run's identity, status
// and metadata; empty values are left out.
func runProperties(rec results.Run, status string) [][2]string {
	var props [][2]string
	prop := func(k, v string) {
		if v != "" {
			props = append(props, [2]string{k, v})
		}
	}
	prop("run_id", rec.RunID)
	prop("plan", rec.Plan)
	prop("model", rec.Model)
	prop("hardware", rec.Hardware)
	prop("benchrun_version", rec.BenchrunVersion)
	prop("tags", strings.Join(rec.Tags, " "))
	prop("run_status", status)
	for _, k := range slices.Sorted(maps.Keys(rec.Metadata)) {
		prop("metadata."+k, rec.Metadata[k])
	}
	return props
}

// suiteSet is the document's suites by name, in the order they were first
// needed; each new one copies template's run-wide attributes.
type suiteSet struct {
	byName   map[string]*testsuite
	order    []string
	template testsuite
}

// suiteName is the suite of a stage's rows: the stage's own, the run's
// for rows that name none.
func suiteName(stage string) string {
	if stage == "" {
		return runSuite
	}
	return stage
}

// of returns the suite named name, adding it if it is new.
func (set *suiteSet) of(name string) *testsuite {
	if s := set.byName[name]; s != nil {
		return s
	}
	s := &testsuite{name: name, pkg: set.template.pkg, timestamp: set.template.timestamp, hostname: set.template.hostname, props: set.template.props}
	set.byName[name] = s
	set.order = append(set.order, name)
	return s
}

// addEntries adds the rows' testcases: cell rows first, in the order they
// first came, then the verdicts of stages' and the run's rows, as they
// came.
func (set *suiteSet) addEntries(entries []*entry, inconclusiveFails bool) {
	for _, e := range entries {
		if e.cell == nil {
			continue
		}
		c := *e.cell
		s := set.of(suiteName(e.stage))
		s.time += finite(c.DurationS)
		cls := className(c)
		if c.Status != results.StatusOK {
			s.cases = append(s.cases, cellCase(c, cls))
		}
		for _, v := range e.verdicts {
			s.cases = append(s.cases, verdictCase(v, cls, c.DurationS, results.MeasurementOf(c.Measurement), inconclusiveFails))
		}
	}
	for _, e := range entries {
		if e.cell != nil {
			continue
		}
		s := set.of(suiteName(e.stage))
		for _, v := range e.verdicts {
			// A baseline check is of one cell: its class is the cell's.
			cls := s.name
			if v.CellID != "" {
				cls = classOf(v.Cell, v.CellID)
			}
			s.cases = append(s.cases, verdictCase(v, cls, 0, results.MeasurementOf(v.Measurement), inconclusiveFails))
		}
	}
}

// addFailedStages adds an error testcase for each stage that failed (not
// those that ended with error cells: their cells say so).
func (set *suiteSet) addFailedStages(stages []pipeline.StageResult) {
	for _, st := range stages {
		if st.Status != pipeline.StatusFailed {
			continue
		}
		reason := st.Reason
		if reason == "" {
			reason = "failed"
		}
		s := set.of(suiteName(st.Name))
		s.cases = append(s.cases, testcase{
			name: caseStage, classname: s.name, time: st.DurationS, result: resultError, typ: "stage failed",
			message: fmt.Sprintf("stage %s (%s) failed: %s", st.Name, st.Kind, firstLine(reason)),
			body:    fmt.Sprintf("%-10s %s (%s)\n%-10s %s\n%-10s %s\n", "stage:", st.Name, st.Kind, "status:", st.Status, "reason:", reason),
		})
	}
}

// sorted returns the suites in the stages' order (the plan's, as the
// summary lists them), the others as they came, the run's last.
func (set *suiteSet) sorted(stages []pipeline.StageResult) []*testsuite {
	rank := map[string]int{}
	for i, st := range stages {
		rank[suiteName(st.Name)] = i
	}
	slices.SortStableFunc(set.order, func(a, b string) int {
		ra, oka := rank[a]
		rb, okb := rank[b]
		switch {
		case a == runSuite || b == runSuite:
			return boolCmp(a == runSuite, b == runSuite)
		case oka && okb:
			return ra - rb
		case oka != okb:
			return boolCmp(!oka, !okb)
		}
		return 0
	})
	var suites []*testsuite
	for _, name := range set.order {
		suites = append(suites, set.byName[name])
	}
	return suites
}

// unfinished says why the run did not finish ("" when it did, or when
// what the file already shows says why it failed).
func unfinished(status string, stages []pipeline.StageResult, byName map[string]*testsuite, order []string) string {
	switch status {
	case pipeline.RunOK:
		return ""
	case pipeline.RunRunning, "incomplete":
		return "the run has not finished: benchrun rewrites this file when it ends, so a file left like this is from a run that was killed (benchrun report RUN_DIR writes it afresh)"
	case pipeline.RunCrashed:
		return "the run crashed: it never finished (killed, crashed, or its machine went down); what it measured before is above"
	case pipeline.RunInterrupted:
		return "the run was interrupted before it finished: what it measured before is above"
	}
	for _, name := range order {
		for _, tc := range byName[name].cases {
			if tc.result == resultFailure || tc.result == resultError {
				return "" // the failures and errors above say why
			}
		}
	}
	for _, st := range stages {
		if st.Status == pipeline.StatusError && st.Reason != "" {
			return fmt.Sprintf("the run failed: stage %s: %s", st.Name, st.Reason)
		}
	}
	return "the run " + status + " without a failed check, cell or stage to show (see manifest.json)"
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0
	}
	return x
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
