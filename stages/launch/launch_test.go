package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// The test binary doubles as the processes these tests launch: with
// simEnv set it is a real simulator server (sim.Serve), with parentEnv
// set it is a stand-in for benchrun that launches a server and waits to
// be killed.
const (
	simEnv    = "LAUNCH_TEST_SIM_ADDR"
	parentEnv = "LAUNCH_TEST_PARENT_DIR"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(simEnv); addr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		cfg := sim.DefaultConfig()
		cfg.Models = []string{os.Getenv("LAUNCH_TEST_SIM_MODEL")}
		if err := sim.Serve(ctx, cfg, addr, sim.ServeOptions{Log: os.Stderr}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(parentEnv); dir != "" {
		os.Exit(fakeBenchrun(dir))
	}
	os.Exit(m.Run())
}

// fakeBenchrun launches a server whose shell starts a grandchild, writes
// both pids, and blocks until it is killed.
func fakeBenchrun(dir string) int {
	src := `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, cmd: ["sleep 300 & echo $! > ` + dir + `/grandchild.pid; echo $$ > ` + dir + `/server.pid; wait"]}
`
	st, p, err := build(dir, src, "server")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := newEnv(dir, p, st.(*Stage).spec)
	if _, err := st.Run(context.Background(), env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until SIGKILL
}

func build(dir, src, name string) (pipeline.Stage, *schema.Plan, error) {
	path := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return nil, nil, err
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		return nil, nil, err
	}
	g, err := pipeline.Build(p, reg)
	if err != nil {
		return nil, nil, err
	}
	return g.Node(name).Stage, p, nil
}

func newEnv(dir string, p *schema.Plan, spec *schema.Stage) *pipeline.Env {
	logf, _ := os.OpenFile(filepath.Join(dir, spec.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return &pipeline.Env{Stage: spec, Plan: p, Dir: dir, Deps: map[string]*pipeline.Outputs{}, Log: logf, Progress: io.Discard}
}

// launch builds and runs the stage "server" of src; Cleanup runs at the end of the test.
func launch(t *testing.T, src string) (*Stage, *pipeline.Outputs, string, error) {
	t.Helper()
	dir := t.TempDir()
	st, p, err := build(dir, src, "server")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	t.Cleanup(func() {
		if err := s.Cleanup(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	out, err := s.Run(context.Background(), newEnv(dir, p, s.spec))
	return s, out, dir, err
}

func simPlan(extra string) string {
	self, _ := os.Executable()
	return fmt.Sprintf(`name: "p"
model: {name: "tiny"}
stages: server: {
	kind: "launch"
	engine: "sim"
	cmd: [%q, "-test.run=^$"]
	env: {%s: "${host}:${port}", LAUNCH_TEST_SIM_MODEL: "${model}"}
	%s
}
`, self, simEnv, extra)
}

func waitHTTP(t *testing.T, url string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return resp.StatusCode
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %s: %v", url, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupGone waits up to two seconds for every live (non-zombie) process
// of the group to be gone; zombies wait for whoever inherited them.
func groupGone(pgid int) bool {
	deadline := time.Now().Add(2 * time.Second)
	for {
		if len(LiveInGroup(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		if isZombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isZombie: a dead process not yet reaped by whoever inherited it.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestLaunchServesAndStops(t *testing.T) {
	s, out, dir, err := launch(t, simPlan(`files: {"note.txt": "model ${model} on ${port}"}
	setup: [{cmd: ["sh", "-c", "cat note.txt > setup-saw.txt"]}]
	after_start: [{cmd: ["sh", "-c", "echo started > after.txt"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if code := waitHTTP(t, out.URL+"/health", 10*time.Second); code != 200 {
		t.Fatalf("/health = %d", code)
	}
	if out.Model != "tiny" || out.Engine != "sim" || out.Values["metrics_url"] != out.URL+"/metrics" {
		t.Fatalf("outputs = %+v", out)
	}
	saw, _ := os.ReadFile(filepath.Join(dir, "setup-saw.txt"))
	if want := "model tiny on " + strconv.Itoa(s.port); string(saw) != want {
		t.Fatalf("setup saw %q, want %q (files are written before setup runs, with ${...} expanded)", saw, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "after.txt")); string(b) != "started\n" {
		t.Fatalf("after_start did not run: %q", b)
	}
	for _, f := range []string{"server.setup-0.log", "server.after_start-0.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("each command has its own log: %v", err)
		}
	}
	pgid := out.PID
	start := time.Now()
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a server that handles SIGINT took %s to stop", d)
	}
	if !groupGone(pgid) {
		t.Fatal("the server's process group outlived Cleanup")
	}
	select {
	case <-out.Done:
		t.Fatal("Done closed by a requested stop: dependents would be failed as if the server died")
	default:
	}
	log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	if !strings.Contains(string(log), "benchrun: starting ") {
		t.Errorf("server.log lacks the command line:\n%s", log)
	}
}

func TestStopEscalates(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string // which signal ended it, as the script logs it
		min    time.Duration
	}{
		{"exits on SIGINT", `trap 'echo got INT; exit 0' INT; echo traps" "set; while :; do sleep 0.05; done`, "got INT", 0},
		{"ignores SIGINT, exits on SIGTERM", `trap 'echo ignored INT' INT; trap 'echo got TERM; exit 0' TERM; echo traps" "set; while :; do sleep 0.05; done`, "got TERM", 300 * time.Millisecond},
		{"ignores both: SIGKILL", `trap 'echo ignored INT' INT; trap 'echo ignored TERM' TERM; echo traps" "set; while :; do sleep 0.05; done`, "ignored TERM", 600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, dir, err := launch(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sh", "-c", %q], stop_grace: "300ms", term_grace: "300ms"}
`, tt.script))
			if err != nil {
				t.Fatal(err)
			}
			waitLog(t, filepath.Join(dir, "server.log"), "traps set")
			start := time.Now()
			if err := s.Cleanup(context.Background()); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if took < tt.min || took > tt.min+2*time.Second {
				t.Errorf("stop took %s, want about %s", took, tt.min)
			}
			if !groupGone(out.PID) {
				t.Fatal("process group still there")
			}
			waitLog(t, filepath.Join(dir, "server.log"), tt.want)
		})
	}
}

func waitLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said %q:\n%s", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDeathClosesDoneWithReasonAndTail(t *testing.T) {
	s, out, _, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sh", "-c", "echo loading weights; echo out of memory >&2; exit 3"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.Done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the server exited")
	}
	// One line for the rows; the tail is for people (stderr, errors).
	if reason, want := out.DoneReason(), "exit status 3 (last line of server.log: out of memory)"; reason != want {
		t.Errorf("reason %q, want %q", reason, want)
	}
	details := s.deathDetails()
	for _, want := range []string{"exit status 3", "  | loading weights\n  | out of memory"} {
		if !strings.Contains(details, want) {
			t.Errorf("details %q lack %q", details, want)
		}
	}
}

func TestShellAndEnvAndGPUs(t *testing.T) {
	t.Setenv("LAUNCH_TEST_SECRET", "s3cr3t")
	_, out, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, gpus: [1, "0"], env: {GREETING: "hi ${model}", SECRET: "${LAUNCH_TEST_SECRET}"},
	cmd: ["echo", "$GREETING", "cuda=$CUDA_VISIBLE_DEVICES", "order=$CUDA_DEVICE_ORDER", "secret=$SECRET", "&&", "sleep 30"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "hi m cuda=1,0 order=PCI_BUS_ID secret=s3cr3t")
	if out.PID == 0 {
		t.Fatal("no pid")
	}
}

func TestGPUByNameWithoutNVML(t *testing.T) {
	if _, err := telemetry.ListGPUs(); err == nil {
		t.Skip("NVML works here: naming a GPU would succeed")
	}
	_, _, _, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", gpus: ["RTX 3090"], cmd: ["sleep", "30"]}
`)
	if err == nil || !strings.Contains(err.Error(), `stages.server.gpus: choosing GPU "RTX 3090" by name`) || !strings.Contains(err.Error(), "by index") {
		t.Fatalf("err = %v", err)
	}
}

func TestCommandFailures(t *testing.T) {
	tests := []struct {
		name, stage, want string
	}{
		{"setup fails with its log tail", `setup: [{cmd: ["sh", "-c", "echo cannot fetch weights >&2; exit 2"]}], cmd: ["sleep", "30"]`,
			`stages.server.setup[0] (sh -c echo cannot fetch weights >&2; exit 2): exit status 2; last lines of server.setup-0.log:
  | cannot fetch weights`},
		{"setup times out", `setup: [{cmd: ["sleep", "30"], timeout: "200ms"}], cmd: ["sleep", "30"]`, "timed out after 200ms"},
		{"missing binary", `cmd: ["no-such-server-binary-xyz"]`, `starting no-such-server-binary-xyz: exec: "no-such-server-binary-xyz": executable file not found`},
		{"exits before listening", `cmd: ["sh", "-c", "echo bad flag; exit 1"], after_start: [{cmd: ["true"]}]`, "server exited before listening"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, _, _, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", `+tt.stage+`}
`)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestRestartPerCell(t *testing.T) {
	s, out, _, err := launch(t, simPlan(`restart: "per_cell"`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Restart == nil {
		t.Fatal("restart: per_cell must set Outputs.Restart")
	}
	waitHTTP(t, out.URL+"/health", 10*time.Second)
	if out.PID != 0 {
		t.Errorf("PID %d exposed although restarts change it", out.PID)
	}
	first := s.pid()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := out.Restart(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if s.pid() == first {
		t.Fatal("same process after a restart")
	}
	if !groupGone(first) {
		t.Fatal("the old server's group is still there")
	}
	if code := waitHTTP(t, out.URL+"/v1/models", time.Second); code != 200 {
		t.Fatalf("not ready after Restart returned: %d", code)
	}
	select {
	case <-out.Done:
		t.Fatal("a restart closed Done")
	default:
	}
}

// TestServerDiesWithBenchrun kills a stand-in for benchrun with SIGKILL
// while its server (a shell with a child of its own) runs: the guard's
// parent-death signal must take the whole group down, grandchild included.
func TestServerDiesWithBenchrun(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < 2 {
		pids = pids[:0]
		for _, f := range []string{"server.pid", "grandchild.pid"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, n)
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the stand-in never started its server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, pids[0], "server")
	waitGone(t, pids[1], "server's child")
}

func TestEarlierStagesOutputs(t *testing.T) {
	dir := t.TempDir()
	st, p, err := build(dir, `name: "p"
model: {name: "m", file: "weights/m.gguf"}
stages: server: {kind: "launch", shell: true, cmd: ["echo pod=${pod.host} file=${model_file} && sleep 30"]}
`, "server")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	defer s.Cleanup(context.Background())
	env := newEnv(dir, p, s.spec)
	env.Deps["pod"] = &pipeline.Outputs{Values: map[string]any{"host": "10.1.2.3", "cost_per_hour": 2.5}}
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "pod=10.1.2.3 file="+filepath.Join(dir, "weights/m.gguf"))
	if out.Values["cost_per_hour"] != 2.5 {
		t.Fatalf("the pod's price does not reach the sweep: %v", out.Values)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, plan, want string
	}{
		{"no model name", `name: "p"
stages: server: {kind: "launch", cmd: ["x"]}`, "no served model name"},
		{"empty command", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: [""]}`, "stages.server.cmd: the command is empty"},
		{"file outside the run directory", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], files: {"../escape": "x"}}`, `a file name inside the run directory`},
		{"bad GPU", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], gpus: [-1]}`, "gpus"},
		{"cell variable without per_cell", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x", "-np", "${cell.np}"]}`, `stages.server.cmd: ${cell.np} takes a value from the cell being measured, which reaches the server only through a restart before each cell: set restart: "per_cell"`},
		{"cell variable no cell gives", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], env: {NP: "${cell.np}"}, restart: "per_cell"}`, "stages.server.env: ${cell.np}, but no stage targeting server gives its cells server variables"},
		{"cell variable in a setup command", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], restart: "per_cell", setup: [{cmd: ["y", "${cell.np}"]}]}`, "stages.server.setup: ${cell.np} expands only in cmd and env"},
		{"bad restart", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], restart: "always"}`, "restart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := build(t.TempDir(), tt.plan, "server")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestMetricsURL: the preset's metrics path on the API port, MAX's on its
// own metrics port, none for Ollama, and a plan's own for a custom engine.
func TestMetricsURL(t *testing.T) {
	tests := []struct {
		name, stage string
		want        func(port int) string
	}{
		{"llama-server on the API port", `engine: "llama-server"`, func(p int) string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", p) }},
		{"MAX on its metrics port", `engine: "max"`, func(int) string { return "http://127.0.0.1:8001/metrics" }},
		{"Ollama has none", `engine: "ollama"`, func(int) string { return "" }},
		{"a custom engine gives its own", `metrics_url: "http://${host}:${port}/prom"`, func(p int) string { return fmt.Sprintf("http://127.0.0.1:%d/prom", p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, _, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sleep", "30"], `+tt.stage+`}
`)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := out.Values["metrics_url"].(string)
			if want := tt.want(s.port); got != want {
				t.Errorf("metrics_url = %q, want %q", got, want)
			}
		})
	}
}

// TestEnvNamesAnUnsetVariable: a secret the plan expects from benchrun's
// environment but nobody exported fails before anything starts, naming
// the variable, instead of reaching the server as the text "${...}".
func TestEnvNamesAnUnsetVariable(t *testing.T) {
	os.Unsetenv("LAUNCH_TEST_UNSET_TOKEN")
	_, _, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sleep", "30"], env: {HF_TOKEN: "${LAUNCH_TEST_UNSET_TOKEN}"},
	setup: [{cmd: ["sh", "-c", "echo ran > setup-ran"]}]}
`)
	want := "stages.server.env.HF_TOKEN: ${LAUNCH_TEST_UNSET_TOKEN} is neither a plan variable"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "export it") {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "setup-ran")); err == nil {
		t.Error("setup ran although the environment was incomplete")
	}
}

// cellKind stands in for a sweep: a stage that targets the server and
// lists cells with server variables.
var cellKind = pipeline.Kind{
	Name: "cells",
	Schema: schema.KindSchema{Def: "#Cells", Source: `package schema
#Cells: {
	#StageBase
	kind:   "cells"
	target: string
	cells: [...{server?: [string]: string}]
}`},
	New: func(*schema.Stage) (pipeline.Stage, error) { return nil, nil },
}

// TestRestartWithCellVariables: the first start takes ${cell.KEY} from the
// first cell of a stage targeting the server, each restart from the vars
// it is given; a variable they lack fails, naming it, before the running
// server is stopped.
func TestRestartWithCellVariables(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.cue")
	src := strings.Replace(simPlan(`restart: "per_cell"`), `env: {`, `env: {LAUNCH_TEST_TAG: "${cell.tag}", `, 1) +
		`stages: bench: {kind: "cells", target: "server", cells: [{server: {tag: "first"}}, {server: {tag: "second"}}]}` + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	reg.AddKind(cellKind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := New(p.Stage("server"))
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	if err := s.Validate(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Cleanup(context.Background()) })
	out, err := s.Run(context.Background(), newEnv(dir, p, s.spec))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.environ, "LAUNCH_TEST_TAG=first") {
		t.Errorf("first start without the first cell's tag: %v", s.environ)
	}
	waitHTTP(t, out.URL+"/health", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := out.Restart(ctx, map[string]string{"tag": "second"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.environ, "LAUNCH_TEST_TAG=second") {
		t.Errorf("restart without the cell's tag: %v", s.environ)
	}
	pid := s.pid()
	err = out.Restart(ctx, map[string]string{"np": "4"})
	if err == nil || !strings.Contains(err.Error(), "the cell gives no server variable tag for ${cell.tag} (its server variables: np=4)") {
		t.Fatalf("err = %v", err)
	}
	if s.pid() != pid || s.exitStatus() != "still running" {
		t.Errorf("a refused restart touched the server: pid %d -> %d, %s", pid, s.pid(), s.exitStatus())
	}
}
