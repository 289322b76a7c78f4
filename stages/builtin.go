// Package stages holds one folder per stage kind; Builtin registers them.
// Adding a kind: a folder with its schema.cue, config, Validate, Run and
// tests, plus one line here.
package stages

import (
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/stages/exec"
	"github.com/benchrun/benchrun/stages/health"
	"github.com/benchrun/benchrun/stages/launch"
	"github.com/benchrun/benchrun/stages/post"
	"github.com/benchrun/benchrun/stages/provision"
	"github.com/benchrun/benchrun/stages/sweep"
	"github.com/benchrun/benchrun/stages/validate"
	"github.com/benchrun/benchrun/stages/warmup"
)

// Builtin registers every built-in stage kind.
func Builtin(reg *pipeline.Registry) {
	reg.AddKind(provision.Kind)
	reg.AddKind(launch.Kind)
	reg.AddKind(health.Kind)
	reg.AddKind(warmup.Kind)
	reg.AddKind(sweep.Kind)
	reg.AddKind(exec.Kind)
	reg.AddKind(validate.Kind)
	reg.AddKind(post.Kind)
}
