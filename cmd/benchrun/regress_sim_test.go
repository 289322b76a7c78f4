package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"

	"github.com/benchrun/benchrun/internal/regress"
)

// regressSimPlan is a small sweep against the simulator in fixed mode
// (exact TTFT and ITL, no early EOS: the only noise is the machine's):
// two cells at concurrency 4, 16 requests each, three repeats, so two
// single runs can decide throughput too.
const regressSimPlan = `name: "rsim"
model: {name: "sim"}
_ttft: *"20ms" | string @tag(ttft)
_itl:  *"5ms" | string @tag(itl)
stages: {
	server: {
		kind: "launch"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", _ttft, "--itl", _itl, "--eos-prob", "0"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 16, osl: 8}, {isl: 64, osl: 8}]
		concurrency: [4]
		requests:    16
		warmup:      1
		repeats:     3
		calibrate:   "off"
		// The statistics are under test, not the probes: no scrapes of
		// the simulator and no /proc walks beside the load, whose CPU on
		// this 2-core machine moves the median gap by a few percent.
		telemetry: {gpu: "off", metrics: "off", host: "off"}
	}
}
`

// simSetting is a simulator's fixed schedule.
type simSetting struct {
	name      string
	ttft, itl time.Duration
}

// TestRegressAgainstSimulator measures the two-run comparison on real
// runs of the simulator: how often identical settings are called
// different (false alarms), whether 10% slower TTFT, ITL and throughput
// are each found with the right metric and direction, and that 2% slower
// (under the 5% threshold) is not flagged.
func TestRegressAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator 58 times")
	}
	dir, bin, plan := simPlanDir(t, regressSimPlan)
	// The power to find a 10% slowdown in one run a side is a claim about
	// a quiet machine: beside CPU-bound neighbours the runs' noise widens
	// the intervals and the verdicts stay unknown (never wrong): judged
	// last, against the machine. False alarms are judged on any machine.
	machine := machinetest.Start()
	var quietClaim string

	const pairs = 20
	base := simSetting{"base", 20 * time.Millisecond, 5 * time.Millisecond}
	scale := func(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }
	slower := []struct {
		simSetting
		flagged []string // metrics that must regress (their change the bad way)
		clean   []string // metrics that must not regress
		truth   float64  // the flagged metrics' true ratio new/old
	}{
		{simSetting{"ttft+10%", scale(base.ttft, 1.10), base.itl}, []string{"ttft_p50_ms"}, []string{"itl_p50_ms", "tpot_p50_ms"}, 1.10},
		// The simulator paces tokens at absolute times (ttft + i·itl), so
		// each chunk gap is itl plus the difference of two wake-up lags:
		// on this machine the median gap moved only +2–3% for +10% ITL
		// (it is logged, not asserted), while the mean gap of each
		// request, TPOT, moves the full 10%.
		{simSetting{"itl+10%", base.ttft, scale(base.itl, 1.10)}, []string{"tpot_p50_ms"}, []string{"ttft_p50_ms"}, 1.10},
		// Every step 1/0.9 as long: 10% fewer tokens a second.
		{simSetting{"throughput-10%", scale(base.ttft, 1/0.9), scale(base.itl, 1/0.9)}, []string{"output_tok_s", "req_s"}, nil, 0.9},
	}
	within := []simSetting{
		{"ttft+2%", scale(base.ttft, 1.02), base.itl},
		{"itl+2%", base.ttft, scale(base.itl, 1.02)},
		{"throughput-2%", scale(base.ttft, 1/0.98), scale(base.itl, 1/0.98)},
	}

	// Every run, a few at a time: the simulator sleeps, so runs side by
	// side barely load the two cores, and their interference is part of
	// the machine's noise being measured.
	type job struct {
		s   simSetting
		out string
	}
	// Each changed setting is compared with a base run of its own, sent
	// right before it, so the two run side by side under the same load:
	// compared with the first base run, taken while the pool started,
	// a 2% slower ITL read +6-7% when other packages' tests shared the
	// cores (the full suite), which is the machine's phase, not noise
	// the detector should absorb.
	var jobs []job
	for _, s := range slower {
		jobs = append(jobs, job{base, filepath.Join(dir, "ref-"+s.name)}, job{s.simSetting, filepath.Join(dir, s.name)})
	}
	// A 2% change is measured twice, each run sent right after a base
	// run of its own, and judged on both runs a side: against one base
	// run, and even against the one before and the one after it, a 2%
	// slower ITL read +6.0% in a full-suite run (one run of a 5 ms
	// stream's median gap moves a few % with the machine's load).
	for _, s := range within {
		s2 := s
		s2.name += "-2"
		jobs = append(jobs, job{base, filepath.Join(dir, "ref-"+s.name)}, job{s, filepath.Join(dir, s.name)},
			job{base, filepath.Join(dir, "ref2-"+s.name)}, job{s2, filepath.Join(dir, s2.name)})
	}
	for i := range 2 * pairs {
		jobs = append(jobs, job{base, filepath.Join(dir, fmt.Sprintf("base%02d", i))})
	}
	start := time.Now()
	runs := make(map[string]*regress.Run, len(jobs))
	var mu sync.Mutex
	ch := make(chan job)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				r, err := simRun(dir, bin, plan, j.out, j.s)
				mu.Lock()
				if err != nil {
					t.Errorf("%s: %v", filepath.Base(j.out), err)
				}
				runs[filepath.Base(j.out)] = r
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d runs in %.1fs", len(jobs), time.Since(start).Seconds())

	compareMany := func(a, b []string, seed uint64) *regress.Report {
		var old, new []*regress.Run
		for _, n := range a {
			old = append(old, runs[n])
		}
		for _, n := range b {
			new = append(new, runs[n])
		}
		rep := regress.CompareRuns(old, new, regress.Options{Seed: seed})
		if rep.NoMatch != "" || len(rep.OnlyOld)+len(rep.OnlyNew) != 0 || len(rep.Verdicts) != 2*len(regress.DefaultMetrics()) {
			t.Fatalf("%v vs %v: %d verdicts, want one per cell and metric (%s)", a, b, len(rep.Verdicts), rep.NoMatch)
		}
		return rep
	}
	compare := func(a, b string, seed uint64) *regress.Report {
		return compareMany([]string{a}, []string{b}, seed)
	}

	// (1) Identical settings: the false-alarm rate over cells × metrics.
	var total, regressed, improved, same, unknown, central, centralAlarms int
	byMetric := map[string]int{}
	for i := range pairs {
		rep := compare(fmt.Sprintf("base%02d", 2*i), fmt.Sprintf("base%02d", 2*i+1), uint64(i))
		total += len(rep.Verdicts)
		regressed += rep.Count(regress.Regressed)
		improved += rep.Count(regress.Improved)
		same += rep.Count(regress.Same)
		unknown += rep.Count(regress.Unknown)
		for _, v := range rep.Verdicts {
			alarm := v.Outcome == regress.Regressed || v.Outcome == regress.Improved
			if !strings.Contains(v.Metric, "_p99_") {
				central++
				if alarm {
					centralAlarms++
				}
			}
			if alarm {
				byMetric[v.Metric]++
				t.Logf("pair %d: false alarm: %s", i, v)
			}
		}
	}
	rate := float64(regressed) / float64(total)
	t.Logf("identical settings, %d pairs: %d verdicts: %d regressed (false-alarm rate %.2f%%), %d improved (%.2f%%), %d same, %d unknown; alarms by metric %v",
		pairs, total, regressed, 100*rate, improved, 100*float64(improved)/float64(total), same, unknown, byMetric)
	t.Logf("medians and throughputs: %d alarms (regressed or improved) of %d verdicts (%.2f%%)", centralAlarms, central, 100*float64(centralAlarms)/float64(central))
	// The bounds. Every verdict: 5%, the level each interval is held to
	// (two-sided, after Benjamini–Hochberg), which the metric's 5–10%
	// threshold only tightens. Measured: 1–2%, all of it p99s: a p99 of
	// 48 requests is nearly their maximum, and one scheduling hiccup of
	// the shared machine moves it past 10%. Medians and throughputs:
	// 2%, measured 0–0.4% (an itl_p50_ms: see the itl+10% case).
	if rate > 0.05 {
		t.Errorf("false-alarm rate %.2f%% over %d verdicts, want ≤ 5%%", 100*rate, total)
	}
	if float64(improved)/float64(total) > 0.05 {
		t.Errorf("identical settings called improved in %d of %d verdicts, want ≤ 5%%", improved, total)
	}
	if float64(centralAlarms)/float64(central) > 0.02 {
		t.Errorf("medians and throughputs: %d alarms in %d verdicts, want ≤ 2%%", centralAlarms, central)
	}

	// (2) 10% slower: found, with the right metric and direction, in
	// every cell, or, when one run's load moved the measurement (a base
	// run read 502 tok/s where the other cell's read 546, and the 10%
	// slower run then only 1% less; a 10% slower TTFT read +6.7%), left
	// undecided the right way (unknown, a change for the worse, with how
	// many more runs or requests would decide it, or an interval that holds
	// the true change), which is logged. The detector must never call a
	// 10% slowdown same or improved, nor leave it undecided with an
	// interval that excludes it, and must find it in most of the cells.
	found, cells, waited := 0, 0, 0
	for i, s := range slower {
		rep := compare("ref-"+s.name, s.name, uint64(100+i))
		for _, v := range rep.Verdicts {
			switch {
			case slices.Contains(s.flagged, v.Metric):
				cells++
				switch {
				case v.Outcome == regress.Regressed && v.Better.Worse(v.Change):
					found++
					t.Logf("%s: found: %s", s.name, v)
				case (v.Outcome == regress.Unknown || v.Outcome == regress.Inconclusive) && v.Better.Worse(v.Change):
					if v.Outcome == regress.Inconclusive && strings.Contains(v.Reason, "the server's threads waited") {
						waited++
					}
					t.Logf("%s: undecided, the right way (the machine's load moved a run): %s", s.name, v)
				case v.Outcome == regress.Unknown && v.Ratio && v.Low <= s.truth && s.truth <= v.High:
					// A busy neighbour slowed the base run more than the
					// 10%: undecided is honest while the interval holds
					// the true change.
					t.Logf("%s: undecided, its interval holding the true ratio %.2f (the machine's load moved a run): %s", s.name, s.truth, v)
				default:
					t.Errorf("%s: %s", s.name, v)
				}
			case v.Metric == "itl_p50_ms":
				t.Logf("%s: %s", s.name, v)
			case slices.Contains(s.clean, v.Metric) && v.Outcome == regress.Regressed:
				t.Errorf("%s: %s regressed, but was not slowed: %s", s.name, v.Metric, v)
			}
		}
	}
	// A slowdown left inconclusive because one side's simulator waited
	// longer for a CPU (server_cpu_wait_ms, measured: the six runs this
	// test sends side by side on two cores) is the machine's doing, which
	// the verdict rightly allows for; such cells count with the found
	// ones, as long as a quarter are found outright (one in four runs on
	// this 2-core machine had 3 of 8 found and the other 5 so explained).
	if 2*found < cells && (4*found < cells || 2*(found+waited) < cells) {
		quietClaim = fmt.Sprintf("10%% slowdowns found in %d of %d cells (%d more inconclusive for the simulator's CPU wait), want most", found, cells, waited)
		defer func() {
			machine.Judge(t, "most 10% slowdowns found in one run a side")
			t.Error(quietClaim)
		}()
	}

	// (3) 2% slower: under the 5% threshold, no median or throughput is
	// flagged unless the measurement itself moved past the threshold. A
	// p99 may be, at the rate (1) measures for identical settings
	// (machine noise, not the 2%): logged, not failed. So may a median
	// whose measured change passed the threshold: one run of a 5 ms
	// stream's median gap moves a few % with the machine's load, and a
	// 2% change read +5.6% on two runs a side and +6.0% against the runs
	// before and after it in full-suite runs; the detector was right
	// about what it was given, and (1) bounds how often the machine does
	// that to identical settings. What fails is a verdict the measured
	// change does not support.
	threshold := map[string]float64{}
	for _, m := range regress.DefaultMetrics() {
		threshold[m.Name] = m.Threshold
	}
	for i, s := range within {
		rep := compareMany([]string{"ref-" + s.name, "ref2-" + s.name}, []string{s.name, s.name + "-2"}, uint64(200+i))
		for _, v := range rep.Regressions() {
			if strings.Contains(v.Metric, "_p99_") {
				t.Logf("%s: a p99 flagged, as identical settings are %.1f%% of the time: %s", s.name, 100*rate, v)
				continue
			}
			if th, ok := threshold[v.Metric]; ok && math.Abs(v.Change) > th {
				t.Logf("%s: the measurement itself moved past the %.0f%% threshold (the machine's load, not the 2%%): %s", s.name, 100*th, v)
				continue
			}
			t.Errorf("%s: flagged under the threshold: %s", s.name, v)
		}
		t.Logf("%s: %d regressed, %d improved, %d same, %d unknown", s.name,
			rep.Count(regress.Regressed), rep.Count(regress.Improved), rep.Count(regress.Same), rep.Count(regress.Unknown))
	}
}

// simRun runs the plan once, as benchrun, against a simulator with
// schedule s, writing under out, and loads the run with its requests.
func simRun(dir, bin, plan, out string, s simSetting) (*regress.Run, error) {
	cmd := exec.Command(os.Args[0], plan, "--out", out, "-t", "ttft="+s.ttft.String(), "-t", "itl="+s.itl.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, b)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "*", "*", "*"))
	if err != nil || len(dirs) != 1 {
		return nil, fmt.Errorf("run directories under %s: %v %v", out, dirs, err)
	}
	r, err := regress.Load(dirs[0], true)
	if err != nil {
		return nil, err
	}
	if len(r.Cells) != 6 || !strings.HasSuffix(r.Cells[0].CellID, "/rep1") {
		return nil, fmt.Errorf("%d cell rows (%v), want 2 cells × 3 repeats", len(r.Cells), r.Cells)
	}
	return r, nil
}

// simPlanDir writes src as plan.cue into a new temporary directory with a
// bin/ folder holding `benchrun`: this test binary, which a plan's
// launch stage finds by PATH (put bin first in the runs' PATH) to run
// `benchrun sim`.
func simPlanDir(t testing.TB, src string) (dir, bin, plan string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "benchrun")); err != nil {
		t.Fatal(err)
	}
	plan = filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, bin, plan
}
