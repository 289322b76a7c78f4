package pipeline_test

import (
	"context"
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
