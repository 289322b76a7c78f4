package launch

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest). What the kind learns from other kinds comes
// through the pipeline's contracts, never from their CUE.

// Config is the stage's configuration (see schema.cue).
type Config struct {
	// on, cmd, shell, env, gpus and stop_grace (#Program).
	program.Config
	Engine      string            `json:"engine"`
	Dir         string            `json:"dir"`
	Port        any               `json:"port"`
	Host        string            `json:"host"`
	Model       string            `json:"model"`
	TermGrace   string            `json:"term_grace"`
	MetricsURL  string            `json:"metrics_url"`
	Restart     string            `json:"restart"`
	StartWithin string            `json:"start_within"`
	Files       map[string]string `json:"files"`
	Setup       []Command         `json:"setup"`
	AfterStart  []Command         `json:"after_start"`
	Startup     *Startup          `json:"startup"`
	// Adapters are LoRA adapters the server loads (adapters.go).
	Adapters []Adapter `json:"adapters"`
}

// Adapter is a LoRA adapter the server loads, served under its name.
type Adapter struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Startup is the start-up measurement (startup: {...}).
type Startup struct {
	Repeats int    `json:"repeats"`
	Probe   string `json:"probe"`
}

// Command is a setup or after_start command.
type Command struct {
	Cmd     []string          `json:"cmd"`
	Shell   bool              `json:"shell"`
	Env     map[string]string `json:"env"`
	Dir     string            `json:"dir"`
	Timeout string            `json:"timeout"`
	timeout time.Duration
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var errs schema.Errors
	dur := func(field, v string) time.Duration {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, schema.Error{Pos: s.PosOf(field), Msg: fmt.Sprintf("stages.%s.%s: %v", s.Name, field, err)})
		}
		return d
	}
	var perrs schema.Errors
	st.prog, perrs = st.cfg.Decode(s)
	errs = append(errs, perrs...)
	st.termGrace = dur("term_grace", st.cfg.TermGrace)
	st.startWithin = dur("start_within", st.cfg.StartWithin)
	for _, list := range []struct {
		field string
		cmds  []Command
	}{{"setup", st.cfg.Setup}, {"after_start", st.cfg.AfterStart}} {
		for i := range list.cmds {
			list.cmds[i].timeout = dur(fmt.Sprintf("%s.%d.timeout", list.field, i), list.cmds[i].Timeout)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}

// ServerSpeed is the built-in simulator's speed, read from the command
// line before it runs (pipeline.SpeedHinter, for the dry run's estimate):
// in fixed mode (its default) its first token comes after --ttft and each
// next one --itl later. Any other server's speed is not known; nor is the
// simulator's when a flag holds a variable or it is started by a shell.
func (s *Stage) ServerSpeed() (pipeline.ServerSpeed, bool) {
	cmd := s.cfg.Cmd
	if s.cfg.Shell || len(cmd) < 2 || filepath.Base(cmd[0]) != "benchrun" || cmd[1] != "sim" {
		return pipeline.ServerSpeed{}, false
	}
	def := sim.DefaultConfig()
	speed := pipeline.ServerSpeed{TTFT: def.TTFT, ITL: def.ITL}
	args := cmd[2:]
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		switch name {
		case "mode", "ttft", "itl":
		default:
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return pipeline.ServerSpeed{}, false
			}
			i++
			value = args[i]
		}
		if name == "mode" {
			if value != sim.ModeFixed {
				return pipeline.ServerSpeed{}, false
			}
			continue
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			return pipeline.ServerSpeed{}, false // a ${variable}
		}
		if name == "ttft" {
			speed.TTFT = d
		} else {
			speed.ITL = d
		}
	}
	return speed, true
}
