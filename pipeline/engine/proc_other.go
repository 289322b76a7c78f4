//go:build !linux

package engine

// processGone cannot tell without /proc; the service watchdog still
// fails dependents when the exit is reaped.
func processGone(pid int) bool { return false }
