package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// kernelResult is a streamed result of three events timed by kernel
// stamps, each read delay after its kernel stamp.
func kernelResult(t0 time.Time, delay time.Duration) Result {
	r := Result{Sent: t0, StampSource: StampKernel}
	for k := range 3 {
		r.Tokens = append(r.Tokens, TokenEvent{At: t0.Add(time.Duration(k+1) * 10 * time.Millisecond), Tokens: 1})
		r.StampDelays = append(r.StampDelays, delay)
	}
	return r
}

func TestCellStamps(t *testing.T) {
	t0 := time.Now()
	var row results.Cell
	rs := []Result{kernelResult(t0, time.Millisecond), kernelResult(t0, 3*time.Millisecond)}
	rs[1].StampMissing = 1
	note := CellStamps(&row, rs)
	measure.FillCell(&row, results.AsRequests(RequestRows(row, rs)), measure.CellWindow{}, measure.SLO{})
	if row.StampSource != StampKernel || row.StampDelayP50Ms == nil || *row.StampDelayP50Ms != 2 || *row.StampDelayP99Ms < 2.9 {
		t.Errorf("all kernel: %q p50 %v p99 %v", row.StampSource, row.StampDelayP50Ms, row.StampDelayP99Ms)
	}
	if !strings.Contains(note, "1 of 6 token events had no usable kernel receive timestamp") {
		t.Errorf("note %q", note)
	}

	// One request on a connection without kernel stamps: the cell goes
	// back to user stamps for all, its kernel ones moved by their delays.
	rs = []Result{kernelResult(t0, time.Millisecond), {Sent: t0, StampSource: StampUser, StampNote: "no stamps here",
		Tokens: []TokenEvent{{At: t0.Add(time.Millisecond)}}}}
	note = CellStamps(&row, rs)
	measure.FillCell(&row, results.AsRequests(RequestRows(row, rs)), measure.CellWindow{}, measure.SLO{})
	if row.StampSource != StampUser || row.StampDelayP50Ms != nil || row.StampDelayP99Ms != nil {
		t.Errorf("mixed: %q %v %v", row.StampSource, row.StampDelayP50Ms, row.StampDelayP99Ms)
	}
	if !strings.Contains(note, "1 of 2 streamed requests had no kernel receive timestamps (no stamps here)") {
		t.Errorf("note %q", note)
	}
	if got := rs[0].Tokens[0].At.Sub(t0); got != 11*time.Millisecond || rs[0].StampDelays != nil || rs[0].StampSource != StampUser {
		t.Errorf("the kernel request after the cell went to user stamps: first event at %v, delays %v, %q", got, rs[0].StampDelays, rs[0].StampSource)
	}

	// Shared reads are said when they are 1% or more of the events.
	rs = []Result{kernelResult(t0, time.Millisecond)}
	rs[0].StampShared = 1
	if note := CellStamps(&row, rs); !strings.Contains(note, "33.3% of token events came in one socket read with the next event") {
		t.Errorf("note %q", note)
	}
	// ... and kept as a column, so that a baseline can tell gaps that were
	// the reads' from the server's.
	if row.EventsJoinedPct == nil || math.Abs(*row.EventsJoinedPct-100.0/3) > 1e-9 {
		t.Errorf("events_joined_pct %v, want 33.3", row.EventsJoinedPct)
	}

	// Nothing streamed: no stamp source.
	row = results.Cell{StampSource: "stale"}
	if note := CellStamps(&row, []Result{{Sent: t0}}); note != "" || row.StampSource != "" {
		t.Errorf("no stream: %q %q", row.StampSource, note)
	}
}

// The stamp turns a user time into the kernel's on the monotonic clock,
// and refuses impossible delays.
func TestStampReaderStamp(t *testing.T) {
	at := time.Now()
	s := &stampReader{at: at.UnixNano() - int64(2*time.Millisecond)}
	k, d := s.stamp(at)
	if d != 2*time.Millisecond || at.Sub(k) != d || k.UnixNano() != s.at {
		t.Errorf("stamp %v delay %v", at.Sub(k), d)
	}
	for _, st := range []int64{0, at.UnixNano() + 1, at.UnixNano() - int64(time.Minute)} {
		s := &stampReader{at: st}
		if k, d := s.stamp(at); k != at || d != 0 || s.missing != 1 {
			t.Errorf("kernel stamp %d: %v %v missing %d", st, k, d, s.missing)
		}
	}
	// Two events from one read share its stamp.
	s = &stampReader{at: at.UnixNano() - 1000}
	s.stamp(at)
	s.stamp(at.Add(time.Microsecond))
	if s.shared != 1 {
		t.Errorf("shared %d", s.shared)
	}
}
