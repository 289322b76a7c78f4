package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// verdictRatesPlan is plans/nightly.cue's shape: a baseline with its
// defaults, two cells at concurrency 1 and 4 against the simulator.
const verdictRatesPlan = `name: "rates"
model: {name: "sim"}
_ttft: *"20ms" | string @tag(ttft)
_itl:  *"5ms" | string @tag(itl)
baseline: {}
stages: {
	server: {
		kind: "launch"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", _ttft, "--itl", _itl]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 64, osl: 32}, {isl: 256, osl: 32}]
		concurrency: [1, 4]
		requests:    16
		warmup:      1
	}
}
`

// BenchmarkVerdictRates measures the nightly gate end to end: H history
// runs of one setting, then N more of it (a run that exits 1 is a false
// alarm; its exit code and what it named are logged), then M runs of a
// server 10% slower (--itl and --ttft) against the same history (a run
// that exits 1 naming a metric is a detection). It reports the rates;
// load the machine beside it (eight `sha256sum /dev/zero`) to measure
// them on a busy one. Sizes: VERDICT_RATES=H,N,M (default 8,20,10).
//
//	go test ./cmd/benchrun -run '^$' -bench VerdictRates -benchtime 1x
func BenchmarkVerdictRates(b *testing.B) {
	sizes := []int{8, 20, 10}
	if v := os.Getenv("VERDICT_RATES"); v != "" {
		for i, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && i < len(sizes) {
				sizes[i] = n
			}
		}
	}
	h, n, m := sizes[0], sizes[1], sizes[2]
	for range b.N {
		dir, bin, plan := simPlanDir(b, verdictRatesPlan)
		history := filepath.Join(dir, "runs")
		run := func(out string, slower bool) (int, string) {
			args := []string{plan, "--out", out, "--baseline", history}
			if slower {
				args = append(args, "-t", "ttft=22ms", "-t", "itl=5.5ms")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				b.Fatal(err)
			}
			var named []string
			for _, line := range strings.Split(stderr.String(), "\n") {
				if rest, ok := strings.CutPrefix(line, "✗ regression: "); ok {
					named = append(named, strings.Join(strings.Fields(rest)[:3], " "))
				}
			}
			return code, strings.Join(named, "; ")
		}
		for i := range h {
			if code, _ := run(history, false); code != 0 {
				b.Logf("history run %d exited %d", i, code)
			}
		}
		alarms := 0
		for i := range n {
			code, named := run(history, false)
			if code == 1 {
				alarms++
				b.Logf("identical run %d: false alarm: %s", i, named)
			}
		}
		found := 0
		for i := range m {
			code, named := run(filepath.Join(dir, "slower"), true)
			if code == 1 && named != "" {
				found++
			}
			b.Logf("10%% slower run %d: exit %d: %s", i, code, named)
		}
		b.ReportMetric(100*float64(alarms)/float64(max(n, 1)), "false-alarm-%")
		b.ReportMetric(100*float64(found)/float64(max(m, 1)), "detection-%")
		b.Logf("%d history runs; %d identical: %d exited 1; %d 10%% slower: %d exited 1 naming a metric", h, n, alarms, m, found)
		fmt.Fprintf(os.Stderr, "verdict rates: false alarms %d/%d, detections %d/%d\n", alarms, n, found, m)
	}
}
