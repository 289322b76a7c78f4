package engine

import (
	"os"
	"strconv"
	"strings"
)

// processGone reports whether pid has exited (no longer exists, or is a
// zombie waiting to be reaped), from /proc.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state == 'Z' || state == 'X'
}
