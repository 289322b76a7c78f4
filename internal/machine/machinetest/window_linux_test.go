//go:build linux

package machinetest

import (
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestCPUWindowCountsOthersOnly: this process's own CPU is not a
// neighbour's; a process that is not this one's waited-for child, spinning
// beside it, is. Each window saturates the machine (one spinner per CPU),
// so what the machine did is known whatever else runs beside the test:
// busy time ≈ the CPUs, split between the spinners and the background.
// Counted right, others+own is at most the CPUs while this process spins,
// and others is about the CPUs while the children spin; counted wrong
// (own as others, children as own), each misses by the spinners' share,
// which is measured (rusage), so the bounds sit halfway between.
func TestCPUWindowCountsOthersOnly(t *testing.T) {
	cpus := float64(runtime.NumCPU())

	selfBefore, _ := selfCPU()
	w := startCPUWindow()
	start := time.Now()
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
	othersOwn, ok := w.others()
	if !ok {
		t.Fatal("not readable on Linux")
	}
	selfAfter, _ := selfCPU()
	own := (selfAfter - selfBefore).Seconds() / time.Since(start).Seconds()

	var spinners []*exec.Cmd
	w = startCPUWindow()
	start = time.Now()
	for range runtime.NumCPU() {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		spinners = append(spinners, spin)
	}
	time.Sleep(500 * time.Millisecond)
	othersSpin, _ := w.others()
	wall := time.Since(start).Seconds()
	var spun time.Duration
	for _, spin := range spinners {
		spin.Process.Kill()
		spin.Wait()
		spun += spin.ProcessState.UserTime() + spin.ProcessState.SystemTime()
	}
	children := spun.Seconds() / wall

	t.Logf("this process spinning: own %.2f cores, others %.2f; children spinning: children %.2f cores, others %.2f (of %.0f CPUs)",
		own, othersOwn, children, othersSpin, cpus)
	if own < 0.1 || children < 0.1 {
		t.Fatalf("the spinners got %.2f and %.2f cores: the machine gave this test nothing to judge", own, children)
	}
	if othersOwn+own > cpus+own/2 {
		t.Errorf("this process's own CPU read as others': others %.2f + own %.2f cores on %.0f CPUs", othersOwn, own, cpus)
	}
	if othersSpin < cpus-children/2 {
		t.Errorf("spinning neighbours (%.2f cores) read as %.2f cores of others on a saturated %.0f-CPU machine", children, othersSpin, cpus)
	}

	// The same children, named as this process's own (servers a check
	// started): their CPU is no neighbour's.
	spinners = spinners[:0]
	w = startCPUWindow()
	start = time.Now()
	for range runtime.NumCPU() {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		w.own(spin.Process.Pid)
		spinners = append(spinners, spin)
	}
	time.Sleep(500 * time.Millisecond)
	othersOwned, _ := w.others()
	wall = time.Since(start).Seconds()
	spun = 0
	for _, spin := range spinners {
		spin.Process.Kill()
		spin.Wait()
		spun += spin.ProcessState.UserTime() + spin.ProcessState.SystemTime()
	}
	owned := spun.Seconds() / wall
	t.Logf("owned children spinning: children %.2f cores, others %.2f", owned, othersOwned)
	if othersOwned+owned > cpus+owned/2 {
		t.Errorf("owned children (%.2f cores) read as others: %.2f cores on %.0f CPUs", owned, othersOwned, cpus)
	}
}
