package exec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/remote/sshdtest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/provision"
)

// on: over a real sshd on loopback (sshdtest, skipped without sshd): the
// "machine" is this one, so the test binary is the benchmark there, and
// its pids can be checked through /proc. The machine comes from a real
// provision stage whose create prints the host, as a cloud CLI would.

const sshKeyEnv = "EXEC_TEST_SSH_KEY"

func onRegistry() *pipeline.Registry {
	reg := registry()
	reg.AddKind(provision.Kind)
	return reg
}

// onPlan is a plan with a pod (the sshd, at $2/h) and bench, exec on it.
func onPlan(s *sshdtest.Server, bench string) string {
	return plan(fmt.Sprintf(`pod: {
		kind: "provision", cost_per_hour: 2.0
		create: {cmd: ["sh", "-c", "echo host=127.0.0.1"]}
		teardown: {cmd: ["true"]}
		ssh: {key_env: %q, user: %q, port: %d, host_key: %q}
	}
	other: {kind: "price", cost_per_hour: 99}
	bench: {kind: "exec", on: "pod", needs: ["other", "pod"], stop_grace: "100ms", %s}`, sshKeyEnv, s.User, s.Port, s.HostKey, bench))
}

func sshd(t *testing.T) *sshdtest.Server {
	s := sshdtest.Start(t)
	t.Setenv(sshKeyEnv, s.KeyFile)
	return s
}

// llama-bench's JSON printed on the machine: rows parsed, the machine's
// price on them (not another dependency's), only the plan's environment
// sent there, the output in bench.log.
func TestOnAMachineOverSSH(t *testing.T) {
	s := sshd(t)
	src := onPlan(s, fmt.Sprintf(`parser: "llama-bench", cmd: [%q, "-o", "json"], env: {EXEC_TEST_PROGRAM: "print-clean", EXEC_TEST_FIXTURE: %q}`, self(t), fixture(t, "llama-bench-cpu.json")))
	rec := pipelinetest.Run(t, context.Background(), pipelinetest.LoadPlan(t, onRegistry(), src), engine.Options{})
	if st := rec.Stage("bench"); st.Status != pipeline.StatusOK {
		t.Fatalf("bench: %s %s\n%s\nsshd log:\n%s", st.Status, st.Reason, rec.Progress, s.Log())
	}
	tg, ok := rec.Cell("bench/tg32")
	if !ok {
		t.Fatalf("no bench/tg32 row: %+v", rec.Cells)
	}
	if tg.Status != "ok" || tg.Engine != "llama.cpp" || tg.DecodeTokS == nil {
		t.Errorf("tg row: %+v", tg)
	}
	if tg.CostUSD == nil || tg.TokensPerDollar == nil {
		t.Fatalf("cost: %v/%v", tg.CostUSD, tg.TokensPerDollar)
	}
	if want := 2.0 * tg.DurationS / 3600; *tg.CostUSD != want {
		t.Errorf("cost %v, want %v (the machine's $2/h, not the other dependency's)", *tg.CostUSD, want)
	}
	log, _ := os.ReadFile(filepath.Join(rec.Dir, "bench.log"))
	if !strings.Contains(string(log), "llama_model_loader") || !strings.Contains(string(log), "@127.0.0.1:") {
		t.Errorf("bench.log:\n%s", log)
	}
	key, _ := os.ReadFile(s.KeyFile)
	for _, f := range []string{"bench.log", "pod.log"} {
		b, _ := os.ReadFile(filepath.Join(rec.Dir, f))
		if len(key) > 0 && strings.Contains(string(b), strings.TrimSpace(string(key))) {
			t.Errorf("%s holds the private key", f)
		}
	}
}

// A program that hangs on the machine past the stage's timeout: killed
// there with its whole group (its child ignores SIGINT and SIGTERM), an
// error row with the timeout and the tail, the stage failed.
func TestOnHangsPastTimeout(t *testing.T) {
	s := sshd(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	rec, reason := errorRowWith(t, onRegistry(), context.Background(), onPlan(s, fmt.Sprintf(`parser: "llama-bench", cmd: [%q], timeout: "5s", env: {EXEC_TEST_PROGRAM: "hang", EXEC_TEST_PIDS: %q}`, self(t), pidFile)))
	if !strings.Contains(reason, "timed out after 5s") || !strings.Contains(reason, "running test pp512") {
		t.Errorf("reason %q: want the timeout and the tail", reason)
	}
	if st := rec.Stage("bench"); st.Status != pipeline.StatusFailed {
		t.Errorf("stage %s %q", st.Status, st.Reason)
	}
	gone(t, pidsOf(t, pidFile))
}

// An interrupt stops the program's group on the machine; no rows.
func TestOnInterrupted(t *testing.T) {
	s := sshd(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var pids []int
	got := make(chan struct{})
	go func() {
		defer close(got)
		pids = pidsOf(t, pidFile)
		cancel(errors.New("interrupted (test)"))
	}()
	src := onPlan(s, fmt.Sprintf(`parser: "llama-bench", cmd: [%q], env: {EXEC_TEST_PROGRAM: "hang", EXEC_TEST_PIDS: %q}`, self(t), pidFile))
	rec := pipelinetest.Run(t, ctx, pipelinetest.LoadPlan(t, onRegistry(), src), engine.Options{})
	<-got
	if rec.Summary.ExitCode != pipeline.ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", rec.Summary.ExitCode, pipeline.ExitInterrupted, rec.Progress)
	}
	for _, c := range rec.Cells {
		if c.Stage == "bench" {
			t.Errorf("a row after an interrupt: %+v", c)
		}
	}
	gone(t, pids)
}

// A program the machine does not have: an error row naming it and the
// machine.
func TestOnNotInstalled(t *testing.T) {
	s := sshd(t)
	_, reason := errorRowWith(t, onRegistry(), context.Background(), onPlan(s, `parser: "llama-bench", cmd: ["llama-bench-not-on-this-machine", "-o", "jsonl"]`))
	if !strings.Contains(reason, "llama-bench-not-on-this-machine is not installed on "+s.User+"@127.0.0.1:") {
		t.Errorf("reason %q", reason)
	}
}

// Vet: on: names a machine in needs, GPUs by index, no local paths.
func TestOnVet(t *testing.T) {
	for _, tt := range []struct{ stages, want string }{
		{`other: {kind: "price", cost_per_hour: 1}
	bench: {kind: "exec", on: "other", needs: ["other"], parser: "llama-bench", cmd: ["llama-bench", "-o", "json"]}`, "stages.other gives no machine"},
		{`pod: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}, ssh: {key_env: "K"}}
	bench: {kind: "exec", on: "pod", parser: "llama-bench", cmd: ["llama-bench", "-o", "json"]}`, `add needs: ["pod"]`},
		{`bench: {kind: "exec", on: "nope", parser: "llama-bench", cmd: ["llama-bench", "-o", "json"]}`, `unknown stage "nope"`},
		{`pod: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}, ssh: {key_env: "K"}}
	bench: {kind: "exec", on: "pod", needs: ["pod"], gpus: ["RTX 3090"], parser: "llama-bench", cmd: ["llama-bench", "-o", "json"]}`, "chosen by index"},
		{`pod: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}, ssh: {key_env: "K"}}
	bench: {kind: "exec", on: "pod", needs: ["pod"], parser: "llama-bench", cmd: ["llama-bench", "-m", "${model_file}", "-o", "json"]}`, "${model_file} is a path on benchrun's machine"},
	} {
		err := vet(t, onRegistry(), plan(tt.stages))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("vet = %v, want %q", err, tt.want)
		}
	}
	ok := `pod: {kind: "provision", create: {cmd: ["true"]}, teardown: {cmd: ["true"]}, ssh: {key_env: "K"}}
	bench: {kind: "exec", on: "pod", needs: ["pod"], gpus: [0], parser: "llama-bench", cmd: ["llama-bench", "-o", "json"]}`
	if err := vet(t, onRegistry(), plan(ok)); err != nil {
		t.Errorf("vet of a good plan: %v", err)
	}
}

// vet loads and builds src as `benchrun vet` does; the error is vet's.
func vet(t *testing.T, reg *pipeline.Registry, src string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.cue")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := schema.Load(path, reg.LoadOptions(nil))
	if err == nil {
		_, err = pipeline.Build(p, reg)
	}
	return err
}

// errorRowWith is errorRow with a registry of its own.
func errorRowWith(t *testing.T, reg *pipeline.Registry, ctx context.Context, src string) (*pipelinetest.Recording, string) {
	t.Helper()
	rec := pipelinetest.Run(t, ctx, pipelinetest.LoadPlan(t, reg, src), engine.Options{})
	c, ok := rec.Cell("bench/run")
	if !ok || c.Status != "error" {
		t.Fatalf("no error row bench/run: %+v\n%s", rec.Cells, rec.Progress)
	}
	return rec, c.Reason
}
