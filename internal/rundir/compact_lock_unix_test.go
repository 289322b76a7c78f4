//go:build unix

package rundir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

// A run a writer holds is left alone, dry run or not, and its lock file
// still names the writer.
func TestCompactSkipsALockedRun(t *testing.T) {
	dir := compactRun(t)
	// Held as a running benchrun holds it (pipeline.lockRunDir): an
	// exclusive flock on an open file of its own, naming itself.
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(LockHolder{PID: 4242, Hostname: "bench-host", Attempt: 1})
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)
	for _, dry := range []bool{true, false} {
		res, err := Compact(dir, CompactOptions{DryRun: dry})
		if err != nil || res.Skipped != "locked by pid 4242 on bench-host, attempt 1" {
			t.Errorf("dry run %v: %+v, %v", dry, res, err)
		}
	}
	if after := listing(t, dir); !reflect.DeepEqual(before, after) {
		t.Error("a locked run was changed")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, LockFile)); !bytes.Contains(b, []byte("4242")) {
		t.Errorf("the writer's lock file was rewritten: %s", b)
	}
}
