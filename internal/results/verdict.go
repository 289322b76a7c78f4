package results

import "time"

// Outcomes of an assertion verdict.
const (
	OutcomePass  = "pass"
	OutcomeFail  = "fail"
	OutcomeError = "error" // the expression could not be evaluated on the row
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
	Scope     string            `parquet:"scope" json:"scope"`     // "stage" or "plan"
	Outcome   string            `parquet:"outcome" json:"outcome"` // pass, fail, error
	Passed    bool              `parquet:"passed" json:"passed"`
	Values    map[string]string `parquet:"values" json:"values,omitempty"`
	Error     string            `parquet:"error" json:"error,omitempty"`
}
