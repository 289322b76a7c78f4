package supervise

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestStopSignalsPairCopiesOfOneStop: a signal that reached the worker
// directly and the supervisor's forwarded copy of the same kind, close
// together, are one stop; two on one path, two of different kinds, or
// copies further apart than sameStopWindow are two.
func TestStopSignalsPairCopiesOfOneStop(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	type sig struct {
		s         os.Signal
		forwarded bool
		after     time.Duration
	}
	for _, tc := range []struct {
		name   string
		sigs   []sig
		second int // index of the signal that is the second stop; -1: none
	}{
		{"direct then forwarded", []sig{{syscall.SIGTERM, false, 0}, {syscall.SIGTERM, true, 5 * time.Millisecond}}, -1},
		{"forwarded then direct, late on a loaded machine", []sig{{syscall.SIGTERM, true, 0}, {syscall.SIGTERM, false, 1500 * time.Millisecond}}, -1},
		{"Ctrl-C twice through the supervisor", []sig{{os.Interrupt, true, 0}, {os.Interrupt, true, 300 * time.Millisecond}}, 1},
		{"a stop to everyone, then another", []sig{{syscall.SIGTERM, false, 0}, {syscall.SIGTERM, true, time.Millisecond}, {syscall.SIGTERM, false, time.Second}}, 2},
		{"different kinds", []sig{{syscall.SIGTERM, false, 0}, {os.Interrupt, true, time.Millisecond}}, 1},
		{"copies too far apart", []sig{{syscall.SIGTERM, false, 0}, {syscall.SIGTERM, true, sameStopWindow + time.Millisecond}}, 1},
	} {
		var stops stopSignals
		got := -1
		for i, s := range tc.sigs {
			if stops.add(s.s, s.forwarded, at.Add(s.after)) && got < 0 {
				got = i
			}
		}
		if got != tc.second {
			t.Errorf("%s: second stop at signal %d, want %d", tc.name, got, tc.second)
		}
	}
}
