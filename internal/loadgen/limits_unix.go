//go:build unix

package loadgen

import "syscall"

// openFileLimit is the soft RLIMIT_NOFILE (Go raises it to the hard limit
// at start-up where it may).
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(rl.Cur, 1<<20))
}
