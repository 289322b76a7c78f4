package pipelinetest

import (
	"slices"
	"sync"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// What the recording sink implements, checked by the compiler: every
// capability, so it receives everything any sink can.
var (
	_ pipeline.Sink        = (*RecordingSink)(nil)
	_ pipeline.VerdictSink = (*RecordingSink)(nil)
	_ pipeline.SampleSink  = (*RecordingSink)(nil)
)

// Recording is what a RecordingSink received, in the order it received
// it, and (from Run, RunStage, Resume) how the run ended.
type Recording struct {
	// Env is what Start saw (nil before Start).
	Env *pipeline.SinkEnv
	// Cells are the cell rows, as every sink got them (a row the durable
	// sink failed to store is marked "not stored" here).
	Cells []results.Cell
	// Requests are the request rows of every cell, in cell order.
	Requests []results.Request
	// Verdicts are the assertion verdicts of every cell, in cell order.
	Verdicts []results.Verdict
	// Samples are the telemetry rows.
	Samples []results.Sample
	// Calls lists the calls in order: "start", "cell ID", "verdicts ID",
	// "samples", "stop".
	Calls []string
	// Summary is what Stop received (Run's summary, the same).
	Summary *pipeline.Summary
	// Dir is the run directory; Progress the run's progress text (set by
	// Run, RunStage and Resume).
	Dir      string
	Progress string
}

// Stage returns the summary's result for the named stage (zero when the
// summary has none).
func (r *Recording) Stage(name string) pipeline.StageResult {
	if r.Summary != nil {
		for _, s := range r.Summary.Stages {
			if s.Name == name {
				return s
			}
		}
	}
	return pipeline.StageResult{}
}

// Cell returns the last row received for the cell id.
func (r *Recording) Cell(id string) (results.Cell, bool) {
	for i := len(r.Cells) - 1; i >= 0; i-- {
		if r.Cells[i].CellID == id {
			return r.Cells[i], true
		}
	}
	return results.Cell{}, false
}

// RecordingSink is a sink that keeps every call it gets, for tests: attach
// it with UseSink (Run and RunStage do). Read its Recording once
// the run has returned, or through Snapshot while it runs.
type RecordingSink struct {
	// SinkName is its name in the manifest and messages ("recording").
	SinkName string

	mu  sync.Mutex
	rec Recording
}

// NewRecordingSink returns an empty recording sink.
func NewRecordingSink() *RecordingSink { return &RecordingSink{} }

// Snapshot returns a copy of what the sink has received so far.
func (s *RecordingSink) Snapshot() *Recording {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.Cells, r.Requests, r.Verdicts = slices.Clone(r.Cells), slices.Clone(r.Requests), slices.Clone(r.Verdicts)
	r.Samples, r.Calls = slices.Clone(r.Samples), slices.Clone(r.Calls)
	return &r
}

// Name implements pipeline.Sink.
func (s *RecordingSink) Name() string {
	if s.SinkName != "" {
		return s.SinkName
	}
	return "recording"
}

// Start implements pipeline.Sink.
func (s *RecordingSink) Start(env *pipeline.SinkEnv) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Env = env
	if env != nil && env.Run != nil {
		s.rec.Dir = env.Run.Dir
	}
	s.rec.Calls = append(s.rec.Calls, "start")
	return nil
}

// Cell implements pipeline.Sink.
func (s *RecordingSink) Cell(c results.Cell, reqs results.Requests) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Cells = append(s.rec.Cells, c)
	if reqs != nil {
		for r := range reqs.All() {
			s.rec.Requests = append(s.rec.Requests, *r)
		}
		if err := reqs.Err(); err != nil {
			return err
		}
	}
	s.rec.Calls = append(s.rec.Calls, "cell "+c.CellID)
	return nil
}

// Verdicts implements pipeline.VerdictSink.
func (s *RecordingSink) Verdicts(c results.Cell, rows []results.Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Verdicts = append(s.rec.Verdicts, rows...)
	s.rec.Calls = append(s.rec.Calls, "verdicts "+c.CellID)
	return nil
}

// Samples implements pipeline.SampleSink.
func (s *RecordingSink) Samples(rows []results.Sample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Samples = append(s.rec.Samples, rows...)
	s.rec.Calls = append(s.rec.Calls, "samples")
	return nil
}

// Stop implements pipeline.Sink.
func (s *RecordingSink) Stop(sum *pipeline.Summary) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Summary = sum
	s.rec.Calls = append(s.rec.Calls, "stop")
	return nil
}
