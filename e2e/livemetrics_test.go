package e2e

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/livemetrics"
	"github.com/benchrun/benchrun/internal/livemetrics/livemetricstest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// liveScrape is what one scrape of a run's /metrics showed of its sweep.
type liveScrape struct {
	cell                      string // the cell running, "" for none
	sent, completed, inFlight float64
	sendLags, machineSamples  float64
	cpuSeconds, residentBytes float64
	sweepRunning              bool
}

// TestLiveMetrics runs a plan with --metrics-addr and scrapes /metrics
// as Prometheus would while it runs: the sweep's cell shows up while its
// load is sent, its counters rise from scrape to scrape and never fall,
// the send lag and the machine probe are observed, the process's CPU and
// memory are there, the counts stay within what the cell's row says was
// sent, and the endpoint is gone when benchrun has exited.
func TestLiveMetrics(t *testing.T) {
	model := uniqueModel()
	out := t.TempDir()
	cmd := exec.Command(binary, "testdata/live.cue", "-t", "model="+model, "--metrics-addr", "127.0.0.1:0", "--out", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer waitGone(t, model)
	var mu sync.Mutex
	var said strings.Builder
	urls := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		re := regexp.MustCompile(`live metrics on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			said.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	exited := make(chan error, 1)
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("benchrun did not say where its live metrics are")
	}
	go func() { <-read; exited <- cmd.Wait() }()

	var seen []liveScrape
	var runErr error
scraping:
	for {
		select {
		case runErr = <-exited:
			break scraping
		case <-time.After(250 * time.Millisecond):
		}
		f, err := livemetricstest.Scrape(url)
		if err != nil {
			continue // the run may have just ended; it is judged below
		}
		seen = append(seen, scrapeOf(f))
	}
	mu.Lock()
	stderrText := said.String()
	mu.Unlock()
	if runErr != nil {
		t.Fatalf("benchrun: %v\n%s", runErr, stderrText)
	}
	if _, err := livemetricstest.Scrape(url); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after benchrun exited, %s answered or failed otherwise: %v", url, err)
	}

	row := onlyCell(t, out)
	judgeScrapes(t, seen, row)
}

func scrapeOf(f livemetricstest.Families) liveScrape {
	s := liveScrape{
		sent:           f.Sum(livemetrics.NameSent, "stage", "sweep"),
		completed:      f.Sum(livemetrics.NameCompleted, "stage", "sweep"),
		inFlight:       f.Sum(livemetrics.NameInFlight, "stage", "sweep"),
		sendLags:       f.Sum(livemetrics.NameSendLag, "stage", "sweep"),
		machineSamples: f.Sum(livemetrics.NameMachineLate, "path", "loop"),
		cpuSeconds:     f.Sum("process_cpu_seconds_total"),
		residentBytes:  f.Sum("process_resident_memory_bytes"),
	}
	_, s.sweepRunning = f.Value(livemetrics.NameStage, "stage", "sweep", "kind", "sweep")
	if fam := f[livemetrics.NameCell]; fam != nil && len(fam.Metric) == 1 {
		for _, l := range fam.Metric[0].Label {
			if l.GetName() == "cell" {
				s.cell = l.GetValue()
			}
		}
	}
	return s
}

// judgeScrapes checks what the scrapes saw against the row the run
// wrote: its cell id, and its request count as the ceiling of every
// count.
func judgeScrapes(t *testing.T, seen []liveScrape, row results.Cell) {
	t.Helper()
	var during []liveScrape
	for i, s := range seen {
		if s.cell != "" {
			during = append(during, s)
			if s.cell != row.CellID {
				t.Errorf("scrape %d: cell running %q; the row's cell_id is %q", i, s.cell, row.CellID)
			}
			if !s.sweepRunning {
				t.Errorf("scrape %d: a cell runs but the sweep stage is not shown running", i)
			}
		}
		if i > 0 && (s.sent < seen[i-1].sent || s.completed < seen[i-1].completed) {
			t.Errorf("scrape %d: counters fell: %+v after %+v", i, s, seen[i-1])
		}
		if s.sent > float64(row.Requests+row.Failed) || s.completed+s.inFlight > s.sent {
			t.Errorf("scrape %d: %+v beyond the %d requests the row says were sent, or in flight and completed beyond sent", i, s, row.Requests)
		}
	}
	if len(during) < 4 {
		t.Fatalf("%d of %d scrapes saw the cell running (4 s of load, a scrape each 250 ms): %+v", len(during), len(seen), seen)
	}
	rising := 0
	for i := 1; i < len(during); i++ {
		if during[i].sent > during[i-1].sent && during[i].completed > during[i-1].completed {
			rising++
		}
	}
	if rising < len(during)/2 {
		t.Errorf("the counters rose in only %d of %d intervals while the cell ran at 60 requests a second: %+v", rising, len(during)-1, during)
	}
	last := during[len(during)-1]
	t.Logf("%d scrapes, %d during the cell; the last during it: %+v; the row: %d requests, %d failed", len(seen), len(during), last, row.Requests, row.Failed)
	if last.sendLags == 0 || last.machineSamples == 0 {
		t.Errorf("no send lag (%v) or machine probe sample (%v) observed", last.sendLags, last.machineSamples)
	}
	if last.cpuSeconds <= 0 || last.residentBytes <= 0 {
		t.Errorf("the process collector's CPU (%v s) or memory (%v B) is missing", last.cpuSeconds, last.residentBytes)
	}
	if row.Requests < 200 {
		t.Errorf("the row has %d requests; 4 s at 60/s should send about 240", row.Requests)
	}
}

// onlyCell is the run's one cell row.
func onlyCell(t *testing.T, out string) results.Cell {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "plan=live", "date=*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("want one run directory under %s, got %v", out, dirs)
	}
	parts, _ := filepath.Glob(filepath.Join(dirs[0], "cells", "*.parquet"))
	var rows []results.Cell
	for _, p := range parts {
		rs, err := resultstest.ReadFile[results.Cell](p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) != 1 {
		t.Fatalf("want one cell row, got %d", len(rows))
	}
	return rows[0]
}
