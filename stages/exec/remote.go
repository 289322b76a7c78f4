package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// This file is on: "<provision stage>": the benchmark runs on the machine
// that stage rented, over SSH (internal/remote), as launch's on: runs a
// server there; parsing, rows and costs are as for a local program.

// localVars are the ${...} names that expand to paths on benchrun's
// machine, which mean nothing on another one.
var localVars = regexp.MustCompile(`\$\{(model_file|plan_dir)\}`)

// validateOn checks on: against the plan, as launch's does: a stage that
// provides a machine (pipeline.SSHProvider), listed in needs so that it is
// up first, GPUs by index, and no path that only exists here.
func (s *Stage) validateOn(c *pipeline.Check) schema.Errors {
	on := s.cfg.On
	if on == "" {
		return nil
	}
	errs := s.cfg.Config.CheckOn(c, s.spec, s.prog, "the program")
	bad := func(pos []string, format string, args ...any) {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf(pos...), Msg: fmt.Sprintf("stages.%s.%s: ", s.spec.Name, strings.Join(pos, ".")) + fmt.Sprintf(format, args...)})
	}
	local := func(pos []string, v string) {
		if m := localVars.FindString(v); m != "" {
			bad(pos, "%s is a path on benchrun's machine, which the program on %s's machine does not see: name the file as it is there (fetch it with a launch stage's setup, or in a shell command)", m, on)
		}
	}
	for i, a := range s.cfg.Cmd {
		local([]string{"cmd", fmt.Sprint(i)}, a)
	}
	for _, k := range sortedKeys(s.cfg.Env) {
		local([]string{"env", k}, s.cfg.Env[k])
	}
	local([]string{"dir"}, s.cfg.Dir)
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// connect dials the machine of on: from that stage's Outputs.SSH, waiting
// for its SSH to come up (remote.DefaultWithin, bounded by the stage's
// timeout), with its host key checked: the provider's, or the one the run
// directory's known_hosts recorded on first use (by launch's on:, say).
func (s *Stage) connect(ctx context.Context, env *pipeline.Env) (*remote.Client, error) {
	dep := env.Deps[s.cfg.On]
	if dep == nil {
		return nil, fmt.Errorf("stages.%s.on: stages.%s has no outputs (it is not among the stages this one needs)", s.spec.Name, s.cfg.On)
	}
	m, err := remote.MachineFrom(dep.SSH, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("stages.%s.on: the machine of stages.%s: %w", s.spec.Name, s.cfg.On, err)
	}
	if env.Log != nil {
		fmt.Fprintf(env.Log, "benchrun: connecting to %s over SSH (the machine of stages.%s)\n", m, s.cfg.On)
	}
	fmt.Fprintf(env.Progress, "  %s: connecting to %s over SSH\n", s.spec.Name, m)
	c, err := remote.Dial(ctx, m, filepath.Join(env.Dir, "known_hosts"))
	if err != nil {
		return nil, fmt.Errorf("stages.%s.on: %w", s.spec.Name, err)
	}
	return c, nil
}

// runOn runs argv on the machine to its end, stdout to stdout (the parser
// and the log), stderr to log. remote.Run stops the program's process
// group there, with stop_grace, when ctx ends (the stage's timeout, an
// interrupt), and returns ctx's cause wrapped, as procrun.Run does.
func (s *Stage) runOn(ctx context.Context, c *remote.Client, argv []string, env map[string]string, dir string, stdout, log io.Writer) error {
	// The start marker: a failure's tail is what this start printed.
	fmt.Fprintf(log, "benchrun: starting %s on %s\n", redact.String(strings.Join(argv, " ")), c.Machine())
	return c.Run(ctx, argv, env, dir, stdout, log, remote.Graces{Int: s.prog.StopGrace, Term: s.prog.StopGrace})
}

// remoteCommandLine is procrun.CommandLine for the machine: "benchrun"
// stays the machine's benchrun (this binary's path means nothing there).
func remoteCommandLine(cmd []string, shell bool) []string {
	if shell {
		return []string{"/bin/sh", "-c", strings.Join(cmd, " ")}
	}
	return append([]string(nil), cmd...)
}
