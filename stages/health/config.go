package health

import (
	"time"

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
	Target     string `json:"target"`
	Model      string `json:"model"`
	Engine     string `json:"engine"`
	Path       string `json:"path"`
	ModelsPath string `json:"models_path"`
	Probe      string `json:"probe"`
	Within     string `json:"within"`
	Interval   string `json:"interval"`
	client.Config
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var err error
	if st.within, err = time.ParseDuration(st.cfg.Within); err != nil {
		return nil, schema.Error{Pos: s.PosOf("within"), Msg: "within: " + err.Error()}
	}
	if st.interval, err = time.ParseDuration(st.cfg.Interval); err != nil {
		return nil, schema.Error{Pos: s.PosOf("interval"), Msg: "interval: " + err.Error()}
	}
	return st, nil
}
