//go:build !unix

package loadgen

// openFileLimit: no RLIMIT_NOFILE here; Windows handles are plentiful,
// so the bound is a generous fixed one.
func openFileLimit() int { return 16384 }
