package procrun

import (
	"os/exec"
	"syscall"
	"testing"
)

// A group whose members exited is gone before anyone reaps them: a
// zombie is no live process.
func TestGroupGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer cmd.Wait()
	if gone, known := GroupGone(pgid); !known || gone {
		t.Fatalf("running group: gone %v known %v", gone, known)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet (no Wait): the process is a zombie, or on its way.
	for {
		gone, known := GroupGone(pgid)
		if !known {
			t.Fatal("no /proc on Linux")
		}
		if gone {
			break
		}
	}
	var st syscall.WaitStatus
	if pid, err := syscall.Wait4(pgid, &st, syscall.WNOHANG, nil); err != nil || pid != pgid || !st.Signaled() {
		t.Fatalf("the group was gone before its reap: wait4 %d %v %v", pid, err, st)
	}
}
