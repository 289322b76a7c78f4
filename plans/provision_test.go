package plans_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// TestProvisionThroughTheCLI shows teardown on the exit paths a user
// meets (success, Ctrl-C) and --keep skipping it, through the real binary.
func TestProvisionThroughTheCLI(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		interrupt  bool
		wantCode   int
		wantLedger string
	}{
		// cells=2: the pod outlives the sweep's last cell.
		{"success", nil, false, 0, "created pod-1\ntorn pod-1 cells=2\n"},
		{"ctrl-c mid-sweep", []string{"-t", "requests=100000"}, true, 130, "created pod-1\ntorn pod-1 cells=2\n"}, // the interrupted cell and the skipped one
		{"keep", []string{"--keep"}, false, 0, "created pod-1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ledger := filepath.Join(t.TempDir(), "ledger")
			args := append([]string{"testdata/provision-local.cue", "-t", "ledger=" + ledger}, tt.args...)
			b := startBenchrun(t, "", args...)
			if tt.interrupt {
				waitFor(t, b, 30*time.Second, "the sweep", func() bool { return strings.Contains(b.stderr.String(), "▶ sweep") })
				time.Sleep(300 * time.Millisecond)
				b.cmd.Process.Signal(syscall.SIGINT)
			}
			if code := b.wait(t, time.Minute); code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, b.stderr.String())
			}
			got, _ := os.ReadFile(ledger)
			if string(got) != tt.wantLedger {
				t.Fatalf("ledger:\n%s\nwant:\n%s", got, tt.wantLedger)
			}
			if tt.wantCode == 0 {
				rows := csvRows(t, b.stdout.String())
				if len(rows) != 2 {
					t.Fatalf("rows: %s", b.stdout.String())
				}
				// The price passes from the pod through the server to every row.
				cells := readCells(t, b.runDir(t))
				for _, c := range cells {
					if results.ValueOr(c.CostUSD, 0) <= 0 || results.ValueOr(c.TokensPerDollar, 0) <= 0 {
						t.Errorf("cell %s: cost_usd %g tokens_per_dollar %g (0: null)", c.CellID, results.ValueOr(c.CostUSD, 0), results.ValueOr(c.TokensPerDollar, 0))
					}
				}
			}
			if tt.name == "keep" {
				log, _ := os.ReadFile(filepath.Join(b.runDir(t), "pod.log"))
				if !strings.Contains(string(log), "keeping the machine") {
					t.Errorf("pod.log:\n%s", log)
				}
			}
		})
	}
}

// TestRestartPerCell: every ladder point gets a fresh simulator (which
// answers 503 for 300ms after each start), and every row is still ok.
func TestRestartPerCell(t *testing.T) {
	b := startBenchrun(t, "", "testdata/restart-per-cell.cue")
	if code := b.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	rows := csvRows(t, b.stdout.String())
	for _, r := range rows {
		if r["status"] != "ok" {
			t.Errorf("row %v", r)
		}
	}
	log, _ := os.ReadFile(filepath.Join(b.runDir(t), "server.log"))
	if n := strings.Count(string(log), "benchrun: restarting the server (restart: per_cell)"); n != 3 || len(rows) != 3 {
		t.Fatalf("%d restarts for %d rows:\n%s", n, len(rows), log)
	}
}

// TestRestartWithServerVars: two cells that differ only in their server
// variables; the restart before each starts the simulator with that cell's
// --ttft (${cell.ttft}), so each row measures its own server's flag.
func TestRestartWithServerVars(t *testing.T) {
	b := startBenchrun(t, "", "testdata/restart-server-vars.cue")
	if code := b.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	cells := readCells(t, b.runDir(t))
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	want := []struct {
		id, note string
		lo, hi   float64
	}{
		{"sweep/16:8/c1/ttft=10ms", "server: ttft=10ms", 9, 30},
		{"sweep/16:8/c1/ttft=40ms", "server: ttft=40ms", 39, 70},
	}
	for i, c := range cells {
		w := want[i]
		if c.Status != "ok" || c.CellID != w.id || !strings.Contains(c.Notes, w.note) || results.ValueOr(c.TTFTMs, 0) < w.lo || results.ValueOr(c.TTFTMs, 0) > w.hi {
			t.Errorf("cell %d: %s %s ttft %.1f ms notes %q; want %s, ttft in [%g, %g] ms, notes with %q",
				i, c.Status, c.CellID, results.ValueOr(c.TTFTMs, 0), c.Notes, w.id, w.lo, w.hi, w.note)
		}
	}
	log, _ := os.ReadFile(filepath.Join(b.runDir(t), "server.log"))
	for _, line := range []string{
		"--ttft 10ms --itl", // the first start, for health: the first cell's
		"benchrun: restarting the server (restart: per_cell, ttft=10ms)",
		"benchrun: restarting the server (restart: per_cell, ttft=40ms)",
		"--ttft 40ms --itl",
	} {
		if !strings.Contains(string(log), line) {
			t.Errorf("server.log lacks %q:\n%s", line, log)
		}
	}
	if strings.Contains(string(log), "${cell.") {
		t.Errorf("a ${cell.KEY} reached the server:\n%s", log)
	}
}

// TestFlagsMatrixOneServerAtATime: the documented way to compare server
// flags (docs/SERVERS.md, restart: per_cell): a launch and a sweep per
// variant, chained with needs. Both servers take the same port, so the run
// succeeds only if the first is stopped before the second starts; the
// rows show each variant's own inter-token latency.
func TestFlagsMatrixOneServerAtATime(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	b := startBenchrun(t, "", "testdata/flags-matrix.cue", "-t", fmt.Sprintf("port=%d", port))
	if code := b.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	rows := csvRows(t, b.stdout.String())
	if len(rows) != 2 {
		t.Fatalf("rows:\n%s", b.stdout.String())
	}
	itl := func(r map[string]string) float64 { v, _ := strconv.ParseFloat(r["itl_p50_ms"], 64); return v }
	if rows[0]["status"] != "ok" || rows[1]["status"] != "ok" || !(itl(rows[0]) < 3 && itl(rows[1]) >= 3.5) {
		t.Errorf("rows (want itl p50 about 1 ms, then about 4 ms):\n%s", b.stdout.String())
	}
	stderr := b.stderr.String()
	if i, j := strings.Index(stderr, "▶ server_itl4"), strings.Index(stderr, "✓ sweep_itl1"); i < 0 || j < 0 || i < j {
		t.Errorf("the second server started before the first sweep ended:\n%s", stderr)
	}
}
