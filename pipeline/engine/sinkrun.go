package engine

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// sinkSleep waits between attempts of a sink call (tests shorten it).
var sinkSleep = time.Sleep

// sinkRun applies the pipeline's failure policy to one sink: transient
// failures retried with backoff, a required sink's failure returned (the
// run exits 3 and says what was not written), an optional one's turned
// into a warning; every call counted in the sink's record.
type sinkRun struct {
	use      *pipeline.SinkUse
	rec      pipeline.SinkRecord
	disabled bool // an optional sink whose Start failed: it gets no more calls
	progress io.Writer
}

func newSinkRun(u *pipeline.SinkUse, progress io.Writer) *sinkRun {
	return &sinkRun{use: u, progress: progress, rec: pipeline.SinkRecord{
		Name: u.Name(), Kind: u.Kind.Name, Required: !u.Optional, Durable: u.Kind.Durable, Status: pipeline.SinkOK,
		Config: redact.Value(maps.Clone(u.Spec.Params)),
	}}
}

// call runs one call of the sink under the policy. It returns an error
// only for a required sink.
func (s *sinkRun) call(op string, f func() error) error {
	if s.disabled {
		return nil
	}
	s.rec.Calls++
	attempts := max(s.use.Attempts, 1)
	err := retrying(attempts, s.use.Backoff, func(int) error { return f() },
		func(i int, err error, next time.Duration) bool {
			if !pipeline.IsTransient(err) {
				return false
			}
			s.rec.Retries++
			fmt.Fprintf(s.progress, "↻ sink %s: %s failed (attempt %d/%d): %s; retrying in %s\n", s.rec.Name, op, i, attempts, pipeline.OneLine(err.Error()), next)
			return true
		},
		func(d time.Duration) bool { sinkSleep(d); return true })
	if err == nil {
		return nil
	}
	s.rec.Failures++
	s.rec.LastError = redact.String(fmt.Sprintf("%s: %v", op, err))
	if s.use.Optional {
		if s.rec.Status != pipeline.SinkWarned {
			fmt.Fprintf(s.progress, "benchrun: warning: optional sink %s: %s failed: %s (the run goes on without it)\n", s.rec.Name, op, pipeline.OneLine(err.Error()))
		}
		s.rec.Status = pipeline.SinkWarned
		if op == "start" {
			s.disabled = true
		}
		return nil
	}
	s.rec.Status = pipeline.SinkFailed
	return err
}

// notWritten says what a required sink's failure left unwritten.
func (s *sinkRun) notWritten(err error) string {
	return fmt.Sprintf("sink %s failed: %s not written in full: %s", s.rec.Name, s.writes(), pipeline.OneLine(err.Error()))
}

func (s *sinkRun) writes() string {
	if s.use.Kind.Writes != "" {
		return s.use.Kind.Writes
	}
	return "its output"
}

// sinkSet is a run's sinks, in the order rows reach them.
type sinkSet []*sinkRun

func newSinkSet(uses []*pipeline.SinkUse, progress io.Writer) sinkSet {
	var out sinkSet
	// Durable sinks first, whatever order they were given in.
	for _, durable := range []bool{true, false} {
		for _, u := range uses {
			if u.Sink != nil && u.Kind.Durable == durable {
				out = append(out, newSinkRun(u, progress))
			}
		}
	}
	return out
}

func (ss sinkSet) records() []pipeline.SinkRecord {
	out := make([]pipeline.SinkRecord, len(ss))
	for i, s := range ss {
		out[i] = s.rec
	}
	return out
}

// start starts every sink; the first required one that fails ends it.
func (ss sinkSet) start(env *pipeline.SinkEnv) error {
	for _, s := range ss {
		if err := s.call("start", func() error { return s.use.Sink.Start(env) }); err != nil {
			return fmt.Errorf("sink %s could not start (%s not written): %w", s.rec.Name, s.writes(), err)
		}
	}
	return nil
}

// The sinks get rows as the tables store them (results.Stored: times to
// the microsecond, in UTC), live as replayed, here where every row reaches
// them: what a sink writes is then a function of the stored rows, and no
// sink rounds a time of its own.

// cell hands a judged cell row to every sink: the durable ones first, so
// that a row the others show is one already stored, or is marked as not
// stored. It returns the failures of required sinks.
func (ss sinkSet) cell(cell results.Cell, reqs results.Requests, verdicts []results.Verdict) error {
	cell, verdicts = results.Stored(cell), results.StoredRows(verdicts)
	var errs, notStored []string
	reason := cell.Reason
	for _, s := range ss {
		err := s.call("cell "+cell.CellID, func() error { return s.use.Sink.Cell(cell, reqs) })
		if err == nil {
			if vs, ok := s.use.Sink.(pipeline.VerdictSink); ok && !s.disabled {
				err = s.call("verdicts of "+cell.CellID, func() error { return vs.Verdicts(cell, verdicts) })
			}
		}
		if err == nil {
			continue
		}
		errs = append(errs, fmt.Sprintf("sink %s: %v", s.rec.Name, err))
		if s.use.Kind.Durable {
			notStored = append(notStored, fmt.Sprintf("%s: %v", s.rec.Name, err))
			// The CSV on stdout, cells.csv and result.json must not show
			// as stored (status ok) a row the durable sink lost.
			cell.Status = results.StatusError
			cell.Reason = strings.TrimSuffix("not stored ("+strings.Join(notStored, "; ")+"); "+reason, "; ")
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// verdicts hands verdict rows that belong to no one cell (a stage's, the
// run's) to the sinks that take verdicts; cell carries the stage and the
// attempt, with no cell id.
func (ss sinkSet) verdicts(cell results.Cell, rows []results.Verdict) error {
	cell, rows = results.Stored(cell), results.StoredRows(rows)
	var errs []error
	for _, s := range ss {
		if vs, ok := s.use.Sink.(pipeline.VerdictSink); ok {
			if err := s.call("verdicts of stage "+cell.Stage, func() error { return vs.Verdicts(cell, rows) }); err != nil {
				errs = append(errs, fmt.Errorf("sink %s: %w", s.rec.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// samples hands telemetry rows to the sinks that take them.
func (ss sinkSet) samples(rows []results.Sample) error {
	rows = results.StoredRows(rows)
	var errs []error
	for _, s := range ss {
		if so, ok := s.use.Sink.(pipeline.SampleSink); ok {
			if err := s.call("samples", func() error { return so.Samples(rows) }); err != nil {
				errs = append(errs, fmt.Errorf("sink %s: samples: %w", s.rec.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// stop stops every sink, returning what the first required failure left
// unwritten ("" when none failed).
func (ss sinkSet) stop(sum *pipeline.Summary) string {
	reason := ""
	for _, s := range ss {
		if err := s.call("stop", func() error { return s.use.Sink.Stop(sum) }); err != nil && reason == "" {
			reason = s.notWritten(err)
		}
	}
	return reason
}

// failedReason is what a required sink that failed during the run left
// unwritten ("" when none).
func (ss sinkSet) failedReason() string {
	for _, s := range ss {
		if s.rec.Status == pipeline.SinkFailed {
			return s.notWritten(errors.New(s.rec.LastError))
		}
	}
	return ""
}
