package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/coord"
	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/merge"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// shardSimPlan is a closed loop and an open loop against one simulator
// at a load one process sustains easily (the simulator sleeps; 8
// sessions, 100 req/s of 16 tokens), constant and Poisson. Prompts of 48
// tokens span whole cache blocks (16), so a prompt two shards both sent
// would be found cached.
const shardSimPlan = `name: "shardsim"
model: {name: "sim"}
_url: string @tag(url)
stages: {
	closed: {
		kind: "sweep", target: _url, cells: [{isl: 48, osl: 16}]
		concurrency: [8], requests: 96, warmup: 1, calibrate: "off"
	}
	constant: {
		kind: "sweep", target: _url, needs: ["closed"], cells: [{isl: 48, osl: 16}]
		rates: [100], arrival: "constant", requests: 300, warmup: 0, calibrate: "off"
	}
	poisson: {
		kind: "sweep", target: _url, needs: ["constant"], cells: [{isl: 48, osl: 16}]
		rates: [100], arrival: "poisson", requests: 600, warmup: 0, calibrate: "off"
		assert: ["failed == 0"]
	}
}
`

// TestShardsMatchOneProcess: two shard processes against one simulator,
// merged, measure what one process sending the whole load measures.
func TestShardsMatchOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator and three benchrun processes")
	}
	dir := t.TempDir()
	// With a prompt cache: cold prompts must stay cold across shards
	// (each shard draws its own), or the second shard's hits would
	// lower its TTFT.
	// The single process and the shards each measure a simulator of
	// their own (the same flags), so neither finds the other's prompts.
	// Whether one process and two shards read the same medians is a claim
	// about a quiet machine: judged against other processes' load over the
	// whole test (the simulators are the test's own).
	machine := machinetest.Start()
	url, simPID := startSimProc(t, dir, "--prompt-cache")
	shardURL, shardSimPID := startSimProc(t, dir, "--prompt-cache")
	machine.Own(simPID)
	machine.Own(shardSimPID)
	var imprecise []string
	plan := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(plan, []byte(shardSimPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(out string, extra ...string) (*exec.Cmd, error) {
		target := url
		if out != "single" {
			target = shardURL
		}
		args := append([]string{plan, "--quiet", "--out", filepath.Join(dir, out), "-t", "url=" + target}, extra...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
		return cmd, nil
	}
	single, _ := run("single")
	if b, err := single.CombinedOutput(); err != nil {
		t.Fatalf("single: %v\n%s", err, b)
	}
	// Shard 0 serves the coordinator; every cell of the three stages
	// starts on both shards at one instant.
	addr := freeAddr(t)
	var shards []*exec.Cmd
	outs := make([][]byte, 2)
	errs := make(chan error, 2)
	for i := range 2 {
		sync := []string{"--coordinator", addr}
		if i == 0 {
			sync = []string{"--coordinate", addr}
		}
		c, _ := run(fmt.Sprintf("shard%d", i), append([]string{"--shard", fmt.Sprintf("%d/2", i)}, sync...)...)
		shards = append(shards, c)
		go func(i int) {
			b, err := c.CombinedOutput()
			outs[i] = b
			errs <- err
		}(i)
	}
	for range shards {
		if err := <-errs; err != nil {
			t.Fatalf("shard: %v\n%s\n%s", err, outs[0], outs[1])
		}
	}
	runDir := func(out string) string { return onlyRunDir(t, filepath.Join(dir, out)) }
	merged := filepath.Join(dir, "merged")
	mc := exec.Command(os.Args[0], "merge", runDir("shard0"), runDir("shard1"), "--out", merged)
	mc.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	if b, err := mc.CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, b)
	} else {
		t.Logf("merge: %s", b)
	}
	// The merged directory is a run the other commands read.
	rc := exec.Command(os.Args[0], "report", merged)
	rc.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	if b, err := rc.CombinedOutput(); err != nil {
		t.Errorf("report on the merged run: %v\n%s", err, b)
	}

	cells := func(d string) map[string]results.Cell {
		r, err := rundir.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := r.LatestCells()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]results.Cell{}
		for _, c := range cs {
			m[c.CellID] = c
		}
		return m
	}
	one, all := cells(runDir("single")), cells(merged)
	if len(all) != 3 || len(one) != 3 {
		t.Fatalf("cells: merged %d, single %d; want 3", len(all), len(one))
	}
	for id, s := range one {
		m, ok := all[id]
		if !ok {
			t.Fatalf("merged run lacks cell %s (cell ids must not depend on the shard)", id)
		}
		if m.CachedTokens != nil && *m.CachedTokens > 0 {
			t.Errorf("%s: the merged cell found %d prompt tokens cached: the shards sent each other's cold prompts", id, *m.CachedTokens)
		}
		if m.Shards != 2 || m.Requests != s.Requests || m.Status != results.StatusOK {
			t.Errorf("%s: merged shards %d requests %d status %s (%s), single requests %d", id, m.Shards, m.Requests, m.Status, m.Reason, s.Requests)
		}
		// A Poisson sample's realized rate is the draws' (600 arrivals
		// at 100/s: ±4% from one seed to the next), so its throughput is
		// held to the rate it was sent at; the others' to the single
		// process's.
		tputTol, normTol := 0.10, 0.0
		if m.Arrival == "poisson" {
			tputTol, normTol = 0, 0.10
		}
		if m.ReqS != nil && m.SentReqS != nil && s.ReqS != nil && s.SentReqS != nil {
			a, b := *m.ReqS / *m.SentReqS, *s.ReqS / *s.SentReqS
			t.Logf("%s req_s/sent_req_s: merged %.3f (sent %.1f/s) single %.3f (sent %.1f/s)", id, a, *m.SentReqS, b, *s.SentReqS)
			if normTol > 0 && (a/b-1 > normTol || a/b-1 < -normTol) {
				imprecise = append(imprecise, fmt.Sprintf("%s: served/sent merged %.3f vs single %.3f, want within %.0f%%", id, a, b, 100*normTol))
			}
		}
		for _, x := range []struct {
			name string
			a, b *float64
			tol  float64 // relative; 0: logged only
		}{
			{"ttft_p50_ms", m.TTFTP50Ms, s.TTFTP50Ms, 0.10},
			{"ttft_p99_ms", m.TTFTP99Ms, s.TTFTP99Ms, 0},
			{"itl_p50_ms", m.ITLP50Ms, s.ITLP50Ms, 0.10},
			{"itl_p99_ms", m.ITLP99Ms, s.ITLP99Ms, 0},
			{"e2el_p50_ms", m.E2ELP50Ms, s.E2ELP50Ms, 0},
			{"e2el_p99_ms", m.E2ELP99Ms, s.E2ELP99Ms, 0},
			{"total_tok_s", m.TotalTokS, s.TotalTokS, tputTol},
			{"req_s", m.ReqS, s.ReqS, 0},
			{"send_lag_p99_ms", m.SendLagP99, s.SendLagP99, 0},
		} {
			if x.a == nil || x.b == nil {
				t.Errorf("%s %s: merged %v single %v: want both measured", id, x.name, x.a, x.b)
				continue
			}
			d := (*x.a - *x.b) / *x.b
			t.Logf("%s %s: merged %.3f single %.3f (%+.1f%%)", id, x.name, *x.a, *x.b, 100*d)
			// A median latency may also differ by what the machine allowed:
			// the median lateness of its event loop during either run (on a
			// quiet machine about 0.05 ms; beside busy neighbours a 5 ms
			// median gap read 4.53 ms, its events coalesced).
			allow := 0.0
			if strings.HasSuffix(x.name, "_p50_ms") {
				allow = max(opt0(m.MachineLateP50Ms), opt0(s.MachineLateP50Ms)) / *x.b
			}
			if x.tol > 0 && (d > x.tol+allow || d < -x.tol-allow) {
				imprecise = append(imprecise, fmt.Sprintf("%s %s: merged %.3f vs single %.3f: %+.1f%%, want within %.0f%% and what the machine allowed (%.1f%%)", id, x.name, *x.a, *x.b, 100*d, 100*x.tol, 100*allow))
			}
		}
	}
	info, err := os.ReadFile(filepath.Join(merged, merge.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var mi merge.Info
	if err := json.Unmarshal(info, &mi); err != nil {
		t.Fatal(err)
	}
	if len(mi.Processes) != 2 {
		t.Errorf("merge.json has %d shard records, want 2", len(mi.Processes))
	}
	for _, p := range mi.Processes {
		if p.ClockOffsetMs == nil || p.Barriers != 3 {
			t.Errorf("shard %d record: %+v, want a clock offset and 3 barriers", p.Shard, p.ShardRecord)
			continue
		}
		t.Logf("shard %d/%d: clock offset %+.3f ms (rtt %.3f ms), %d cells in lockstep, longest barrier wait %.1f ms", p.Shard, p.Shards, *p.ClockOffsetMs, *p.ClockRTTMs, p.Barriers, p.BarrierWaitMaxMs)
	}
	// A shard is flagged when its send lag p99 passes 5 ms. Judged against
	// what the machine allowed: the shard's own row says how late this
	// machine ran an event loop's tasks during the cell (a client's sends
	// go through one; a lone thread's wake, machine_wake_p99_ms, read
	// 2.4 ms where a shard lagged 13 ms beside busy neighbours). A shard
	// sends 150 requests a cell, so its p99 is its second-latest send:
	// one stall of the machine reaches it, and the bound is the loop's
	// latest (machine_late_max_ms; a shard lagged 675 ms at a p99 of
	// 4.2 ms for the loop). A flag that explains is the machine's, logged;
	// one beyond it is the client's on a quiet machine, an error, and
	// beside busy neighbours inconclusive, as the medians are.
	shardCells := []map[string]results.Cell{cells(runDir("shard0")), cells(runDir("shard1"))}
	for _, c := range mi.Cells {
		if c.Flagged {
			for _, sh := range c.Shards {
				floor := 0.0
				if r, ok := shardCells[sh.Shard][c.CellID]; ok {
					floor = max(opt0(r.MachineLateP99Ms), opt0(r.MachineLateMaxMs))
				}
				switch {
				case sh.SendLagP99Ms == nil || *sh.SendLagP99Ms <= 5:
				case *sh.SendLagP99Ms <= 5+floor:
					t.Logf("%s shard %d/%d flagged (send lag p99 %.2f ms), within what the machine allowed (its event loop up to %.2f ms late, over the 5 ms)", c.CellID, sh.Shard, sh.Shards, *sh.SendLagP99Ms, floor)
				default:
					// The probe is another process: it sees a stall of the
					// machine, not the backlog a starved shard then sends
					// late. Beyond it, the lag is a claim about the client
					// on a quiet machine, judged as the medians are.
					imprecise = append(imprecise, fmt.Sprintf("%s shard %d/%d flagged at a load each shard sustains: send lag p99 %.2f ms, past 5 ms and the machine's lateness (up to %.2f ms)", c.CellID, sh.Shard, sh.Shards, *sh.SendLagP99Ms, floor))
				}
			}
		}
		for _, sh := range c.Shards {
			t.Logf("%s shard %d/%d: %d requests, send_lag p99 %s ms, start offset %.2f ms", c.CellID, sh.Shard, sh.Shards, sh.Requests, fmtOpt(sh.SendLagP99Ms), sh.StartOffsetMs)
		}
	}
	// Last, as it may end the test inconclusive: the precision claims.
	if len(imprecise) > 0 {
		for _, m := range imprecise {
			t.Log(m)
		}
		machine.Judge(t, "the merged cells' medians and rates within 10% of one process's, and each shard keeping its schedule")
		for _, m := range imprecise {
			t.Error(m)
		}
	}
}

// startSim starts `benchrun sim` (this test binary) on a free loopback
// port in fixed mode and returns its URL once it answers.
func startSim(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	url, _ := startSimProc(t, dir, extra...)
	return url
}

// startSimProc is startSim, with the simulator's process id.
func startSimProc(t *testing.T, dir string, extra ...string) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"sim", "--addr", addr, "--model", "sim", "--mode", "fixed", "--ttft", "20ms", "--itl", "5ms", "--eos-prob", "0"}, extra...)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := "http://" + addr
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(url + "/v1/models"); err == nil {
			r.Body.Close()
			return url, cmd.Process.Pid
		}
	}
	t.Fatalf("the simulator at %s never answered", url)
	return "", 0
}

func fmtOpt(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// overloadPlan: an open loop one client cannot keep because of its own
// in-flight cap (max_inflight is each process's, as GuideLLM caps each
// worker): 120 req/s of ~100 ms requests need ~12 in flight, one process
// may hold 8, each of two shards 8 for its 60 req/s. The single process
// falls hundreds of ms behind (855 ms p99 in one run); a shard that keeps
// its load reads a few ms, and on this project's 2-core VMs the machine's
// own stalls alone reach 3-6 ms p99 (machine.Probe), so the line
// between the two is drawn at 50 ms, not the default 5 (a shard read 5.23
// ms in a full-suite run and failed the test).
const overloadPlan = `name: "overload"
model: {name: "sim"}
_url: string @tag(url)
stages: sweep: {
	kind: "sweep", target: _url, cells: [{isl: 16, osl: 16}]
	rates: [120], arrival: "constant", requests: 240, max_inflight: 8, warmup: 0, calibrate: "off"
	send_lag_threshold_ms: 50
}
`

// TestShardsCarryWhatOneProcessCannot: at a load one process cannot keep,
// its cell is flagged client-bound by send lag; two shards keep it, and
// the merged cell is not flagged.
func TestShardsCarryWhatOneProcessCannot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator and three benchrun processes")
	}
	dir := t.TempDir()
	// That two shards keep what one process cannot is a claim about a
	// quiet machine beyond what the lateness probe sees (CPU-bound
	// neighbours starve a sender without delaying a sleeper's wake):
	// judged last, against other processes' load. The single process
	// being flagged is behaviour: a busy machine only flags it more.
	machine := machinetest.Start()
	url, simPID := startSimProc(t, dir)
	machine.Own(simPID)
	plan := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(plan, []byte(overloadPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := func(args ...string) *exec.Cmd { return benchrunCmd(dir, args...) }
	if b, err := bench(plan, "--quiet", "--out", "single", "-t", "url="+url).CombinedOutput(); err != nil {
		t.Fatalf("single: %v\n%s", err, b)
	}
	at := "@" + strconv.FormatFloat(float64(time.Now().Add(3*time.Second).UnixNano())/1e9, 'f', 3, 64)
	errs := make(chan error, 2)
	for i := range 2 {
		c := bench(plan, "--quiet", "--out", fmt.Sprintf("shard%d", i), "-t", "url="+url, "--shard", fmt.Sprintf("%d/2", i), "--start-at", at)
		go func() {
			b, err := c.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w\n%s", err, b)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("shard: %v", err)
		}
	}
	runDir := func(out string) string { return onlyRunDir(t, filepath.Join(dir, out)) }
	if b, err := bench("merge", runDir("shard0"), runDir("shard1"), "--out", "merged", "--send-lag-threshold-ms", "50").CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, b)
	}
	row := func(d string) results.Cell {
		r, err := rundir.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := r.LatestCells()
		if err != nil || len(cs) != 1 {
			t.Fatalf("%s: %d cells, %v", d, len(cs), err)
		}
		return cs[0]
	}
	one, all := row(runDir("single")), row(filepath.Join(dir, "merged"))
	t.Logf("single: send_lag p99 %s ms, ttft_sched p50 %s ms, req_s %s; notes: %s", fmtOpt(one.SendLagP99), fmtOpt(one.TTFTSchedP50Ms), fmtOpt(one.ReqS), one.Notes)
	t.Logf("merged: send_lag p99 %s ms, ttft_sched p50 %s ms, req_s %s; notes: %s", fmtOpt(all.SendLagP99), fmtOpt(all.TTFTSchedP50Ms), fmtOpt(all.ReqS), all.Notes)
	if one.SendLagP99 == nil || *one.SendLagP99 <= 50 || !strings.Contains(one.Notes, "client-bound: send_lag p99") {
		t.Errorf("single process: send_lag p99 %s ms, notes %q: want it flagged client-bound", fmtOpt(one.SendLagP99), one.Notes)
	}
	info, err := os.ReadFile(filepath.Join(dir, "merged", merge.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var mi merge.Info
	if err := json.Unmarshal(info, &mi); err != nil {
		t.Fatal(err)
	}
	// A shard flagged by less than what the machine allowed during its
	// cell (its row's event-loop lateness, up to its latest: a shard's
	// 120 requests make its p99 its second-latest send) kept the load as
	// well as the machine let it; one flagged beyond that did not.
	shardRows := []results.Cell{row(runDir("shard0")), row(runDir("shard1"))}
	for _, sh := range mi.Cells[0].Shards {
		t.Logf("shard %d/%d: %d requests, send_lag p99 %s ms, start offset %.2f ms %s", sh.Shard, sh.Shards, sh.Requests, fmtOpt(sh.SendLagP99Ms), sh.StartOffsetMs, sh.Flag)
		if sh.Flag == "" || sh.SendLagP99Ms == nil {
			continue
		}
		r := shardRows[sh.Shard]
		late := max(opt0(r.MachineLateP99Ms), opt0(r.MachineLateMaxMs))
		if *sh.SendLagP99Ms <= 50+late {
			t.Logf("shard %d/%d flagged within what the machine allowed: send lag p99 %.2f ms, its event loop up to %.2f ms late", sh.Shard, sh.Shards, *sh.SendLagP99Ms, late)
			continue
		}
		machine.Judge(t, "two shards keeping a load one process cannot")
		t.Errorf("the shards should keep the load, yet shard %d/%d lagged %.2f ms (p99), past 50 ms and the machine's lateness (up to %.2f ms): %s", sh.Shard, sh.Shards, *sh.SendLagP99Ms, late, all.Notes)
	}
}

// lockstepPlan: two closed-loop cells whose shards take unequal time (3
// sessions over 2 shards: shard 0 sends its 6 requests over 2 sessions,
// shard 1 over 1, so it needs twice as long). Without lockstep shard 0
// would start the second cell while shard 1 is still in the first.
const lockstepPlan = `name: "lockstep"
model: {name: "sim"}
_url: string @tag(url)
_i: int @tag(shard,type=int)
_coord: string @tag(coord)
shard: {count: 2, index: _i, coordinator: _coord}
stages: {
	first: {
		kind: "sweep", target: _url, cells: [{isl: 16, osl: 16}]
		concurrency: [3, 5], requests: 12, warmup: 0, calibrate: "off"
	}
	second: {
		kind: "sweep", target: _url, needs: ["first"], cells: [{isl: 16, osl: 16}]
		concurrency: [3], requests: 12, warmup: 0, calibrate: "off"
	}
}
`

// freeAddr is a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestShardsInLockstep: two shards joined to `benchrun coordinate` (the
// plan's shard block, its index from a tag) start every cell together,
// and cell k+1 starts on both only after cell k ended on both; each
// shard records its clock offset and barriers, and the merge carries them.
func TestShardsInLockstep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator, a coordinator and two shard processes")
	}
	dir := t.TempDir()
	// That the shards start each cell within 20 ms of each other is a
	// claim about a quiet machine (a shard woken late by busy neighbours
	// starts late): judged last, against other processes' load. The
	// lockstep order (no cell before the previous one ended on both) is
	// behaviour, judged on any machine.
	machine := machinetest.Start()
	url, simPID := startSimProc(t, dir)
	machine.Own(simPID)
	var imprecise []string
	plan := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(plan, []byte(lockstepPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := func(args ...string) *exec.Cmd { return benchrunCmd(dir, args...) }
	addr := freeAddr(t)
	co := bench("coordinate", "--shards", "2", "--listen", addr)
	var coOut, coErr strings.Builder
	co.Stdout, co.Stderr = &coOut, &coErr
	if err := co.Start(); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for i := range 2 {
		c := bench(plan, "--quiet", "--out", fmt.Sprintf("shard%d", i), "-t", "url="+url, "-t", fmt.Sprintf("shard=%d", i), "-t", "coord="+addr)
		go func() {
			b, err := c.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("shard %d: %w\n%s", i, err, b)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := co.Wait(); err != nil {
		t.Fatalf("coordinate: %v\n%s", err, coErr.String())
	}
	t.Logf("coordinate: %s", coErr.String())
	runDir := func(out string) string { return onlyRunDir(t, filepath.Join(dir, out)) }
	// Each shard's requests, by cell, in run order.
	type span struct{ first, last time.Time }
	spans := map[string][2]span{}
	var order []string
	for i := range 2 {
		r, err := rundir.Open(runDir(fmt.Sprintf("shard%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		m := r.Manifest
		if m.Shard == nil || m.Shard.ClockOffsetMs == nil || m.Shard.Barriers != 3 || m.Shard.Coordinator != addr {
			t.Fatalf("shard %d manifest record: %+v, want a clock offset, 3 barriers, coordinator %s", i, m.Shard, addr)
		}
		t.Logf("shard %d: clock offset %.3f ms (rtt %.3f ms), %d barriers, longest wait %.1f ms", i, *m.Shard.ClockOffsetMs, *m.Shard.ClockRTTMs, m.Shard.Barriers, m.Shard.BarrierWaitMaxMs)
		rows, err := r.Rows()
		if err != nil {
			t.Fatal(err)
		}
		for q := range rows.Requests.All() {
			k := q.Stage + "/" + q.CellID
			sp := spans[k]
			if i == 0 && sp[0].first.IsZero() && sp[1].first.IsZero() {
				order = append(order, k)
			}
			end := q.SentAt
			if q.E2ELMs != nil {
				end = end.Add(time.Duration(*q.E2ELMs * float64(time.Millisecond)))
			}
			if sp[i].first.IsZero() || q.SentAt.Before(sp[i].first) {
				sp[i].first = q.SentAt
			}
			if end.After(sp[i].last) {
				sp[i].last = end
			}
			spans[k] = sp
		}
	}
	if len(order) != 3 {
		t.Fatalf("cells %v, want 3", order)
	}
	for k, id := range order {
		sp := spans[id]
		d := sp[1].first.Sub(sp[0].first)
		t.Logf("%s: shard 0 %s–%s, shard 1 %s–%s: start apart %v", id, sp[0].first.Format("15:04:05.000"), sp[0].last.Format("15:04:05.000"), sp[1].first.Format("15:04:05.000"), sp[1].last.Format("15:04:05.000"), d)
		if d > 20*time.Millisecond || d < -20*time.Millisecond {
			imprecise = append(imprecise, fmt.Sprintf("%s: the shards started %v apart, want together (within 20 ms)", id, d))
		}
		if k == 0 {
			continue
		}
		prev := spans[order[k-1]]
		ended := prev[0].last
		if prev[1].last.After(ended) {
			ended = prev[1].last
		}
		for i := range 2 {
			if sp[i].first.Before(ended) {
				t.Errorf("%s: shard %d started at %s, before %s ended on every shard (%s): not in lockstep", id, i, sp[i].first.Format("15:04:05.000"), order[k-1], ended.Format("15:04:05.000"))
			}
		}
	}
	var st struct {
		Joined   []json.RawMessage `json:"joined"`
		Barriers []string          `json:"barriers"`
	}
	if err := json.Unmarshal([]byte(coOut.String()), &st); err != nil || len(st.Joined) != 2 || len(st.Barriers) != 3 {
		t.Errorf("coordinate's record: %v %s", err, coOut.String())
	}
	merged := filepath.Join(dir, "merged")
	if b, err := bench("merge", runDir("shard0"), runDir("shard1"), "--out", merged).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(merged, merge.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var mi merge.Info
	if err := json.Unmarshal(b, &mi); err != nil {
		t.Fatal(err)
	}
	if len(mi.Processes) != 2 || mi.Processes[0].ClockOffsetMs == nil || mi.Processes[1].Barriers != 3 {
		t.Errorf("merge.json shards: %+v", mi.Processes)
	}
	for _, c := range mi.Cells {
		if c.Flagged {
			imprecise = append(imprecise, fmt.Sprintf("%s flagged: %+v", c.CellID, c.Shards))
		}
	}
	if len(imprecise) > 0 {
		machine.Judge(t, "the shards starting each cell together")
		t.Error(strings.Join(imprecise, "\n"))
	}
}

// TestShardGoneStopsPeers: shard 0 serves the coordinator (--coordinate);
// shard 1 is killed mid-run (SIGKILL: no goodbye). Shard 0 notices from
// the missing heartbeats, marks its next cell an error naming the shard,
// skips the rest and exits non-zero; nothing is left waiting.
func TestShardGoneStopsPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator and two shard processes")
	}
	dir := t.TempDir()
	url := startSim(t, dir)
	plan := filepath.Join(dir, "plan.cue")
	// Long cells: shard 1 is killed during the first.
	p := strings.Replace(lockstepPlan, `shard: {count: 2, index: _i, coordinator: _coord}`, `shard: {count: 2, index: _i}`, 1)
	p = strings.Replace(p, `concurrency: [3, 5], requests: 12`, `concurrency: [3, 5], requests: 60`, 1)
	if err := os.WriteFile(plan, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := func(args ...string) *exec.Cmd { return benchrunCmd(dir, args...) }
	addr := freeAddr(t)
	s0 := bench(plan, "--out", "shard0", "-t", "url="+url, "-t", "shard=0", "--coordinate", addr)
	var out0 strings.Builder
	s0.Stdout, s0.Stderr = io.Discard, &out0
	if err := s0.Start(); err != nil {
		t.Fatal(err)
	}
	s1 := bench(plan, "--quiet", "--out", "shard1", "-t", "url="+url, "-t", "shard=1", "--coordinator", addr)
	if err := s1.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once both joined and are in the first cell (a shard killed
	// before it joined is waited for, coord.JoinWait, as a pod still
	// being scheduled is): the coordinator's status says when.
	waitBothInFirstCell(t, addr)
	_ = s1.Process.Kill()
	_ = s1.Wait()
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- s0.Wait() }()
	select {
	case err := <-done:
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		t.Logf("shard 0 exited %d, %v after the kill", code, time.Since(began).Round(time.Millisecond))
		if err == nil {
			t.Errorf("shard 0 exited 0 with its peer gone:\n%s", out0.String())
		}
	case <-time.After(2 * time.Minute):
		// It notices within coord.DeadAfter and its cell's end; a shard
		// still running far past that waits for a peer that is gone.
		_ = s0.Process.Kill()
		t.Fatalf("shard 0 still running 2 minutes after its peer died:\n%s", out0.String())
	}
	if !strings.Contains(out0.String(), "shard 1/2 stopped answering") {
		t.Errorf("shard 0's output does not name the gone shard:\n%s", out0.String())
	}
}

// waitBothInFirstCell waits until the coordinator at addr has released
// the first barrier (both shards joined and started the first cell).
func waitBothInFirstCell(t *testing.T, addr string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, err := http.Get("http://" + addr + "/v1/status")
		if err != nil {
			last = err.Error()
			continue
		}
		var st coord.Status
		err = json.NewDecoder(r.Body).Decode(&st)
		r.Body.Close()
		if err == nil && len(st.Joined) == 2 && len(st.Barriers) > 0 {
			return
		}
		last = fmt.Sprintf("%+v %v", st, err)
	}
	t.Fatalf("the shards never both started the first cell: coordinator status %s", last)
}

// onlyRunDir is the one run directory under a --out folder.
func onlyRunDir(t *testing.T, out string) string {
	t.Helper()
	ds, err := filepath.Glob(filepath.Join(out, "*", "*", "*"))
	if err != nil || len(ds) != 1 {
		t.Fatalf("run directories under %s: %v %v", out, ds, err)
	}
	return ds[0]
}

// opt0 is *p, or 0 when not measured.
func opt0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
