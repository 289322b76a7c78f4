package launch

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// The guard makes "no process outlives benchrun" hold for the server's
// children too. The kernel's parent-death signal reaches only the direct
// child: `ollama serve` dies with benchrun, but the `ollama runner` it
// started would live on. So benchrun starts a small guard (this very
// binary, re-executed with guardEnv set) as the leader of a new process
// group; the guard starts the server in that group and, when benchrun
// dies (its parent-death signal, guardDeathSignal), kills the whole group.
// Group-wide SIGINT/SIGTERM from a normal stop are for the server: the
// guard waits for it and then exits the way it did.
const guardEnv = "BENCHRUN_LAUNCH_GUARD"

// guardDeathSignal is the guard's parent-death signal: one nothing else sends.
const guardDeathSignal = syscall.SIGUSR1

func init() {
	// Any binary that links this package (benchrun, its tests) can be the
	// guard; the variable is set only on the guard's own environment.
	if os.Getenv(guardEnv) != "1" {
		return
	}
	os.Exit(runGuard(os.Args[1:]))
}

// guardCommand wraps argv in the guard.
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
	sigs := make(chan os.Signal, 4)
	// Handled, not ignored: ignored dispositions would pass to the server.
	signal.Notify(sigs, guardDeathSignal, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun: cannot start %s: %v\n", argv[0], err)
		return 127
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			if sig == guardDeathSignal {
				// benchrun is gone: take the whole group down with it.
				fmt.Fprintln(os.Stderr, "benchrun guard: benchrun died; killing the server's process group")
				_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
			}
			// SIGINT/SIGTERM went to the whole group: the server has its own.
		case <-exited:
			st := cmd.ProcessState.Sys().(syscall.WaitStatus)
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
