package procrun

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A guarded program that exited leaves only its guard in the group: the
// program is gone, whether or not the guard has reaped it and exited.
func TestGroupGoneLooksPastTheGuard(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo $$ > " + dir + "/sh.pid; exec sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), Graces{})
	var prog int
	for deadline := time.Now().Add(10 * time.Second); prog == 0; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(dir + "/sh.pid"); err == nil && len(b) > 1 {
			prog, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the program never wrote its pid")
		}
	}
	if prog == p.Pid() {
		t.Fatalf("program pid %d is the group's: not guarded", prog)
	}
	if gone, known := GroupGone(p.Pid()); !known || gone || !isGuard(p.Pid()) || isGuard(prog) {
		t.Fatalf("running: gone %v known %v, guard %v, program a guard %v", gone, known, isGuard(p.Pid()), isGuard(prog))
	}
	if err := syscall.Kill(prog, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if gone, _ := GroupGone(p.Pid()); gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group never read as gone after its program was killed")
		}
	}
	<-p.Done()
}
