package pipeline

import (
	"sort"

	"github.com/benchrun/benchrun/schema"
)

// SinkKind describes one kind of plan-level sink (`sinks: [{kind: ...}]`).
type SinkKind struct {
	Name string
	// Doc is one line for `benchrun list`.
	Doc string
	// Schema is the sink's CUE definition (embedding #SinkBase).
	Schema schema.KindSchema
	// New decodes a sink entry into an Output. It must not perform I/O.
	New func(s *schema.Sink) (Output, error)
}

// AddSink registers a sink kind; registering a name twice is a programming error.
func (r *Registry) AddSink(k SinkKind) {
	if r.sinks == nil {
		r.sinks = map[string]SinkKind{}
	}
	if _, dup := r.sinks[k.Name]; dup {
		panic("pipeline: sink kind registered twice: " + k.Name)
	}
	r.sinks[k.Name] = k
}

// Sink returns a registered sink kind.
func (r *Registry) Sink(name string) (SinkKind, bool) {
	k, ok := r.sinks[name]
	return k, ok
}

// Sinks returns every registered sink kind, sorted by name.
func (r *Registry) Sinks() []SinkKind {
	var out []SinkKind
	for _, k := range r.sinks {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SinkSchemas returns the sink kinds' CUE fragments for schema.Load.
func (r *Registry) SinkSchemas() []schema.KindSchema {
	var out []schema.KindSchema
	for _, k := range r.Sinks() {
		s := k.Schema
		s.Kind = k.Name
		out = append(out, s)
	}
	return out
}
