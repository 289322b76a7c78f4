package pipeline

import (
	"errors"
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
)

// emit judges a finished cell and hands it to every output.
func (r *runner) emit(cell results.Cell, reqs []results.Request) error {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if cell.RunID == "" {
		cell.RunID = r.ri.ID
	}
	if cell.Plan == "" {
		cell.Plan = r.g.Plan.Name
	}
	if cell.Metadata == nil && len(r.g.Plan.Metadata) > 0 {
		cell.Metadata = r.g.Plan.Metadata
	}
	for i := range reqs {
		reqs[i].RunID = cell.RunID
	}
	r.cells++
	for _, a := range r.asserts[cell.Stage] {
		v := a.Judge(cell)
		r.verdicts = append(r.verdicts, v)
		if !v.Passed {
			r.failed = append(r.failed, v)
			msg := "does not hold"
			if v.Error != "" {
				msg = "could not be evaluated: " + v.Error
			}
			fmt.Fprintf(r.opts.Progress, "✗ assertion %q %s on %s (%s) [%s]\n", v.Assertion, msg, v.Cell, v.FormatValues(), v.Pos)
		}
	}
	var errs []error
	for _, o := range r.opts.Outputs {
		if err := o.Cell(cell, reqs); err != nil {
			errs = append(errs, fmt.Errorf("output %s: %w", o.Name(), err))
		}
	}
	err := errors.Join(errs...)
	if err != nil && r.emitErr == nil {
		r.emitErr = err
	}
	return err
}
