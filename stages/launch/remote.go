package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
)

// This file is on: "<provision stage>": the server runs on the machine
// that stage rented, over SSH (internal/remote), and everything else of
// the stage (restarts, the log, the watchdog, readiness) works as for a
// local server.

// validateOn checks on: against the plan: a stage that provides a machine
// (pipeline.SSHProvider), listed in needs so that it is up first, and only the
// fields that mean something on another machine.
func (s *Stage) validateOn(c *pipeline.Check) schema.Errors {
	on := s.cfg.On
	if on == "" {
		return nil
	}
	errs := s.cfg.Config.CheckOn(c, s.spec, s.prog, "the server")
	if len(s.cfg.Files) > 0 {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf("files"), Msg: fmt.Sprintf("stages.%s.files: ", s.spec.Name) + fmt.Sprintf("files are written into the run directory on benchrun's machine, which the server on %s's machine does not see: write them with a setup command there", on)})
	}
	return errs
}

// connect dials the machine of on: from that stage's outputs, waiting up
// to start_within for its SSH to come up (a freshly created pod takes a
// while), with its host key checked (the provider's, or the one recorded
// in the run directory's known_hosts on first use).
func (s *Stage) connect(ctx context.Context, env *pipeline.Env) error {
	dep := env.Deps[s.cfg.On]
	if dep == nil {
		return fmt.Errorf("stages.%s.on: stages.%s has no outputs (it is not among the stages this one needs)", s.spec.Name, s.cfg.On)
	}
	m, err := remote.MachineFrom(dep.SSH, os.Getenv)
	if err != nil {
		return fmt.Errorf("stages.%s.on: the machine of stages.%s: %w", s.spec.Name, s.cfg.On, err)
	}
	m.Within = s.startWithin
	if env.Log != nil {
		fmt.Fprintf(env.Log, "benchrun: connecting to %s over SSH (the machine of stages.%s; start_within %s)\n", m, s.cfg.On, s.startWithin)
	}
	if env.Progress != nil {
		fmt.Fprintf(env.Progress, "  %s: connecting to %s over SSH\n", s.spec.Name, m)
	}
	c, err := remote.Dial(ctx, m, filepath.Join(env.Dir, "known_hosts"))
	if err != nil {
		return fmt.Errorf("stages.%s.on: %w", s.spec.Name, err)
	}
	if s.remote != nil {
		s.remote.Close()
	}
	s.remote, s.remoteHost = c, m.Host
	return nil
}

// clientHost is where benchrun reaches the server: the machine's address
// with on:, else the listening address (loopback for every address).
func (s *Stage) clientHost() string {
	if s.remote != nil {
		return s.remoteHost
	}
	return urlHost(s.cfg.Host)
}

// remoteCommandLine is commandLine for the machine: "benchrun" stays the
// machine's benchrun (this binary's path means nothing there).
func remoteCommandLine(cmd []string, shell bool, vars map[string]string) []string {
	argv := make([]string, len(cmd))
	for i, a := range cmd {
		argv[i] = expand(a, vars)
	}
	if shell {
		return []string{"/bin/sh", "-c", strings.Join(argv, " ")}
	}
	return argv
}

// remoteServer is a server on the machine, its output appended to the
// stage's log.
type remoteServer struct {
	*remote.Process
}

// Stop stops the server's process group on the machine, with the stage's
// graces (SIGINT, SIGTERM, SIGKILL, as locally).
func (r remoteServer) Stop(ctx context.Context, g procrun.Graces) error {
	return r.Process.Stop(ctx, remote.Graces{Int: g.Int, Term: g.Term})
}

// startRemote starts the server on the machine, streaming its stdout and
// stderr into the stage's log as they come.
func (s *Stage) startRemote() (serverProc, error) {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.logPath, err)
	}
	fmt.Fprintf(log, "benchrun: starting %s on %s\n", shownCommand(s.argv), s.remote.Machine())
	// The server outlives Run's context: Cleanup (or a restart) stops it,
	// and the watcher on the machine when benchrun is gone.
	p, err := s.remote.Start(context.Background(), s.argv, program.RemoteEnv(s.environ), s.dir, log, log)
	if err != nil {
		fmt.Fprintf(log, "benchrun: %v\n", err)
		log.Close()
		return nil, err
	}
	// Nothing more of benchrun's in the log: the server's output streams
	// in already, and a death's reason is the log's last line.
	go func() {
		<-p.Done()
		log.Close()
	}()
	return remoteServer{p}, nil
}

// shownCommand is argv for the log, with registered secrets masked.
func shownCommand(argv []string) string {
	return redact.String(strings.Join(argv, " "))
}

// runRemoteCommands is runCommands on the machine: each command in turn,
// its output in <stage>.<phase>-<i>.log, bounded by its timeout and the
// context (which stop it there).
func (s *Stage) runRemoteCommands(ctx context.Context, env *pipeline.Env, phase string, cmds []Command, vars map[string]string) error {
	for i, c := range cmds {
		argv := remoteCommandLine(c.Cmd, c.Shell, vars)
		logPath := filepath.Join(env.Dir, fmt.Sprintf("%s.%s-%d.log", s.spec.Name, phase, i))
		fmt.Fprintf(env.Log, "benchrun: %s %d on %s: %s (log %s)\n", phase, i, s.remote.Machine(), shownCommand(argv), filepath.Base(logPath))
		environ := append([]string(nil), s.environ...)
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ev, err := expandEnv(c.Env[k], vars)
			if err != nil {
				return fmt.Errorf("stages.%s.%s[%d].env.%s: %w", s.spec.Name, phase, i, k, err)
			}
			environ = append(environ, k+"="+ev)
		}
		if err := s.runRemote(ctx, argv, program.RemoteEnv(environ), expand(c.Dir, vars), logPath, c.timeout); err != nil {
			return fmt.Errorf("stages.%s.%s[%d] (%s) on %s: %w", s.spec.Name, phase, i, shownCommand(argv), s.remote.Machine(), err)
		}
	}
	return nil
}

// runRemote runs one command on the machine to its end; a failure carries
// its log's tail, as procrun.Run's does.
func (s *Stage) runRemote(ctx context.Context, argv []string, env map[string]string, dir, logPath string, timeout time.Duration) error {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "benchrun: starting %s on %s\n", shownCommand(argv), s.remote.Machine())
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w after %s", procrun.ErrTimeout, timeout))
		defer cancel()
	}
	// Start stops the command on the machine when ctx ends (the timeout,
	// an interrupt).
	p, err := s.remote.Start(ctx, argv, env, dir, log, log)
	if err != nil {
		return err
	}
	err = p.Wait()
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		err = cause
	}
	if err != nil {
		if errors.Is(err, procrun.ErrTimeout) {
			fmt.Fprintf(log, "benchrun: %v; stopped\n", err)
		}
		return procrun.Failed(err, logPath)
	}
	return nil
}
