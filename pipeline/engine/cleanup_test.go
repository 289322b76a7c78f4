package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// counted is a stage whose Cleanup counts its calls: it fails its first
// `fail` attempts and, when `service` is set, stays up (Done set).
type counted struct {
	name    string
	fail    int
	service bool
	mu      *sync.Mutex
	events  map[string][]string
}

func (c *counted) Validate(*pipeline.Check) error { return nil }

func (c *counted) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[c.name] = append(c.events[c.name], "run")
	runs := strings.Count(strings.Join(c.events[c.name], " "), "run")
	if runs <= c.fail {
		return nil, fmt.Errorf("attempt %d fails on purpose", runs)
	}
	if c.service {
		return &pipeline.Outputs{URL: "http://127.0.0.1:1", Done: make(chan struct{})}, nil
	}
	return &pipeline.Outputs{}, nil
}

func (c *counted) Cleanup(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[c.name] = append(c.events[c.name], "cleanup")
	return nil
}

// The Cleaner contract: Cleanup follows every attempt, after each failed
// one (before the next) and once after the last, so a stage is cleaned
// up exactly as many times as it ran.
func TestCleanupFollowsEveryAttempt(t *testing.T) {
	reg := testRegistry(newRecorder())
	var mu sync.Mutex
	events := map[string][]string{}
	reg.AddKind(pipeline.Kind{Name: "counted", Schema: schema.KindSchema{Def: "#Counted", Source: "package schema\n#Counted: {#StageBase, kind: \"counted\", fail: *0 | int, service: *false | bool}"},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			c := &counted{name: s.Name, mu: &mu, events: events}
			var cfg struct {
				Fail    int  `json:"fail"`
				Service bool `json:"service"`
			}
			err := s.Decode(&cfg)
			c.fail, c.service = cfg.Fail, cfg.Service
			return c, err
		}})
	run(t, context.Background(), reg, `
name: "cleanup"
stages: {
	once:       {kind: "counted"}
	flaky:      {kind: "counted", fail: 2, retry: {attempts: 3, backoff: "1ms"}}
	never:      {kind: "counted", fail: 5, retry: {attempts: 2, backoff: "1ms"}}
	server:     {kind: "counted", fail: 1, service: true, retry: {attempts: 2, backoff: "1ms"}}
	bench:      {kind: "step", needs: ["server"]}
}`)
	want := map[string]string{
		"once":   "run cleanup",
		"flaky":  "run cleanup run cleanup run cleanup",
		"never":  "run cleanup run cleanup",
		"server": "run cleanup run cleanup",
	}
	for name, w := range want {
		if got := strings.Join(events[name], " "); got != w {
			t.Errorf("%s: %q, want %q", name, got, w)
		}
	}
}
