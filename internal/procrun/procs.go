package procrun

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procEntry is one line of /proc/PID/stat that the process tree needs.
type procEntry struct {
	pid, ppid, pgrp int
	state           byte // R, S, D, Z, T, ...
}

func (p procEntry) live() bool { return p.state != 'Z' && p.state != 'X' }

// readProcs reads every process's pid, parent, group and state from
// /proc. It returns nil where there is no /proc (the callers then fall
// back to the process group).
func readProcs() []procEntry {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procEntry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := parseStat(pid, string(b)); ok {
			out = append(out, p)
		}
	}
	return out
}

// parseStat reads "pid (comm) state ppid pgrp ..."; comm may hold spaces
// and parentheses, so the fields are read after the last ')'.
func parseStat(pid int, s string) (procEntry, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procEntry{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || len(f[0]) == 0 {
		return procEntry{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procEntry{}, false
	}
	return procEntry{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]}, true
}

// GroupGone says whether the program of a process group is gone: no live
// process is left in it but a guard (its members exited, even if not
// reaped yet). known is false where there is no /proc to tell.
func GroupGone(pgid int) (gone, known bool) {
	procs := readProcs()
	if procs == nil {
		return false, false
	}
	for _, p := range procs {
		if p.live() && p.pgrp == pgid && !isGuard(p.pid) {
			return false, true
		}
	}
	return true, true
}

// isGuard says whether pid is a guard (started with guardEnv set, which
// /proc keeps as it was at exec; the guard's program does not inherit it).
func isGuard(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv == guardEnv+"=1" {
			return true
		}
	}
	return false
}

// Descendants lists the live processes below root: its children, their
// children and so on (whatever session or group they moved to), plus any
// live member of root's process group that was re-parented away. root
// itself is not listed.
func Descendants(root int) []int {
	var out []int
	for _, p := range descendants(root, true) {
		out = append(out, p.pid)
	}
	return out
}

func descendants(root int, group bool) []procEntry {
	procs := readProcs()
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	var out []procEntry
	for _, p := range procs {
		if p.pid == root || !p.live() {
			continue
		}
		if group && p.pgrp == root {
			out = append(out, p)
			continue
		}
		// Walk up; a chain is short, and a bound guards against a cycle
		// read from a /proc that changed under us.
		for q, n := p.ppid, 0; q > 1 && n < 256; q, n = parent[q], n+1 {
			if q == root {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// killTree SIGKILLs every descendant of root (and root too when
// includeRoot), so that nothing of a program survives, not even a child
// that started its own session. Descendants are stopped (SIGSTOP) first,
// round after round until no new one appears, so that none can fork a
// process the kill would miss; then all are killed at once. It needs
// /proc; without it only the process group is killed.
func killTree(root int, includeRoot bool) {
	stopAndKill(root, true)
	if includeRoot {
		_ = syscall.Kill(-root, syscall.SIGKILL)
		_ = syscall.Kill(root, syscall.SIGKILL)
	}
}

// KillDescendants SIGKILLs every process below root (by parentage only:
// root's own process group may hold processes that are not its children,
// the other side of a shell pipeline), stopping them first as killTree
// does. benchrun's forced exit uses it, so that a server child that
// started its own session dies with the guard that would have killed it.
func KillDescendants(root int) { stopAndKill(root, false) }

func stopAndKill(root int, group bool) {
	stopped := map[int]bool{}
	for round := 0; round < 10; round++ {
		fresh := 0
		for _, p := range descendants(root, group) {
			if !stopped[p.pid] {
				stopped[p.pid] = true
				fresh++
				_ = syscall.Kill(p.pid, syscall.SIGSTOP)
			}
		}
		if fresh == 0 {
			break
		}
		time.Sleep(time.Millisecond) // let a fork in flight finish
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
