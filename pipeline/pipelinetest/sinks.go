package pipelinetest

import (
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

// UseSink wraps a sink built outside the registry (a test's own: a
// RecordingSink, one that fails on cue) as a required, non-durable sink
// with the default retry policy, for engine.Options.Sinks.
func UseSink(s pipeline.Sink) *pipeline.SinkUse {
	return &pipeline.SinkUse{
		Kind: pipeline.SinkKind{Name: s.Name()}, Spec: pipeline.SinkSpec{Kind: s.Name(), Name: s.Name(), Index: -1}, Sink: s,
		Attempts: pipeline.DefaultSinkAttempts, Backoff: pipeline.DefaultSinkBackoff,
	}
}

// UseSinks is UseSink for each sink.
func UseSinks(ss ...pipeline.Sink) []*pipeline.SinkUse {
	out := make([]*pipeline.SinkUse, len(ss))
	for i, s := range ss {
		out[i] = UseSink(s)
	}
	return out
}

// LiveEnv is the SinkEnv of a live run with nothing but its RunInfo, for
// a test that drives a sink by hand: no stdout, progress discarded, and a
// resumed run's earlier rows read from its directory, as a run gives them.
func LiveEnv(ri *pipeline.RunInfo) *pipeline.SinkEnv {
	return &pipeline.SinkEnv{Run: ri, Progress: io.Discard, Prior: pipeline.PriorRows(ri)}
}
