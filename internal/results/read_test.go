package results_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// The latest rule: a cell's current row is the one of its highest attempt;
// rows without an attempt (files before schema version 2) count as 1, and
// among rows of one attempt the later wins. Requests and verdicts follow
// their cell row's attempt.
func TestLatestRule(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cells := []results.Cell{
		{CellID: "a", Status: "ok"},                   // old file: attempt 0 = 1
		{CellID: "b", Status: "error"},                // old file, then re-measured by an old resume
		{CellID: "c", Attempt: 1, Status: "error"},    // interrupted
		{CellID: "b", Status: "ok"},                   // old resume's row: same attempt, later
		{CellID: "c", Attempt: 2, Status: "skipped"},  // interrupted again
		{CellID: "c", Attempt: 3, Status: "ok"},       // done
		{CellID: "d", Attempt: 2, Status: "ok"},       // first measured by attempt 2
		{CellID: "c", Attempt: 1, Status: "late-dup"}, // an attempt-1 row read after the others
	}
	var got []string
	for _, c := range results.LatestCells(cells) {
		got = append(got, fmt.Sprintf("%s:%d:%s", c.CellID, results.AttemptOf(c.Attempt), c.Status))
	}
	if want := "[a:1:ok b:1:ok c:3:ok d:2:ok]"; fmt.Sprint(got) != want {
		t.Errorf("LatestCells = %v, want %s", got, want)
	}

	reqs := []results.Request{{CellID: "c", Attempt: 1, Seq: 0}, {CellID: "c", Attempt: 3, Seq: 0}, {CellID: "c", Attempt: 3, Seq: 1}, {CellID: "a", Seq: 0}, {CellID: "x", Seq: 0}}
	by := results.RequestsOf(results.LatestCells(cells), reqs)
	if len(by["c"]) != 2 || by["c"][0].Attempt != 3 || len(by["a"]) != 1 || len(by["x"]) != 0 {
		t.Errorf("RequestsOf = %v; want c's two attempt-3 requests, a's one, none for x", by)
	}

	vs := []results.Verdict{
		{CellID: "c", Attempt: 1, JudgedAt: t0, Assertion: "x", Passed: false},
		{CellID: "c", Attempt: 3, JudgedAt: t0.Add(-time.Hour), Assertion: "x", Passed: true}, // clocks may lie; the attempt decides
		{CellID: "b", JudgedAt: t0, Assertion: "y", Passed: false},
		{CellID: "b", JudgedAt: t0.Add(time.Minute), Assertion: "y", Passed: true},
	}
	var vgot []string
	for _, v := range results.LatestVerdicts(vs) {
		vgot = append(vgot, fmt.Sprintf("%s:%d:%v", v.CellID, results.AttemptOf(v.Attempt), v.Passed))
	}
	if want := "[c:3:true b:1:true]"; fmt.Sprint(vgot) != want {
		t.Errorf("LatestVerdicts = %v, want %s", vgot, want)
	}
}

// A confirmation (baseline.confirm's re-measurement, measurement 2)
// supersedes the measurement it confirmed within the same attempt, also
// when it is read first; its requests are the cell's, the first's are
// not. A later attempt still beats both.
func TestLatestRuleMeasurement(t *testing.T) {
	cells := []results.Cell{
		{CellID: "a", Attempt: 1, Measurement: 2, Status: "ok"}, // read before the row it confirmed
		{CellID: "a", Attempt: 1, Measurement: 1, Status: "first"},
		{CellID: "b", Attempt: 1, Measurement: 1, Status: "first"},
		{CellID: "b", Attempt: 1, Measurement: 2, Status: "ok"},
		{CellID: "c", Attempt: 1, Measurement: 2, Status: "first"},
		{CellID: "c", Attempt: 2, Measurement: 1, Status: "ok"},
		{CellID: "d", Status: "ok"}, // an old file: measurement 0 = 1
	}
	var got []string
	for _, c := range results.LatestCells(cells) {
		got = append(got, fmt.Sprintf("%s:%d.%d:%s", c.CellID, results.AttemptOf(c.Attempt), results.MeasurementOf(c.Measurement), c.Status))
	}
	if want := "[a:1.2:ok b:1.2:ok c:2.1:ok d:1.1:ok]"; fmt.Sprint(got) != want {
		t.Errorf("LatestCells = %v, want %s", got, want)
	}
	reqs := []results.Request{
		{CellID: "b", Attempt: 1, Measurement: 1, Seq: 0}, {CellID: "b", Attempt: 1, Measurement: 2, Seq: 0},
		{CellID: "b", Attempt: 1, Measurement: 2, Seq: 1}, {CellID: "d", Seq: 0},
	}
	by := results.RequestsOf(results.LatestCells(cells), reqs)
	if len(by["b"]) != 2 || by["b"][0].Measurement != 2 || len(by["d"]) != 1 {
		t.Errorf("RequestsOf = %v; want b's two measurement-2 requests and d's one", by)
	}
}

// A cell's row assertions and its regression checks are two judgings
// (the second at the end of the run): the latest of each is kept, not
// only the latest of the cell.
func TestLatestVerdictsByLevel(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	vs := []results.Verdict{
		{CellID: "a", Level: "row", Assertion: "first row judging", JudgedAt: t0},
		{CellID: "a", Level: "row", Assertion: "confirmation's row judging", JudgedAt: t0.Add(time.Second)},
		{CellID: "a", Level: "regression", Assertion: "regression", JudgedAt: t0.Add(time.Minute)},
		{CellID: "", Level: "stage", Assertion: "stage", JudgedAt: t0.Add(2 * time.Second)},
	}
	var got []string
	for _, v := range results.LatestVerdicts(vs) {
		got = append(got, v.Assertion)
	}
	if want := "[confirmation's row judging regression stage]"; fmt.Sprint(got) != want {
		t.Errorf("LatestVerdicts = %v, want %s", got, want)
	}
}
