//go:build !linux && !darwin

package rundir

// exchangeDirs cannot swap two directories in one step on this system:
// Compact renames the old one away, then the new one in.
func exchangeDirs(a, b string) (exchanged bool, err error) { return false, nil }
