package launch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/remote/sshdtest"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/provision"
)

// on: over a real sshd on loopback (sshdtest): the "machine" is this one,
// so the test binary can be the simulator there, and the remote pid can
// be checked through /proc.

const sshKeyEnv = "LAUNCH_TEST_SSH_KEY"

// buildOn builds stage name of src with the provision kind registered too
// (on: names a provision stage).
func buildOn(t *testing.T, dir, src, name string) (*Stage, *schema.Plan, error) {
	t.Helper()
	path := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	reg.AddKind(provision.Kind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Build(p, reg)
	if err != nil {
		return nil, p, err
	}
	return g.Node(name).Stage.(*Stage), p, nil
}

func onPlan(server string) string {
	return `name: "p"
model: {name: "tiny"}
stages: {
	pod: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}, ssh: {key_env: "` + sshKeyEnv + `"}}
	server: {kind: "launch", ` + server + `}
}
`
}

func remoteSimPlan(extra string) string {
	self, _ := os.Executable()
	return onPlan(fmt.Sprintf(`engine: "sim", on: "pod", needs: ["pod"]
	cmd: [%q, "-test.run=^$"]
	env: {%s: "${host}:${port}", LAUNCH_TEST_SIM_MODEL: "${model}"}
	stop_grace: "2s"
	%s`, self, simEnv, extra))
}

// podOutputs are what the provision stage gives for the test's sshd.
func podOutputs(s *sshdtest.Server, hostKey string) *pipeline.Outputs {
	price := 1.25
	return &pipeline.Outputs{CostPerHour: &price, Values: map[string]any{"host": "127.0.0.1", "cost_per_hour": price},
		SSH: &pipeline.SSHMachine{Host: "127.0.0.1", Port: s.Port, User: s.User, KeyEnv: sshKeyEnv, HostKey: hostKey}}
}

func TestLaunchOnAMachineOverSSH(t *testing.T) {
	sshd := sshdtest.Start(t)
	t.Setenv(sshKeyEnv, sshd.KeyFile)
	dir := t.TempDir()
	s, p, err := buildOn(t, dir, remoteSimPlan(`setup: [{cmd: ["sh", "-c", "echo setup ran on the machine with $SECRET_FOR_SERVER > ${run_dir}/setup.txt"], env: {SECRET_FOR_SERVER: "s3"}}]`), "server")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Cleanup(context.Background()) })
	env := newEnv(dir, p, s.spec)
	// No host key from the provider: trust on first use, in the run directory.
	env.Deps["pod"] = podOutputs(sshd, "")
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatalf("%v\nsshd log:\n%s", err, sshd.Log())
	}
	if code := waitHTTP(t, out.URL+"/health", 10*time.Second); code != 200 {
		t.Fatalf("/health = %d", code)
	}
	if !ready(context.Background(), &http.Client{Timeout: 5 * time.Second}, out.URL, engines.For("sim"), "tiny") {
		t.Fatal("the simulator on the machine does not serve the model")
	}
	pid, _ := out.Values["remote_pid"].(int)
	if pid <= 0 || out.PID != 0 || out.Values["host"] != "127.0.0.1" || out.URL != fmt.Sprintf("http://127.0.0.1:%d", s.port) {
		t.Fatalf("outputs = %+v", out)
	}
	if out.CostPerHour == nil || *out.CostPerHour != 1.25 {
		t.Fatalf("the machine's price does not flow on: %v", out.CostPerHour)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "setup.txt")); string(b) != "setup ran on the machine with s3\n" {
		t.Fatalf("setup on the machine wrote %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "known_hosts")); err != nil || !strings.Contains(string(b), strings.Fields(sshd.HostKey)[1]) {
		t.Fatalf("known_hosts = %q, %v: the first key is not recorded in the run directory", b, err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	if !strings.Contains(string(log), "benchrun: starting ") || !strings.Contains(string(log), "@127.0.0.1:") {
		t.Errorf("server.log:\n%s", log)
	}
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitGone(t, "the server on the machine", pid)
	select {
	case <-out.Done:
		t.Fatal("Done closed by a requested stop")
	default:
	}
	if err := s.Cleanup(context.Background()); err != nil {
		t.Fatalf("a second Cleanup: %v", err)
	}
}

func TestRemoteServerDeathClosesDone(t *testing.T) {
	sshd := sshdtest.Start(t)
	t.Setenv(sshKeyEnv, sshd.KeyFile)
	dir := t.TempDir()
	s, p, err := buildOn(t, dir, onPlan(`on: "pod", needs: ["pod"], shell: true, cmd: ["echo serving; sleep 300"]`), "server")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Cleanup(context.Background()) })
	env := newEnv(dir, p, s.spec)
	env.Deps["pod"] = podOutputs(sshd, sshd.HostKey)
	out, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "serving")
	pid, _ := out.Values["remote_pid"].(int)
	syscall.Kill(pid, syscall.SIGKILL) // it dies on the machine
	select {
	case <-out.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("Done stays open after the server died on the machine")
	}
	if r := out.DoneReason(); !strings.Contains(r, "signal: KILL") || !strings.Contains(r, "serving") {
		t.Fatalf("DoneReason = %q", r)
	}
}

func TestOnRefusesAChangedHostKey(t *testing.T) {
	sshd := sshdtest.Start(t)
	t.Setenv(sshKeyEnv, sshd.KeyFile)
	dir := t.TempDir()
	s, p, err := buildOn(t, dir, onPlan(`on: "pod", needs: ["pod"], cmd: ["sleep", "30"]`), "server")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Cleanup(context.Background()) })
	env := newEnv(dir, p, s.spec)
	env.Deps["pod"] = podOutputs(sshd, sshdtest.WriteKey(t, filepath.Join(t.TempDir(), "k")))
	_, err = s.Run(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "stages.server.on: ") || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("Run = %v, want a host key mismatch", err)
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatal("the error shows key material")
	}
}

func TestValidateOn(t *testing.T) {
	tests := []struct{ name, server, want string }{
		{"no needs", `on: "pod", cmd: ["x"]`, `stages.server.on: the server runs on stages.pod's machine, which must be up first: add needs: ["pod"]`},
		{"unknown", `on: "nope", needs: ["pod"], cmd: ["x"]`, `stages.server.on: unknown stage "nope"`},
		{"not a machine", `on: "other", needs: ["other"], cmd: ["x"]`, `stages.other gives no machine to run on`},
		{"gpu names", `on: "pod", needs: ["pod"], cmd: ["x"], gpus: ["H100"]`, `stages.server.gpus: "H100": on another machine GPUs are chosen by index`},
		{"files", `on: "pod", needs: ["pod"], cmd: ["x"], files: {"a": "b"}`, `stages.server.files: files are written into the run directory on benchrun's machine`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := onPlan(tt.server)
			src = strings.Replace(src, "stages: {", `stages: {
	other: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}}`, 1)
			_, _, err := buildOn(t, t.TempDir(), src, "server")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build = %v, want %q", err, tt.want)
			}
		})
	}
	if _, _, err := buildOn(t, t.TempDir(), onPlan(`on: "pod", needs: ["pod"], cmd: ["x"], gpus: [0, 1]`), "server"); err != nil {
		t.Fatalf("a valid on: = %v", err)
	}
}
