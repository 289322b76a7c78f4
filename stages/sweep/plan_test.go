package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

func planOf(t *testing.T, stageCUE string) []pipeline.PlannedStep {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	src := "name: \"t\"\nmodel: {name: \"m\"}\nstages: s: {kind: \"sweep\", target: \"http://127.0.0.1:1\"\n" + stageCUE + "\n}\n"
	p, err := schema.LoadSource("plan.cue", []byte(src), reg.LoadOptions(nil))
	if err != nil {
		t.Fatalf("plan:\n%s\n%v", src, err)
	}
	st, err := New(p.Stages[0])
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := st.(pipeline.Planner)
	if !ok {
		t.Fatal("the sweep does not implement pipeline.Planner")
	}
	return pl.Plan()
}

func TestPlanListsEveryPointInOrder(t *testing.T) {
	tests := []struct {
		name     string
		cue      string
		ids      string
		requests []int
	}{
		{
			name:     "the seed defaults: three cells × 1, 4, 8; 2 warm-up passes + 1 timed",
			ids:      "s/128:128/c1 s/128:128/c4 s/128:128/c8 s/2048:128/c1 s/2048:128/c4 s/2048:128/c8 s/128:1024/c1 s/128:1024/c4 s/128:1024/c8",
			requests: []int{24, 24, 48, 24, 24, 48, 24, 24, 48},
		},
		{
			name:     "fixed requests, no warm-up, two iterations",
			cue:      "cells: [{isl: 64, osl: 32}], concurrency: [2, 16], requests: 10, warmup: 0, iterations: 2",
			ids:      "s/64:32/c2 s/64:32/c16",
			requests: []int{20, 20},
		},
		{
			name:     "open loop: rates",
			cue:      "cells: [{isl: 64, osl: 32}], rates: [2, 8], warmup: 0",
			ids:      "s/64:32/r2 s/64:32/r8",
			requests: []int{32, 80},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := planOf(t, tt.cue)
			var ids []string
			for i, s := range steps {
				ids = append(ids, s.ID)
				if i < len(tt.requests) && s.Requests != tt.requests[i] {
					t.Errorf("%s: %d requests, want %d", s.ID, s.Requests, tt.requests[i])
				}
				if s.Estimate <= 0 || s.Label == "" {
					t.Errorf("%s: estimate %s, label %q", s.ID, s.Estimate, s.Label)
				}
			}
			if got := strings.Join(ids, " "); got != tt.ids {
				t.Errorf("ids:\n%s\nwant:\n%s", got, tt.ids)
			}
		})
	}
}

func TestPlanEstimateGrowsWithOutputLength(t *testing.T) {
	short := planOf(t, "cells: [{isl: 128, osl: 16}], concurrency: [1], requests: 8, warmup: 0")
	long := planOf(t, "cells: [{isl: 128, osl: 1024}], concurrency: [1], requests: 8, warmup: 0")
	if long[0].Estimate < 10*short[0].Estimate {
		t.Errorf("estimate for osl 1024 (%s) not far above osl 16 (%s)", long[0].Estimate, short[0].Estimate)
	}
	// 8 requests one at a time, each 128/5000 s + 1024/50 s = 20.5056 s.
	if want := 164044800 * time.Microsecond; long[0].Estimate < want-time.Second || long[0].Estimate > want+time.Second {
		t.Errorf("estimate %s, want about %s", long[0].Estimate, want)
	}
}

// TestServerVarsKeepCellsApart: cells that differ only in their server
// variables get distinct ids and labels, the variables sorted by key.
func TestServerVarsKeepCellsApart(t *testing.T) {
	steps := planOf(t, `cells: [{isl: 8, osl: 8, server: {np: "4", ctx: "4096"}}, {isl: 8, osl: 8, server: {np: "8", ctx: "4096"}}], concurrency: [2]`)
	var got []string
	for _, s := range steps {
		got = append(got, s.ID+" | "+s.Label)
	}
	want := "s/8:8/c2/ctx=4096/np=4 | 8:8 c=2 ctx=4096 np=4, s/8:8/c2/ctx=4096/np=8 | 8:8 c=2 ctx=4096 np=8"
	if strings.Join(got, ", ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, ", "), want)
	}
}
