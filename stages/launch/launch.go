// Package launch is the `launch` stage: it starts a server process in its
// own process group, captures its output to <stage>.log, watches it, and
// stops it with SIGINT, then SIGTERM, then SIGKILL.
package launch

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "launch",
	Doc:    "start a server process, keep it up while its dependents run, stop it afterwards",
	Schema: schema.KindSchema{Def: "#Launch", Source: schemaSource},
	New:    New,
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Engine    string            `json:"engine"`
	Cmd       []string          `json:"cmd"`
	Env       map[string]string `json:"env"`
	Dir       string            `json:"dir"`
	Port      any               `json:"port"`
	Host      string            `json:"host"`
	Model     string            `json:"model"`
	StopGrace string            `json:"stop_grace"`
}

// Stage is a configured launch stage.
type Stage struct {
	spec      *schema.Stage
	cfg       Config
	stopGrace time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	tail    *tailBuffer
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(st.cfg.StopGrace)
	if err != nil {
		return nil, schema.Error{Pos: s.PosOf("stop_grace"), Msg: "stop_grace: " + err.Error()}
	}
	st.stopGrace = d
	return st, nil
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(p *schema.Plan) error {
	if s.cfg.Model == "" && p.Model.Name == "" {
		return schema.Error{Pos: s.spec.Pos, Msg: fmt.Sprintf("stages.%s: no served model name: set model: {name: ...} in the plan or model in the stage", s.spec.Name)}
	}
	return nil
}

// Run starts the server and returns at once; the health stage waits for it.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	port, err := s.port()
	if err != nil {
		return nil, err
	}
	model := s.cfg.Model
	if model == "" {
		model = env.Plan.Model.Name
	}
	vars := map[string]string{"port": strconv.Itoa(port), "host": s.cfg.Host, "model": model, "run_dir": env.Dir}
	argv := make([]string, len(s.cfg.Cmd))
	for i, a := range s.cfg.Cmd {
		argv[i] = expand(a, vars)
	}
	if argv[0] == "benchrun" {
		// Re-exec this very binary (the built-in simulator, say), so the
		// plan works from `go run` and from any install location.
		if self, err := os.Executable(); err == nil {
			argv[0] = self
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = os.Environ()
	for k, v := range s.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+expand(v, vars))
	}
	s.tail = newTailBuffer(64 * 1024)
	out := io.MultiWriter(env.Log, s.tail)
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group, so stopping reaches every child of the server; the
	// parent-death signal kills it even when benchrun itself is SIGKILLed.
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(env.Log, "benchrun: starting %s\n", strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.done = make(chan struct{})
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(s.done)
	}()
	return &pipeline.Outputs{
		URL:        fmt.Sprintf("http://%s", net.JoinHostPort(s.cfg.Host, strconv.Itoa(port))),
		Model:      model,
		Engine:     s.cfg.Engine,
		PID:        cmd.Process.Pid,
		Done:       s.done,
		DoneReason: s.deathReason,
	}, nil
}

// deathReason says how the process ended, with the last lines of its log.
func (s *Stage) deathReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	status := "exited"
	if s.exitErr != nil {
		status = s.exitErr.Error()
	} else {
		status = "exit status 0"
	}
	if t := s.tail.LastLines(5); t != "" {
		return status + "; last log lines:\n" + t
	}
	return status
}

// Cleanup stops the server: SIGINT, then SIGTERM, then SIGKILL to its
// process group, waiting stop_grace between them.
func (s *Stage) Cleanup(ctx context.Context) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-done:
			// The leader is gone; make sure nothing it started lingers.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return nil
		default:
		}
		if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signalling server: %w", err)
		}
		select {
		case <-done:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return nil
		case <-time.After(s.stopGrace):
		case <-ctx.Done():
		}
	}
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("server (pid %d) did not exit after SIGKILL", pgid)
	}
}

func (s *Stage) port() (int, error) {
	switch p := s.cfg.Port.(type) {
	case string:
		return freePort(s.cfg.Host)
	case float64:
		return int(p), nil
	case int:
		return p, nil
	case int64:
		return int(p), nil
	default:
		return 0, fmt.Errorf("port: unexpected value %v", p)
	}
}

// freePort asks the kernel for a free port on host. Another process could
// take it before the server binds; the health stage would then fail clearly.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func expand(s string, vars map[string]string) string {
	return os.Expand(s, func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return "${" + k + "}"
	})
}
