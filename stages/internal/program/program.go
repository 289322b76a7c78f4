// Package program is what the stage kinds that run a program share
// (launch's server, exec's benchmark): the plan's #Program fields
// (program.cue, which both kinds' schemas embed), their decoding and
// checks, and the ${...} variables a command expands. A kind embeds Config
// in its own configuration.
package program

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// Schema is #Program. A kind appends it to its own schema source
// (WithSchema); the copies both kinds bring are one definition (CUE
// unifies identical declarations).
//
//go:embed program.cue
var Schema string

// WithSchema is a kind's schema source with #Program.
func WithSchema(kindSource string) string { return schema.WithFragment(kindSource, Schema) }

// Config is #Program.
type Config struct {
	On        string            `json:"on"`
	Cmd       []string          `json:"cmd"`
	Shell     bool              `json:"shell"`
	Env       map[string]string `json:"env"`
	GPUs      []any             `json:"gpus"`
	StopGrace string            `json:"stop_grace"`
}

// Decoded is what the fields say once read: the GPU selection (indexes
// and names as strings) and the stop grace.
type Decoded struct {
	GPUs      []string
	StopGrace time.Duration
}

// Decode reads the GPU selection and the stop grace, with a problem at
// its field.
func (c Config) Decode(spec *schema.Stage) (Decoded, schema.Errors) {
	var d Decoded
	var errs schema.Errors
	grace, err := time.ParseDuration(c.StopGrace)
	if err != nil {
		errs = append(errs, schema.Error{Pos: spec.PosOf("stop_grace"), Msg: fmt.Sprintf("stages.%s.stop_grace: %v", spec.Name, err)})
	}
	d.StopGrace = grace
	for i, g := range c.GPUs {
		switch v := g.(type) {
		case string:
			d.GPUs = append(d.GPUs, v)
		case float64:
			d.GPUs = append(d.GPUs, strconv.Itoa(int(v)))
		case int, int64:
			d.GPUs = append(d.GPUs, fmt.Sprint(v))
		default:
			errs = append(errs, schema.Error{Pos: spec.PosOf("gpus"), Msg: fmt.Sprintf("stages.%s.gpus[%d]: want an index or a GPU name, got %v", spec.Name, i, g)})
		}
	}
	return d, errs
}

// Check reports an empty command or GPU name.
func (c Config) Check(spec *schema.Stage, d Decoded) schema.Errors {
	var errs schema.Errors
	if len(c.Cmd) == 0 || strings.TrimSpace(c.Cmd[0]) == "" {
		errs = append(errs, schema.Error{Pos: spec.PosOf("cmd"), Msg: fmt.Sprintf("stages.%s.cmd: the command is empty", spec.Name)})
	}
	for i, g := range d.GPUs {
		if strings.TrimSpace(g) == "" {
			errs = append(errs, schema.Error{Pos: spec.PosOf("gpus"), Msg: fmt.Sprintf("stages.%s.gpus[%d]: empty GPU name", spec.Name, i)})
		}
	}
	return errs
}

// CheckOn reports what on: needs from the plan: a stage that provides a
// machine (pipeline.SSHProvider), listed in needs so that it is up first,
// and GPUs chosen by index (NVML here does not know that machine's
// names). what names the program ("the server", "the program").
func (c Config) CheckOn(chk *pipeline.Check, spec *schema.Stage, d Decoded, what string) schema.Errors {
	if c.On == "" {
		return nil
	}
	var errs schema.Errors
	if why := chk.MachineProblem(c.On, what); why != "" {
		errs = append(errs, schema.Error{Pos: spec.PosOf("on"), Msg: fmt.Sprintf("stages.%s.on: %s", spec.Name, why)})
	}
	for _, g := range d.GPUs {
		if !isIndex(g) {
			errs = append(errs, schema.Error{Pos: spec.PosOf("gpus"), Msg: fmt.Sprintf("stages.%s.gpus: %q: on another machine GPUs are chosen by index (NVML here does not know the machine's names)", spec.Name, g)})
			break
		}
	}
	return errs
}

func isIndex(g string) bool {
	if g == "" {
		return false
	}
	for _, r := range g {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Vars are what ${...} expands to in a program's command, env and dir:
// ${model}, ${model_file} (the plan's model.file, absolute, relative to
// the plan), ${run_dir}, ${plan_dir}, ${stage}, and each earlier stage's
// outputs as ${STAGE.KEY} and ${STAGE.url}. A kind adds its own (launch:
// ${port}, ${host}).
func Vars(env *pipeline.Env, stage, model string) map[string]string {
	planDir := "."
	if env.Plan.Path != "" {
		if abs, err := filepath.Abs(env.Plan.Path); err == nil {
			planDir = filepath.Dir(abs)
		}
	}
	modelFile := env.Plan.Model.File
	if modelFile != "" && !filepath.IsAbs(modelFile) {
		modelFile = filepath.Join(planDir, modelFile)
	}
	runDir, _ := filepath.Abs(env.Dir)
	vars := map[string]string{"model": model, "model_file": modelFile, "run_dir": runDir, "plan_dir": planDir, "stage": stage}
	for name, d := range env.Deps {
		for k, v := range d.Values {
			vars[name+"."+k] = fmt.Sprint(v)
		}
		if d.URL != "" {
			vars[name+".url"] = d.URL
		}
	}
	return vars
}

// RemoteEnv is a KEY=VALUE list as the map the SSH runner takes; a later
// entry wins, as in an environment.
func RemoteEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
