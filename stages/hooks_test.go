package stages_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/schema"
)

// TestSweepHooksAgainstTheEngine: reset_cache and profile are refused at
// vet, at their field, on a launch stage whose engine has no such
// endpoint (pipeline.EngineNamer), and accepted on one that has.
func TestSweepHooksAgainstTheEngine(t *testing.T) {
	for _, tc := range []struct{ engine, hooks, want string }{
		{"ollama", "reset_cache: true", `stages.sweep.reset_cache: engine "ollama" has no prefix-cache reset benchrun knows`},
		{"tgi", "reset_cache: true", `stages.sweep.reset_cache: engine "tgi" has no prefix-cache reset`},
		{"llama-server", "profile: true", `stages.sweep.profile: engine "llama-server" has no profiler endpoint benchrun knows`},
		{"vllm", "reset_cache: true, profile: true", ""},
		{"sglang", "reset_cache: true, profile: true", ""},
		{"llama-server", "reset_cache: true", ""},
		{"sim", "reset_cache: true, profile: true", ""},
	} {
		t.Run(tc.engine+" "+tc.hooks, func(t *testing.T) {
			_, err := buildPlan(t, `server: {kind: "launch", engine: "`+tc.engine+`", cmd: ["srv"]}
	sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8}], `+tc.hooks+`}`)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var es schema.Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			for _, e := range es {
				if strings.Contains(e.Msg, tc.want) && e.Pos.Line == 5 && e.Pos.Col > 1 {
					return
				}
			}
			t.Fatalf("err = %v\nwant %q at line 5", err, tc.want)
		})
	}
}
