// Package sinks holds one folder per sink kind, named by the kind, with
// "sink" after a name the standard library has (jsonsink, csvsink: a
// package json or csv would shadow encoding/json or encoding/csv wherever
// both are used); Builtin registers them.
// Adding a sink: a folder with its schema.cue, config, New (decode only),
// the Sink methods and tests, plus one line here. The order of the lines
// is the order default sinks receive rows, after the durable one.
package sinks

import (
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/sinks/arrow"
	"github.com/benchrun/benchrun/sinks/csvsink"
	"github.com/benchrun/benchrun/sinks/jsonsink"
	"github.com/benchrun/benchrun/sinks/junit"
	"github.com/benchrun/benchrun/sinks/parquet"
	"github.com/benchrun/benchrun/sinks/report"
	"github.com/benchrun/benchrun/sinks/siyuan"
	"github.com/benchrun/benchrun/sinks/webhook"
)

// Builtin registers every built-in sink kind.
func Builtin(reg *pipeline.Registry) {
	reg.AddSink(parquet.Kind)
	reg.AddSink(jsonsink.Kind)
	reg.AddSink(report.Kind)
	reg.AddSink(csvsink.Kind)
	reg.AddSink(arrow.Kind)
	reg.AddSink(junit.Kind)
	reg.AddSink(webhook.Kind)
	reg.AddSink(siyuan.Kind)
}
