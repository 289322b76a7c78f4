package exec

import (
	"fmt"
	"strconv"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (stages/rules_test.go).

// Config is the stage's configuration (see schema.cue).
type Config struct {
	On        string            `json:"on"`
	Cmd       []string          `json:"cmd"`
	Shell     bool              `json:"shell"`
	Parser    string            `json:"parser"`
	Fields    map[string]string `json:"fields"`
	Env       map[string]string `json:"env"`
	Dir       string            `json:"dir"`
	GPUs      []any             `json:"gpus"`
	Model     string            `json:"model"`
	StopGrace string            `json:"stop_grace"`
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var errs schema.Errors
	d, err := time.ParseDuration(st.cfg.StopGrace)
	if err != nil {
		errs = append(errs, schema.Error{Pos: s.PosOf("stop_grace"), Msg: fmt.Sprintf("stages.%s.stop_grace: %v", s.Name, err)})
	}
	st.stopGrace = d
	// The same selection as launch's: an index or a name NVML matches.
	for i, g := range st.cfg.GPUs {
		switch v := g.(type) {
		case string:
			st.gpuSel = append(st.gpuSel, v)
		case float64:
			st.gpuSel = append(st.gpuSel, strconv.Itoa(int(v)))
		case int, int64:
			st.gpuSel = append(st.gpuSel, fmt.Sprint(v))
		default:
			errs = append(errs, schema.Error{Pos: s.PosOf("gpus"), Msg: fmt.Sprintf("stages.%s.gpus[%d]: want an index or a GPU name, got %v", s.Name, i, g)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}
