package post

import (
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value.

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Sinks []string `json:"sinks"`
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	return st, nil
}
