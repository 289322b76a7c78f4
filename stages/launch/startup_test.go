package launch

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// rowSink keeps what a stage emits.
type rowSink struct {
	mu    sync.Mutex
	cells []results.Cell
	reqs  []results.Request
}

func (k *rowSink) emit(c results.Cell, in results.Requests) error {
	reqs, _ := results.CollectRequests(in)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cells = append(k.cells, c)
	k.reqs = append(k.reqs, reqs...)
	return nil
}

func (k *rowSink) rows() ([]results.Cell, []results.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]results.Cell(nil), k.cells...), append([]results.Request(nil), k.reqs...)
}

// launchStartup runs the stage "server" of src with its rows going to a
// rowSink.
func launchStartup(t *testing.T, src string) (*Stage, *pipeline.Outputs, *rowSink, error) {
	t.Helper()
	dir := t.TempDir()
	st, p, err := build(dir, src, "server")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	t.Cleanup(func() {
		if err := s.Cleanup(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	env := newEnv(dir, p, s.spec)
	env.Progress = io.Discard
	k := &rowSink{}
	env.Emit = k.emit
	out, err := s.Run(context.Background(), env)
	return s, out, k, err
}

// The simulator loads for this long after it starts (503 until then): the
// ground truth of startup_s, which adds only the process's own start.
const simLoad = 400 * time.Millisecond

// startupSlack is what a start may add to the load on a busy machine: the
// process's exec and listen, the poll's resolution (10 ms at this length).
const startupSlack = 1500 * time.Millisecond

func checkStartup(t *testing.T, c results.Cell, id string) {
	t.Helper()
	if c.CellID != id || c.Stage != "server" || c.Status != results.StatusOK || c.Model != "tiny" || c.Engine != "sim" {
		t.Errorf("row %s: stage %s status %s (%s) model %s engine %s; want %s, ok, tiny, sim", c.CellID, c.Stage, c.Status, c.Reason, c.Model, c.Engine, id)
	}
	if c.StartupS == nil {
		t.Fatalf("%s: startup_s is null", c.CellID)
	}
	lo, hi := simLoad.Seconds(), (simLoad + startupSlack).Seconds()
	if *c.StartupS < lo || *c.StartupS > hi {
		t.Errorf("%s: startup_s %.3f s, want in [%.3f, %.3f] (the simulator loads for %s)", c.CellID, *c.StartupS, lo, hi, simLoad)
	}
	t.Logf("%s: startup_s %.3f s (load %s)", c.CellID, *c.StartupS, simLoad)
}

// TestStartupRepeats: startup: {repeats: 3} starts the simulator three
// times cold, each a row whose startup_s is its load time plus the
// process's start, and whose first call (1 token, fixed mode's 20 ms TTFT)
// is first_call_ms; the last start serves, ready.
func TestStartupRepeats(t *testing.T) {
	_, out, k, err := launchStartup(t, simPlan(`env: LAUNCH_TEST_SIM_LOAD: "400ms"
	startup: repeats: 3`))
	if err != nil {
		t.Fatal(err)
	}
	cells, reqs := k.rows()
	if len(cells) != 3 || len(reqs) != 3 {
		t.Fatalf("%d rows, %d request rows; want 3 each: %+v", len(cells), len(reqs), cells)
	}
	for i, c := range cells {
		checkStartup(t, c, "server/startup/r"+string(rune('1'+i)))
		if c.Repeat != int64(i+1) || c.Requests != 1 || c.Completed != 1 || c.Endpoint != "completions" {
			t.Errorf("%s: repeat %d requests %d completed %d endpoint %q", c.CellID, c.Repeat, c.Requests, c.Completed, c.Endpoint)
		}
		if c.FirstCallMs == nil || *c.FirstCallMs < 20 || *c.FirstCallMs > 500 {
			t.Errorf("%s: first_call_ms %v, want 20 ms (the simulator's TTFT) plus the client's and server's slack", c.CellID, c.FirstCallMs)
		} else {
			t.Logf("%s: first_call_ms %.1f", c.CellID, *c.FirstCallMs)
		}
		if r := reqs[i]; r.CellID != c.CellID || r.Status != results.StatusOK || r.E2ELMs == nil || *r.E2ELMs != *c.FirstCallMs {
			t.Errorf("request row %+v for %s", r, c.CellID)
		}
	}
	// Returned ready: no 503 for the stages after it.
	if code := waitHTTP(t, out.URL+"/health", time.Second); code != 200 {
		t.Errorf("/health = %d right after Run returned, want 200", code)
	}
	if got := out.StartupS(); got == nil || *got != *cells[2].StartupS {
		t.Errorf("Outputs.StartupS() = %v, want the last start's %.3f", got, *cells[2].StartupS)
	}
}

// TestStartupPerCellRestart: with restart: per_cell every restart is a
// start-up row, and Outputs.StartupS says the restart's start-up for the
// cell measured next.
func TestStartupPerCellRestart(t *testing.T) {
	_, out, k, err := launchStartup(t, simPlan(`env: LAUNCH_TEST_SIM_LOAD: "400ms"
	restart: "per_cell"
	startup: probe: "none"`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		if err := out.Restart(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	cells, reqs := k.rows()
	if len(cells) != 3 || len(reqs) != 0 {
		t.Fatalf("%d rows, %d request rows; want 3 and none (probe: none): %+v", len(cells), len(reqs), cells)
	}
	for i, id := range []string{"server/startup/r1", "server/startup/restart1", "server/startup/restart2"} {
		checkStartup(t, cells[i], id)
		if cells[i].FirstCallMs != nil || cells[i].Requests != 0 {
			t.Errorf("%s: first_call_ms %v requests %d with probe: none", id, cells[i].FirstCallMs, cells[i].Requests)
		}
	}
	if got := out.StartupS(); got == nil || *got != *cells[2].StartupS {
		t.Errorf("Outputs.StartupS() = %v, want the last restart's %.3f", got, *cells[2].StartupS)
	}
}

// TestStartupWithoutStartupBlock: a restart is measured for the cell
// after it (Outputs.StartupS) even when the launch stage writes no
// start-up rows of its own.
func TestStartupWithoutStartupBlock(t *testing.T) {
	_, out, k, err := launchStartup(t, simPlan(`env: LAUNCH_TEST_SIM_LOAD: "400ms"
	restart: "per_cell"`))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.StartupS(); got != nil {
		t.Errorf("StartupS() = %.3f before any restart: the first start was not waited for, want nil", *got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := out.Restart(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got := out.StartupS()
	if got == nil || *got < simLoad.Seconds() || *got > (simLoad+startupSlack).Seconds() {
		t.Errorf("StartupS() after a restart = %v, want %s plus the start", got, simLoad)
	}
	if cells, _ := k.rows(); len(cells) != 0 {
		t.Errorf("rows without startup: %+v", cells)
	}
}

// TestStartupFirstCallFails: a server that says it is ready but answers
// the first request with an error is an error row (startup_s kept), and
// the stage fails.
func TestStartupFirstCallFails(t *testing.T) {
	_, _, k, err := launchStartup(t, simPlan(`env: LAUNCH_TEST_SIM_ERRORS: "1"
	startup: {}`))
	if err == nil || !strings.Contains(err.Error(), "first call") {
		t.Fatalf("err = %v, want the first call's failure", err)
	}
	cells, reqs := k.rows()
	if len(cells) != 1 || len(reqs) != 1 {
		t.Fatalf("%d rows, %d requests: %+v", len(cells), len(reqs), cells)
	}
	c := cells[0]
	if c.Status != results.StatusError || !strings.Contains(c.Reason, "first call") || c.StartupS == nil || c.FirstCallMs != nil || c.Failed != 1 {
		t.Errorf("row: status %s reason %q startup_s %v first_call_ms %v failed %d", c.Status, c.Reason, c.StartupS, c.FirstCallMs, c.Failed)
	}
	if reqs[0].Status != results.StatusError {
		t.Errorf("request row status %s", reqs[0].Status)
	}
}

// TestStartupThroughTheListen: a server that does not listen until it is
// loaded (vLLM, SGLang: connection refused, not 503) is measured through
// the wait for its socket.
func TestStartupThroughTheListen(t *testing.T) {
	_, _, k, err := launchStartup(t, simPlan(`env: LAUNCH_TEST_SIM_LISTEN: "400ms"
	startup: {}`))
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := k.rows()
	if len(cells) != 1 {
		t.Fatalf("%d rows: %+v", len(cells), cells)
	}
	checkStartup(t, cells[0], "server/startup/r1")
}
