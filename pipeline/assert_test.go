package pipeline

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

func TestAssertions(t *testing.T) {
	row := results.Cell{Stage: "sweep", ISL: 64, OSL: 32, Concurrency: 4, ITLP50Ms: 5, ITLP99Ms: 12, Status: "ok"}
	tests := []struct {
		expr    string
		pass    bool
		compile string // expected compile error fragment
		at      string // expected position: the literal (p.cue:3:5) moved to the offending character
	}{
		{expr: "itl_p99_ms < 2*itl_p50_ms", pass: false},
		{expr: "itl_p99_ms < 3*itl_p50_ms", pass: true},
		{expr: `status == "ok"`, pass: true},
		{expr: "concurrency >= 4 && isl == 64", pass: true},
		{expr: "itl_p99 < 2*itl_p50", compile: "unknown name itl_p99 (did you mean itl_p99_ms?)", at: "p.cue:3:6: "},
		{expr: "isl +", compile: "unexpected token", at: "p.cue:3:10: "},
		{expr: "ttft_ms > 0 && ttf_ms < 9", compile: "unknown name ttf_ms (did you mean ttft_ms?)", at: "p.cue:3:21: "},
		{expr: "isl", compile: "expected bool", at: "p.cue:3:5: "},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tt.expr, Pos: schema.Pos{File: "p.cue", Line: 3, Col: 5}}, "sweep")
			if tt.compile != "" {
				if err == nil || !strings.Contains(err.Error(), tt.compile) || !strings.HasPrefix(err.Error(), tt.at) {
					t.Fatalf("compile error = %v, want %s and %q", err, tt.at, tt.compile)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := a.Judge(row)
			if v.Passed != tt.pass || v.Error != "" {
				t.Fatalf("verdict = %+v, want passed=%v", v, tt.pass)
			}
		})
	}
	a, _ := CompileAssertion(schema.Assertion{Expr: "itl_p99_ms < 2*itl_p50_ms"}, "")
	if got := a.Judge(row).FormatValues(); got != "itl_p50_ms=5 itl_p99_ms=12" {
		t.Fatalf("values = %q", got)
	}
}
