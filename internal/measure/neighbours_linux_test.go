//go:build linux

package measure

import (
	"os/exec"
	"testing"
	"time"
)

// TestCPUWindowCountsOthersOnly: this process's own CPU is not a
// neighbour's; a process that is not this one's waited-for child, spinning
// beside it, is (about one core). (A shared machine's background adds a
// little to both: the bounds leave it room.)
func TestCPUWindowCountsOthersOnly(t *testing.T) {
	w := StartCPUWindow()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	own, ok := w.Others()
	if !ok {
		t.Fatal("not readable on Linux")
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	w = StartCPUWindow()
	time.Sleep(500 * time.Millisecond)
	others, _ := w.Others()
	spin.Process.Kill()
	spin.Wait()
	t.Logf("own spinning: others %.2f cores; a neighbour spinning: %.2f cores", own, others)
	if others-own < 0.6 {
		t.Errorf("a spinning neighbour read %.2f cores against %.2f for none", others, own)
	}
}
