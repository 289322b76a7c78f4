package procrun

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// The guard makes "no process outlives benchrun" hold for a program's
// children too. The kernel's parent-death signal reaches only the direct
// child: `ollama serve` dies with benchrun, but the `ollama runner` it
// started would live on. So Start runs a small guard (this very binary,
// re-executed with guardEnv set) as the leader of a new process group;
// the guard starts the program in that group and, when benchrun dies (its
// parent-death signal, guardDeathSignal), kills every process below it.
// The guard is a child subreaper (Linux), so a child that starts its own
// session and daemonizes stays below it, and is found by walking /proc.
// Group-wide SIGINT/SIGTERM from a stop are for the program (the guard
// passes them on to descendants that left the group): the guard waits
// for it, kills whatever it left behind, and exits the way it did.
const guardEnv = "BENCHRUN_PROCESS_GUARD"

// guardParentEnv names, in the guard's environment, the pid of the
// benchrun that started it: a parent-death signal that came before the
// guard could take it (Go catches and drops a SIGUSR1 no one asked for)
// is then still seen, as a parent that is not this pid.
const guardParentEnv = "BENCHRUN_GUARD_PARENT"

// guardParentPoll is how often the guard checks that benchrun is still
// its parent, beside the parent-death signal.
const guardParentPoll = 100 * time.Millisecond

// guardDeathSignal is the guard's parent-death signal: one nothing else sends.
const guardDeathSignal = syscall.SIGUSR1

func init() {
	// Any binary that links this package (benchrun through the stage kinds
	// that run programs, their tests) can be the guard; the variable is set
	// only on the guard's own environment. Package initialization runs
	// before main, so the guard starts nothing of benchrun's.
	if os.Getenv(guardEnv) != "1" {
		return
	}
	os.Exit(runGuard(os.Args[1:]))
}

// guardCommand wraps argv (argv[0] a path) in the guard; the caller adds
// guardEnv=1 to the command's environment.
func guardCommand(argv []string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding benchrun's own binary for the process guard: %w", err)
	}
	cmd := exec.Command(self, argv...)
	cmd.SysProcAttr = guardSysProcAttr()
	return cmd, nil
}

func runGuard(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "benchrun guard: no command")
		return 2
	}
	parent, _ := strconv.Atoi(os.Getenv(guardParentEnv))
	os.Unsetenv(guardEnv)
	os.Unsetenv(guardParentEnv)
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun guard: cannot become a child subreaper (%v): a child that daemonizes may outlive benchrun\n", err)
	}
	sigs := make(chan os.Signal, 8)
	// Handled, not ignored: ignored dispositions would pass to the program.
	signal.Notify(sigs, guardDeathSignal, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if parentGone(parent) {
		// benchrun died before the guard could hear its death signal:
		// start nothing.
		fmt.Fprintln(os.Stderr, "benchrun guard: benchrun died before the program started; not starting it")
		return 128 + int(syscall.SIGKILL)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun: cannot start %s: %v\n", argv[0], err)
		return 127
	}
	self := os.Getpid()
	exited := make(chan syscall.WaitStatus, 1)
	go reap(cmd.Process.Pid, exited)
	poll := time.NewTicker(guardParentPoll)
	defer poll.Stop()
	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-poll.C:
			// The parent-death signal is the kernel's word; this is the
			// guard's own look, for a signal that was lost.
			if !parentGone(parent) {
				continue
			}
			sig = guardDeathSignal
		case st := <-exited:
			return programEnded(self, st)
		}
		if sig == guardDeathSignal {
			// benchrun is gone: take everything below the guard down
			// with it, whatever session or group it moved to.
			fmt.Fprintln(os.Stderr, "benchrun guard: benchrun died; killing the program and every process it started")
			killTree(self, false)
			_ = syscall.Kill(-self, syscall.SIGKILL)
			return 128 + int(syscall.SIGKILL)
		}
		// A stop: SIGINT/SIGTERM went to the whole group, the program
		// has its own. Pass it on to the processes that left the
		// group (setsid), so that they too may stop gracefully.
		for _, p := range descendants(self, true) {
			if p.pgrp != self {
				_ = syscall.Kill(p.pid, sig.(syscall.Signal))
			}
		}
	}
}

// parentGone says whether the benchrun that started the guard (pid
// parent; 0: not known) is no longer its parent.
func parentGone(parent int) bool {
	return parent > 0 && os.Getppid() != parent
}

// programEnded is the guard's end once the program is gone: nothing it
// started may stay behind, and it is gone before the guard is (whoever
// waits for the guard finds nothing left).
func programEnded(self int, st syscall.WaitStatus) int {
	killTree(self, false)
	waitTreeGone(self, 2*time.Second)
	if st.Signaled() {
		// Die the same way, so benchrun reports "signal: killed".
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), st.Signal())
		time.Sleep(time.Second) // the signal ends us first
		return 128 + int(st.Signal())
	}
	return st.ExitStatus()
}

// reap waits for every child of the guard: the program (whose status it
// hands on) and, the guard being a subreaper, the orphans re-parented to
// it, which would otherwise stay zombies.
func reap(program int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			time.Sleep(20 * time.Millisecond) // no child now; an orphan may come
		case pid == program:
			exited <- ws
		}
	}
}

// waitTreeGone waits, up to within, until no live process is left below
// root: a SIGKILLed process ends when it is next scheduled, not when the
// signal is sent. (The guard reaps the ones re-parented to it.)
func waitTreeGone(root int, within time.Duration) {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if len(descendants(root, true)) == 0 {
			return
		}
	}
}
