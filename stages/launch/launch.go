// Package launch is the `launch` stage: it starts a server process with
// internal/procrun (its own process group, led by a guard that takes the
// group down if benchrun dies), captures its output to <stage>.log,
// watches it, restarts it between cells when asked, and stops it with
// SIGINT, then SIGTERM, then SIGKILL.
package launch

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage         = (*Stage)(nil)
	_ pipeline.Cleaner       = (*Stage)(nil)
	_ pipeline.Warner        = (*Stage)(nil)
	_ pipeline.CellRestarter = (*Stage)(nil)
	_ pipeline.RowWriter     = (*Stage)(nil)
	_ pipeline.EngineNamer   = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// listGPUs is NVML's GPU list; tests put go-nvml's mock behind it.
var listGPUs = telemetry.ListGPUs

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "launch",
	Doc:    "start a server process, keep it up while its dependents run, stop it afterwards",
	Schema: schema.KindSchema{Def: "#Launch", Source: program.WithSchema(schemaSource)},
	New:    New,
}

// Stage is a configured launch stage.
type Stage struct {
	spec *schema.Stage
	cfg  Config
	// prog is the GPU selection and stop grace the #Program fields give.
	prog        program.Decoded
	termGrace   time.Duration
	startWithin time.Duration
	gpus        []string // the devices the server is given: UUIDs, else NVML indices

	// Set by Run, read by restarts.
	stageVars   map[string]string // ${...} values, without the cell's
	baseEnviron []string          // benchrun's environment and the GPUs
	argv        []string          // cmd, expanded for the current start
	environ     []string          // baseEnviron and env, expanded likewise
	dir         string
	logPath     string
	port        int
	model       string
	engine      engines.Engine

	progress io.Writer // stderr: a death is shown with its log tail

	// The start-up measurement (startup.go): the rows go out through emit
	// (Env.Emit of Run), restarts counts the per-cell restarts, version is
	// the engine's as Run learned it, and latest is the latest start's
	// start-up in seconds (nil: not measured), under mu.
	emit     func(results.Cell, results.Requests) error
	restarts int
	version  string
	latest   *float64

	// With on: the connection to the machine the server runs on, and its
	// address (where the server is reached); nil and "" otherwise.
	remote     *remote.Client
	remoteHost string

	mu       sync.Mutex
	up       bool // Run returned: a death from now on is shown by the watcher
	proc     *process
	died     chan struct{} // closed when the server stops on its own
	diedOnce *sync.Once    // per Run: a retried Run gets a fresh channel
}

// process is one start of the server.
type process struct {
	serverProc
	stopped bool // benchrun asked it to stop (a restart or cleanup)
}

// serverProc is a started server: a local process (procrun) or one on the
// machine of on: (remote.go).
type serverProc interface {
	Pid() int
	Done() <-chan struct{}
	ExitStatus() string
	Stop(ctx context.Context, g procrun.Graces) error
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(c *pipeline.Check) error {
	p := c.Plan
	var errs schema.Errors
	if s.cfg.Model == "" && p.Model.Name == "" {
		errs = append(errs, schema.Error{Pos: s.spec.Pos, Msg: fmt.Sprintf("stages.%s: no served model name: set model: {name: ...} in the plan or model in the stage", s.spec.Name)})
	}
	errs = append(errs, s.cfg.Config.Check(s.spec, s.prog)...)
	errs = append(errs, s.checkAdapters()...)
	if refs := cellRefs(s.cfg); len(refs) > 0 {
		field := "cmd"
		if len(pipeline.CellVarRefs(strings.Join(s.cfg.Cmd, " "))) == 0 {
			field = "env"
		}
		switch {
		case s.cfg.Restart != "per_cell":
			errs = append(errs, schema.Error{Pos: s.spec.PosOf(field), Msg: fmt.Sprintf("stages.%s.%s: ${cell.%s} takes a value from the cell being measured, which reaches the server only through a restart before each cell: set restart: \"per_cell\"", s.spec.Name, field, refs[0])})
		default:
			if vars, _ := firstCellVars(c.Dependents(), s.spec.Name); vars == nil {
				errs = append(errs, schema.Error{Pos: s.spec.PosOf(field), Msg: fmt.Sprintf("stages.%s.%s: ${cell.%s}, but no stage targeting %s gives its cells server variables (cells: [{isl: 128, osl: 128, server: {%s: \"...\"}}])", s.spec.Name, field, refs[0], s.spec.Name, refs[0])})
			}
		}
	}
	// ${cell.KEY} expands in cmd and env only: anything else is written or
	// run once, before any cell.
	other := []struct{ field, text string }{{"dir", s.cfg.Dir}, {"metrics_url", s.cfg.MetricsURL}}
	for _, name := range sortedKeys(s.cfg.Files) {
		other = append(other, struct{ field, text string }{"files", name + s.cfg.Files[name]})
	}
	for _, list := range []struct {
		field string
		cmds  []Command
	}{{"setup", s.cfg.Setup}, {"after_start", s.cfg.AfterStart}} {
		for _, c := range list.cmds {
			text := strings.Join(c.Cmd, " ") + " " + c.Dir
			for _, k := range sortedKeys(c.Env) {
				text += " " + c.Env[k]
			}
			other = append(other, struct{ field, text string }{list.field, text})
		}
	}
	for _, o := range other {
		if refs := pipeline.CellVarRefs(o.text); len(refs) > 0 {
			errs = append(errs, schema.Error{Pos: s.spec.PosOf(o.field), Msg: fmt.Sprintf("stages.%s.%s: ${cell.%s} expands only in cmd and env (they are expanded again at each restart; %s is used once)", s.spec.Name, o.field, refs[0], o.field)})
		}
	}
	errs = append(errs, s.validateOn(c)...)
	for name := range s.cfg.Files {
		if filepath.IsAbs(name) || strings.Contains(name, "..") || strings.ContainsRune(name, os.PathSeparator) {
			errs = append(errs, schema.Error{Pos: s.spec.PosOf("files"), Msg: fmt.Sprintf("stages.%s.files: %q: a file name inside the run directory, without a path", s.spec.Name, name)})
		} else if why := rundir.OwnName(name); why != "" {
			errs = append(errs, schema.Error{Pos: s.spec.PosOf("files"), Msg: fmt.Sprintf("stages.%s.files: %q: %s; give the file another name", s.spec.Name, name, why)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Warnings are vet's warnings (pipeline.Warner): a stage that sends to
// this server with no readiness check (a health stage,
// pipeline.ReadinessGate) before it. The launch stage is up once the
// server listens, but many servers listen before their model is loaded
// (503 while loading), and the first requests would fail. A restart:
// per_cell server is waited for before every cell anyway.
func (s *Stage) Warnings(c *pipeline.Check) []schema.Error {
	if s.cfg.Restart == "per_cell" || s.cfg.Startup != nil {
		return nil // waited for until ready, before every cell or before Run returns
	}
	// gate reports whether the stage named name waits for this server.
	gate := func(name string) bool {
		st, _ := c.Peer(name)
		g, ok := st.(pipeline.ReadinessGate)
		return ok && g.ReadinessOf() == s.spec.Name
	}
	// checked reports whether st depends, through needs, on a readiness
	// check of this server.
	var checked func(st *schema.Stage, seen map[string]bool) bool
	checked = func(st *schema.Stage, seen map[string]bool) bool {
		for _, n := range st.Needs {
			d := c.Plan.Stage(n)
			if d == nil || seen[n] {
				continue
			}
			seen[n] = true
			if gate(n) || checked(d, seen) {
				return true
			}
		}
		return false
	}
	var out []schema.Error
	for _, d := range c.Dependents() {
		st := d.Spec
		if st.Target != s.spec.Name || gate(st.Name) || checked(st, map[string]bool{}) {
			continue
		}
		out = append(out, schema.Error{Pos: st.PosOf("target"), Msg: fmt.Sprintf(
			"stages.%s sends to stages.%s (a launch stage) with no health stage before it: the server counts as up once it listens, and one that listens before its model is loaded fails the first requests; add health: {kind: \"health\", target: %q} and needs: [\"health\"] on stages.%s",
			st.Name, s.spec.Name, s.spec.Name, st.Name)})
	}
	return out
}

// Run prepares files, runs the setup commands, starts the server, runs the
// after_start commands once it accepts connections, and returns; the
// health stage waits for readiness.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (out *pipeline.Outputs, err error) {
	s.progress = env.Progress
	defer func() { showDetails(env.Progress, err) }()
	if s.cfg.On != "" {
		if err := s.connect(ctx, env); err != nil {
			return nil, err
		}
	}
	if s.port, err = s.pickPort(); err != nil {
		return nil, err
	}
	if _, auto := s.cfg.Port.(string); !auto && s.remote == nil {
		// A fixed port someone else serves would be benchmarked in the
		// launched server's place (it may still be loading): refuse it
		// before anything starts.
		if err := portFree(s.cfg.Host, s.port); err != nil {
			return nil, fmt.Errorf("stages.%s.port: %w", s.spec.Name, err)
		}
	}
	s.model = s.cfg.Model
	if s.model == "" {
		s.model = env.Plan.Model.Name
	}
	s.engine = engines.For(s.cfg.Engine)
	s.logPath = filepath.Join(env.Dir, s.spec.Name+".log")
	vars := s.vars(env)
	s.stageVars = vars

	if err := s.prepareEnviron(env); err != nil {
		return nil, err
	}
	// The first start takes ${cell.KEY} from the first cell that will be
	// measured (restart: per_cell restarts before it anyway), so the health
	// and warm-up stages talk to a server started with real values.
	first := map[string]string(nil)
	if s.cfg.Restart == "per_cell" {
		first, _ = firstCellVars(env.Dependents(), s.spec.Name)
	}
	if err := s.configure(first); err != nil {
		return nil, err
	}

	if err := s.writeFiles(env, vars); err != nil {
		return nil, err
	}
	if err := s.runCommands(ctx, env, "setup", s.cfg.Setup, vars); err != nil {
		return nil, err
	}

	s.dir = resolveDir(s.cfg.Dir, env, vars, "")
	version := ""
	if s.remote != nil {
		// A directory on the machine, as written (relative: to the login
		// directory); the engine's version is the server's to say.
		s.dir = expand(s.cfg.Dir, vars)
	} else {
		version = s.engineVersion(ctx, env.Log)
	}
	if s.remote == nil {
		if err := modelFileThere(s.argv, s.dir, env.Plan.Model.File); err != nil {
			return nil, fmt.Errorf("stages.%s: %w", s.spec.Name, err)
		}
	}
	s.died, s.diedOnce = make(chan struct{}), &sync.Once{}
	s.mu.Lock()
	s.up, s.latest = false, nil
	s.mu.Unlock()
	s.emit, s.restarts, s.version = env.Emit, 0, version
	started := time.Now()
	for attempt := 1; ; attempt++ {
		if err := s.start(); err != nil {
			return nil, err
		}
		// Up means listening: a stage after this one (a sweep without a
		// health stage) would otherwise send into a closed port. A server
		// that is not told its port (no ${port} anywhere, port: "auto")
		// could not listen there, so it is not waited for.
		if len(s.cfg.AfterStart) == 0 && !s.toldPort() {
			break
		}
		err := s.waitListening(ctx, env.Log)
		if err == nil {
			break
		}
		var taken *portTakenError
		if !errors.As(err, &taken) || attempt == portAttempts || !s.mayMovePort() {
			return nil, err
		}
		// An automatic port is free when benchrun picks it and the
		// server binds it later: another process (a parallel run's
		// server, a client's ephemeral port) can take it in between.
		// The server died of it, so it starts again on another port.
		old := s.port
		if s.port, err = s.pickPort(); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("port %d was taken before the server bound it (%s); starting it again on port %d", old, taken.holder, s.port)
		if env.Log != nil {
			fmt.Fprintln(env.Log, "benchrun: "+msg)
		}
		if env.Progress != nil {
			fmt.Fprintf(env.Progress, "  %s: %s\n", s.spec.Name, msg)
		}
		vars = s.vars(env)
		s.stageVars = vars
		if err := s.configure(first); err != nil {
			return nil, err
		}
		if err := s.writeFiles(env, vars); err != nil {
			return nil, err
		}
		s.died, s.diedOnce = make(chan struct{}), &sync.Once{}
		started = time.Now()
	}
	if len(s.cfg.AfterStart) > 0 {
		if err := s.runCommands(ctx, env, "after_start", s.cfg.AfterStart, vars); err != nil {
			return nil, err
		}
	}
	base := "http://" + net.JoinHostPort(s.clientHost(), strconv.Itoa(s.port))
	if s.cfg.Startup != nil {
		if err := s.measureStartups(ctx, env, base, started); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.up = true // from now on a death is the watchdog's to report
	s.mu.Unlock()

	return s.outputs(env, base, version, vars), nil
}

// prepareEnviron sets the environment shared by the server and its setup
// commands, and the GPUs it is given.
func (s *Stage) prepareEnviron(env *pipeline.Env) error {
	s.baseEnviron = os.Environ()
	s.gpus = nil
	if s.remote != nil {
		// The machine's own environment, not benchrun's: benchrun's
		// variables (its credentials) reach it only through env. GPUs are
		// the machine's, by index: NVML here knows none of them.
		s.baseEnviron = nil
		if len(s.prog.GPUs) > 0 {
			s.gpus = slices.Clone(s.prog.GPUs)
			s.baseEnviron = telemetry.CUDADevicesEnv(s.gpus)
		}
	} else if len(s.prog.GPUs) > 0 {
		var err error
		if s.gpus, err = s.chooseGPUs(env.Log); err != nil {
			return err
		}
		s.baseEnviron = append(s.baseEnviron, telemetry.CUDADevicesEnv(s.gpus)...)
	}
	return nil
}

// outputs are what the server offers later stages: its URL, process and
// facts, and what earlier stages offered.
func (s *Stage) outputs(env *pipeline.Env, base, version string, vars map[string]string) *pipeline.Outputs {
	out := &pipeline.Outputs{
		URL:           base,
		Model:         s.model,
		Engine:        s.cfg.Engine,
		EngineVersion: version,
		PID:           s.pid(),
		Done:          s.died,
		DoneReason:    s.deathReason,
		LogPath:       s.logPath,
		StartupS:      s.latestStartup,
		MetricsURL:    s.metricsURL(vars),
		GPUs:          slices.Clone(s.gpus),
		Values:        map[string]any{},
	}
	// Pass on what earlier stages offered (the price of the provisioned
	// machine this server runs on, its outputs for `when`), in name order
	// so that the first price wins every time, then this server's own
	// facts.
	for _, name := range sortedKeys(env.Deps) {
		d := env.Deps[name]
		for k, v := range d.Values {
			out.Values[k] = v
		}
		if d.CostPerHour != nil && out.CostPerHour == nil {
			price := *d.CostPerHour
			out.CostPerHour = &price
		}
	}
	out.Values["port"] = s.port
	out.Values["host"] = s.cfg.Host
	if s.remote != nil {
		// The PID and GPUs are the machine's: a PID here would name
		// another process, and telemetry reads this machine's GPUs.
		out.Values["host"] = s.remoteHost
		out.Values["remote_pid"] = out.PID
		out.PID = 0
		out.GPUs = nil
	}
	out.Values["log"] = s.logPath
	if out.MetricsURL != "" {
		out.Values["metrics_url"] = out.MetricsURL
	}
	if s.cfg.Restart == "per_cell" {
		out.Restart = func(ctx context.Context, cell map[string]string) error { return s.restart(ctx, out.URL, cell) }
		// Each restart is a new process: a PID would go stale, and the
		// runner would take the old one's exit for a death. Done tells.
		out.PID = 0
	}
	return out
}

// chooseGPUs resolves the plan's GPU selection to the devices the server
// is given: by UUID when NVML names them, so that "GPU 0" is the same
// device to nvidia-smi, CUDA and the sweep's GPU probe whatever order each
// enumerates in; else by NVML index (said in the stage log), which CUDA
// numbers the same way only with CUDA_DEVICE_ORDER=PCI_BUS_ID.
func (s *Stage) chooseGPUs(log io.Writer) ([]string, error) {
	devices, err := telemetry.ChooseDevices(s.prog.GPUs, listGPUs, log)
	if err != nil {
		return nil, fmt.Errorf("stages.%s.gpus: %w", s.spec.Name, err)
	}
	return devices, nil
}

// metricsURL is where the server's Prometheus metrics are: the plan's
// metrics_url (a custom engine, or a port moved by the plan), else the
// engine preset's path on the API port or on the preset's own port.
func (s *Stage) metricsURL(vars map[string]string) string {
	if s.cfg.MetricsURL != "" {
		return expand(s.cfg.MetricsURL, vars)
	}
	if s.engine.MetricsPath == "" {
		return ""
	}
	port := s.port
	if s.engine.MetricsPort != 0 {
		port = s.engine.MetricsPort
	}
	return "http://" + net.JoinHostPort(s.clientHost(), strconv.Itoa(port)) + s.engine.MetricsPath
}

// showDetails prints what follows the first line of a failure (a log
// tail): the progress view shows only the first line of a stage's error.
func showDetails(w io.Writer, err error) {
	if err == nil || w == nil {
		return
	}
	if _, rest, ok := strings.Cut(err.Error(), "\n"); ok {
		fmt.Fprintln(w, rest)
	}
}

// vars are what ${...} expands to in cmd, env, files and commands: a
// program's (program.Vars), and the server's ${port} and ${host}.
func (s *Stage) vars(env *pipeline.Env) map[string]string {
	vars := program.Vars(env, s.spec.Name, s.model)
	vars["port"], vars["host"] = strconv.Itoa(s.port), s.cfg.Host
	return vars
}

func commandLine(cmd []string, shell bool, vars map[string]string) []string {
	argv := make([]string, len(cmd))
	for i, a := range cmd {
		argv[i] = expand(a, vars)
	}
	return procrun.CommandLine(argv, shell)
}

// resolveDir makes a relative dir relative to the plan file; empty means def.
func resolveDir(dir string, env *pipeline.Env, vars map[string]string, def string) string {
	if dir == "" {
		return def
	}
	dir = expand(dir, vars)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(vars["plan_dir"], dir)
	}
	return dir
}

// procSpec is how a program of the stage runs (procrun): guarded, its
// output appended to logPath, its stop escalations said under the stage's
// name; a command stopped at its timeout or on Ctrl-C gets the default
// graces.
func (s *Stage) procSpec(argv, environ []string, dir, logPath, noun string) procrun.Spec {
	return procrun.Spec{Argv: argv, Env: environ, Dir: dir, LogPath: logPath,
		Name: s.spec.Name, Noun: noun, Progress: s.progress, Graces: procrun.DefaultGraces}
}

// start starts one server process (procrun.Start: under the guard, its
// output appended to the stage log) and watches it.
func (s *Stage) start() error {
	var pp serverProc
	var err error
	if s.remote != nil {
		pp, err = s.startRemote()
	} else {
		pp, err = procrun.Start(s.procSpec(s.argv, s.environ, s.dir, s.logPath, "server"))
	}
	if err != nil {
		return err
	}
	p := &process{serverProc: pp}
	s.mu.Lock()
	s.proc = p
	died, once := s.died, s.diedOnce
	s.mu.Unlock()
	go func() {
		<-p.Done()
		s.mu.Lock()
		stopped := p.stopped
		s.mu.Unlock()
		if !stopped {
			once.Do(func() {
				s.mu.Lock()
				up := s.up
				s.mu.Unlock()
				// Before Run returns, Run's own error carries the details.
				if up && s.progress != nil {
					fmt.Fprintf(s.progress, "✗ %s died: %s\n", s.spec.Name, s.deathDetails())
				}
				close(died)
			})
		}
	}()
	return nil
}

func (s *Stage) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// exitStatus says how the process ended.
func (s *Stage) exitStatus() string {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return "not started"
	}
	return p.ExitStatus()
}

// deathReason is one line for the rows and the summary: how the process
// ended and its log's last line, and the first line that looks like an
// error when it is another (a usage text after "flag provided but not
// defined" hides it otherwise). (The watcher shows the longer tail on
// stderr when it happens.)
func (s *Stage) deathReason() string {
	reason := s.exitStatus()
	last := strings.TrimSpace(strings.TrimPrefix(procrun.Tail(s.logPath, 1), "  | "))
	if last != "" {
		reason += fmt.Sprintf(" (last line of %s: %s", filepath.Base(s.logPath), cut(last, 200))
		if first := procrun.FirstErrorLine(s.logPath); first != "" && first != last {
			reason += "; first error: " + cut(first, 200)
		}
		reason += ")"
	}
	return reason
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// deathDetails is the status with the log's first error line (when the
// tail does not show it) and last lines, for people.
func (s *Stage) deathDetails() string {
	return procrun.Failed(errors.New(s.exitStatus()), s.logPath).Error()
}

// waitListening waits until the server accepts TCP connections on its
// port and, where /proc tells, until the listening socket is the
// server's own (its process or one of its descendants holds it): a port
// answered by another process is not this server being up. It is bounded
// by start_within and by the stage's context (its timeout, an interrupt).
func (s *Stage) waitListening(ctx context.Context, log io.Writer) error {
	addr := net.JoinHostPort(s.clientHost(), strconv.Itoa(s.port))
	start := time.Now()
	deadline := start.Add(s.startWithin)
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if log != nil {
		fmt.Fprintf(log, "benchrun: waiting for the server to listen on %s (start_within %s)\n", addr, s.startWithin)
	}
	said, foreign := false, ""
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			owned, known, holder := portOwnership(p.Pid(), s.port)
			if s.remote != nil {
				// This machine's /proc knows nothing of the machine's sockets.
				owned, known, holder = false, false, ""
			}
			if owned || !known {
				if log != nil {
					fmt.Fprintf(log, "benchrun: listening on %s after %s\n", addr, time.Since(start).Round(time.Millisecond))
				}
				return nil
			}
			if holder == "" {
				holder = "another process"
			}
			if holder != foreign {
				foreign = holder
				msg := fmt.Sprintf("%s answers, but %s holds the port, not the server; waiting for the server's own socket", addr, holder)
				if log != nil {
					fmt.Fprintln(log, "benchrun: "+msg)
				}
				if s.progress != nil {
					fmt.Fprintf(s.progress, "  %s: %s\n", s.spec.Name, msg)
				}
			}
		}
		if !said && time.Since(start) > 2*time.Second && s.progress != nil {
			said = true
			fmt.Fprintf(s.progress, "  %s: waiting for the server to listen on %s (start_within %s)\n", s.spec.Name, addr, s.startWithin)
		}
		select {
		case <-p.Done():
			err := fmt.Errorf("server exited before listening on %s: %s", addr, s.deathDetails())
			if holder := s.portTaker(foreign); holder != "" {
				return &portTakenError{holder: holder, err: err}
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("server not listening on %s after %s: %w", addr, time.Since(start).Round(time.Millisecond), context.Cause(ctx))
		case <-time.After(min(max(time.Since(start)/50, 10*time.Millisecond), 100*time.Millisecond)):
			// Often at first (a start-up is measured through this wait),
			// every 100 ms once it has lasted seconds.
		}
		if time.Now().After(deadline) {
			why := "not listening"
			if foreign != "" {
				why = "not holding its port (" + foreign + " does)"
			}
			return fmt.Errorf("server %s on %s within %s (start_within); last lines of its log:\n%s", why, addr, s.startWithin, procrun.Tail(s.logPath, procrun.TailLines))
		}
	}
}

// writeFiles writes the stage's files into the run directory, expanded
// with vars.
func (s *Stage) writeFiles(env *pipeline.Env, vars map[string]string) error {
	for name, content := range s.cfg.Files {
		if err := rundir.WriteFileAtomic(filepath.Join(env.Dir, name), []byte(expand(content, vars))); err != nil {
			return fmt.Errorf("the launch stage's files: %w", err)
		}
	}
	return nil
}

// portAttempts bounds the starts on automatic ports that another
// process took first.
const portAttempts = 3

// portTakenError is a server that died because its port was taken.
type portTakenError struct {
	holder string // who holds it, or what the server's log said
	err    error
}

func (e *portTakenError) Error() string { return e.err.Error() }
func (e *portTakenError) Unwrap() error { return e.err }

// portTaker says why a server that exited before listening lost its
// port, or "" when it did not: another process listens there (seen while
// waiting, or now), or the server's log says the address was in use.
func (s *Stage) portTaker(foreign string) string {
	if foreign != "" {
		return foreign + " listens on it"
	}
	if s.remote == nil {
		if h := portHolder(s.port); h != "" {
			return h + " listens on it"
		}
	}
	tail := strings.ToLower(procrun.Tail(s.logPath, procrun.TailLines))
	if strings.Contains(tail, "address already in use") || strings.Contains(tail, "eaddrinuse") {
		return "the server's log says the address is already in use"
	}
	return ""
}

// mayMovePort reports whether the server may start again on another
// port: the port is benchrun's choice, and nothing already run (the setup
// commands) was told the old one.
func (s *Stage) mayMovePort() bool {
	if _, auto := s.cfg.Port.(string); !auto {
		return false
	}
	for _, c := range s.cfg.Setup {
		for _, a := range c.Cmd {
			if strings.Contains(a, "${port}") {
				return false
			}
		}
		for _, v := range c.Env {
			if strings.Contains(v, "${port}") {
				return false
			}
		}
	}
	return true
}

// toldPort reports whether the server knows the port benchrun will wait
// on: a fixed port, or ${port} in its command, environment or files.
func (s *Stage) toldPort() bool {
	if _, auto := s.cfg.Port.(string); !auto {
		return true
	}
	texts := append([]string{s.cfg.Dir}, s.cfg.Cmd...)
	for _, v := range s.cfg.Env {
		texts = append(texts, v)
	}
	for _, v := range s.cfg.Files {
		texts = append(texts, v)
	}
	for _, t := range texts {
		told := false
		os.Expand(t, func(k string) string {
			if k == "port" {
				told = true
			}
			return ""
		})
		if told {
			return true
		}
	}
	return false
}

// portFree refuses a port that another process listens on (host's
// address or every address), naming the process when /proc tells.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err == nil {
		l.Close()
		return nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil // not ours to judge (a privileged port, say): the server will say
	}
	by := ""
	if h := portHolder(port); h != "" {
		by = " by " + h
	}
	return fmt.Errorf("port %d on %s is already in use%s: benchrun would measure that process instead of the server it launches; stop it, or use port: \"auto\"", port, host, by)
}

// runCommands runs setup or after_start commands one by one (procrun.Run),
// each with its own timeout and log file (<stage>.<phase>-<i>.log); a
// failure carries the log's tail.
func (s *Stage) runCommands(ctx context.Context, env *pipeline.Env, phase string, cmds []Command, vars map[string]string) error {
	if s.remote != nil {
		return s.runRemoteCommands(ctx, env, phase, cmds, vars)
	}
	for i, c := range cmds {
		argv := commandLine(c.Cmd, c.Shell, vars)
		logPath := filepath.Join(env.Dir, fmt.Sprintf("%s.%s-%d.log", s.spec.Name, phase, i))
		fmt.Fprintf(env.Log, "benchrun: %s %d: %s (log %s)\n", phase, i, strings.Join(argv, " "), filepath.Base(logPath))
		environ := append([]string(nil), s.environ...)
		for k, v := range c.Env {
			ev, err := expandEnv(v, vars)
			if err != nil {
				return fmt.Errorf("stages.%s.%s[%d].env.%s: %w", s.spec.Name, phase, i, k, err)
			}
			environ = append(environ, k+"="+ev)
		}
		spec := s.procSpec(argv, environ, resolveDir(c.Dir, env, vars, env.Dir), logPath, fmt.Sprintf("%s[%d] command", phase, i))
		if err := procrun.Run(ctx, spec, c.timeout); err != nil {
			return fmt.Errorf("stages.%s.%s[%d] (%s): %w", s.spec.Name, phase, i, strings.Join(argv, " "), err)
		}
	}
	return nil
}

// restart stops the server and starts it again on the same port, its
// command and environment expanded with the cell's server variables
// (${cell.KEY}), waiting until it is ready (health path 200, model listed)
// within start_within. A variable the cell does not give fails before the
// running server is touched.
func (s *Stage) restart(ctx context.Context, url string, cell map[string]string) error {
	select {
	case <-s.died:
		return fmt.Errorf("server died before the restart: %s", s.deathDetails())
	default:
	}
	if err := s.configure(cell); err != nil {
		return err
	}
	if err := s.stop(ctx); err != nil {
		return err
	}
	msg := "benchrun: restarting the server (restart: per_cell)"
	if len(cell) > 0 {
		msg = fmt.Sprintf("benchrun: restarting the server (restart: per_cell, %s)", joinVars(cell))
	}
	s.logLine(msg)
	s.mu.Lock()
	s.latest = nil
	s.mu.Unlock()
	s.restarts++
	started, err := s.startCold(ctx)
	var readyAt time.Time
	if err == nil {
		readyAt, err = s.waitReady(ctx, url, started, "restarting")
	}
	if err == nil {
		s.setLatest(readyAt.Sub(started))
	}
	if s.cfg.Startup != nil {
		// Every restart's start-up is a row of this stage; its first call
		// is the cell's own first request (the cell's first_call_ms).
		row := s.startupRow(fmt.Sprintf("%s/startup/restart%d", s.spec.Name, s.restarts), started, readyAt, err)
		if len(cell) > 0 {
			row.Notes = joinNotes("server: "+joinVars(cell), row.Notes)
		}
		if eerr := s.emitStartup(row, nil); eerr != nil && err == nil {
			err = eerr
		}
	}
	return err
}

// startCold starts the server process and, when it is told its port,
// waits until it listens on it; it returns when the process was started.
func (s *Stage) startCold(ctx context.Context) (time.Time, error) {
	started := time.Now()
	if err := s.start(); err != nil {
		return started, err
	}
	if s.toldPort() {
		// Its own socket first: the old server's port may be answered by
		// another process meanwhile.
		lctx, cancel := context.WithDeadline(ctx, started.Add(s.startWithin))
		err := s.waitListening(lctx, nil)
		cancel()
		if err != nil {
			return started, err
		}
	}
	return started, nil
}

// waitReady polls the server until it is ready (ready: the health path
// answers 200, the model is listed), at most start_within after started,
// and returns when the first passing check's answer came. It polls at a
// fiftieth of the time waited so far, between 10 ms and 500 ms: a start-up
// is resolved to about 2% (10 ms for a short one) without polling a
// server that loads for minutes more than twice a second. doing names
// what the server is doing, for the errors ("restarting", "starting").
func (s *Stage) waitReady(ctx context.Context, base string, started time.Time, doing string) (time.Time, error) {
	ctx, cancel := context.WithDeadline(ctx, started.Add(s.startWithin))
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: httpsafe.NoRedirects}
	for {
		if ok := ready(ctx, client, base, s.engine, s.model); ok {
			return time.Now(), nil
		}
		wait := min(max(time.Since(started)/50, 10*time.Millisecond), 500*time.Millisecond)
		select {
		case <-s.died:
			return time.Time{}, fmt.Errorf("server died while %s: %s", doing, s.deathDetails())
		case <-ctx.Done():
			if context.Cause(ctx) != context.DeadlineExceeded {
				return time.Time{}, fmt.Errorf("server not ready after %s: %w", time.Since(started).Round(time.Millisecond), context.Cause(ctx))
			}
			return time.Time{}, fmt.Errorf("server not ready within %s (start_within) after %s; last lines of its log:\n%s", s.startWithin, map[string]string{"restarting": "a restart", "starting": "it started"}[doing], procrun.Tail(s.logPath, procrun.TailLines))
		case <-time.After(wait):
		}
	}
}

// configure expands cmd and env for the next start: the stage's variables
// plus cell.KEY for each of the cell's server variables. A ${cell.KEY} the
// cell does not give is an error naming it.
func (s *Stage) configure(cell map[string]string) error {
	if missing := missingCellVars(s.cfg, cell); len(missing) > 0 {
		given := "none"
		if len(cell) > 0 {
			given = joinVars(cell)
		}
		return fmt.Errorf("stages.%s: the cell gives no server variable %s for ${cell.%s} (its server variables: %s)",
			s.spec.Name, strings.Join(missing, ", "), strings.Join(missing, "}, ${cell."), given)
	}
	vars := make(map[string]string, len(s.stageVars)+len(cell))
	for k, v := range s.stageVars {
		vars[k] = v
	}
	for k, v := range cell {
		vars["cell."+k] = v
	}
	environ := append([]string(nil), s.baseEnviron...)
	for _, k := range sortedKeys(s.cfg.Env) {
		ev, err := expandEnv(s.cfg.Env[k], vars)
		if err != nil {
			return fmt.Errorf("stages.%s.env.%s: %w", s.spec.Name, k, err)
		}
		environ = append(environ, k+"="+ev)
	}
	s.environ = environ
	cmd := s.withAdapters(s.cfg.Cmd)
	s.argv = commandLine(cmd, s.cfg.Shell, vars)
	if s.remote != nil {
		s.argv = remoteCommandLine(cmd, s.cfg.Shell, vars)
	}
	return nil
}

// modelFileThere refuses to start a server whose command line names the
// plan's model.file when that file is not there as the server would open
// it (relative to its dir): it would start, fail to load it and die, and
// the run would end as an infrastructure failure (exit 3) a while later,
// after the health stage gave up. A file a stage before this one fetched
// is there by now; a command that does not name it is not judged.
func modelFileThere(argv []string, dir, file string) error {
	if file == "" {
		return nil
	}
	for _, a := range argv {
		for _, f := range []string{a, strings.TrimPrefix(a, "--model="), strings.TrimPrefix(a, "-m=")} {
			if f != file {
				continue
			}
			path := f
			if !filepath.IsAbs(path) && dir != "" {
				path = filepath.Join(dir, path)
			}
			if _, err := os.Stat(path); err != nil {
				abs, _ := filepath.Abs(path)
				return fmt.Errorf("model.file %s is not there (%s): the server would fail to load it; fix the path (relative paths are the server's dir's, or benchrun's working directory), or fetch it in a stage this one needs", file, abs)
			}
			return nil
		}
	}
	return nil
}

// cellRefs lists the ${cell.KEY} names of cmd and env.
func cellRefs(cfg Config) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		for _, k := range pipeline.CellVarRefs(s) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	for _, a := range cfg.Cmd {
		add(a)
	}
	for _, k := range sortedKeys(cfg.Env) {
		add(cfg.Env[k])
	}
	return out
}

// missingCellVars lists the ${cell.KEY} of cmd and env that cell lacks.
func missingCellVars(cfg Config, cell map[string]string) []string {
	var out []string
	for _, k := range cellRefs(cfg) {
		if _, ok := cell[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// RestartsPerCell reports whether the server restarts before every
// measured cell (pipeline.CellRestarter).
func (s *Stage) RestartsPerCell() bool { return s.cfg.Restart == "per_cell" }

// EngineName is the engine preset the server runs (pipeline.EngineNamer).
func (s *Stage) EngineName() string { return s.cfg.Engine }

// CellVars lists, sorted, the ${cell.KEY} names of cmd and env
// (pipeline.CellRestarter): the server variables every cell must give.
func (s *Stage) CellVars() []string {
	refs := cellRefs(s.cfg)
	sort.Strings(refs)
	return refs
}

// firstCellVars returns the server variables of the first cell of the
// first stage (in plan order) among peers that targets the launch stage
// and applies a load whose first cell gives server variables
// (pipeline.LoadShaper), and that stage's name; nil when there is none.
func firstCellVars(peers []pipeline.Peer, launch string) (map[string]string, string) {
	for _, p := range peers {
		if p.Spec.Target != launch {
			continue
		}
		ls, ok := p.Stage.(pipeline.LoadShaper)
		if !ok {
			continue
		}
		if cells := ls.LoadShape().Cells; len(cells) > 0 && cells[0].Server != nil {
			return cells[0].Server, p.Spec.Name
		}
	}
	return nil, ""
}

// joinVars writes server variables as "k=v k=v", sorted by key.
func joinVars(vars map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(vars) {
		parts = append(parts, k+"="+vars[k])
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Cleanup stops the server. It is idempotent (the pipeline calls it after
// every failed attempt and once at the end): a server already stopped is
// not signalled again.
func (s *Stage) Cleanup(ctx context.Context) error {
	err := s.stop(ctx)
	if s.remote != nil && err == nil {
		// Kept after a failed stop: a second Cleanup tries again through it.
		s.remote.Close()
		s.remote = nil
	}
	return err
}

// stop stops the server (procrun's Stop): SIGINT, then SIGTERM, then
// SIGKILL to the process group, waiting stop_grace and term_grace between
// them, and finally whatever is left below the guard (a child that started
// its own session included). Each escalation is said on the progress
// writer, and a SIGKILL is recorded in the server's log.
func (s *Stage) stop(ctx context.Context) error {
	s.mu.Lock()
	p := s.proc
	if p != nil {
		p.stopped = true
	}
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.Stop(ctx, procrun.Graces{Int: s.prog.StopGrace, Term: s.termGrace, IntName: "stop_grace", TermName: "term_grace"})
	if err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	return nil
}

// logLine appends a line of benchrun's own to the server's log (the
// stage log: env.Log is closed once Run returns).
func (s *Stage) logLine(line string) {
	if s.logPath == "" {
		return
	}
	if f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

func (s *Stage) pickPort() (int, error) {
	switch p := s.cfg.Port.(type) {
	case string:
		if s.remote != nil {
			return s.remote.FreePort()
		}
		return pickFreePort(s.cfg.Host)
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

// pickFreePort is freePort; a test makes it return a taken port.
var pickFreePort = freePort

// freePort asks the kernel for a free port on host. Another process could
// take it before the server binds; a server that dies of that starts
// again on another port (Run).
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(urlHost(host), "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// urlHost is where clients connect: a server listening on every address
// is reached on loopback.
func urlHost(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// expand and expandEnv are the pipeline's one ${NAME} rule (pipeline.Expand,
// pipeline.ExpandEnv): in a command, an unknown ${NAME} stays as written; in
// an environment value it may name a variable of benchrun's own environment
// (secrets such as HF_TOKEN stay out of the plan file), and a name that is
// neither is an error.
func expand(s string, vars map[string]string) string { return pipeline.Expand(s, vars) }

func expandEnv(s string, vars map[string]string) (string, error) {
	return pipeline.ExpandEnv(s, vars)
}
