package results

import (
	"fmt"
	"strings"
	"time"
)

// Outcomes of an assertion verdict.
const (
	OutcomePass  = "pass"
	OutcomeFail  = "fail"
	OutcomeError = "error" // the expression could not be evaluated on the row
	OutcomeWarn  = "warn"  // a check of severity warn did not hold (or could not be evaluated): reported, never failing the run
	// OutcomeInconclusive: the check did not hold, but the machine's own
	// lateness during the cell could explain it (Explained says how, in
	// numbers): never a pass, never a failure (docs/PLANS.md).
	OutcomeInconclusive = "inconclusive"
)

// Verdict is one assertion judged on one cell row: the `assertions` table.
// Values holds the row's values of the columns the expression reads, as
// text, so a failed check can be read without the cell row beside it.
type Verdict struct {
	RunID     string            `parquet:"run_id" json:"run_id"`
	Plan      string            `parquet:"plan" json:"plan"`
	Stage     string            `parquet:"stage" json:"stage"`
	CellID    string            `parquet:"cell_id" json:"cell_id"`
	Attempt   int64             `parquet:"attempt" json:"attempt"` // the attempt of the judged cell row
	Cell      string            `parquet:"cell" json:"cell"`       // "sweep 128:128 c=4", for people
	JudgedAt  time.Time         `parquet:"judged_at,timestamp(microsecond)" json:"judged_at"`
	Assertion string            `parquet:"assertion" json:"assertion"`
	Pos       string            `parquet:"pos" json:"pos"`         // file:line:col of the expression in the plan
	Scope     string            `parquet:"scope" json:"scope"`     // "stage" or "plan": where the plan declares it
	Outcome   string            `parquet:"outcome" json:"outcome"` // pass, fail, error, warn
	Passed    bool              `parquet:"passed" json:"passed"`
	Values    map[string]string `parquet:"values" json:"values,omitempty"`
	Error     string            `parquet:"error" json:"error,omitempty"`
	// Name is the check's name when the plan gives one; Severity is fail
	// or warn; Level is what one judging read: row (a cell row), stage (a
	// stage's rows) or run (several stages' rows). Empty in files older
	// than schema version 4 (meaning an unnamed fail check on a row).
	Name     string `parquet:"name" json:"name,omitempty"`
	Severity string `parquet:"severity" json:"severity,omitempty"`
	Level    string `parquet:"level" json:"level,omitempty"`
	// Measurement is the judged row's measurement (1, or 2 for a cell
	// measured once more to confirm; 0 for a stage's or the run's
	// verdict, and in files older than schema version 9). Explained is
	// why the machine could explain a check that did not hold (outcome
	// inconclusive), or why a re-measured cell was measured again.
	Measurement int64  `parquet:"measurement" json:"measurement,omitempty"`
	Explained   string `parquet:"explained" json:"explained,omitempty"`
}

// measuredAgainPrefix begins the note of a cell's second (or later)
// measurement.
const measuredAgainPrefix = "measurement "

// MeasuredAgainNote is the note a cell's measurement n (2 and on) begins
// with, why it was measured again in parentheses ("": not said).
func MeasuredAgainNote(n int64, why string) string {
	note := fmt.Sprintf("%s%d of the cell, the one its checks judge: measured once more", measuredAgainPrefix, n)
	if why != "" {
		note += " (" + why + ")"
	}
	return note
}

// IsMeasuredAgainNote says note is a MeasuredAgainNote: a fact of its row
// alone, which a table that says a stage's repeated notes once (the CSV on
// stdout) must still print on every row it belongs to.
func IsMeasuredAgainNote(note string) bool {
	return strings.HasPrefix(note, measuredAgainPrefix) && strings.Contains(note, "measured once more")
}
