package launch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

	"github.com/benchrun/benchrun/internal/procrun/procruntest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
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
		if d, err := time.ParseDuration(os.Getenv("LAUNCH_TEST_SIM_LOAD")); err == nil {
			cfg.LoadTime = d // answers 503 this long after it starts
		}
		if d, err := time.ParseDuration(os.Getenv("LAUNCH_TEST_SIM_LISTEN")); err == nil {
			cfg.ListenAfter = d // connection refused this long after it starts
		}
		if os.Getenv("LAUNCH_TEST_SIM_ERRORS") != "" {
			cfg.Faults.ErrorRate = 1 // every request an error
		}
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
// both pids, and blocks until it is killed. With LAUNCH_TEST_DAEMON set
// the grandchild starts its own session and its parent (a subshell)
// exits, as a daemonizing wrapper does.
func fakeBenchrun(dir string) int {
	script := `sleep 300 & echo $! > ` + dir + `/grandchild.pid; echo $$ > ` + dir + `/server.pid; wait`
	if os.Getenv("LAUNCH_TEST_DAEMON") != "" {
		script = `(setsid sleep 300 & echo $! > ` + dir + `/grandchild.pid); echo $$ > ` + dir + `/server.pid; sleep 300`
	}
	src := `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, cmd: [` + strconv.Quote(script) + `]}
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
	return launchWith(t, src, io.Discard)
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer

// launchWith is launch with the stage's progress going to progress.
func launchWith(t *testing.T, src string, progress io.Writer) (*Stage, *pipeline.Outputs, string, error) {
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
	env := newEnv(dir, p, s.spec)
	env.Progress = progress
	out, err := s.Run(context.Background(), env)
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
		if len(procruntest.LiveInGroup(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	// Cleanup is idempotent: the pipeline calls it after every failed
	// attempt and once at the end.
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatalf("a second Cleanup: %v", err)
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
		// What the progress view says while it waits, and what it must not.
		progress, notProgress []string
		killed                bool // the log records that SIGKILL was needed
	}{
		{"exits on SIGINT", `trap 'echo got INT; exit 0' INT; echo traps" "set; while :; do sleep 0.05; done`, "got INT", 0,
			nil, []string{"still running"}, false},
		{"ignores SIGINT, exits on SIGTERM", `trap 'echo ignored INT' INT; trap 'echo got TERM; exit 0' TERM; echo traps" "set; while :; do sleep 0.05; done`, "got TERM", 300 * time.Millisecond,
			[]string{"  server: still running 3", "ms after SIGINT; sending SIGTERM\n"}, []string{"SIGKILL"}, false},
		{"ignores both: SIGKILL", `trap 'echo ignored INT' INT; trap 'echo ignored TERM' TERM; echo traps" "set; while :; do sleep 0.05; done`, "ignored TERM", 600 * time.Millisecond,
			[]string{"ms after SIGINT; sending SIGTERM\n", "ms after SIGTERM; sending SIGKILL\n"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var progress syncBuffer
			s, out, dir, err := launchWith(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sh", "-c", %q], stop_grace: "300ms", term_grace: "300ms"}
`, tt.script), &progress)
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
			for _, want := range tt.progress {
				if !strings.Contains(progress.String(), want) {
					t.Errorf("progress lacks %q:\n%s", want, progress.String())
				}
			}
			for _, not := range tt.notProgress {
				if strings.Contains(progress.String(), not) {
					t.Errorf("progress says %q:\n%s", not, progress.String())
				}
			}
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			if got := strings.Contains(string(log), "benchrun: SIGKILL was needed to stop the server: it ignored SIGINT (stop_grace 300ms) and SIGTERM (term_grace 300ms)"); got != tt.killed {
				t.Errorf("the log records SIGKILL: %v, want %v:\n%s", got, tt.killed, log)
			}
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
	// A machine without NVML (whatever this one has): the GPUs go to the
	// server by index, and the log says they could not go by UUID.
	saved := listGPUs
	listGPUs = func() ([]telemetry.GPU, error) { return nil, telemetry.ErrNoNVML }
	t.Cleanup(func() { listGPUs = saved })
	_, out, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, gpus: [1, "0"], env: {GREETING: "hi ${model}", SECRET: "${LAUNCH_TEST_SECRET}"},
	cmd: ["echo", "$GREETING", "cuda=$CUDA_VISIBLE_DEVICES", "order=$CUDA_DEVICE_ORDER", "secret=$SECRET", "&&", "sleep 30"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	// The secret reached the program, which printed it: its log holds it
	// masked as it was written (no copy ever lands in the file).
	waitLog(t, filepath.Join(dir, "server.log"), "hi m cuda=1,0 order=PCI_BUS_ID secret=[REDACTED]")
	waitLog(t, filepath.Join(dir, "server.log"), "benchrun: GPUs [1 0] given by NVML index, not UUID: NVML is not available")
	if out.PID == 0 {
		t.Fatal("no pid")
	}
	if !slices.Equal(out.GPUs, []string{"1", "0"}) {
		t.Fatalf("Outputs.GPUs = %q, want the indices", out.GPUs)
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
// parent-death signal must take everything below it down, the grandchild
// included, even one that started its own session and whose parent
// exited (a daemonizing wrapper: re-parented to the guard, a subreaper).
func TestServerDiesWithBenchrun(t *testing.T) {
	for _, mode := range []string{"child in the group", "daemon in its own session"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			self, _ := os.Executable()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), parentEnv+"="+dir)
			if mode != "child in the group" {
				cmd.Env = append(cmd.Env, "LAUNCH_TEST_DAEMON=1")
			}
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
			t.Cleanup(func() { syscall.Kill(pids[1], syscall.SIGKILL) })
			if mode != "child in the group" {
				if sid := session(pids[1]); sid != pids[1] {
					t.Fatalf("the daemon's session is %d, want its own (%d): the test would not test setsid", sid, pids[1])
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			testkit.WaitGone(t, "server", pids[0])
			testkit.WaitGone(t, "server's child", pids[1])
		})
	}
}

// session is the session id of pid, from /proc/PID/stat.
func session(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return 0
	}
	n, _ := strconv.Atoi(f[3])
	return n
}

// TestStopKillsEveryDescendant: a normal stop reaches a child that left
// the server's process group (setsid) and would not get the group's
// SIGINT: the guard passes the signal on, and whatever is left when the
// server exits is killed.
func TestStopKillsEveryDescendant(t *testing.T) {
	for _, tt := range []struct{ name, script string }{
		{"stops on the passed-on SIGINT", `setsid sleep 300 & echo $! > daemon.pid; wait`},
		{"ignores it: killed with the server", `setsid sh -c 'trap "" INT TERM; echo $$ > daemon.pid; while :; do sleep 0.05; done' & wait`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _, _, err := launch(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", dir: %q, cmd: ["sh", "-c", %q]}
`, dir, tt.script))
			if err != nil {
				t.Fatal(err)
			}
			pid := waitPIDFile(t, filepath.Join(dir, "daemon.pid"))
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			start := time.Now()
			if err := s.Cleanup(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("stop took %s", d)
			}
			testkit.WaitGone(t, "the server's setsid child", pid)
		})
	}
}

func waitPIDFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return 0
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
	price := 2.5
	env.Deps["pod"] = &pipeline.Outputs{Values: map[string]any{"host": "10.1.2.3", "cost_per_hour": 2.5}, CostPerHour: &price}
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "pod=10.1.2.3 file="+filepath.Join(dir, "weights/m.gguf"))
	if out.CostPerHour == nil || *out.CostPerHour != 2.5 {
		t.Fatalf("the pod's price does not reach the sweep: %v", out.CostPerHour)
	}
	if out.Values["cost_per_hour"] != 2.5 {
		t.Fatalf("the pod's outputs do not reach when expressions: %v", out.Values)
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
		{"a file of the run's own", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], files: {"manifest.json": "{}"}}`, `stages.server.files: "manifest.json": benchrun writes manifest.json in every run directory; give the file another name`},
		{"the lock", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], files: {".benchrun.lock": ""}}`, `benchrun writes .benchrun.lock`},
		{"a table's folder", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], files: {"cells": ""}}`, `benchrun writes cells in every run directory`},
		{"a stage's log", `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["x"], files: {"server.log": ""}}`, `benchrun writes each stage's log as <stage>.log`},
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
// says what load it applies (pipeline.LoadShaper), cells with server
// variables included.
var cellKind = pipeline.Kind{
	Name: "cells",
	Schema: schema.KindSchema{Def: "#Cells", Source: `package schema
#Cells: {
	#StageBase
	kind:   "cells"
	target: string
	cells: [...{server?: [string]: string}]
}`},
	New: func(s *schema.Stage) (pipeline.Stage, error) {
		var cfg struct {
			Cells []struct {
				Server map[string]string `json:"server"`
			} `json:"cells"`
		}
		if err := s.Decode(&cfg); err != nil {
			return nil, err
		}
		var l pipeline.LoadShape
		for _, c := range cfg.Cells {
			l.Cells = append(l.Cells, pipeline.ShapeCell{ISL: 8, OSL: 8, Server: c.Server})
		}
		return cells{l}, nil
	},
}

type cells struct{ shape pipeline.LoadShape }

var _ pipeline.LoadShaper = cells{}

func (cells) Validate(*pipeline.Check) error { return nil }
func (cells) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, nil
}
func (c cells) LoadShape() pipeline.LoadShape { return c.shape }

// gateKind stands in for the health kind: a stage that waits for its
// target to be ready (pipeline.ReadinessGate).
var gateKind = pipeline.Kind{Name: "health", Schema: schema.KindSchema{Def: "#H", Source: "package schema\n#H: {#StageBase, kind: \"health\", target: string}"},
	New: func(s *schema.Stage) (pipeline.Stage, error) { return gate{s.Target}, nil }}

type gate struct{ target string }

var _ pipeline.ReadinessGate = gate{}

func (gate) Validate(*pipeline.Check) error { return nil }
func (gate) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, nil
}
func (g gate) ReadinessOf() string { return g.target }

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
	g, err := pipeline.Build(p, reg) // decodes and validates every stage
	if err != nil {
		t.Fatal(err)
	}
	s := g.Node("server").Stage.(*Stage)
	// Run finds the first cell through its Env (Env.Dependents), in g.
	t.Cleanup(func() { _ = s.Cleanup(context.Background()) })
	env := newEnv(dir, p, s.spec)
	env.Graph = g
	out, err := s.Run(context.Background(), env)
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

// holdPort runs a simulator (the test binary) on a fixed port in a
// process of its own, as another user of the machine would, and returns
// the port and the process.
func holdPort(t *testing.T) (int, *exec.Cmd) {
	t.Helper()
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), simEnv+"="+fmt.Sprintf("127.0.0.1:%d", port), "LAUNCH_TEST_SIM_MODEL=m")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/health", port), 10*time.Second)
	return port, cmd
}

// TestBusyFixedPortIsRefused: a fixed port another process serves would
// be benchmarked in the launched server's place; it is refused before
// anything starts, naming the port and the process holding it.
func TestBusyFixedPortIsRefused(t *testing.T) {
	port, holder := holdPort(t)
	start := time.Now()
	_, _, dir, err := launch(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", port: %d, cmd: ["sleep", "30"], setup: [{cmd: ["sh", "-c", "echo ran > setup-ran"]}]}
`, port))
	want := fmt.Sprintf("stages.server.port: port %d on 127.0.0.1 is already in use by pid %d (", port, holder.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `use port: "auto"`) {
		t.Fatalf("err = %v\nwant it to contain %q", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %s", d)
	}
	if _, err := os.Stat(filepath.Join(dir, "setup-ran")); err == nil {
		t.Error("setup ran although the port was busy")
	}
}

// TestAPortAnsweredByAnotherProcessIsNotUp: a server is up only when its
// own process tree holds the listening socket. Here the server never
// listens while another process takes its port after the start: the
// launch waits (saying so) and fails at start_within, naming the holder.
func TestAPortAnsweredByAnotherProcessIsNotUp(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, p, err := build(dir, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", port: %d, start_within: "3s", cmd: ["sh", "-c", "echo loading; sleep 30"]}
`, port), "server")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	t.Cleanup(func() { _ = s.Cleanup(context.Background()) })
	var progress syncBuffer
	env := newEnv(dir, p, s.spec)
	env.Progress = &progress
	type result struct {
		out *pipeline.Outputs
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, err := s.Run(context.Background(), env)
		done <- result{out, err}
	}()
	waitLog(t, filepath.Join(dir, "server.log"), "loading")
	// Someone else binds the port the server was given.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := <-done
	if r.err == nil {
		t.Fatalf("up at %s although another process holds its port", r.out.URL)
	}
	want := fmt.Sprintf("server not holding its port (pid %d (", os.Getpid())
	if !strings.Contains(r.err.Error(), want) || !strings.Contains(r.err.Error(), "within 3s (start_within)") {
		t.Errorf("err = %v\nwant %q", r.err, want)
	}
	if d := time.Since(start); d < 3*time.Second || d > 6*time.Second {
		t.Errorf("failed after %s, want start_within (3s)", d)
	}
	if want := fmt.Sprintf("  server: 127.0.0.1:%d answers, but pid %d (", port, os.Getpid()); !strings.Contains(progress.String(), want) {
		t.Errorf("progress does not say who holds the port (%q):\n%s", want, progress.String())
	}
}

// TestTakenAutoPortMovesTheServer: an automatic port is free when benchrun
// picks it, but another process can bind it before the server does (a
// parallel run's server did, under load). The server dies of "address
// already in use"; the launch starts it again on another port, says so,
// and is up there with ${port} and the files told the new port.
func TestTakenAutoPortMovesTheServer(t *testing.T) {
	taken, holder := holdPort(t)
	picks := 0
	pickFreePort = func(host string) (int, error) {
		picks++
		if picks == 1 {
			return taken, nil
		}
		return freePort(host)
	}
	t.Cleanup(func() { pickFreePort = freePort })
	self, _ := os.Executable()
	var progress syncBuffer
	_, out, dir, err := launchWith(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {
	kind: "launch"
	cmd: [%q, "-test.run=^$"]
	env: {%s: "${host}:${port}", LAUNCH_TEST_SIM_MODEL: "${model}"}
	files: {"port.txt": "${port}"}
}
`, self, simEnv), &progress)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(out.URL)
	port, _ := strconv.Atoi(u.Port())
	if port == taken || port == 0 || picks != 2 {
		t.Fatalf("up at %s after %d picks; the taken port was %d", out.URL, picks, taken)
	}
	waitHTTP(t, out.URL+"/health", 5*time.Second)
	if b, _ := os.ReadFile(filepath.Join(dir, "port.txt")); string(b) != strconv.Itoa(port) {
		t.Errorf("port.txt = %q, want the new port %d", b, port)
	}
	want := fmt.Sprintf("port %d was taken before the server bound it (pid %d (", taken, holder.Process.Pid)
	if !strings.Contains(progress.String(), want) || !strings.Contains(progress.String(), fmt.Sprintf("starting it again on port %d", port)) {
		t.Errorf("progress does not say the port moved (%q):\n%s", want, progress.String())
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "server.log")); !strings.Contains(string(log), "benchrun: "+want) {
		t.Errorf("server.log does not say the port moved:\n%s", log)
	}
}

// TestTakenPortIsNotMovedWhenSetupKnowsIt: a setup command already told
// the port (it is not run again), so a server that dies of it is an
// error, not a move.
func TestTakenPortIsNotMovedWhenSetupKnowsIt(t *testing.T) {
	taken, _ := holdPort(t)
	pickFreePort = func(string) (int, error) { return taken, nil }
	t.Cleanup(func() { pickFreePort = freePort })
	self, _ := os.Executable()
	_, _, _, err := launch(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {
	kind: "launch"
	setup: [{cmd: ["sh", "-c", "echo ${port} > setup-port"]}]
	cmd: [%q, "-test.run=^$"]
	env: {%s: "${host}:${port}", LAUNCH_TEST_SIM_MODEL: "${model}"}
}
`, self, simEnv))
	if err == nil || !strings.Contains(err.Error(), "server exited before listening") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want the server's death on its taken port", err)
	}
}

// TestRunWaitsForThePort: without after_start, the launch stage is up only
// once the server listens, so a stage after it (a sweep without a health
// stage) never sends into a closed port; a wait longer than 2s is said on
// the progress view.
func TestRunWaitsForThePort(t *testing.T) {
	self, _ := os.Executable()
	var progress syncBuffer
	start := time.Now()
	_, out, dir, err := launchWith(t, fmt.Sprintf(`name: "p"
model: {name: "tiny"}
stages: server: {
	kind: "launch"
	cmd: ["sh", "-c", "sleep 2.5; exec %s -test.run=^$"]
	env: {%s: "${host}:${port}", LAUNCH_TEST_SIM_MODEL: "${model}"}
}
`, self, simEnv), &progress)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2500*time.Millisecond {
		t.Errorf("up after %s, before the server could listen", d)
	}
	host := strings.TrimPrefix(out.URL, "http://")
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		t.Fatalf("up, but %s does not accept connections: %v", host, err)
	}
	c.Close()
	if want := "  server: waiting for the server to listen on " + host + " (start_within 5m0s)"; !strings.Contains(progress.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, progress.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	if !strings.Contains(string(log), "benchrun: listening on "+host+" after ") {
		t.Errorf("server.log does not say when it listened:\n%s", log)
	}
}

// TestFirstErrorLineIsShown: a server that dies at start-up with its real
// error first and a long usage text after it: the error names that line
// as well as the tail.
func TestFirstErrorLineIsShown(t *testing.T) {
	script := `echo "flag provided but not defined: -bogus"; echo "Usage of server:"; i=0; while [ $i -lt 30 ]; do echo "  -opt$i string"; echo "    	what option $i does"; i=$((i+1)); done; exit 2`
	s, _, _, err := launch(t, fmt.Sprintf(`name: "p"
model: {name: "m"}
stages: server: {kind: "launch", cmd: ["sh", "-c", %q, "sh", "--port", "${port}"]}
`, script))
	want := "server exited before listening on 127.0.0.1:" + strconv.Itoa(s.port) + ": exit status 2; first error in server.log: flag provided but not defined: -bogus; last lines of server.log:\n  | "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "what option 29 does") {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	if strings.Count(err.Error(), "flag provided") != 1 {
		t.Errorf("the first error line twice:\n%v", err)
	}
	if got, want := s.deathReason(), "exit status 2 (last line of server.log: what option 29 does; first error: flag provided but not defined: -bogus)"; got != want {
		t.Errorf("reason %q\nwant   %q", got, want)
	}
}

// TestParseVersion: the version strings engines print. Sources: llama.cpp
// common/arg.cpp (`--version`: "version: %d (%s)" and "built with %s for
// %s" on stderr, after ggml's backend loading lines); Ollama cmd/cmd.go
// versionHandler (v0.6.5: "ollama version is X" when the server answers
// with the same version, else a warning and "Warning: client version is
// X"); vLLM vllm/entrypoints/cli/main.py (`--version` is argparse's
// version action with importlib.metadata.version("vllm"), possibly after
// INFO log lines); TGI's launcher (clap: "text-generation-launcher 2.4.0").
func TestParseVersion(t *testing.T) {
	tests := []struct{ parser, out, want string }{
		{"llama-server", "version: 6500 (abcdef0)\nbuilt with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu\n", "b6500"},
		{"llama-server", "load_backend: loaded CPU backend from /usr/lib/libggml-cpu-haswell.so\nversion: 4589 (eb7cf15a)\nbuilt with MSVC 19.40 for x64\n", "b4589"},
		{"llama-server", "error: unknown argument: --version\n", ""},
		// Current llama.cpp (3f545becc, ../shared/RESEARCH.md §9).
		{"llama-server", "version: 0.2.0-dev (build 7236, commit 3f545be)\nbuilt with GNU 12.2.0 for Linux x86_64\n", "b7236"},
		{"llama-server", "version: 0.2.0-dev (build 0, commit unknown)\n", "0.2.0-dev"},
		{"ollama", "ollama version is 0.6.5\n", "0.6.5"},
		{"ollama", "Warning: could not connect to a running Ollama instance\nWarning: client version is 0.6.5\n", "0.6.5"},
		{"ollama", "ollama version is 0.17.4\nWarning: client version is 0.6.5\n", "0.6.5"},
		{"vllm", "0.11.0\n", "0.11.0"},
		{"vllm", "INFO 10-08 09:12:41 [__init__.py:216] Automatically detected platform cuda.\n0.11.1.dev12+g1234abc\n", "0.11.1.dev12+g1234abc"},
		{"vllm", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n", ""},
		{"generic", "text-generation-launcher 2.4.0\n", "2.4.0"},
		{"generic", "0.5.4.post1\n", "0.5.4.post1"},
		{"generic", "no version here\n", ""},
	}
	for _, tt := range tests {
		if got := ParseVersion(tt.parser, tt.out); got != tt.want {
			t.Errorf("ParseVersion(%s, %q) = %q, want %q", tt.parser, tt.out, got, tt.want)
		}
	}
}

// TestEngineVersion runs a stand-in llama-server whose --version prints
// what llama.cpp prints: the version is learned before the server starts
// and reaches the outputs; a binary whose --version fails or hangs leaves
// it "" without holding the launch up for more than the 3s bound.
func TestEngineVersion(t *testing.T) {
	tests := []struct{ name, version, want string }{
		{"llama.cpp's output", `echo "load_backend: loaded CPU backend" >&2; echo "version: 6500 (abcdef0)" >&2; echo "built with cc for x86_64-linux-gnu" >&2; exit 0`, "b6500"},
		{"fails", `echo "error: unknown argument: --version" >&2; exit 1`, ""},
		{"hangs", `sleep 30`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			script := "#!/bin/sh\nif [ \"$1\" = --version ]; then " + tt.version + "; fi\necho serving; exec sleep 30\n"
			if err := os.WriteFile(filepath.Join(bin, "llama-server"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			start := time.Now()
			_, out, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", engine: "llama-server", cmd: ["llama-server", "-m", "x.gguf"]}
`)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 4500*time.Millisecond {
				t.Errorf("the version check held the launch up for %s", d)
			}
			if out.EngineVersion != tt.want {
				t.Errorf("EngineVersion = %q, want %q", out.EngineVersion, tt.want)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			v := strings.Index(string(log), "benchrun: engine version")
			if v < 0 || v > strings.Index(string(log), "benchrun: starting") {
				t.Errorf("the version is not learned (and logged) before the server starts:\n%s", log)
			}
		})
	}
	if parser, _ := versionCommand(Config{Config: program.Config{Cmd: []string{"benchrun", "sim"}}}, []string{"/x/benchrun", "sim"}); parser != "sim" {
		t.Errorf("benchrun sim is engine %q, want sim", parser)
	}
	if parser, _ := versionCommand(Config{Engine: "vllm", Config: program.Config{Cmd: []string{"ssh", "pod", "vllm", "serve"}}}, []string{"ssh", "pod", "vllm", "serve"}); parser != "" {
		t.Errorf("ssh's --version would be taken for vllm's (%q)", parser)
	}
}

// TestWarnsAboutASweepWithoutHealth: vet warns (pipeline.Warner) about a
// stage sending to the server with no health stage before it, directly
// or through its needs; a health stage in between, or per-cell restarts,
// silence it.
func TestWarnsAboutASweepWithoutHealth(t *testing.T) {
	tests := []struct {
		name, stages string
		want         []string // stage names warned about
	}{
		{"no health", `bench: {kind: "cells", target: "server"}`, []string{"bench"}},
		{"health before it", `health: {kind: "cells", target: "server"}
	bench: {kind: "cells", target: "server", needs: ["health"]}`, []string{"bench", "health"}},
		{"health of another server", `check: {kind: "health", target: "http://127.0.0.1:9"}
	bench: {kind: "cells", target: "server", needs: ["check"]}`, []string{"bench"}},
		{"health through a warm-up", `health: {kind: "health", target: "server"}
	warm: {kind: "cells", target: "server", needs: ["health"]}
	bench: {kind: "cells", target: "server", needs: ["warm"]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plan.cue")
			src := "name: \"p\"\nmodel: {name: \"m\"}\nstages: {\n\tserver: {kind: \"launch\", cmd: [\"x\"]}\n\t" + tt.stages + "\n}\n"
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := pipeline.NewRegistry()
			reg.AddKind(Kind)
			reg.AddKind(cellKind)
			reg.AddKind(gateKind)
			p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
			if err != nil {
				t.Fatal(err)
			}
			g, err := pipeline.Build(p, reg)
			if err != nil {
				t.Fatal(err)
			}
			if ws := g.Warnings; len(ws) != len(tt.want) {
				t.Errorf("vet's warnings: %v", ws)
			}
			var got []string
			for _, w := range g.Node("server").Stage.(*Stage).Warnings(g.Check("server")) {
				name, _, _ := strings.Cut(strings.TrimPrefix(w.Msg, "stages."), " ")
				got = append(got, name)
				if w.Pos.Line == 0 || !strings.Contains(w.Msg, `with no health stage before it`) || !strings.Contains(w.Msg, `add health: {kind: "health", target: "server"}`) {
					t.Errorf("warning %s: %s", w.Pos, w.Msg)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("warned about %v, want %v", got, tt.want)
			}
		})
	}
}

// TestModelFileThere: a command naming the plan's model.file (as an
// argument or --model=/-m=) is refused when the file is not where the
// server would open it (relative to its dir); a command that does not
// name it, or a file that is there, is not.
func TestModelFileThere(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "q4.gguf"), []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		argv []string
		dir  string
		file string
		bad  bool
	}{
		{"there, relative to the dir", []string{"llama-server", "-m", "models/q4.gguf"}, dir, "models/q4.gguf", false},
		{"missing", []string{"llama-server", "-m", "models/q8.gguf"}, dir, "models/q8.gguf", true},
		{"missing, --model=", []string{"vllm", "--model=models/q8.gguf"}, dir, "models/q8.gguf", true},
		{"not named by the command", []string{"ollama", "serve"}, dir, "models/q8.gguf", false},
		{"no model.file", []string{"llama-server", "-m", "x.gguf"}, dir, "", false},
		{"there, absolute", []string{"llama-server", "-m", filepath.Join(dir, "models", "q4.gguf")}, "", filepath.Join(dir, "models", "q4.gguf"), false},
	} {
		err := modelFileThere(tc.argv, tc.dir, tc.file)
		if (err != nil) != tc.bad {
			t.Errorf("%s: %v, want refused %v", tc.name, err, tc.bad)
		}
	}
}
