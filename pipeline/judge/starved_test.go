package judge

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// TestServerStarvedIsInconclusive: the quickstart's ITL check failed
// (itl_p99 42 ms against 4 × 5 ms) while the probe, a sleeper the kernel
// wakes promptly, saw 1 ms of lateness and the local server's threads
// waited 840 ms for a CPU during the 10 s cell beside CPU-bound
// neighbours. The server's wait enters the allowance: the check is
// inconclusive, with the numbers. The same miss from a server that
// hardly waited (a slower server on a quiet machine), or from a server
// not on this machine (no server_cpu_wait_ms), fails; and the wait does
// not excuse a median tenfold slower (the median's share of it is
// 840 × 4 in flight / (248 gaps × ½) = 27 ms).
func TestServerStarvedIsInconclusive(t *testing.T) {
	row := func(p50, p99 float64, wait *float64) results.Cell {
		return results.Cell{Stage: "sweep", CellID: "sweep/64:32/c4", ISL: 64, OSL: 32, Concurrency: 4, Status: results.StatusOK,
			Requests: 8, Completed: 8, DurationS: 10, ITLP50Ms: results.Some(p50), ITLP99Ms: results.Some(p99),
			MachineLateP99Ms: results.Some(1.0), MachineLateMaxMs: results.Some(3.0), ServerCPUWaitMs: wait}
	}
	for _, tc := range []struct {
		name, expr   string
		c            results.Cell
		inconclusive bool
		explained    string
	}{
		{"the server starved", "itl_p99_ms < 4*itl_p50_ms", row(5, 42, results.Some(840.0)), true,
			"the server's threads waited 840 ms for a CPU during the 10.0 s cell"},
		{"a slower server on a quiet machine", "itl_p99_ms < 4*itl_p50_ms", row(5, 42, results.Some(2.0)), false, ""},
		{"a server elsewhere", "itl_p99_ms < 4*itl_p50_ms", row(5, 42, nil), false, ""},
		{"a median tenfold slower", "itl_p50_ms < 10", row(50, 60, results.Some(840.0)), false, ""},
		{"a median the wait can explain", "itl_p50_ms < 10", row(30, 60, results.Some(840.0)), true, "itl_p50_ms 2.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tc.expr}, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			v := a.JudgeRow(tc.c, nil, nil)
			if v.Passed || v.Error != "" || v.Inconclusive != tc.inconclusive {
				t.Fatalf("verdict %+v; want failed, inconclusive=%v", v, tc.inconclusive)
			}
			if !strings.Contains(v.Explained, tc.explained) {
				t.Errorf("reason %q lacks %q", v.Explained, tc.explained)
			}
		})
	}
}
