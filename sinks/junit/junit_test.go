package junit

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

// The file as a reader parses it.
type xSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []xSuite `xml:"testsuite"`
}

type xSuite struct {
	Name      string  `xml:"name,attr"`
	Tests     int     `xml:"tests,attr"`
	Failures  int     `xml:"failures,attr"`
	Errors    int     `xml:"errors,attr"`
	Skipped   int     `xml:"skipped,attr"`
	Time      string  `xml:"time,attr"`
	Timestamp string  `xml:"timestamp,attr"`
	Hostname  string  `xml:"hostname,attr"`
	Props     []xProp `xml:"properties>property"`
	Cases     []xCase `xml:"testcase"`
}

type xProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xCase struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *xResult `xml:"failure"`
	Error     *xResult `xml:"error"`
	Skipped   *xResult `xml:"skipped"`
	SystemOut *string  `xml:"system-out"`
}

type xResult struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func (c xCase) result() string {
	switch {
	case c.Failure != nil:
		return "failure"
	case c.Error != nil:
		return "error"
	case c.Skipped != nil:
		return "skipped"
	}
	return "ok"
}

// parse reads a file and checks what no schema can: the counts are those
// of the testcases, and the root's the sums of the suites'.
func parse(t *testing.T, b []byte) xSuites {
	t.Helper()
	var doc xSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b)
	}
	var tests, failures, errors int
	for _, s := range doc.Suites {
		n := map[string]int{}
		for _, c := range s.Cases {
			n[c.result()]++
		}
		if s.Tests != len(s.Cases) || s.Failures != n["failure"] || s.Errors != n["error"] || s.Skipped != n["skipped"] {
			t.Errorf("suite %s says tests=%d failures=%d errors=%d skipped=%d; its testcases: %d, %v", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), n)
		}
		tests, failures, errors = tests+s.Tests, failures+s.Failures, errors+s.Errors
	}
	if doc.Tests != tests || doc.Failures != failures || doc.Errors != errors {
		t.Errorf("root says tests=%d failures=%d errors=%d; the suites sum to %d, %d, %d", doc.Tests, doc.Failures, doc.Errors, tests, failures, errors)
	}
	return doc
}

func (d xSuites) suite(name string) *xSuite {
	for i := range d.Suites {
		if d.Suites[i].Name == name {
			return &d.Suites[i]
		}
	}
	return nil
}

func (d xSuites) cases() []xCase {
	var out []xCase
	for _, s := range d.Suites {
		out = append(out, s.Cases...)
	}
	return out
}

// fixtureRecord is the fixture run's identity, for files that do not
// depend on the machine the test runs on.
func fixtureRecord() results.Run { return resultstest.Run() }

var finished = resultstest.T0.Add(90 * time.Second)

func runInfo(dir string) *pipeline.RunInfo {
	return &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Attempt: 1}
}

// group is what one Verdicts call hands over: a cell's row and its
// verdicts, or (cell without an id) the verdicts of a stage's rows.
type group struct {
	cell     results.Cell
	verdicts []results.Verdict
}

func groupsOf(pts ...resultstest.Point) []group {
	var out []group
	for _, p := range pts {
		out = append(out, group{p.Cell, p.Verdicts})
	}
	return out
}

// drive runs the sink over the groups and stops it with sum (nil: the
// file as it stands while the run goes on), returning junit.xml.
func drive(t *testing.T, groups []group, sum *pipeline.Summary) []byte {
	t.Helper()
	dir := t.TempDir()
	ri := runInfo(dir)
	o := New()
	o.record = fixtureRecord
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	feed(t, o, groups)
	if sum != nil {
		sum.Run = ri
		if err := o.Stop(sum); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func feed(t *testing.T, o *Sink, groups []group) {
	t.Helper()
	for _, g := range groups {
		if g.cell.CellID != "" {
			if err := o.Cell(g.cell, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Verdicts(g.cell, g.verdicts); err != nil {
			t.Fatal(err)
		}
	}
}

// cell is a measured cell row of stage sweep.
func cell(id string, isl, osl, conc int64, status, reason string) results.Cell {
	return results.Cell{
		RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: id, Attempt: 1, StartedAt: resultstest.T0,
		ISL: isl, OSL: osl, Concurrency: conc, Requests: 4, Completed: 4, DurationS: 1.25, Status: status, Reason: reason,
	}
}

func verdict(c results.Cell, assertion, outcome string, values map[string]string) results.Verdict {
	return results.Verdict{
		RunID: c.RunID, Plan: c.Plan, Stage: c.Stage, CellID: c.CellID, Attempt: c.Attempt, Cell: pipeline.CellLabel(c),
		JudgedAt: resultstest.T0, Assertion: assertion, Pos: "plan.cue:20:13", Scope: "stage",
		Outcome: outcome, Passed: outcome == results.OutcomePass, Values: values,
	}
}

// outcomesGroup is one cell judged by a check of every outcome.
func outcomesGroup() []group {
	c := cell("sweep/128:128/c4", 128, 128, 4, results.StatusOK, "")
	v := func(a, o string) results.Verdict {
		return verdict(c, a, o, map[string]string{"itl_p99_ms": "40", "itl_p50_ms": "13.25"})
	}
	errV := v("ttft_p99_ms < 500", results.OutcomeError)
	errV.Values = map[string]string{"ttft_p99_ms": "null"}
	errV.Error = "ttft_p99_ms is null: not measured (every request failed)"
	legacyFail := v("legacy failed", "")
	legacyPass := v("legacy passed", "")
	legacyPass.Passed = true
	named := v("itl_p99_ms < 3*itl_p50_ms", results.OutcomeFail)
	named.Name, named.Severity = "itl tail", "fail"
	return []group{{c, []results.Verdict{
		named,
		v("passes", results.OutcomePass),
		v("itl_p99_ms < 2*itl_p50_ms", results.OutcomeFail),
		errV,
		v("regresses", "regressed"),
		v("warns", "warn"),
		v("not run", "skipped"),
		v("too few runs", "insufficient data"),
		v("from a later benchrun", "mystery"),
		legacyFail,
		legacyPass,
	}}}
}

// escapingGroup is a cell whose texts hold markup, quotes, non-ASCII,
// line breaks, a control character and a byte that is not UTF-8.
const trickyAssertion = `model == "llama-日本" && ttft_ms < 50 && 'a' > 'b'`

func escapingGroup() []group {
	c := cell("sweep/16:4/c1", 16, 4, 1, results.StatusError, "HTTP 500: <html>Internal &amp; \"error\"</html>\nsecond line é\x01 \xff")
	v := verdict(c, trickyAssertion, results.OutcomeFail, map[string]string{"model": `llama-日本 <"x">`, "ttft_ms": "72.5"})
	return []group{{c, []results.Verdict{v}}}
}

// stageGroup is the verdicts of the whole of stage sweep's rows.
func stageGroup() group {
	c := results.Cell{RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", Attempt: 1}
	v := results.Verdict{RunID: c.RunID, Plan: c.Plan, Stage: "sweep", Attempt: 1, Cell: "stage sweep", JudgedAt: resultstest.T0,
		Assertion: "max(decode_tok_s) > 100", Pos: "plan.cue:30:5", Scope: "stage", Outcome: results.OutcomeFail,
		Values: map[string]string{"max(decode_tok_s)": "88"}}
	return group{c, []results.Verdict{v}}
}

func failedSum(stages ...pipeline.StageResult) *pipeline.Summary {
	return &pipeline.Summary{ExitCode: pipeline.ExitInfra, FinishedAt: finished, Stages: stages}
}

// scenarios are the files the tests read, each validated against the
// schema by TestSchema.
var scenarios = []struct {
	name   string
	groups func() []group
	sum    func() *pipeline.Summary // nil: while the run goes on
}{
	{"fixture", func() []group { return groupsOf(append(resultstest.Points(), resultstest.Unmeasured())...) }, func() *pipeline.Summary {
		return &pipeline.Summary{ExitCode: pipeline.ExitInfra, FinishedAt: finished, Stages: []pipeline.StageResult{
			{Name: "server", Kind: "launch", Status: "ok", DurationS: 1.5}, {Name: "sweep", Kind: "sweep", Status: "error", Reason: "1 cell error", DurationS: 85.25}}}
	}},
	{"outcomes", outcomesGroup, func() *pipeline.Summary {
		return &pipeline.Summary{ExitCode: pipeline.ExitAssertion, FinishedAt: finished, Stages: []pipeline.StageResult{{Name: "sweep", Kind: "sweep", Status: "ok"}}}
	}},
	{"escaping", escapingGroup, func() *pipeline.Summary {
		return failedSum(pipeline.StageResult{Name: "sweep", Kind: "sweep", Status: "error"})
	}},
	{"cells", func() []group {
		return []group{
			{cell("sweep/a", 16, 4, 1, results.StatusOK, ""), nil},
			{cell("sweep/b", 16, 4, 2, results.StatusError, "8 of 8 requests failed; first: HTTP 500"), nil},
			{cell("sweep/c", 600, 8, 1, results.StatusSkipped, "600+8 tokens do not fit the server's 512-token context"), nil},
		}
	}, func() *pipeline.Summary {
		return failedSum(pipeline.StageResult{Name: "sweep", Kind: "sweep", Status: "error"})
	}},
	{"stage-verdicts", func() []group { return append(groupsOf(resultstest.Points()[:2]...), stageGroup()) }, func() *pipeline.Summary {
		return &pipeline.Summary{ExitCode: pipeline.ExitAssertion, FinishedAt: finished}
	}},
	{"interrupted-no-rows", func() []group { return nil }, func() *pipeline.Summary {
		return &pipeline.Summary{Interrupted: true, ExitCode: pipeline.ExitInterrupted, FinishedAt: finished, Reason: "interrupt", Stages: []pipeline.StageResult{
			{Name: "server", Kind: "launch", Status: "ok"}, {Name: "sweep", Kind: "sweep", Status: "skipped", Reason: "interrupted"}}}
	}},
	{"launch-failed", func() []group { return nil }, func() *pipeline.Summary {
		return failedSum(pipeline.StageResult{Name: "server", Kind: "launch", Status: "failed", Reason: "server exited with status 1 before it was healthy\nlog tail: bind: address in use", DurationS: 2},
			pipeline.StageResult{Name: "sweep", Kind: "sweep", Status: "skipped", Reason: "dependency server failed"})
	}},
	{"failed-no-rows", func() []group { return nil }, func() *pipeline.Summary { return failedSum() }},
	{"ok-no-rows", func() []group { return nil }, func() *pipeline.Summary { return &pipeline.Summary{FinishedAt: finished} }},
	{"running", func() []group { return groupsOf(resultstest.Points()[:2]...) }, nil},
	{"crashed", func() []group { return groupsOf(resultstest.Points()[:2]...) }, func() *pipeline.Summary {
		return &pipeline.Summary{Status: pipeline.RunCrashed}
	}},
}

func scenario(t *testing.T, name string) []byte {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			var sum *pipeline.Summary
			if sc.sum != nil {
				sum = sc.sum()
			}
			return drive(t, sc.groups(), sum)
		}
	}
	t.Fatalf("no scenario %q", name)
	return nil
}

// The mapping of outcomes: pass ok; fail and regressed failures; error an
// error; warn ok with a note; skipped, insufficient data and an unknown
// outcome skipped; rows without an outcome read their passed column.
func TestOutcomes(t *testing.T) {
	doc := parse(t, scenario(t, "outcomes"))
	want := map[string]struct{ result, typ, msg string }{
		"itl tail":                  {"failure", "fail", "does not hold: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"passes":                    {"ok", "", ""},
		"itl_p99_ms < 2*itl_p50_ms": {"failure", "fail", "does not hold: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"ttft_p99_ms < 500":         {"error", "error", "could not be evaluated: ttft_p99_ms is null: not measured (every request failed): ttft_p99_ms=null (plan.cue:20:13)"},
		"regresses":                 {"failure", "regressed", "regressed: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"warns":                     {"ok", "", ""},
		"not run":                   {"skipped", "", "skipped: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"too few runs":              {"skipped", "", "insufficient data: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"from a later benchrun":     {"skipped", "", "mystery: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"legacy failed":             {"failure", "fail", "does not hold: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)"},
		"legacy passed":             {"ok", "", ""},
	}
	cases := doc.cases()
	if len(cases) != len(want) {
		t.Fatalf("%d testcases, want %d", len(cases), len(want))
	}
	for _, c := range cases {
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected testcase %q", c.Name)
			continue
		}
		if c.Classname != "sweep.128:128.c=4" || c.Time != "1.250" {
			t.Errorf("%s: classname %q time %q, want sweep.128:128.c=4, 1.250", c.Name, c.Classname, c.Time)
		}
		if got := c.result(); got != w.result {
			t.Errorf("%s: %s, want %s", c.Name, got, w.result)
		}
		var r *xResult
		switch c.result() {
		case "failure":
			r = c.Failure
		case "error":
			r = c.Error
		case "skipped":
			r = c.Skipped
		}
		if r != nil {
			if r.Message != w.msg || (w.typ != "" && r.Type != w.typ) {
				t.Errorf("%s: type %q message %q, want %q %q", c.Name, r.Type, r.Message, w.typ, w.msg)
			}
			assertion := c.Name
			if c.Name == "itl tail" {
				assertion = "itl_p99_ms < 3*itl_p50_ms" // a named check: its name, its text in the body
			}
			for _, part := range []string{"assertion: " + assertion, "at:        plan.cue:20:13", "cell:      sweep 128:128 c=4 (sweep/128:128/c4, attempt 1)"} {
				if !strings.Contains(r.Body, part) {
					t.Errorf("%s: body lacks %q:\n%s", c.Name, part, r.Body)
				}
			}
		}
		if c.Name == "warns" {
			if c.SystemOut == nil || !strings.HasPrefix(*c.SystemOut, "warning: does not hold: itl_p50_ms=13.25 itl_p99_ms=40 (plan.cue:20:13)") {
				t.Errorf("warns: system-out %v, want the warning", c.SystemOut)
			}
		} else if c.SystemOut != nil {
			t.Errorf("%s: a system-out", c.Name)
		}
	}
	s := doc.Suites[0]
	if len(doc.Suites) != 1 || s.Name != "sweep" || s.Failures != 4 || s.Errors != 1 || s.Skipped != 3 || s.Time != "1.250" {
		t.Errorf("suites %+v", doc.Suites)
	}
	golden.Check(t, "outcomes.xml", scenario(t, "outcomes"))
}

// A cell that is not ok is a testcase of its own: an error with its
// reason (the measurement failed), or skipped; an ok cell without
// verdicts is none.
func TestCells(t *testing.T) {
	doc := parse(t, scenario(t, "cells"))
	cases := doc.cases()
	if len(cases) != 2 {
		t.Fatalf("%d testcases, want 2: %+v", len(cases), cases)
	}
	e, s := cases[0], cases[1]
	if e.Name != caseCell || e.Classname != "sweep.16:4.c=2" || e.Error == nil || e.Error.Type != "cell error" ||
		e.Error.Message != "8 of 8 requests failed; first: HTTP 500" || !strings.Contains(e.Error.Body, "requests:  4 sent, 4 completed, 0 failed") {
		t.Errorf("error cell: %+v %+v", e, e.Error)
	}
	if s.Name != caseCell || s.Classname != "sweep.600:8.c=1" || s.Skipped == nil || !strings.Contains(s.Skipped.Message, "512-token context") {
		t.Errorf("skipped cell: %+v %+v", s, s.Skipped)
	}
	// The stage ended with error cells, which say so: no testcase of the
	// stage or the run besides.
	if doc.Errors != 1 || doc.suite(runSuite) != nil {
		t.Errorf("errors %d, suites %+v", doc.Errors, doc.Suites)
	}
}

// A run that ended without rows is never an empty green file; a run that
// did not finish never a green one.
func TestRunOutcome(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		suite    string // where the error testcase is
		name     string
		msg      string
		errors   int
	}{
		{"interrupted-no-rows", runSuite, caseRun, "the run was interrupted before it finished", 1},
		{"launch-failed", "server", caseStage, "stage server (launch) failed: server exited with status 1 before it was healthy", 1},
		{"failed-no-rows", runSuite, caseRun, "the run failed without a failed check, cell or stage to show", 1},
		{"running", runSuite, caseRun, "the run has not finished", 1},
		{"crashed", runSuite, caseRun, "the run crashed", 1},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			doc := parse(t, scenario(t, tc.scenario))
			if doc.Errors != tc.errors {
				t.Errorf("%d errors, want %d", doc.Errors, tc.errors)
			}
			s := doc.suite(tc.suite)
			if s == nil || len(s.Cases) != 1 || s.Cases[0].Name != tc.name || s.Cases[0].Error == nil || !strings.HasPrefix(s.Cases[0].Error.Message, tc.msg) {
				t.Fatalf("suite %s: %+v, want one error testcase %q saying %q", tc.suite, s, tc.name, tc.msg)
			}
			if doc.Suites[len(doc.Suites)-1].Name != tc.suite && tc.suite == runSuite {
				t.Errorf("the run's suite is not last")
			}
		})
	}
	doc := parse(t, scenario(t, "ok-no-rows"))
	if doc.Tests != 0 || len(doc.Suites) != 0 {
		t.Errorf("an ok run without rows: %+v", doc)
	}
}

// Texts reach readers as they were: markup, quotes and non-ASCII escaped
// or kept, line breaks in attributes kept as references, what XML 1.0
// cannot carry replaced.
func TestEscaping(t *testing.T) {
	b := scenario(t, "escaping")
	doc := parse(t, b)
	cases := doc.cases()
	if len(cases) != 2 {
		t.Fatalf("%d testcases", len(cases))
	}
	if got := cases[0].Error.Message; got != "HTTP 500: <html>Internal &amp; \"error\"</html>" {
		t.Errorf("cell error message %q", got)
	}
	if got := cases[0].Error.Body; !strings.Contains(got, "second line é\uFFFD \uFFFD") {
		t.Errorf("cell error body %q", got)
	}
	f := cases[1]
	if f.Name != trickyAssertion {
		t.Errorf("name %q, want %q", f.Name, trickyAssertion)
	}
	if want := `does not hold: model=llama-日本 <"x"> ttft_ms=72.5 (plan.cue:20:13)`; f.Failure.Message != want {
		t.Errorf("message %q, want %q", f.Failure.Message, want)
	}
	for _, raw := range []string{`&lt;html&gt;`, `&quot;x&quot;`, `日本`, `&amp;amp;`} {
		if !bytes.Contains(b, []byte(raw)) {
			t.Errorf("the file lacks %s", raw)
		}
	}
	golden.Check(t, "escaping.xml", b)
}

// Verdicts of a stage's rows (no cell id) are testcases of the stage,
// after its cells; the suite's time is its cells'.
func TestStageVerdicts(t *testing.T) {
	doc := parse(t, scenario(t, "stage-verdicts"))
	s := doc.suite("sweep")
	if s == nil || len(s.Cases) != 5 {
		t.Fatalf("%+v", doc)
	}
	last := s.Cases[4]
	if last.Name != "max(decode_tok_s) > 100" || last.Classname != "sweep" || last.Time != "0.000" || last.Failure == nil ||
		last.Failure.Message != "does not hold: max(decode_tok_s)=88 (plan.cue:30:5)" {
		t.Errorf("stage verdict %+v %+v", last, last.Failure)
	}
}

func TestGolden(t *testing.T) {
	b := scenario(t, "fixture")
	doc := parse(t, b)
	if doc.Failures != 1 || doc.Errors != 2 || doc.Tests != 14 || doc.Time != "90.000" || doc.Name != "benchrun fixture" {
		t.Errorf("root %+v", doc)
	}
	s := doc.Suites[0]
	if s.Timestamp != "2026-12-01T04:00:00" || s.Hostname != "bench-host" {
		t.Errorf("suite %s: timestamp %q hostname %q", s.Name, s.Timestamp, s.Hostname)
	}
	golden.Check(t, "junit.xml", b)
}

// TestSchema validates every scenario's file with xmllint against the
// schema CI readers hold JUnit XML to (testdata/junit.xsd).
func TestSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is missing (Debian package libxml2-utils): CI must validate junit.xml; ./test.sh installs it")
		}
		t.Skip("xmllint is missing (Debian package libxml2-utils): run ./test.sh, which installs it")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, scenario(t, sc.name), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
			if err != nil {
				b, _ := os.ReadFile(path)
				t.Fatalf("xmllint: %v\n%s\n%s", err, out, b)
			}
		})
	}
	// The schema is no rubber stamp: it refuses what readers would.
	for name, bad := range map[string]string{
		"no package":   `<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="0" timestamp="2026-12-01T04:00:00" hostname="h" id="0"><properties/><system-out/><system-err/></testsuite></testsuites>`,
		"zoned time":   `<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="0" timestamp="2026-12-01T04:00:00Z" hostname="h" id="0" package="p"><properties/><system-out/><system-err/></testsuite></testsuites>`,
		"two results":  `<testsuites><testsuite name="s" tests="1" failures="1" errors="1" time="0" timestamp="2026-12-01T04:00:00" hostname="h" id="0" package="p"><properties/><testcase name="a" classname="c" time="0"><failure type="t"/><error type="t"/></testcase><system-out/><system-err/></testsuite></testsuites>`,
		"root skipped": `<testsuites skipped="0"></testsuites>`,
	} {
		path := filepath.Join(t.TempDir(), "bad.xml")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).Run(); err == nil {
			t.Errorf("%s: the schema accepts %s", name, bad)
		}
	}
}

// A replay (the same rows, a SinkEnv with Replay set, the summary as a
// replay rebuilds it from the manifest) writes the live run's bytes, at
// the --output prefix too.
func TestReplayIdentical(t *testing.T) {
	base := t.TempDir()
	groups := append(groupsOf(append(resultstest.Points(), resultstest.Unmeasured())...), stageGroup())
	stages := []pipeline.StageResult{{Name: "server", Kind: "launch", Status: "ok", DurationS: 1.5}, {Name: "sweep", Kind: "sweep", Status: "error", Reason: "1 cell error", DurationS: 85.25}}
	run := func(dir string, env func(*pipeline.RunInfo) *pipeline.SinkEnv, sum *pipeline.Summary) (file, prefixed []byte) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ri := runInfo(dir)
		ri.StartedAt = resultstest.T0.Add(123456789 * time.Nanosecond) // as a live run's clock gives it
		o := New()
		o.Prefix = filepath.Join(dir, "out", "result")
		if err := o.Start(env(ri)); err != nil {
			t.Fatal(err)
		}
		feed(t, o, groups)
		sum.Run = ri
		if err := o.Stop(sum); err != nil {
			t.Fatal(err)
		}
		f, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		p, err := os.ReadFile(o.Prefix + ".junit.xml")
		if err != nil {
			t.Fatal(err)
		}
		return f, p
	}
	end := finished.Add(987654321 * time.Nanosecond)
	live, liveOut := run(filepath.Join(base, "live"), pipelinetest.LiveEnv,
		&pipeline.Summary{ExitCode: pipeline.ExitInfra, Reason: "stage sweep: 1 cell error", FinishedAt: end, Stages: stages, Cells: 7})
	replayed, replayedOut := run(filepath.Join(base, "replay"), func(ri *pipeline.RunInfo) *pipeline.SinkEnv {
		return &pipeline.SinkEnv{Run: ri, Progress: &bytes.Buffer{}, Replay: true, Prior: func() (*pipeline.Rows, error) { return nil, nil }}
	}, &pipeline.Summary{Status: pipeline.RunFailed, ExitCode: pipeline.ExitInfra, FinishedAt: end.UTC(), Stages: stages, Cells: 7})
	if !bytes.Equal(live, replayed) {
		t.Errorf("the replay differs:\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
	if !bytes.Equal(live, liveOut) || !bytes.Equal(replayed, replayedOut) {
		t.Errorf("PREFIX.junit.xml differs from junit.xml")
	}
	if doc := parse(t, live); doc.Time != "90.864" {
		t.Errorf("run time %s, want 90.864 (its end less its start)", doc.Time)
	}
}

// A resumed run starts with the rows earlier attempts stored (as a replay
// feeds them): its file is a replay's.
func TestResumedIsReplay(t *testing.T) {
	pts := resultstest.Points()
	first := []group{{pts[0].Cell, pts[0].Verdicts}}
	bad := resultstest.Unmeasured() // attempt 1 could not measure it
	bad.Cell.Attempt, bad.Verdicts[0].Attempt = 1, 1
	first = append(first, group{bad.Cell, bad.Verdicts}, stageGroup())
	again := resultstest.Unmeasured() // attempt 2 measures it again, and it errs again, without verdicts
	again.Cell.Attempt, again.Cell.Reason = 2, "HTTP 503 this time"
	stage2 := stageGroup()
	stage2.cell.Attempt, stage2.verdicts[0].Attempt, stage2.verdicts[0].Values = 2, 2, map[string]string{"max(decode_tok_s)": "99"}
	second := []group{{again.Cell, nil}, {pts[1].Cell, pts[1].Verdicts}, stage2}

	var prior pipeline.Rows
	for _, g := range first {
		if g.cell.CellID != "" {
			prior.Cells = append(prior.Cells, g.cell)
		}
		prior.Verdicts = append(prior.Verdicts, g.verdicts...)
	}
	sum := func(ri *pipeline.RunInfo) *pipeline.Summary {
		return &pipeline.Summary{Run: ri, Status: pipeline.RunFailed, ExitCode: pipeline.ExitInfra, FinishedAt: finished}
	}
	// The run's first start is the run record's (pipeline.RunRecord gives
	// a resumed run the manifest's; the sinks conformance test runs a
	// real resume): the fixture's record here, on both sides.
	liveDir := t.TempDir()
	ri := runInfo(liveDir)
	ri.StartedAt, ri.Resumed, ri.Attempt = resultstest.T0.Add(time.Hour), true, 2 // the attempt's start
	o := New()
	o.record = fixtureRecord
	if err := o.Start(&pipeline.SinkEnv{Run: ri, Progress: &bytes.Buffer{}, Prior: func() (*pipeline.Rows, error) { return &prior, nil }}); err != nil {
		t.Fatal(err)
	}
	feed(t, o, second)
	if err := o.Stop(sum(ri)); err != nil {
		t.Fatal(err)
	}
	live, err := os.ReadFile(filepath.Join(liveDir, FileName))
	if err != nil {
		t.Fatal(err)
	}

	replayDir := t.TempDir()
	rri := runInfo(replayDir)
	rri.Resumed, rri.Attempt = true, 2
	r := New()
	r.record = fixtureRecord
	if err := r.Start(&pipeline.SinkEnv{Run: rri, Progress: &bytes.Buffer{}, Replay: true, Prior: func() (*pipeline.Rows, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	feed(t, r, append(first, second...))
	if err := r.Stop(sum(rri)); err != nil {
		t.Fatal(err)
	}
	replayed, err := os.ReadFile(filepath.Join(replayDir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(live, replayed) {
		t.Errorf("the resumed run's file differs from a replay's:\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
	doc := parse(t, live)
	if doc.Suites[0].Timestamp != "2026-12-01T04:00:00" {
		t.Errorf("timestamp %s, want the run's first start", doc.Suites[0].Timestamp)
	}
	// The re-measured cell shows its latest row only (no verdicts: the
	// attempt judged none), the stage its latest judging.
	var names []string
	for _, c := range doc.cases() {
		names = append(names, c.Name)
		if c.Name == "max(decode_tok_s) > 100" && !strings.Contains(c.Failure.Message, "=99") {
			t.Errorf("stage verdict of attempt 1 kept: %s", c.Failure.Message)
		}
		if c.Name == caseCell && c.Error.Message != "HTTP 503 this time" {
			t.Errorf("cell row of attempt 1 kept: %s", c.Error.Message)
		}
	}
	if want := "itl_p99_ms < 2*itl_p50_ms,status == \"ok\",cell measured,itl_p99_ms < 2*itl_p50_ms,status == \"ok\",max(decode_tok_s) > 100"; strings.Join(names, ",") != want {
		t.Errorf("testcases %s\nwant      %s", strings.Join(names, ","), want)
	}
}

// The file is current while the run goes on, and never green before the
// end.
func TestWrittenAsCellsFinish(t *testing.T) {
	dir := t.TempDir()
	o := New()
	o.record = fixtureRecord
	if err := o.Start(pipelinetest.LiveEnv(runInfo(dir))); err != nil {
		t.Fatal(err)
	}
	read := func() xSuites {
		b, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		return parse(t, b)
	}
	if doc := read(); doc.Tests != 1 || doc.Errors != 1 {
		t.Fatalf("at start: %+v", doc)
	}
	for i, p := range resultstest.Points()[:3] {
		feed(t, o, groupsOf(p))
		if doc := read(); doc.Tests != 1+2*(i+1) || doc.Errors != 1 {
			t.Fatalf("after cell %d: %d tests, %d errors", i+1, doc.Tests, doc.Errors)
		}
	}
	if err := o.Stop(&pipeline.Summary{Run: runInfo(dir), FinishedAt: finished}); err != nil {
		t.Fatal(err)
	}
	if doc := read(); doc.Tests != 6 || doc.Errors != 0 || doc.Failures != 0 {
		t.Fatalf("at the end: %+v", doc)
	}
}

func TestDefaultWhen(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		want bool
	}{{"true", true}, {"", false}, {"false", false}, {"1", false}} {
		t.Setenv("CI", tc.ci)
		if got := Kind.DefaultWhen(); got != tc.want {
			t.Errorf("CI=%q: DefaultWhen() = %v, want %v", tc.ci, got, tc.want)
		}
	}
	if Kind.Default {
		t.Error("junit is part of every run, not only in CI")
	}
}

func TestNew(t *testing.T) {
	s, err := Kind.New(pipeline.SinkSpec{Kind: "junit", Name: "junit", Params: map[string]any{"prefix": "out/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.(*Sink); o.Prefix != "out/x" {
		t.Errorf("prefix %q", o.Prefix)
	}
	if _, err := Kind.New(pipeline.SinkSpec{Kind: "junit", Name: "junit", Params: map[string]any{"prefx": "x"}}); err == nil || !strings.Contains(err.Error(), "prefx") {
		t.Errorf("an unknown parameter: %v", err)
	}
}

// baselineGroups are two cells judged against their history (the
// baseline's verdict rows come after the run, as a stage's, each naming
// its cell), and a third cell measured twice: its first measurement
// failed a check the machine could not explain, its second passed it
// and left another inconclusive.
func baselineGroups() []group {
	a := cell("sweep/64:32/c1", 64, 32, 1, results.StatusOK, "")
	b := cell("sweep/64:32/c4", 64, 32, 4, results.StatusOK, "")
	m1 := cell("sweep/256:32/c4", 256, 32, 4, results.StatusOK, "")
	m1.Measurement = 1
	m2 := m1
	m2.Measurement = 2
	row := func(c results.Cell, assertion, outcome string) results.Verdict {
		v := verdict(c, assertion, outcome, nil)
		v.Measurement = c.Measurement
		return v
	}
	inc := row(m2, "itl_p99_ms < 4*itl_p50_ms", results.OutcomeInconclusive)
	inc.Explained = "the check failed by 1.5; the machine ran an event loop's tasks up to 4.9 ms late (p99) during the cell"
	reg := func(c results.Cell, metric, outcome string) results.Verdict {
		v := verdict(c, "regression of "+metric, outcome, map[string]string{"outcome": outcome})
		v.Name, v.Level, v.Scope, v.Measurement = metric, "regression", "plan", results.MeasurementOf(c.Measurement)
		return v
	}
	stage := results.Cell{RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", Attempt: 1}
	return []group{
		{a, nil}, {b, nil},
		{m1, []results.Verdict{row(m1, "ttft_ms < 40", results.OutcomeFail), row(m1, "itl_p99_ms < 4*itl_p50_ms", results.OutcomePass)}},
		{m2, []results.Verdict{row(m2, "ttft_ms < 40", results.OutcomePass), inc}},
		{stage, []results.Verdict{
			reg(a, "ttft_p50_ms", "same"), reg(b, "ttft_p50_ms", "regressed"),
			reg(a, "tpot_p50_ms", "improved"), reg(b, "tpot_p50_ms", "inconclusive"),
			reg(m2, "ttft_p50_ms", "same"),
		}},
	}
}

// TestBaselineAndMeasurements: one testcase per (stage, cell, point,
// metric), named so that a CI view keeps them apart (a regression check
// in its cell's class, never two cases of one class and name); a
// regression check's same (and improved) is a pass; inconclusive is
// skipped with its reason, or a failure when the run exits 5 on it; a
// check that failed on a cell's first measurement stays a failure beside
// the second measurement's pass.
func TestBaselineAndMeasurements(t *testing.T) {
	for _, exit := range []int{pipeline.ExitAssertion, pipeline.ExitInconclusive} {
		doc := parse(t, drive(t, baselineGroups(), &pipeline.Summary{ExitCode: exit, FinishedAt: finished,
			Stages: []pipeline.StageResult{{Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 5}}}))
		seen := map[[2]string]bool{}
		got := map[[2]string]string{}
		for _, c := range doc.cases() {
			k := [2]string{c.Classname, c.Name}
			if seen[k] {
				t.Errorf("exit %d: two testcases of class %q named %q", exit, c.Classname, c.Name)
			}
			seen[k] = true
			got[k] = c.result()
			if c.Skipped != nil && strings.Contains(c.Name, "itl_p99") && !strings.Contains(c.Skipped.Message, "inconclusive: the check failed by 1.5; the machine ran") {
				t.Errorf("inconclusive message %q", c.Skipped.Message)
			}
		}
		inconclusive := "skipped"
		if exit == pipeline.ExitInconclusive {
			inconclusive = "failure"
		}
		want := map[[2]string]string{
			{"sweep.64:32.c=1", "regression of ttft_p50_ms"}:     "ok",
			{"sweep.64:32.c=4", "regression of ttft_p50_ms"}:     "failure",
			{"sweep.64:32.c=1", "regression of tpot_p50_ms"}:     "ok",
			{"sweep.64:32.c=4", "regression of tpot_p50_ms"}:     inconclusive,
			{"sweep.256:32.c=4", "regression of ttft_p50_ms"}:    "ok",
			{"sweep.256:32.c=4", "ttft_ms < 40 (measurement 1)"}: "failure",
			{"sweep.256:32.c=4", "ttft_ms < 40"}:                 "ok",
			{"sweep.256:32.c=4", "itl_p99_ms < 4*itl_p50_ms"}:    inconclusive,
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("exit %d: %s %q: %q, want %q (all: %v)", exit, k[0], k[1], got[k], w, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("exit %d: %d testcases, want %d: %v", exit, len(got), len(want), got)
		}
	}
}
