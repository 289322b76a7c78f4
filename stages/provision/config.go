package provision

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest). What the kind learns from other kinds comes
// through the pipeline's contracts, never from their CUE.

// Command is one of create, wait, teardown.
type Command struct {
	Cmd     []string `json:"cmd"`
	Shell   bool     `json:"shell"`
	Timeout string   `json:"timeout"`
	timeout time.Duration
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Create      Command           `json:"create"`
	Wait        *Command          `json:"wait"`
	Teardown    Command           `json:"teardown"`
	CostPerHour *float64          `json:"cost_per_hour"`
	Keep        bool              `json:"keep"`
	Env         map[string]string `json:"env"`
	SSH         *SSH              `json:"ssh"`
}

// SSH is how stages with on: reach the machine (see schema.cue).
type SSH struct {
	KeyEnv  string `json:"key_env"`
	User    string `json:"user"`
	Port    int    `json:"port"`
	HostKey string `json:"host_key"`
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var errs schema.Errors
	for _, c := range []struct {
		name string
		c    *Command
	}{{"create", &st.cfg.Create}, {"wait", st.cfg.Wait}, {"teardown", &st.cfg.Teardown}} {
		if c.c == nil {
			continue
		}
		d, err := time.ParseDuration(c.c.Timeout)
		if err != nil {
			errs = append(errs, schema.Error{Pos: s.PosOf(c.name, "timeout"), Msg: fmt.Sprintf("stages.%s.%s.timeout: %v", s.Name, c.name, err)})
		}
		c.c.timeout = d
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}
