package procrun

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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
	os.Unsetenv(guardEnv)
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun guard: cannot become a child subreaper (%v): a child that daemonizes may outlive benchrun\n", err)
	}
	sigs := make(chan os.Signal, 8)
	// Handled, not ignored: ignored dispositions would pass to the program.
	signal.Notify(sigs, guardDeathSignal, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun: cannot start %s: %v\n", argv[0], err)
		return 127
	}
	self := os.Getpid()
	exited := make(chan syscall.WaitStatus, 1)
	go reap(cmd.Process.Pid, exited)
	for {
		select {
		case sig := <-sigs:
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
		case st := <-exited:
			// The program is gone: nothing it started may stay behind, and
			// it is gone before the guard is (whoever waits for the guard
			// finds nothing left).
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
	}
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
