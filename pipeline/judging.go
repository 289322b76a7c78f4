package pipeline

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline/judge"
	"github.com/benchrun/benchrun/schema"
)

// The judging of rows lives in pipeline/judge; these names keep the
// contracts' vocabulary (a sink's verdicts, a stage's severities) in
// the package the stages and sinks already speak.
type (
	// Assertion is a compiled check over cell rows (judge.Assertion).
	Assertion = judge.Assertion
	// Verdict is one assertion judged (judge.Verdict).
	Verdict = judge.Verdict
)

// Assertion levels and severities (judge's).
const (
	LevelRow     = judge.LevelRow
	LevelStage   = judge.LevelStage
	LevelRun     = judge.LevelRun
	SeverityFail = judge.SeverityFail
	SeverityWarn = judge.SeverityWarn
	// LevelRegression is the level of a verdict that compares a cell with
	// the same cell's history (the plan's `baseline`).
	LevelRegression = judge.LevelRegression
)

// CompileAssertion compiles a plan's assertion (judge.CompileAssertion).
func CompileAssertion(a schema.Assertion, stage string) (*Assertion, error) {
	return judge.CompileAssertion(a, stage)
}

// CellLabel names a cell row for people (judge.CellLabel).
func CellLabel(c results.Cell) string { return judge.CellLabel(c) }
