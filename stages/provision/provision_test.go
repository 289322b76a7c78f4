package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// The pipeline-level tests (teardown on every exit path, cost columns)
// are in stages/provision_test.go and plans/provision_test.go; these check
// the stage on its own.

func TestParseOutputs(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]any
	}{
		{`{"host": "10.0.0.2", "port": 8000, "id": "abc", "ratio": 0.5}`, map[string]any{"host": "10.0.0.2", "port": int64(8000), "id": "abc", "ratio": 0.5}},
		{"Creating pod...\nid=abc\nhost=10.0.0.2\nnot a pair\n  port=8000\nbad key=1\n", map[string]any{"id": "abc", "host": "10.0.0.2", "port": "8000"}},
		{"{not json\nid=x\n", map[string]any{"id": "x"}},
		{"", map[string]any{}},
	}
	for _, tt := range tests {
		got := ParseOutputs([]byte(tt.in))
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("ParseOutputs(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	got := redact(map[string]any{"host": "h", "api_key": "sk-123", "ssh_password": "p", "Token": "t", "port": 1})
	if got != "Token=*** api_key=*** host=h port=1 ssh_password=***" {
		t.Fatalf("redact = %s", got)
	}
}

func stage(t *testing.T, body string) (*Stage, *pipeline.Env, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.cue")
	os.WriteFile(path, []byte("name: \"p\"\nstages: pod: {kind: \"provision\", "+body+"}\n"), 0o644)
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := New(p.Stage("pod"))
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Stage), &pipeline.Env{Stage: p.Stage("pod"), Plan: p, Dir: dir, Log: os.Stderr}, dir
}

func TestOutputsAndSingleTeardown(t *testing.T) {
	s, env, dir := stage(t, `create: {cmd: ["sh", "-c", "echo '{\"host\": \"10.9.8.7\", \"port\": 8000, \"id\": \"p1\"}'"]}
	wait: {cmd: ["sh", "-c", "echo ready=${id}"]}
	teardown: {cmd: ["sh", "-c", "echo gone ${id} ${host} >> torn"]}
	cost_per_hour: 1.5`)
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if out.URL != "http://10.9.8.7:8000" || out.Values["ready"] != "p1" || out.Values["cost_per_hour"] != 1.5 || out.Done == nil {
		t.Fatalf("outputs = %+v", out)
	}
	if out.CostPerHour == nil || *out.CostPerHour != 1.5 {
		t.Fatalf("CostPerHour = %v, want the plan's 1.5 (what the sweep's cost columns read)", out.CostPerHour)
	}
	for i := 0; i < 2; i++ {
		if err := s.Cleanup(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "torn"))
	if string(b) != "gone p1 10.9.8.7\n" {
		t.Fatalf("teardown ran %q (want once, with the outputs expanded)", b)
	}
	select {
	case <-out.Done:
	default:
		t.Error("Done stays open after teardown")
	}
}

func TestTeardownFailureIsLoud(t *testing.T) {
	s, env, _ := stage(t, `create: {cmd: ["true"]}
	teardown: {cmd: ["sh", "-c", "echo 'pod busy' >&2; exit 4"]}`)
	if _, err := s.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	err := s.Cleanup(context.Background())
	if err == nil || !strings.Contains(err.Error(), "may still be running and billing") || !strings.Contains(err.Error(), "pod busy") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoTeardownWithoutCreate(t *testing.T) {
	s, _, dir := stage(t, `create: {cmd: ["true"]}
	teardown: {cmd: ["sh", "-c", "echo torn > torn"]}`)
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "torn")); err == nil {
		t.Fatal("teardown ran although create never started")
	}
}

// standInEnv makes the test binary a stand-in for benchrun: it runs a
// provision stage whose create hangs, until it is killed.
const standInEnv = "PROVISION_TEST_STAND_IN_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(standInEnv); dir != "" {
		os.Exit(standIn(dir))
	}
	os.Exit(m.Run())
}

func standIn(dir string) int {
	path := filepath.Join(dir, "plan.cue")
	src := `name: "p"
stages: pod: {kind: "provision", create: {cmd: ["sh", "-c", "echo $$ > ` + dir + `/create.pid; exec sleep 300"]}, teardown: {cmd: ["true"]}}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return 1
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := New(p.Stage("pod"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = st.Run(context.Background(), &pipeline.Env{Stage: p.Stage("pod"), Plan: p, Dir: dir, Log: os.Stderr})
	select {} // until SIGKILL
}

// TestCreateDiesWithBenchrun SIGKILLs a stand-in for benchrun while its
// create command hangs: the command must not outlive it.
func TestCreateDiesWithBenchrun(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), standInEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "create.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the stand-in never started create")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return // gone
		}
		if s := string(b); strings.Contains(s[strings.LastIndexByte(s, ')'):], ") Z") {
			return // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("create (pid %d) outlived benchrun", pid)
		}
	}
}

// TestSecretOutputsStayOutOfLogs: an output whose name says secret, used
// in a later command, is masked where the command line is logged and in
// the error a failing command reports.
func TestSecretOutputsStayOutOfLogs(t *testing.T) {
	t.Setenv("PROVISION_TEST_CLOUD_KEY", "sk-live-123") // what a cloud CLI would print
	s, env, dir := stage(t, `create: {cmd: ["sh", "-c", "echo id=p1; echo api_key=$PROVISION_TEST_CLOUD_KEY"]}
	teardown: {cmd: ["sh", "-c", "exit 1", "${id}", "${api_key}"]}`)
	if _, err := s.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	err := s.Cleanup(context.Background())
	if err == nil || strings.Contains(err.Error(), "sk-live-123") || !strings.Contains(err.Error(), "p1 ***") {
		t.Fatalf("err = %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pod.log"))
	if strings.Contains(string(log), "sk-live-123") || !strings.Contains(string(log), "teardown: sh -c exit 1 p1 ***") {
		t.Fatalf("pod.log:\n%s", log)
	}
}

// TestTimeoutInterruptsFirst: a command past its timeout is stopped as
// every program benchrun runs is (procrun): SIGINT first, so a cloud CLI
// may clean up, and the error says the timeout and carries the log's tail.
func TestTimeoutInterruptsFirst(t *testing.T) {
	// The timeout leaves a busy machine time to start the shell and set
	// its trap (a SIGINT before the trap kills it before it can clean up,
	// which is not what is tested here).
	s, env, dir := stage(t, `create: {cmd: ["sh", "-c", "trap 'echo interrupted, cleaning up >&2; exit 1' INT; echo creating >&2; while :; do sleep 0.05; done"], timeout: "2s"}
	teardown: {cmd: ["true"]}`)
	start := time.Now()
	_, err := s.Run(context.Background(), env)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Run took %s", d)
	}
	if err == nil || !strings.Contains(err.Error(), "): timed out after 2s; last lines of pod.create.log:\n") || !strings.Contains(err.Error(), "  | interrupted, cleaning up") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, procrun.ErrTimeout) {
		t.Errorf("err does not wrap procrun.ErrTimeout: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pod.create.log"))
	if !strings.Contains(string(log), "creating\ninterrupted, cleaning up\n") {
		t.Errorf("pod.create.log:\n%s", log)
	}
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPrice: the machine's price is the plan's cost_per_hour, or a number
// the create command printed under that name (JSON); a KEY=VALUE line's
// text is not a price, nor is anything else.
func TestPrice(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want *float64
	}{{2.5, ptr(2.5)}, {int64(3), ptr(3.0)}, {"2.5", nil}, {nil, nil}} {
		got := price(tt.v)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("price(%#v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func TestSSHOutputs(t *testing.T) {
	s, env, _ := stage(t, `create: {cmd: ["sh", "-c", "echo host=10.9.8.7; echo ssh_port=2222"]}
	teardown: {cmd: ["true"]}
	ssh: {key_env: "POD_KEY", user: "ubuntu"}`)
	if !s.ProvidesSSH() {
		t.Fatal("a provision stage with ssh: provides no machine")
	}
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Cleanup(context.Background())
	m, err := remote.MachineFrom(out.SSH, func(k string) string {
		if k == "POD_KEY" {
			return "/keys/pod"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	// The printed port wins over the block's default; the host is the host output.
	if m.String() != "ubuntu@10.9.8.7:2222" || m.KeyFile != "/keys/pod" || m.HostKey != "" {
		t.Fatalf("machine = %+v (outputs %v)", m, out.Values)
	}
	s3, env3, _ := stage(t, `create: {cmd: ["sh", "-c", "echo host=h; echo ssh_port=twenty"]}
	teardown: {cmd: ["true"]}
	ssh: {key_env: "POD_KEY"}`)
	defer s3.Cleanup(context.Background())
	if _, err := s3.Run(context.Background(), env3); err == nil || !strings.Contains(err.Error(), `ssh_port output "twenty" is not a port`) {
		t.Fatalf("a printed port that is not one: %v", err)
	}
	s2, env2, _ := stage(t, `create: {cmd: ["sh", "-c", "echo host=h"]}
	teardown: {cmd: ["true"]}`)
	out2, err := s2.Run(context.Background(), env2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Cleanup(context.Background())
	if s2.ProvidesSSH() || out2.SSH != nil {
		t.Fatalf("without ssh: the stage claims a machine: %+v", out2.SSH)
	}
}
