package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// svc is a test service: Run returns at once with Done set (it stays "up"),
// Cleanup records when it was stopped.
type svc struct {
	name     string
	mu       *sync.Mutex
	released *[]string
	at       map[string]time.Time
}

func (s *svc) Validate(*pipeline.Check) error { return nil }
func (s *svc) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{URL: "http://127.0.0.1:1", Done: make(chan struct{})}, nil
}
func (s *svc) Cleanup(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.released = append(*s.released, s.name)
	s.at[s.name] = time.Now()
	return nil
}

// A server on a provisioned machine: the machine must stay up while the
// server that stands on it is up, and the two stop server first.
func TestServicesStopInReverseDependencyOrderAfterTheirUsers(t *testing.T) {
	rec := newRecorder()
	reg := testRegistry(rec)
	var mu sync.Mutex
	var released []string
	at := map[string]time.Time{}
	reg.AddKind(pipeline.Kind{Name: "svc", Schema: schema.KindSchema{Def: "#Svc", Source: "package schema\n#Svc: {#StageBase, kind: \"svc\"}"},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			return &svc{name: s.Name, mu: &mu, released: &released, at: at}, nil
		}})
	sum, by := run(t, context.Background(), reg, `
name: "services"
stages: {
	machine: {kind: "svc"}
	server:  {kind: "svc", needs: ["machine"]}
	bench:   {kind: "step", needs: ["server"], sleep: "200ms"}
}`)
	if sum.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d: %+v", sum.ExitCode, sum.Stages)
	}
	if len(released) != 2 || released[0] != "server" || released[1] != "machine" {
		t.Fatalf("release order %v, want [server machine]", released)
	}
	benchEnd := rec.spans["bench"][1]
	if at["machine"].Before(benchEnd) || at["server"].Before(benchEnd) {
		t.Fatalf("a service stopped before its user ended: bench ended %v, server %v, machine %v", benchEnd, at["server"], at["machine"])
	}
	for _, name := range []string{"machine", "server", "bench"} {
		if by[name].Status != pipeline.StatusOK {
			t.Errorf("%s: %s (%s)", name, by[name].Status, by[name].Reason)
		}
	}
}

// A service holds its resources while it is up, and what stands on it runs
// inside that hold: the measuring stage of a server holding "gpu" does not
// wait for the "gpu" its server holds, while a second server wanting "gpu"
// waits until the first is released (no two models on one GPU). A stage
// waiting for a lock nothing running will free fails with the reason
// instead of hanging.
func TestServicesHoldTheirLocksWhileUp(t *testing.T) {
	rec := newRecorder()
	reg := testRegistry(rec)
	var mu sync.Mutex
	var released []string
	at := map[string]time.Time{}
	reg.AddKind(pipeline.Kind{Name: "svc", Schema: schema.KindSchema{Def: "#Svc", Source: "package schema\n#Svc: {#StageBase, kind: \"svc\"}"},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			return &svc{name: s.Name, mu: &mu, released: &released, at: at}, nil
		}})
	sum, by := run(t, context.Background(), reg, `
name: "held"
stages: {
	a:       {kind: "svc", resources: ["gpu"]}
	"bench-a": {kind: "measure", needs: ["a"], sleep: "150ms"}
	b:       {kind: "svc", resources: ["gpu"]}
	"bench-b": {kind: "measure", needs: ["b"], sleep: "150ms"}
}`)
	if sum.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d: %+v", sum.ExitCode, sum.Stages)
	}
	first, second := "a", "b"
	if len(released) == 2 && released[0] == "b" {
		first, second = "b", "a"
	}
	// The second server started only after the first was released.
	if len(released) != 2 || !rec.spans["bench-"+second][0].After(at[first]) {
		t.Errorf("bench-%s started %v, before %s was released at %v (released %v)", second, rec.spans["bench-"+second][0], first, at[first], released)
	}
	for _, s := range []string{"a", "b", "bench-a", "bench-b"} {
		if by[s].Status != pipeline.StatusOK {
			t.Errorf("%s: %s %s", s, by[s].Status, by[s].Reason)
		}
	}

	// A stage that waits for the gpu a service holds, while that service
	// waits for it (the service's user needs it): a deadlock, said.
	sum, by = run(t, context.Background(), reg, `
name: "deadlock"
stages: {
	a:     {kind: "svc", resources: ["gpu"]}
	other: {kind: "step", resources: ["gpu"], sleep: "10ms"}
	bench: {kind: "measure", needs: ["a", "other"], sleep: "10ms"}
}`)
	if sum.ExitCode != pipeline.ExitInfra {
		t.Fatalf("deadlock: exit %d, want 3: %+v", sum.ExitCode, sum.Stages)
	}
	var stuck pipeline.StageResult
	for _, s := range []string{"a", "other"} {
		if by[s].Status == pipeline.StatusFailed {
			stuck = by[s]
		}
	}
	if !strings.Contains(stuck.Reason, "which nothing running will free") || by["bench"].Status != pipeline.StatusSkipped {
		t.Errorf("deadlock: %+v", sum.Stages)
	}
}
