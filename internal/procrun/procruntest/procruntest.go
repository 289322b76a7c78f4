// Package procruntest lets a test prove that a process group is gone:
// after a stop, a killed run or an interrupt, nothing of the program
// procrun started may be left running.
package procruntest

import (
	"os"
	"strconv"
	"strings"
)

// LiveInGroup lists the live (not zombie) processes of a process group,
// from /proc; nil where there is no /proc. Tests use it to prove that
// nothing outlived a stop: a guard left behind counts, as does any other
// member (procrun.GroupGone, which the runner waits on, leaves its own
// guard out).
func LiveInGroup(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if state, pgrp, ok := parseStat(string(b)); ok && pgrp == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// parseStat reads the state and process group of "pid (comm) state ppid
// pgrp ..."; comm may hold spaces and parentheses, so the fields are read
// after the last ')'.
func parseStat(s string) (state byte, pgrp int, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || len(f[0]) == 0 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
