package exec

import (
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest).

// Config is the stage's configuration (see schema.cue).
type Config struct {
	// on, cmd, shell, env, gpus and stop_grace (#Program).
	program.Config
	Parser string            `json:"parser"`
	Fields map[string]string `json:"fields"`
	Dir    string            `json:"dir"`
	Model  string            `json:"model"`
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var errs schema.Errors
	st.prog, errs = st.cfg.Decode(s)
	if len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}
