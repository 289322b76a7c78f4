package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/benchrun/benchrun/internal/procrun"
)

// killChildGroups SIGKILLs every descendant of benchrun (a server child
// that started its own session included: once its guard is killed, it
// would be nobody's to kill), then the process group of every direct
// child that leads its own group (launched servers do: Setpgid), so that
// a forced exit leaves no server or server child behind. It reads /proc
// and never blocks.
func killChildGroups() {
	self := os.Getpid()
	procrun.KillDescendants(self)
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, ppid, pgid, ok := parseStat(string(b))
		if !ok || ppid != self {
			continue
		}
		if pgid == pid {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		} else {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// parseStat reads pid, ppid and pgid from /proc/PID/stat ("pid (comm) state
// ppid pgrp ..."); comm may hold spaces and parentheses, so parse after the
// last ')'.
func parseStat(s string) (pid, ppid, pgid int, ok bool) {
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, 0, 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 3 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return pid, ppid, pgid, true
}
