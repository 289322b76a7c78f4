package stages

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
)

// These tests drive a provision stage through the real pipeline, with
// local shell commands standing in for a cloud CLI: create prints the
// machine's host, port and id; teardown writes to a ledger file, which
// proves it ran (and with which id) on every exit path.

type cloudRun struct {
	sum    *pipeline.Summary
	ledger string
	cells  []results.Cell
	dir    string
}

func runCloud(t *testing.T, ctx context.Context, pod, rest string, target http.Handler, options ...func(*engine.Options)) cloudRun {
	t.Helper()
	ts := httptest.NewServer(target)
	t.Cleanup(ts.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	src := fmt.Sprintf(`name: "cloud"
model: {name: "tiny"}
_ledger: %q
_host: %q
_port: %q
stages: {
	pod: {
		kind: "provision"
		cost_per_hour: 3.6
		%s
	}
	%s
}
`, ledger, host, port, pod, rest)
	reg := pipeline.NewRegistry()
	Builtin(reg)
	g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src)
	opts := engine.Options{FinallyTimeout: 20 * time.Second}
	for _, o := range options {
		o(&opts)
	}
	rec := pipelinetest.Run(t, ctx, g, opts)
	b, _ := os.ReadFile(ledger)
	return cloudRun{sum: rec.Summary, ledger: string(b), cells: rec.Cells, dir: rec.Dir}
}

const (
	createOK = `create: {cmd: ["sh", "-c", "echo created pod-7 >> \(_ledger); echo 'Creating pod...'; echo id=pod-7; echo host=\(_host); echo port=\(_port)"]}`
	waitOK   = `wait: {cmd: ["sh", "-c", "echo waited ${id} >> \(_ledger)"]}`
	teardown = `teardown: {cmd: ["sh", "-c", "echo torn ${id} >> \(_ledger)"]}`
)

func simHandler(t *testing.T) http.Handler {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	return simtest.NewSimFrom(t, cfg)
}

func stageStatus(sum *pipeline.Summary, name string) pipeline.StageResult {
	for _, s := range sum.Stages {
		if s.Name == name {
			return s
		}
	}
	return pipeline.StageResult{}
}

func TestProvisionTeardownOnSuccess(t *testing.T) {
	r := runCloud(t, context.Background(), createOK+"\n"+waitOK+"\n"+teardown, `
	health: {kind: "health", target: "pod", within: "10s"}
	sweep: {kind: "sweep", target: "pod", needs: ["health"], cells: [{isl: 16, osl: 8}], concurrency: [1], requests: 4, warmup: 0}`, simHandler(t))
	if r.sum.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", r.sum.ExitCode, r.sum.Stages)
	}
	if r.ledger != "created pod-7\nwaited pod-7\ntorn pod-7\n" {
		t.Fatalf("ledger:\n%s", r.ledger)
	}
	if len(r.cells) != 1 || results.ValueOr(r.cells[0].CostUSD, 0) <= 0 || results.ValueOr(r.cells[0].TokensPerDollar, 0) <= 0 {
		t.Fatalf("cells = %+v", r.cells)
	}
	c := r.cells[0]
	if want := 3.6 * c.DurationS / 3600; results.ValueOr(c.CostUSD, 0) != want {
		t.Errorf("cost_usd = %g, want %g", results.ValueOr(c.CostUSD, 0), want)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "pod.log"))
	if !strings.Contains(string(log), "teardown after") || !strings.Contains(string(log), "at $3.6/h") {
		t.Errorf("pod.log:\n%s", log)
	}
}

func TestProvisionTeardownOnEveryExitPath(t *testing.T) {
	tests := []struct {
		name       string
		pod, rest  string
		ctxCancel  time.Duration
		wantCode   int
		wantLedger string
		failed     string // the stage that failed
	}{
		{
			name: "a later stage fails", pod: createOK + "\n" + teardown,
			rest:     `health: {kind: "health", target: "pod", model: "not-served", within: "10s"}`,
			wantCode: 3, wantLedger: "created pod-7\ntorn pod-7\n", failed: "health",
		},
		{
			name:     "create fails half way",
			pod:      `create: {cmd: ["sh", "-c", "echo created pod-7 >> \(_ledger); echo id=pod-7; echo quota exceeded >&2; exit 1"]}` + "\n" + teardown,
			rest:     `health: {kind: "health", target: "pod"}`,
			wantCode: 3, wantLedger: "created pod-7\ntorn pod-7\n", failed: "pod",
		},
		{
			name:     "wait times out",
			pod:      createOK + "\n" + `wait: {cmd: ["sleep", "30"], timeout: "300ms"}` + "\n" + teardown,
			rest:     `health: {kind: "health", target: "pod"}`,
			wantCode: 3, wantLedger: "created pod-7\ntorn pod-7\n", failed: "pod",
		},
		{
			name: "a later stage's timeout passes", pod: createOK + "\n" + teardown,
			rest:     `health: {kind: "health", target: "pod", path: "/never", within: "60s", timeout: "500ms"}`,
			wantCode: 3, wantLedger: "created pod-7\ntorn pod-7\n", failed: "health",
		},
		{
			name: "the server on the pod dies", pod: createOK + "\n" + teardown,
			rest: `server: {kind: "launch", needs: ["pod"], cmd: ["sh", "-c", "echo serving on ${pod.host}; sleep 0.3; exit 7"]}
	health: {kind: "health", target: "server", path: "/never", within: "30s"}`,
			wantCode: 3, wantLedger: "created pod-7\ntorn pod-7\n", failed: "health",
		},
		{
			name: "interrupted", pod: createOK + "\n" + teardown,
			rest:      `health: {kind: "health", target: "pod", path: "/never", within: "60s"}`,
			ctxCancel: 700 * time.Millisecond, wantCode: 130, wantLedger: "created pod-7\ntorn pod-7\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.ctxCancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxCancel)
				defer cancel()
			}
			start := time.Now()
			r := runCloud(t, ctx, tt.pod, tt.rest, simHandler(t))
			if r.sum.ExitCode != tt.wantCode {
				t.Errorf("exit %d, want %d: %+v", r.sum.ExitCode, tt.wantCode, r.sum.Stages)
			}
			if r.ledger != tt.wantLedger {
				t.Errorf("ledger:\n%s\nwant:\n%s", r.ledger, tt.wantLedger)
			}
			if tt.failed != "" {
				if s := stageStatus(r.sum, tt.failed); s.Status != pipeline.StatusFailed {
					t.Errorf("%s: %+v", tt.failed, s)
				}
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestProvisionFailureSaysWhy(t *testing.T) {
	r := runCloud(t, context.Background(),
		`create: {cmd: ["sh", "-c", "echo id=pod-7; echo 'Error: quota exceeded for GPU type H100' >&2; exit 1"]}`+"\n"+teardown,
		`health: {kind: "health", target: "pod"}`, simHandler(t))
	reason := stageStatus(r.sum, "pod").Reason
	for _, want := range []string{"create (sh -c", "exit status 1", "quota exceeded for GPU type H100"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason lacks %q:\n%s", want, reason)
		}
	}
}

func TestProvisionKeep(t *testing.T) {
	r := runCloud(t, context.Background(), createOK+"\n"+teardown, `health: {kind: "health", target: "pod", within: "10s"}`, simHandler(t),
		func(o *engine.Options) { o.Keep = true }) // what --keep sets
	if r.sum.ExitCode != 0 || r.ledger != "created pod-7\n" {
		t.Fatalf("exit %d, ledger:\n%s", r.sum.ExitCode, r.ledger)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "pod.log"))
	if !strings.Contains(string(log), "keeping the machine") {
		t.Errorf("pod.log:\n%s", log)
	}
}

// TestProvisionRetryTearsDownEachMachine: with retry on the stage, the
// first attempt's create fails after making a machine (torn down before
// the second attempt), and the second attempt's machine is torn down at
// the end too: each machine its own teardown.
func TestProvisionRetryTearsDownEachMachine(t *testing.T) {
	r := runCloud(t, context.Background(), `retry: {attempts: 2, backoff: "10ms"}
		create: {cmd: ["sh", "-c", "n=$(cat \(_ledger).n 2>/dev/null || echo 0); n=$((n+1)); echo $n > \(_ledger).n; echo created pod-$n >> \(_ledger); echo id=pod-$n; echo host=\(_host); echo port=\(_port); test $n -ge 2"]}
		`+teardown, `health: {kind: "health", target: "pod", within: "10s"}`, simHandler(t))
	if r.sum.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", r.sum.ExitCode, r.sum.Stages)
	}
	if want := "created pod-1\ntorn pod-1\ncreated pod-2\ntorn pod-2\n"; r.ledger != want {
		t.Fatalf("ledger:\n%s\nwant:\n%s", r.ledger, want)
	}
}
