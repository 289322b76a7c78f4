package arrow

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// tempRE is the pattern of the temporary files the run directory's next
// opener removes (pipeline.removeTemporaries): ".<name>.tmp-<digits>".
var tempRE = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// checkNoArrow fails if dir holds a file matched by *.arrow, and returns
// the temporary files there (each must match tempRE).
func checkNoArrow(t *testing.T, dir string) []string {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, "*.arrow")); len(m) > 0 {
		t.Errorf("files matched by *.arrow after a run that did not end: %v", m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".arrow") {
			continue // reported above
		}
		if !tempRE.MatchString(e.Name()) {
			t.Errorf("unexpected file %s: a temporary file must match %s, so the next opener removes it", e.Name(), tempRE)
		}
		temps = append(temps, e.Name())
	}
	return temps
}

// TestNoArrowUntilClose: after some cells and no Close, no *.arrow file
// exists, only the two temporary files; Abort removes them.
func TestNoArrowUntilClose(t *testing.T) {
	dir := t.TempDir()
	tb, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range testCells()[:4] {
		if err := tb.Cell(c.cell, results.AsRequests(c.reqs)); err != nil {
			t.Fatal(err)
		}
	}
	if temps := checkNoArrow(t, dir); len(temps) != 2 {
		t.Errorf("temporary files %v; want one per table", temps)
	}
	tb.Abort()
	if temps := checkNoArrow(t, dir); len(temps) != 0 {
		t.Errorf("after Abort: %v left", temps)
	}
}

// TestKilledMidRun kills (SIGKILL) a process that has written cells, some
// with more requests than the write buffer holds, so part of the file is on
// disk, without closing: no *.arrow file, and the .arrow files an earlier
// attempt left are untouched.
func TestKilledMidRun(t *testing.T) {
	if dir := os.Getenv("BENCHRUN_ARROW_CHILD"); dir != "" {
		killedChild(dir)
		return
	}
	dir := t.TempDir()
	// An earlier attempt's finished files: a kill must leave them as they were.
	writeArrow(t, dir, testCells()[:1])
	before := map[string][]byte{}
	for _, f := range []string{CellsFile, RequestsFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledMidRun$")
	cmd.Env = append(os.Environ(), "BENCHRUN_ARROW_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "written" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatal("the child ended without writing")
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child did not write in a minute")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	for f, b := range before {
		now, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(now) != string(b) {
			t.Errorf("%s of the earlier attempt changed by a killed writer (err %v)", f, err)
		}
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	temps := checkNoArrow(t, dir)
	if len(temps) != 2 {
		t.Fatalf("temporary files %v; want the killed writer's two", temps)
	}
	var onDisk int64
	for _, name := range temps {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			onDisk += fi.Size()
		}
	}
	if onDisk == 0 {
		t.Error("the killed writer's temporary files are empty: batches were not streamed as written")
	}
}

// killedChild writes cells, says so and waits to be killed.
func killedChild(dir string) {
	tb, err := Open(dir)
	if err != nil {
		panic(err)
	}
	// 20,000 requests of 16 gaps: several MB, past the 1 MiB write buffer.
	reqs := make([]results.Request, 20000)
	for i := range reqs {
		reqs[i] = results.Request{CellID: "big", Seq: int64(i), SentAt: time.Now(), ChunkGapsMs: make([]float64, 16), Status: "ok"}
	}
	for _, c := range testCells() {
		if err := tb.Cell(c.cell, results.AsRequests(c.reqs)); err != nil {
			panic(err)
		}
	}
	if err := tb.Cell(results.Cell{CellID: "big"}, results.AsRequests(reqs)); err != nil {
		panic(err)
	}
	os.Stdout.WriteString("written\n")
	time.Sleep(time.Hour)
}

// TestFailedWriteLeavesNothing: when writing a batch fails (the disk is
// full, say), Close returns the failure and puts neither file in place: a
// .arrow file never misses rows the Parquet tables have.
func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	tb, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells := testCells()
	if err := tb.Cell(cells[0].cell, results.AsRequests(cells[0].reqs)); err != nil {
		t.Fatal(err)
	}
	tb.reqs.tmp.Close() // every later write to the file fails
	big := make([]results.Request, 50000)
	for i := range big {
		big[i].ChunkGapsMs = make([]float64, 8)
	}
	var werr error
	for i := 0; i < 10 && werr == nil; i++ { // past the write buffer
		werr = tb.Cell(cells[1].cell, results.AsRequests(big))
	}
	if werr == nil {
		t.Fatal("writes to a closed file did not fail")
	}
	if err := tb.Cell(cells[2].cell, results.AsRequests(cells[2].reqs)); err == nil {
		t.Error("a write after a failure succeeded")
	}
	if err := tb.Close(); err == nil {
		t.Error("Close after a failed write returned nil")
	} else {
		t.Log(err)
	}
	if temps := checkNoArrow(t, dir); len(temps) != 0 {
		t.Errorf("temporary files left after Close: %v", temps)
	}
}
