package warmup

import (
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest). What the kind learns from other kinds comes
// through the pipeline's contracts, never from their CUE.

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target      string `json:"target"`
	Model       string `json:"model"`
	Endpoint    string `json:"endpoint"`
	Concurrency int    `json:"concurrency"`
	ISL         int    `json:"isl"`
	OSL         int    `json:"osl"`
	Requests    int    `json:"requests"`
	Settle      struct {
		Window      int     `json:"window"`
		Tolerance   float64 `json:"tolerance"`
		MaxRequests int     `json:"max_requests"`
	} `json:"settle"`
	RequireSettled bool `json:"require_settled"`
	client.RequestConfig
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	return st, nil
}
