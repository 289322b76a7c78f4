// Package post is the `post` stage: it sends the run's results to the
// plan's remote sinks (a SiYuan notebook, a webhook) once the run is
// judged, so a note or a chat message says what the run found, failed and
// interrupted runs included when the stage is `finally`.
package post

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this kind implements, checked by the compiler.
var (
	_ pipeline.Stage      = (*Stage)(nil)
	_ pipeline.SinkPoster = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage. It runs after every other stage, once the run
// is judged (AfterRun): what it posts is the whole run with its verdicts.
var Kind = pipeline.Kind{
	Name:     "post",
	Doc:      "post the judged run to the plan's remote sinks (siyuan, webhook); with finally, failed and interrupted runs too",
	AfterRun: true,
	Schema:   schema.KindSchema{Def: "#Post", Source: schemaSource},
	New:      New,
}

// Stage is a configured post stage.
type Stage struct {
	spec *schema.Stage
	cfg  Config
}

// PostsTo names the sinks the stage drives.
func (s *Stage) PostsTo() []string { return s.cfg.Sinks }

// Validate checks that every name is a remote sink of the plan, named
// once (the graph refuses a sink two post stages name).
func (s *Stage) Validate(c *pipeline.Check) error {
	var errs schema.Errors
	seen := map[string]bool{}
	for i, name := range s.cfg.Sinks {
		pos := s.spec.PosOf("sinks", fmt.Sprint(i))
		k, ok := c.Sink(name)
		switch {
		case seen[name]:
			errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("stages.%s.sinks[%d]: %q is listed twice", s.spec.Name, i, name)})
		case !ok:
			errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("stages.%s.sinks[%d]: the plan has no sink named %q: add it to the plan's sinks (e.g. sinks: [{kind: \"siyuan\", name: %q}]); the plan's sinks: %s", s.spec.Name, i, name, name, strings.Join(c.SinkNames(), ", "))})
		case !k.Remote:
			errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("stages.%s.sinks[%d]: %q is a %s sink, which writes files in the run directory as rows arrive; post sends results off the machine (a sink of kind siyuan or webhook)", s.spec.Name, i, name, k.Name)})
		}
		seen[name] = true
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Run posts the run, as judged, to the named sinks.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	if err := env.Post(ctx, s.cfg.Sinks); err != nil {
		return nil, fmt.Errorf("posting to %s: %w", strings.Join(s.cfg.Sinks, ", "), err)
	}
	fmt.Fprintf(env.Progress, "%s: posted to %s\n", env.Stage.Name, strings.Join(s.cfg.Sinks, ", "))
	return &pipeline.Outputs{}, nil
}
