package parquet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/testbin"
)

// realRunsPlans are three plans against the built-in simulator, as
// analysts' runs are: a concurrency ladder whose every cell fails one
// check (by 59 ms: more than a busy machine's lateness explains, so it
// fails, never inconclusive), a request-rate ladder (open loop: every point's concurrency
// column is 0), and an SLO search (probes, and a knee row that repeats
// the probe it names).
var realRunsPlans = map[string]string{
	"ladder": `name: "ladder"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "60ms", "--itl", "2ms", "--eos-prob", "0"]}
	sweep: {kind: "sweep", target: "server", cells: [{isl: 16, osl: 4}, {isl: 32, osl: 4}], concurrency: [1, 2], requests: 4, warmup: 0, calibrate: "off",
		assert: ["ttft_ms < 1"]}
}
`,
	"rates": `name: "rates"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "5ms", "--itl", "2ms", "--eos-prob", "0"]}
	sweep: {kind: "sweep", target: "server", cells: [{isl: 16, osl: 4}], rates: [5, 10], requests: 6, warmup: 0, calibrate: "off"}
}
`,
	"search": `name: "search"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "engine",
		"--max-num-seqs", "32", "--step-base", "2ms", "--per-seq", "10ms", "--per-prefill-token", "31250ns", "--jitter", "0", "--eos-prob", "0"]}
	sweep: {kind: "sweep", target: "server", cells: [{isl: 64, osl: 8}], warmup: 0, calibrate: "off", requests: 8,
		search: {slo: {tpot_p99_ms: 50}, over: "concurrency", lo: 1, hi: 8}}
}
`,
}

// The search's server decodes a step in 2 ms + 10 ms a running sequence,
// so its knee is near c=4 against 50 ms; c=1 (12 ms) meets the SLO with
// room for a busy machine: the test needs a search with probes and a
// knee, not a precise one.

// TestDocumentedQueriesOnRealRuns runs every query of docs/RESULTS.md over
// runs benchrun wrote against its simulator (a concurrency ladder, a rate
// ladder, an SLO search) and checks what each counts: rate points are
// groups of their own, a knee row is not counted twice, every cell with
// requests joins them, and each failed check is listed once.
func TestDocumentedQueriesOnRealRuns(t *testing.T) {
	bin := testbin.Benchrun(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	for _, name := range []string{"ladder", "rates", "search"} {
		plan := filepath.Join(dir, name+".cue")
		if err := os.WriteFile(plan, []byte(realRunsPlans[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, plan, "--out", root, "--quiet")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); name == "ladder" && code != 1 || name != "ladder" && err != nil {
			t.Fatalf("%s: exit %d (%v)\n%s", name, code, err, out)
		}
	}
	qs := docQueries(t, root)
	if len(qs) == 0 {
		t.Fatal("no documented queries")
	}
	db := duck(t)
	probes := 0
	for _, r := range query(t, db, `SELECT search, count(*) FROM read_parquet('`+root+`/**/cells/*.parquet', hive_partitioning = true, union_by_name = true) WHERE plan = 'search' GROUP BY ALL`) {
		n, _ := strconv.Atoi(r[1])
		switch r[0] {
		case "probe":
			probes = n
		case "knee":
			if n != 1 {
				t.Fatalf("%d knee rows", n)
			}
		}
	}
	if probes < 2 {
		t.Fatalf("the search probed %d loads", probes)
	}
	cells := 4 + 2 + probes + 1
	for name, q := range qs {
		t.Run(name, func(t *testing.T) {
			rows := query(t, db, q)
			switch name {
			case "latest-cells":
				if len(rows) != cells {
					t.Errorf("%d current rows, want %d (4 ladder, 2 rates, %d probes, a knee)", len(rows), cells, probes)
				}
			case "superseded-rows":
				if len(rows) != 0 {
					t.Errorf("superseded rows in runs never resumed: %v", rows)
				}
			case "per-plan-cell":
				// Every load point a group of its own, one run each; the knee
				// row is the probe it names, not a point of its own.
				if len(rows) != 4+2+probes {
					t.Errorf("%d groups, want %d: %v", len(rows), 4+2+probes, rows)
				}
				for _, r := range rows {
					if r[5] != "1" {
						t.Errorf("group %v: %s runs, want 1", r, r[5])
					}
				}
			case "requests-join-cells", "recompute-p99-ttft", "recompute-itl":
				// Every cell with requests (not the knee, which has none of its own).
				if len(rows) != 4+2+probes {
					t.Errorf("%d cells, want %d: %v", len(rows), 4+2+probes, rows)
				}
			case "metadata-filter":
				if len(rows) != 0 {
					t.Errorf("rows with quant=Q8_0 in runs without it: %v", rows)
				}
			case "failed-assertions":
				// The ladder's every cell failed its check once.
				if len(rows) != 4 {
					t.Errorf("%d failed checks, want the ladder's 4: %v", len(rows), rows)
				}
			case "slices-shape":
				// Every pass of a cell with requests is cut into about ten
				// windows (the default width), numbered from 0. A cell the
				// machine's lateness left inconclusive is measured again:
				// its second pass has windows of its own.
				windows := map[string]int{}
				cellsWithWindows := map[string]bool{}
				for _, r := range rows {
					k := strings.Join(r[:4], " ")
					if r[4] != strconv.Itoa(windows[k]) {
						t.Errorf("%s: window %s after %d", k, r[4], windows[k])
					}
					windows[k]++
					cellsWithWindows[r[0]+" "+r[1]] = true
				}
				if len(cellsWithWindows) != 4+2+probes {
					t.Errorf("%d cells with windows, want %d", len(cellsWithWindows), 4+2+probes)
				}
				for k, n := range windows {
					if n < 4 || n > 11 {
						t.Errorf("%s: %d windows, want about ten", k, n)
					}
				}
			default:
				t.Errorf("a documented query without a check here: add one")
			}
		})
	}
}
