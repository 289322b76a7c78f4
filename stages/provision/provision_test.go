package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
