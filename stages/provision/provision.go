// Package provision is the `provision` stage: create a machine with a
// cloud CLI (or any command), wait for it, pass its host and port on, and
// tear it down on every exit path benchrun can see.
package provision

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage       = (*Stage)(nil)
	_ pipeline.Cleaner     = (*Stage)(nil)
	_ pipeline.SSHProvider = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "provision",
	Doc:    "create a machine (cloud CLI, ssh), pass host/port on, tear it down on every exit path",
	Schema: schema.KindSchema{Def: "#Provision", Source: schemaSource},
	New:    New,
}

// Stage is a configured provision stage.
type Stage struct {
	spec *schema.Stage
	cfg  Config

	mu       sync.Mutex
	created  bool // create was started: teardown is owed
	keep     bool // keep: true in the plan, or --keep
	values   map[string]any
	started  time.Time
	dir      string
	logPath  string
	progress io.Writer
	gone     chan struct{}
	tornDown bool
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(*pipeline.Check) error { return nil }

// Run creates the machine and waits for it. The stage stays "up" (a
// service) until the last stage using it ends; Cleanup tears it down.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	s.mu.Lock()
	s.keep = s.cfg.Keep || env.Keep
	s.values = map[string]any{}
	s.dir = env.Dir
	s.progress = env.Progress
	s.logPath = filepath.Join(env.Dir, s.spec.Name+".log")
	s.gone = make(chan struct{})
	s.started = time.Now()
	s.created = true // from here on, teardown is owed even if create fails half way
	// A retried Run (retry: on the stage) follows a Cleanup that tore the
	// first attempt's machine down: the new machine is owed its own.
	s.tornDown = false
	s.mu.Unlock()

	outs, err := s.run(ctx, "create", s.cfg.Create)
	s.merge(outs)
	if err != nil {
		return nil, err
	}
	if s.cfg.Wait != nil {
		outs, err := s.run(ctx, "wait", *s.cfg.Wait)
		s.merge(outs)
		if err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &pipeline.Outputs{Values: map[string]any{}, Done: s.gone, DoneReason: func() string { return "the machine was torn down" }}
	for k, v := range s.values {
		out.Values[k] = v
	}
	if s.cfg.CostPerHour != nil {
		out.Values["cost_per_hour"] = *s.cfg.CostPerHour
	}
	out.CostPerHour = price(out.Values["cost_per_hour"])
	ssh, err := s.sshOutputs(s.values)
	if err != nil {
		return nil, fmt.Errorf("stages.%s: %w", s.spec.Name, err)
	}
	out.SSH = ssh
	if u, ok := s.values["url"].(string); ok && u != "" {
		out.URL = u
	} else if h, ok := s.values["host"]; ok {
		if p, ok := s.values["port"]; ok {
			out.URL = "http://" + net.JoinHostPort(fmt.Sprint(h), fmt.Sprint(p))
		}
	}
	s.logf("benchrun: provisioned; outputs: %s\n", redact(s.values))
	return out, nil
}

// ProvidesSSH reports whether the outputs carry Outputs.SSH
// (pipeline.SSHProvider): the stage has an ssh: block.
func (s *Stage) ProvidesSSH() bool { return s.cfg.SSH != nil }

// SSH outputs create or wait may print, which win over the ssh: block: a
// cloud CLI knows the SSH port and host key of the pod it made, the plan
// only a default.
const (
	outSSHHost    = "ssh_host"     // the machine's address (default: the host output)
	outSSHPort    = "ssh_port"     // its SSH port
	outSSHUser    = "ssh_user"     // the user to log in as
	outSSHHostKey = "ssh_host_key" // its host key ("" is trust-on-first-use)
)

// sshOutputs is the machine stages with on: connect to (Outputs.SSH), from
// what create and wait printed, falling back on the ssh: block; nil
// without one. The private key is not in it, only the name of the
// variable holding it. A printed port that is not a port is an error here,
// where the output that is wrong is known.
func (s *Stage) sshOutputs(values map[string]any) (*pipeline.SSHMachine, error) {
	c := s.cfg.SSH
	if c == nil {
		return nil, nil
	}
	str := func(key string, fallback string) string {
		if v, ok := values[key]; ok && v != nil {
			if t := strings.TrimSpace(fmt.Sprint(v)); t != "" {
				return t
			}
		}
		return fallback
	}
	host := ""
	if h, ok := values["host"]; ok && h != nil {
		host = strings.TrimSpace(fmt.Sprint(h))
	}
	m := &pipeline.SSHMachine{
		Host:    str(outSSHHost, host),
		Port:    c.Port,
		User:    str(outSSHUser, c.User),
		HostKey: str(outSSHHostKey, c.HostKey),
		KeyEnv:  c.KeyEnv,
	}
	if p := str(outSSHPort, ""); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("the %s output %q is not a port", outSSHPort, p)
		}
		m.Port = port
	}
	return m, nil
}

// price is a machine's price per hour from the stage's outputs: the
// plan's cost_per_hour, or a number the create command printed under that
// name (JSON); nil when there is none, or it is not a number.
func price(v any) *float64 {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case int64:
		f = float64(v)
	case int:
		f = float64(v)
	default:
		return nil
	}
	return &f
}

func (s *Stage) merge(m map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range m {
		s.values[k] = v
	}
}

// Cleanup runs teardown once per machine, unless the machine is to be kept;
// it is idempotent (the pipeline calls it after every failed attempt and
// once at the end).
func (s *Stage) Cleanup(ctx context.Context) error {
	s.mu.Lock()
	if !s.created || s.tornDown {
		s.mu.Unlock()
		return nil
	}
	s.tornDown = true
	held := time.Since(s.started)
	s.mu.Unlock()
	cost := ""
	if s.cfg.CostPerHour != nil {
		cost = fmt.Sprintf(", about $%.4f at $%g/h", *s.cfg.CostPerHour*held.Hours(), *s.cfg.CostPerHour)
	}
	if s.keep {
		s.logf("benchrun: keeping the machine (keep / --keep); held %s so far%s; tear it down yourself: %s\n",
			held.Round(time.Second), cost, strings.Join(s.cfg.Teardown.Cmd, " "))
		return nil
	}
	// Teardown must run even when the run was interrupted: a context of
	// its own, bounded by the command's timeout.
	_, err := s.run(context.WithoutCancel(ctx), "teardown", s.cfg.Teardown)
	s.logf("benchrun: teardown after %s%s: %v\n", held.Round(time.Second), cost, errString(err))
	if s.gone != nil {
		close(s.gone)
	}
	if err != nil {
		return fmt.Errorf("teardown of %s failed (the machine may still be running and billing): %w", s.spec.Name, err)
	}
	return nil
}

// logf appends to the stage's log. It opens the file each time: teardown
// runs after the runner has closed the handle it gave Run.
func (s *Stage) logf(format string, args ...any) {
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format, args...)
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// run runs one command with the outputs so far expanded into it, and
// parses the outputs it prints on stdout.
func (s *Stage) run(ctx context.Context, phase string, c Command) (map[string]any, error) {
	s.mu.Lock()
	vars := map[string]string{"run_dir": s.dir, "stage": s.spec.Name}
	var secrets []string // output values the log must not show
	for k, v := range s.values {
		vars[k] = fmt.Sprint(v)
		if secretRE.MatchString(k) && vars[k] != "" {
			secrets = append(secrets, vars[k], "***")
		}
	}
	s.mu.Unlock()
	argv := make([]string, len(c.Cmd))
	for i, a := range c.Cmd {
		argv[i] = pipeline.Expand(a, vars)
	}
	argv = procrun.CommandLine(argv, c.Shell)
	shown := strings.Join(argv, " ")
	if len(secrets) > 0 {
		// teardown: {cmd: [..., "--token", "${api_key}"]} must not write the key.
		shown = strings.NewReplacer(secrets...).Replace(shown)
	}
	s.logf("benchrun: %s: %s\n", phase, shown)
	environ := os.Environ()
	for k, v := range s.cfg.Env {
		ev, err := pipeline.ExpandEnv(v, nil)
		if err != nil {
			return nil, fmt.Errorf("stages.%s.env.%s: %w", s.spec.Name, k, err)
		}
		environ = append(environ, k+"="+ev)
	}
	// stdout is parsed for outputs (and may hold secrets): it stays out of
	// the phase's log, which gets stderr. teardown alone may outlive
	// benchrun: cut short by benchrun's death, it would leave the machine
	// running and billing, and it ends by itself (the cloud CLI returns
	// once the machine is gone).
	var stdout bytes.Buffer
	err := procrun.Run(ctx, procrun.Spec{
		Argv: argv, Env: environ, Dir: s.dir,
		LogPath: filepath.Join(s.dir, fmt.Sprintf("%s.%s.log", s.spec.Name, phase)),
		Stdout:  &stdout, Shown: shown,
		Name: s.spec.Name, Noun: phase + " command", Progress: s.progress,
		Graces:           procrun.DefaultGraces,
		OutlivesBenchrun: phase == "teardown",
	}, c.timeout)
	outs := ParseOutputs(stdout.Bytes())
	if err != nil {
		return outs, fmt.Errorf("%s (%s): %w", phase, shown, err)
	}
	return outs, nil
}

// ParseOutputs reads a command's outputs: a JSON object, or KEY=VALUE lines
// (other lines are ignored, so a chatty CLI is fine).
func ParseOutputs(b []byte) map[string]any {
	out := map[string]any{}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var m map[string]any
		if json.Unmarshal(trimmed, &m) == nil {
			for k, v := range m {
				if f, ok := v.(float64); ok && f == float64(int64(f)) {
					v = int64(f)
				}
				out[k] = v
			}
			return out
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && keyRE.MatchString(k) {
			out[k] = v
		}
	}
	return out
}

var keyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var secretRE = regexp.MustCompile(`(?i)token|secret|password|passwd|key|auth|credential`)

// redact shows outputs for the log, hiding values whose names suggest secrets.
func redact(m map[string]any) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := fmt.Sprint(m[k])
		if secretRE.MatchString(k) {
			v = "***"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
