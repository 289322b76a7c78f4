// Package supervise is benchrun's own process: a run supervised by a
// parent that outlives a Go fatal error (supervise_linux.go), and the
// signals that stop a run (signals.go): the first cancels its context,
// a second kills every child and exits.
package supervise
