package judge

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// record counts a verdict (a failing one of severity fail fails the run;
// one of severity warn is said and kept), says a failure on the progress
// writer, and returns its row for the assertions table. The caller holds
// mu.
func (j *Judge) record(cell results.Cell, a *Assertion, v Verdict, at time.Time) results.Verdict {
	if v.Level == LevelRow {
		v.Measurement = cell.Measurement
	}
	j.verdicts = append(j.verdicts, v)
	if v.Inconclusive {
		if v.Severity != SeverityWarn {
			// A warning never changes the exit code, inconclusive
			// or not (inconclusive: "fail" made one exit 5).
			j.inconclusive = append(j.inconclusive, v)
		}
		again := ""
		if v.Measurement > 1 {
			again = " again, measured once more"
		}
		fmt.Fprintf(j.progress, "? assertion %s inconclusive%s on %s (%s) [%s]: %s\n", What(v), again, v.Cell, v.FormatValues(), v.Pos, v.Explained)
		return verdictRow(cell, a, v, at)
	}
	if !v.Passed {
		msg := "does not hold"
		if v.Error != "" {
			msg = "could not be evaluated: " + v.Error
		}
		mark, what := "✗", "assertion"
		if v.Severity == SeverityWarn {
			mark, what = "⚠", "warning"
		} else {
			j.failed = append(j.failed, v)
		}
		fmt.Fprintf(j.progress, "%s %s %s %s on %s (%s) [%s]\n", mark, what, What(v), msg, v.Cell, v.FormatValues(), v.Pos)
	}
	return verdictRow(cell, a, v, at)
}

// verdictRow turns a verdict of a on cell into a row of the assertions
// table.
func verdictRow(cell results.Cell, a *Assertion, v Verdict, at time.Time) results.Verdict {
	row := results.Verdict{
		RunID: cell.RunID, Plan: cell.Plan, Stage: cell.Stage, CellID: cell.CellID, Cell: v.Cell,
		JudgedAt: at, Assertion: v.Assertion, Name: v.Name, Severity: v.Severity, Level: v.Level,
		Pos: v.Pos, Scope: "stage", Passed: v.Passed, Values: v.Values, Error: v.Error,
		Measurement: v.Measurement, Explained: v.Explained,
	}
	if a.Stage == "" {
		row.Scope = "plan"
	}
	switch {
	case v.Inconclusive:
		row.Outcome = results.OutcomeInconclusive
	case !v.Passed && v.Severity == SeverityWarn:
		row.Outcome = results.OutcomeWarn
	case v.Error != "":
		row.Outcome = results.OutcomeError
	case v.Passed:
		row.Outcome = results.OutcomePass
	default:
		row.Outcome = results.OutcomeFail
	}
	return row
}

// What names a verdict's check for people: its expression, with its name.
func What(v Verdict) string {
	if v.Name != "" && v.Level != LevelRegression {
		return fmt.Sprintf("%s (%q)", v.Name, v.Assertion)
	}
	return fmt.Sprintf("%q", v.Assertion)
}
